// SPDX-License-Identifier: BSD-3-Clause
// The registry's live view as the watch streams' tests set it: the connections a test puts in,
// as of the last change `changes` holds, synced unless the test says otherwise.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "companion/connection.h"
#include "companion/connection_changes.h"

namespace mqc {

class FakeLive : public LiveConnections {
 public:
  explicit FakeLive(const ConnectionChanges& changes) : changes_(changes) {}
  ConnectionList LiveSnapshot(std::uint64_t* as_of) const override {
    *as_of = changes_.last_sequence();
    return std::make_shared<std::vector<ConnectionPtr>>(connections);
  }
  bool synced() const override { return is_synced; }
  std::vector<ConnectionPtr> connections;
  bool is_synced = true;

 private:
  const ConnectionChanges& changes_;
};

}  // namespace mqc
