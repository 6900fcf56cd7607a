// SPDX-License-Identifier: BSD-3-Clause
// Where the session table's events go: the events ring in the plugin (BrokerLink), a recorder in
// tests. The two sides know each other only through this interface.
//
// Threads: the broker thread.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "link/event_records.h"

namespace mqc {

// Emit returns false when the event could not be delivered (ring full); the caller then owes the
// companion a resync.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual bool Emit(EventType type, const std::string& payload) = 0;
  // Whether records of these payload sizes would all fit now, written one after another.
  virtual bool Fits(const std::vector<std::size_t>& payload_sizes) const = 0;
};

}  // namespace mqc
