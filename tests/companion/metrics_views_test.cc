// SPDX-License-Identifier: BSD-3-Clause
// The views of /metrics over a real ConnectionRegistry with statistics slots: subscriptions by
// pattern, and the top talkers of the previous minute (ranking, ties, a client id's connections
// summed). The registry's own tests use TopClients too, as a window onto its minute.
#include "companion/metrics_views.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../support/connection_builder.h"
#include "../support/stats_slots.h"
#include "companion/companion_link.h"
#include "companion/connection_registry.h"
#include "link/event_records.h"
#include "link/shared_region.h"

namespace mqc {
namespace {

constexpr std::int64_t kMinute = 60'000'000'000;
using TopList = std::vector<std::pair<std::string, std::uint64_t>>;

class MetricsViewsTest : public ::testing::Test {
 protected:
  MetricsViewsTest() {
    options_.stats = slots_.view();
    registry_ = std::make_unique<ConnectionRegistry>(options_);
  }
  template <typename Event>
  void Apply(EventType type, const Event& event, std::int64_t now) {
    std::string bytes;
    Encode(event, &bytes);
    ASSERT_TRUE(ApplyEventRecord(registry_.get(), type, bytes, now));
  }
  // Connection `seq` of `client_id`, opened at `now` with statistics slot `slot` (zeroed).
  void Open(std::uint64_t seq, std::uint32_t slot, std::int64_t now, const std::string& client_id) {
    AssignStatsSlot(slots_[slot], slots_.rare(slot), seq);
    ConnectionEvent e = TestConnectionRecord(seq, client_id);
    e.stats_slot = slot;
    e.open_time_ns = now;
    Apply(EventType::kConnection, e, now);
  }
  void Close(std::uint64_t seq, std::uint32_t slot, std::int64_t now) {
    Apply(EventType::kClose,
          CloseEvent{seq, now, CloseReason::kClientDisconnect, LoadStatsSlot(slots_[slot])}, now);
  }
  void Subscribe(std::uint64_t seq, const std::string& filter) {
    SubscriptionEvent e;
    e.seq = seq;
    e.filter = filter;
    Apply(EventType::kSubscribe, e, 1);
  }
  // client id -> publishes plus deliveries of the top clients, in their order.
  TopList Top(std::size_t n) {
    TopList top;
    for (const TopClient& client : TopClients(*registry_, n)) {
      top.emplace_back(client.client_id, client.recent.publish_count + client.recent.deliver_count);
    }
    return top;
  }

  TestStatsSlots slots_ = TestStatsSlots(4);
  ConnectionRegistryOptions options_;
  std::unique_ptr<ConnectionRegistry> registry_;
};

TEST_F(MetricsViewsTest, SubscriptionsByPatternCountOpenConnectionsAndOfflineSessions) {
  Open(1, 0, 1, "online");
  Subscribe(1, "events/a");
  Subscribe(1, "queues/jobs");
  OfflineSessionEvent offline;
  offline.seq = 2;
  offline.uid[0] = 2;
  offline.client_id = "sleeper";
  Apply(EventType::kOfflineSession, offline, 1);
  Subscribe(2, "events/b");
  Open(3, 1, 1, "gone");
  Subscribe(3, "events/c");
  Close(3, 1, 2);
  const auto counts = SubscriptionsByPattern(*registry_);
  EXPECT_EQ(counts[static_cast<std::size_t>(Pattern::kEvents)], 2u);  // not the closed one's
  EXPECT_EQ(counts[static_cast<std::size_t>(Pattern::kQueues)], 1u);
  EXPECT_EQ(counts[static_cast<std::size_t>(Pattern::kNone)], 0u);
}

TEST_F(MetricsViewsTest, TopClientsRankThePreviousMinuteAndLeaveOutTheRest) {
  for (std::uint32_t i = 0; i < 4; ++i)
    Open(i + 1, i, 10 * kMinute + 5, "c" + std::to_string(i + 1));
  registry_->RollStatisticsWindow(10 * kMinute + 6);
  Bump(slots_[0].publish_count, 3);  // c1: 3 + 4
  Bump(slots_[0].deliver_count, 4);
  Bump(slots_[1].deliver_count, 9);  // c2: 9
  Bump(slots_[2].publish_count, 7);  // c3: 7, ties with c1: the smaller id first
  EXPECT_TRUE(Top(3).empty());       // the minute is not over: nothing known yet
  registry_->RollStatisticsWindow(11 * kMinute);
  EXPECT_EQ(Top(3), (TopList{{"c2", 9}, {"c1", 7}, {"c3", 7}}));
  const auto top = TopClients(*registry_, 3);
  EXPECT_EQ(top[1].recent.publish_count, 3u);
  EXPECT_EQ(top[1].recent.deliver_count, 4u);
  EXPECT_EQ(Top(1), (TopList{{"c2", 9}}));
  EXPECT_TRUE(Top(0).empty());
  EXPECT_EQ(Top(100).size(), 3u);  // c4 (no traffic) is never listed
  // The next minute c4 talks and c2 does not: c2 leaves the list.
  Bump(slots_[3].publish_count, 50);
  Bump(slots_[0].publish_count, 1);
  Bump(slots_[2].publish_count, 1);
  registry_->RollStatisticsWindow(12 * kMinute);
  EXPECT_EQ(Top(2), (TopList{{"c4", 50}, {"c1", 1}}));
  EXPECT_EQ(Top(100).size(), 3u);
}

TEST_F(MetricsViewsTest, TopClientsSumTheConnectionsOfOneClientIdInTheMinute) {
  registry_->RollStatisticsWindow(10 * kMinute + 1);
  std::int64_t t = 10 * kMinute + 1'000'000'000;
  for (std::uint64_t seq = 1; seq <= 3; ++seq, t += 1'000'000'000) {
    Open(seq, 0, t, "device");
    Bump(slots_[0].publish_count, 10 * seq);  // 10, 20, 30
    if (seq < 3) Close(seq, 0, t + 1);
  }
  Open(4, 1, t, "other");
  Bump(slots_[1].publish_count, 45);
  Open(5, 2, t, "quiet");
  Bump(slots_[2].deliver_count, 1);
  Close(5, 2, t + 1);
  registry_->RollStatisticsWindow(11 * kMinute);
  // Without the two closed ones "device" would lose to "other": the sum decides.
  EXPECT_EQ(Top(5), (TopList{{"device", 60}, {"other", 45}, {"quiet", 1}}));
  EXPECT_EQ(Top(2), (TopList{{"device", 60}, {"other", 45}}));
  EXPECT_EQ(Top(1), (TopList{{"device", 60}}));
  EXPECT_EQ(TopClients(*registry_, 1)[0].recent.publish_count, 60u);
}

}  // namespace
}  // namespace mqc
