// SPDX-License-Identifier: BSD-3-Clause
// Statistics slots of a test's or a benchmark's own (a region holds the broker's): both parts
// (link/shared_region.h) of `count` slots, zeroed, so free.
#pragma once

#include <cstddef>
#include <vector>

#include "link/shared_region.h"

namespace mqc {

class TestStatsSlots {
 public:
  explicit TestStatsSlots(std::size_t count) : hot_(count), rare_(count) {}
  StatsSlots view() { return StatsSlots{hot_.data(), rare_.data(), hot_.size()}; }
  ConnectionStatsSlot& operator[](std::size_t slot) { return hot_[slot]; }
  ConnectionRareSlot& rare(std::size_t slot) { return rare_[slot]; }
  std::size_t size() const { return hot_.size(); }

 private:
  std::vector<ConnectionStatsSlot> hot_;
  std::vector<ConnectionRareSlot> rare_;
};

}  // namespace mqc
