// SPDX-License-Identifier: BSD-3-Clause
// An EventSink that takes every event and keeps none: for the broker-side tests that look at
// the answers and the session table, not at what reaches the companion.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "broker/session_table.h"

namespace mqc {

class NullSink : public EventSink {
 public:
  bool Emit(EventType, const std::string&) override { return true; }
  bool Fits(const std::vector<std::size_t>&) const override { return true; }
};

}  // namespace mqc
