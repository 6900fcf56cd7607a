// SPDX-License-Identifier: BSD-3-Clause
// A test fixture holding the shared BrokerCounters that the code under test counts into, with
// the questions its tests ask of them: one operation's cell, the total, a duration histogram,
// and "exactly these cells, every other one zero". The base of the traffic meter's and the RPC
// tracker's fixtures.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "link/shared_region.h"
#include "operation_counts.h"

namespace mqc {

struct CountedOperation {
  Operation operation;
  OperationStatus status;
  std::uint64_t count;
};

class CountedOperationsTest : public ::testing::Test {
 protected:
  std::uint64_t Ops(Operation operation, OperationStatus status) const {
    return OperationCount(counters_, operation, status);
  }
  std::uint64_t Total() const { return OperationTotal(counters_); }
  // durations[0] rpc_command, [1] rpc_query, [2] rpc_response.
  const SharedHistogram& Histogram(std::size_t i) const { return counters_.durations[i]; }

  // Each cell named holds its count, and nothing else was counted.
  void ExpectCountedExactly(std::initializer_list<CountedOperation> expected) const {
    std::uint64_t sum = 0;
    for (const CountedOperation& cell : expected) {
      EXPECT_EQ(Ops(cell.operation, cell.status), cell.count)
          << "operation " << static_cast<int>(cell.operation) << " status "
          << static_cast<int>(cell.status);
      sum += cell.count;
    }
    EXPECT_EQ(Total(), sum);
  }

  BrokerCounters counters_;
};

}  // namespace mqc
