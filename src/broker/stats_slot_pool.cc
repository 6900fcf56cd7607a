// SPDX-License-Identifier: BSD-3-Clause
#include "broker/stats_slot_pool.h"

namespace mqc {

StatsSlotPool::StatsSlotPool(StatsSlots slots) : slots_(slots) {
  free_.reserve(slots.count);
  // Lowest slot on top: the first connections use the first (already touched) pages.
  for (std::size_t i = slots.count; i > 0; --i) free_.push_back(static_cast<std::uint32_t>(i - 1));
}

std::uint32_t StatsSlotPool::Take(std::uint64_t owner) {
  if (free_.empty()) return kNoStatsSlot;
  const std::uint32_t slot = free_.back();
  free_.pop_back();
  // A seqlock: see shared_region.h.
  AssignStatsSlot(slots_.hot[slot], slots_.rare[slot], owner, denials_shown_);
  return slot;
}

RequestStatistics StatsSlotPool::GiveBack(std::uint32_t slot) {
  const RequestStatistics totals = LoadStatsSlot(slots_.hot[slot]);  // this thread is the writer
  free_.push_back(slot);  // within the capacity reserved: every slot given back was taken
  return totals;
}

}  // namespace mqc
