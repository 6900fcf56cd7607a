// SPDX-License-Identifier: BSD-3-Clause
#include "broker/stats_slot_pool.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "../support/stats_slots.h"

namespace mqc {
namespace {

TEST(StatsSlotPoolTest, SlotsAreTakenLowestFirstUntilNoneIsLeft) {
  TestStatsSlots slots(3);
  StatsSlotPool pool(slots.view());
  EXPECT_EQ(pool.capacity(), 3u);
  EXPECT_EQ(pool.free_count(), 3u);
  EXPECT_EQ(pool.Take(11), 0u);
  EXPECT_EQ(pool.Take(12), 1u);
  EXPECT_EQ(pool.Take(13), 2u);
  EXPECT_EQ(pool.free_count(), 0u);
  EXPECT_EQ(pool.Take(14), kNoStatsSlot);  // exhausted: no slot, no error
  EXPECT_EQ(pool.Take(15), kNoStatsSlot);
  EXPECT_EQ(pool.At(1), &slots[1]);
  EXPECT_EQ(pool.At(kNoStatsSlot), nullptr);
}

TEST(StatsSlotPoolTest, APoolOfNoSlotsNeverGivesOne) {
  StatsSlotPool pool(StatsSlots{});
  EXPECT_EQ(pool.Take(1), kNoStatsSlot);
  EXPECT_EQ(pool.free_count(), 0u);
}

TEST(StatsSlotPoolTest, ATakenSlotIsZeroedAndOwnedByItsNewConnection) {
  TestStatsSlots slots(1);
  slots[0].seq = 99;
  Bump(slots[0].publish_count, 5);
  Bump(slots[0].deliver_bytes, 7);
  slots.rare(0).messages_out = 3;
  slots.rare(0).denied[0] = 2;
  StatsSlotPool pool(slots.view());
  ASSERT_EQ(pool.Take(42), 0u);
  EXPECT_EQ(slots[0].seq.load(), 42u);
  EXPECT_EQ(slots[0].publish_count.load(), 0u);
  EXPECT_EQ(slots[0].deliver_bytes.load(), 0u);
  EXPECT_EQ(slots.rare(0).messages_out.load(), 0u);  // the rare part too
  EXPECT_EQ(slots.rare(0).denied[0].load(), 0u);
  EXPECT_EQ(&pool.Rare(slots[0]), &slots.rare(0));
  RequestStatistics read;
  EXPECT_TRUE(ReadStatsSlot(slots[0], 42, &read));
  EXPECT_FALSE(ReadStatsSlot(slots[0], 99, &read));  // the old owner's figures are gone
}

TEST(StatsSlotPoolTest, GiveBackReturnsTheTotalsAndTheSlotIsTakenNext) {
  TestStatsSlots slots(2);
  StatsSlotPool pool(slots.view());
  const std::uint32_t first = pool.Take(1);
  const std::uint32_t second = pool.Take(2);
  Bump(slots[second].publish_count, 3);
  Bump(slots[second].publish_bytes, 30);
  Bump(slots[second].request_count);
  const RequestStatistics totals = pool.GiveBack(second);
  EXPECT_EQ(totals.publish_count, 3u);
  EXPECT_EQ(totals.publish_bytes, 30u);
  EXPECT_EQ(totals.request_count, 1u);
  EXPECT_EQ(pool.free_count(), 1u);
  // Until taken again, the slot still names its last owner with its final figures.
  RequestStatistics read;
  EXPECT_TRUE(ReadStatsSlot(slots[second], 2, &read));
  EXPECT_EQ(read.publish_count, 3u);
  // The slot given back last is the one taken next, reset.
  EXPECT_EQ(pool.Take(3), second);
  EXPECT_EQ(slots[second].publish_count.load(), 0u);
  EXPECT_EQ(pool.Take(4), kNoStatsSlot);
  pool.GiveBack(first);
  EXPECT_EQ(pool.Take(5), first);
}

// Every slot taken and given back many times over, in changing orders: each slot is held by
// one connection at a time, and the free list's storage is the one reserved at the start.
TEST(StatsSlotPoolTest, ChurnNeverHandsOneSlotToTwoConnections) {
  TestStatsSlots slots(8);
  StatsSlotPool pool(slots.view());
  std::set<std::uint32_t> held;
  std::uint64_t owner = 0;
  for (int round = 0; round < 50; ++round) {
    for (;;) {
      const std::uint32_t slot = pool.Take(++owner);
      if (slot == kNoStatsSlot) break;
      ASSERT_LT(slot, slots.size());
      ASSERT_TRUE(held.insert(slot).second) << "slot " << slot << " handed out twice";
      ASSERT_EQ(slots[slot].seq.load(), owner);
    }
    ASSERT_EQ(held.size(), slots.size());
    // Give back every other slot (a different half each round), then the rest half the time.
    for (auto it = held.begin(); it != held.end();) {
      if ((*it + static_cast<std::uint32_t>(round)) % 2 == 0) {
        pool.GiveBack(*it);
        it = held.erase(it);
      } else {
        ++it;
      }
    }
    if (round % 2 == 0) {
      for (const std::uint32_t slot : held) pool.GiveBack(slot);
      held.clear();
    }
    ASSERT_EQ(pool.free_count(), slots.size() - held.size());
  }
}

}  // namespace
}  // namespace mqc
