// SPDX-License-Identifier: BSD-3-Clause
// What the broker side counted per KubeMQ operation in the shared BrokerCounters: one cell, and
// all of them. Shared by the tests of the traffic meter and the RPC tracker.
#pragma once

#include <cstddef>
#include <cstdint>

#include "link/shared_region.h"
#include "link/topic_mapping.h"

namespace mqc {

inline std::uint64_t OperationCount(const BrokerCounters& counters, Operation operation,
                                    OperationStatus status) {
  return counters.operations[static_cast<std::size_t>(operation)][static_cast<std::size_t>(status)]
      .load();
}

inline std::uint64_t OperationTotal(const BrokerCounters& counters) {
  std::uint64_t total = 0;
  for (const auto& row : counters.operations) {
    for (const auto& cell : row) total += cell.load();
  }
  return total;
}

}  // namespace mqc
