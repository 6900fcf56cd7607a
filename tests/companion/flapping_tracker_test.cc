// SPDX-License-Identifier: BSD-3-Clause
// Tests for FlappingTracker (flapping_tracker.h): the minute and hour windows slide by the
// second and the minute, takeovers count apart from connects, the two latest distinct addresses
// are kept, and the tracker stays within its cap by dropping the least recently active id.
#include "companion/flapping_tracker.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace mqc {
namespace {

constexpr std::int64_t kSecond = 1000000000;
constexpr std::int64_t kStart = 1764612000 * kSecond;  // a whole minute

std::int64_t At(std::int64_t seconds) { return kStart + seconds * kSecond; }

TEST(FlappingTrackerTest, ConnectsCountInTheLastMinuteAndHour) {
  FlappingTracker tracker;
  for (int s = 0; s < 30; ++s) tracker.Connected("flap", "10.0.0.1", At(s * 2));  // every 2 s
  FlappingCounts counts = tracker.Read("flap", At(59));
  EXPECT_EQ(counts.connects_last_minute, 30u);
  EXPECT_EQ(counts.connects_last_hour, 30u);
  EXPECT_EQ(counts.takeovers_last_minute, 0u);
  // 70 s on, the connects of seconds 0 to 10 left the minute (seconds 11 to 70 remain).
  counts = tracker.Read("flap", At(70));
  EXPECT_EQ(counts.connects_last_minute, 24u);  // 12, 14, ..., 58
  EXPECT_EQ(counts.connects_last_hour, 30u);
  // An hour on, the minute the connects were in has left the hour.
  counts = tracker.Read("flap", At(3600));
  EXPECT_EQ(counts.connects_last_minute, 0u);
  EXPECT_EQ(counts.connects_last_hour, 0u);
  EXPECT_EQ(tracker.Read("never", At(0)).connects_last_minute, 0u);
}

// The activity charts' level: ids with kFlappingConnects connects, or a takeover, in the last
// minute (the console's badge); quiet ids and ids flapping longer ago are not counted.
TEST(FlappingTrackerTest, FlappingNowCountsTheIdsOverTheBadgesThreshold) {
  FlappingTracker tracker;
  for (int n = 0; n < 3; ++n) tracker.Connected("crash-loop", "10.0.0.1", At(n));
  tracker.Connected("once", "10.0.0.2", At(1));
  tracker.Connected("twice", "10.0.0.3", At(1));
  tracker.Connected("twice", "10.0.0.3", At(2));
  tracker.Connected("pong", "10.0.0.4", At(3));
  tracker.TakenOver("pong", At(4));
  EXPECT_EQ(tracker.FlappingNow(At(5)), 2u);   // crash-loop and pong
  EXPECT_EQ(tracker.FlappingNow(At(61)), 1u);  // crash-loop's first connects left the minute
  EXPECT_EQ(tracker.FlappingNow(At(65)), 0u);
}

TEST(FlappingTrackerTest, ANewEventAfterALongPauseForgetsTheOldSlots) {
  FlappingTracker tracker;
  tracker.Connected("c", "a", At(0));
  tracker.Connected("c", "a", At(0));
  tracker.Connected("c", "a", At(61));  // the slot of second 1 is reused 60 s later
  FlappingCounts counts = tracker.Read("c", At(61));
  EXPECT_EQ(counts.connects_last_minute, 1u);
  EXPECT_EQ(counts.connects_last_hour, 3u);
  tracker.Connected("c", "a", At(2 * 3600));  // every ring slot from before is stale
  counts = tracker.Read("c", At(2 * 3600));
  EXPECT_EQ(counts.connects_last_minute, 1u);
  EXPECT_EQ(counts.connects_last_hour, 1u);
  // A clock step back counts in the latest second, not in a slot of the past.
  tracker.Connected("c", "a", At(100));
  EXPECT_EQ(tracker.Read("c", At(2 * 3600)).connects_last_minute, 2u);
}

TEST(FlappingTrackerTest, APingPongShowsTakeoversAndTheTwoAddresses) {
  FlappingTracker tracker;
  for (int turn = 0; turn < 6; ++turn) {
    tracker.Connected("shared", turn % 2 == 0 ? "10.0.0.1" : "10.0.0.2", At(turn));
    if (turn > 0) tracker.TakenOver("shared", At(turn));
  }
  const FlappingCounts counts = tracker.Read("shared", At(10));
  EXPECT_EQ(counts.connects_last_minute, 6u);
  EXPECT_EQ(counts.takeovers_last_minute, 5u);
  EXPECT_EQ(counts.takeovers_last_hour, 5u);
  EXPECT_EQ(counts.addresses[0], "10.0.0.2");  // the latest first
  EXPECT_EQ(counts.addresses[1], "10.0.0.1");
  EXPECT_TRUE(counts.ping_pong());
  EXPECT_EQ(tracker.takeovers_total(), 5u);
  // One device reconnecting from one address is no ping-pong, even with takeovers.
  tracker.Connected("alone", "10.0.0.9", At(0));
  tracker.Connected("alone", "10.0.0.9", At(1));
  tracker.TakenOver("alone", At(1));
  const FlappingCounts alone = tracker.Read("alone", At(2));
  EXPECT_EQ(alone.addresses[1], "");
  EXPECT_FALSE(alone.ping_pong());
}

TEST(FlappingTrackerTest, TheCapDropsTheLeastRecentlyActiveId) {
  FlappingTracker tracker(3);
  tracker.Connected("a", "1", At(0));
  tracker.Connected("b", "1", At(1));
  tracker.Connected("c", "1", At(2));
  tracker.Connected("a", "1", At(3));  // a is active again: b is now the idlest
  tracker.Connected("d", "1", At(4));
  EXPECT_EQ(tracker.size(), 3u);
  EXPECT_EQ(tracker.dropped(), 1u);
  EXPECT_EQ(tracker.Read("b", At(5)).connects_last_minute, 0u);
  EXPECT_EQ(tracker.Read("a", At(5)).connects_last_minute, 2u);
  EXPECT_EQ(tracker.Read("c", At(5)).connects_last_minute, 1u);
  EXPECT_EQ(tracker.Read("d", At(5)).connects_last_minute, 1u);
  // Many ids never grow it past the cap.
  for (int i = 0; i < 1000; ++i) tracker.Connected("id-" + std::to_string(i), "1", At(6));
  EXPECT_EQ(tracker.size(), 3u);
  EXPECT_EQ(tracker.dropped(), 1001u);
}

// The automatic ban's window: to the second up to a minute, whole minutes beyond.
TEST(FlappingTrackerTest, ConnectsWithinAWindow) {
  FlappingTracker tracker;
  for (int s = 0; s < 10; ++s) tracker.Connected("c", "a", At(s));  // seconds 0 to 9
  EXPECT_EQ(tracker.ConnectsWithin("c", 5, At(9)), 5u);             // seconds 5 to 9
  EXPECT_EQ(tracker.ConnectsWithin("c", 60, At(9)), 10u);
  EXPECT_EQ(tracker.ConnectsWithin("c", 1, At(20)), 0u);
  tracker.Connected("c", "a", At(150));  // minute 2
  EXPECT_EQ(tracker.ConnectsWithin("c", 60, At(150)), 1u);
  EXPECT_EQ(tracker.ConnectsWithin("c", 120, At(150)), 1u);   // minutes 1 and 2
  EXPECT_EQ(tracker.ConnectsWithin("c", 180, At(150)), 11u);  // minutes 0 to 2
  EXPECT_EQ(tracker.ConnectsWithin("c", 3600, At(150)), 11u);
  EXPECT_EQ(tracker.ConnectsWithin("nobody", 60, At(0)), 0u);
}

TEST(FlappingTrackerTest, CountersSaturateInsteadOfWrapping) {
  FlappingTracker tracker;
  for (int i = 0; i < 70000; ++i) tracker.Connected("storm", "a", At(0));
  EXPECT_EQ(tracker.Read("storm", At(0)).connects_last_minute, 65535u);
}

}  // namespace
}  // namespace mqc
