// SPDX-License-Identifier: BSD-3-Clause
// The broker's side of bans: the list the companion sent last (BansCommand), asked at every
// CONNECT while it is not empty. With no ban, Refuses() is one test of an empty vector, and the
// auth path does nothing else new. The refused CONNECTs are counted in the shared counters
// (connects_banned) for the companion's metrics and ban list.
//
// Expired bans are skipped at CONNECT (their `until` against the CONNECT's wall-clock time);
// the companion drops them from the list and sends the shorter list (ban_store.h).
//
// Threads: the broker thread only.
#pragma once

#include <cstdint>
#include <string>

#include "link/ban_list.h"
#include "link/event_records.h"
#include "link/shared_region.h"

namespace mqc {

class BanGate {
 public:
  // `counters` (may be null in tests) must outlive the gate.
  explicit BanGate(BrokerCounters* counters) : counters_(counters) {}

  bool active() const { return !matcher_.empty(); }

  // Replaces the list. Returns the line for the broker's log ("N bans in force").
  std::string Replace(BansCommand command);

  // The ban that refuses this CONNECT (counted), or null. Null pointers: not known.
  const Ban* Refuses(const char* client_id, const char* username, const char* address,
                     std::int64_t now_ns);

 private:
  BrokerCounters* counters_;
  BanMatcher matcher_;
};

}  // namespace mqc
