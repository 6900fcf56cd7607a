// SPDX-License-Identifier: BSD-3-Clause
// The per-connection statistics slots of the shared region (link/shared_region.h) that are
// free: a connection takes one when it opens and gives it back when it closes. When every slot
// is taken, a connection has none (its statistics are then unknown), which is no error.
//
// Taking a slot hands it over zeroed to its new owner (AssignStatsSlot, the seqlock's writer
// side), so a reader never mixes two connections' figures; giving it back reads its totals
// first, for the connection's close event. A given-back slot keeps its last owner's seq and
// figures until it is taken again: a reader still asking for that owner reads its final values.
//
// The free list is reserved in full up front: taking and giving back never allocate, which
// keeps a CONNECT and a DISCONNECT on the broker thread free of reallocations.
//
// Threads: the broker thread only (the slots' single writer); readers of the slots in other
// processes go through ReadStatsSlot and never touch this pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "link/event_records.h"
#include "link/shared_region.h"

namespace mqc {

class StatsSlotPool {
 public:
  // `slots`: the slots (their count may be 0, the pointers then may be null). Not owned.
  explicit StatsSlotPool(StatsSlots slots);

  // A free slot, zeroed and given to `owner` (a connection's seq, not 0); kNoStatsSlot when
  // every slot is taken. The lowest free slot first after a start, so that the first
  // connections use the first (already touched) pages.
  std::uint32_t Take(std::uint64_t owner);
  // Gives a taken slot back (not kNoStatsSlot) and returns the totals its owner left in it.
  RequestStatistics GiveBack(std::uint32_t slot);
  // Where slot `slot` lies; null for kNoStatsSlot.
  ConnectionStatsSlot* At(std::uint32_t slot) const {
    return slot == kNoStatsSlot ? nullptr : &slots_.hot[slot];
  }
  // The rare part of a slot this pool holds (ConnectionRareSlot): not on the per-message path.
  ConnectionRareSlot& Rare(const ConnectionStatsSlot& slot) const {
    return slots_.rare[static_cast<std::size_t>(&slot - slots_.hot)];
  }

  // Whether the slots taken from now on say that denials are shown (denial_state's bit 0):
  // BrokerCore decides from the broker and its ACL sources (DenialsShown).
  void set_denials_shown(bool shown) { denials_shown_ = shown; }

  std::size_t capacity() const { return slots_.count; }
  std::size_t free_count() const { return free_.size(); }

 private:
  StatsSlots slots_;
  std::vector<std::uint32_t> free_;  // a stack: the slot to take next on top
  bool denials_shown_ = false;
};

}  // namespace mqc
