// SPDX-License-Identifier: BSD-3-Clause
// Companion::Step over a real shared region, the broker's side played by a BrokerLink on the
// test's thread: what a step does when events arrive, at a configuration reload, as closed
// connections age and as the statistics window turns, and how long it then lets the loop wait.
#include "companion/companion.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../support/connection_builder.h"
#include "../support/test_region.h"
#include "broker/broker_link.h"
#include "companion/ban_store.h"
#include "companion/broker_bans.h"
#include "companion/companion_link.h"
#include "companion/connection_changes.h"
#include "companion/connection_registry.h"
#include "companion/network_info.h"
#include "link/event_records.h"
#include "link/shared_region.h"

namespace mqc {
namespace {

using ::testing::ElementsAre;

constexpr std::int64_t kMinute = 60 * kTestSecond;  // kTestTime0 is a whole minute

class CompanionTest : public ::testing::Test {
 protected:
  CompanionTest() {
    region_ = TestRegion({1u << 16, 1u << 14, 0});
    link_ = std::make_unique<CompanionLink>(region_.get());
    broker_ = std::make_unique<BrokerLink>(region_.get());
    ConnectionRegistryOptions options;
    options.changes = &changes_;
    options.closed_ttl_ns = 5 * kTestSecond;
    registry_ = std::make_unique<ConnectionRegistry>(options);
    bans_ = std::make_unique<BanStore>("", [](const std::vector<Ban>&) { return true; });
    broker_bans_ = std::make_unique<BrokerBans>(bans_.get(), registry_.get(), link_.get(),
                                                &region_->header()->counters);
    NetworkInfoCacheOptions network_options;
    network_options.dump = [](const SockDiagOptions&) { return SockDiagResult{}; };
    network_ = std::make_unique<NetworkInfoCache>(network_options);
    CompanionParts parts;
    parts.link = link_.get();
    parts.registry = registry_.get();
    parts.changes = &changes_;
    parts.broker_bans = broker_bans_.get();
    parts.network = network_.get();
    parts.on_reload = [this] { ++reloads_; };
    parts.upkeep = [this] { ++upkeeps_; };
    companion_ = std::make_unique<Companion>(std::move(parts));
    link_->Begin();
  }

  // The broker's first resync, with connection 1 ("one") open.
  void Resync() {
    ASSERT_TRUE(broker_->Emit(EventType::kResyncBegin, ResyncEvent{1}));
    ASSERT_TRUE(broker_->Emit(TestConnectionRecord(1, "one")));
    ASSERT_TRUE(broker_->Emit(EventType::kResyncEnd, ResyncEvent{1}));
  }

  // The broker's record of connection 1 ("one") closing at `close_time_ns`.
  static CloseEvent CloseOfOne(std::int64_t close_time_ns) {
    CloseEvent close;
    close.seq = 1;
    close.close_time_ns = close_time_ns;
    return close;
  }

  // The companion's log lines that reached the broker since the last call.
  std::vector<std::string> BrokerLog() {
    std::vector<std::string> lines;
    broker_->DrainCommands([&](const LogCommand& log) { lines.push_back(log.text); },
                           [](const KickCommand&) {});
    return lines;
  }

  ConnectionChanges changes_;
  std::unique_ptr<SharedRegion> region_;
  std::unique_ptr<CompanionLink> link_;
  std::unique_ptr<BrokerLink> broker_;
  std::unique_ptr<ConnectionRegistry> registry_;
  std::unique_ptr<BanStore> bans_;
  std::unique_ptr<BrokerBans> broker_bans_;
  std::unique_ptr<NetworkInfoCache> network_;
  std::unique_ptr<Companion> companion_;
  int reloads_ = 0;
  int upkeeps_ = 0;
};

TEST(IdleWaitTest, TheEarliestDueBetweenAMillisecondAndASecond) {
  const std::int64_t none = NetworkInfoCache::kNoRefreshDue;
  EXPECT_EQ(IdleWaitNs(700 * kTestMilli, 30 * kTestSecond, none), 700 * kTestMilli);
  EXPECT_EQ(IdleWaitNs(kTestSecond, 5 * kTestMilli, none), 5 * kTestMilli);
  EXPECT_EQ(IdleWaitNs(kTestSecond, 30 * kTestSecond, 20 * kTestMilli), 20 * kTestMilli);
  EXPECT_EQ(IdleWaitNs(5 * kTestSecond, 30 * kTestSecond, none), kTestSecond);
  EXPECT_EQ(IdleWaitNs(0, 30 * kTestSecond, none), kTestMilli);
  EXPECT_EQ(IdleWaitNs(-kTestSecond, 30 * kTestSecond, 0), kTestMilli);
}

TEST(IdleWaitTest, TheNextWindowIsTheNextWholeMinute) {
  EXPECT_EQ(ConnectionRegistry::NextWindowNs(kTestTime0), kTestTime0 + kMinute);
  EXPECT_EQ(ConnectionRegistry::NextWindowNs(kTestTime0 + kMinute - 1), kTestTime0 + kMinute);
  EXPECT_EQ(ConnectionRegistry::NextWindowNs(kTestTime0 + 1), kTestTime0 + kMinute);
}

TEST_F(CompanionTest, EventsAreAppliedAndTheStepPausesForMore) {
  Resync();
  const Companion::Wake wake = companion_->Step(kTestTime0);
  EXPECT_EQ(wake.applied, 3u);
  EXPECT_TRUE(wake.busy);
  EXPECT_EQ(wake.wait_ns, Companion::kBusyPauseNs);
  EXPECT_TRUE(registry_->synced());
  EXPECT_EQ(registry_->open_count(), 1u);
  EXPECT_THAT(BrokerLog(),
              ElementsAre("mosquitto_connections: registry synchronised with the broker: 1 open "
                          "connections, 0 offline sessions"));
  const Companion::Wake idle = companion_->Step(kTestTime0 + kTestMilli);
  EXPECT_EQ(idle.applied, 0u);
  EXPECT_FALSE(idle.busy);
  EXPECT_TRUE(BrokerLog().empty()) << "said twice";
}

TEST_F(CompanionTest, ASettingsRecordRereadsTheSecretsOnce) {
  Resync();
  companion_->Step(kTestTime0);
  EXPECT_EQ(reloads_, 0);
  ASSERT_TRUE(broker_->Emit(SettingsEvent{}));
  companion_->Step(kTestTime0 + kTestMilli);
  EXPECT_EQ(reloads_, 1);
  companion_->Step(kTestTime0 + 2 * kTestMilli);
  EXPECT_EQ(reloads_, 1);
  ASSERT_TRUE(broker_->Emit(SettingsEvent{}));
  ASSERT_TRUE(broker_->Emit(SettingsEvent{}));
  companion_->Step(kTestTime0 + 3 * kTestMilli);
  EXPECT_EQ(reloads_, 2) << "one reread for the records one step read";
  EXPECT_EQ(upkeeps_, 4);
}

TEST_F(CompanionTest, IdleWaitsForTheExpiryTheWindowOrASecond) {
  Resync();
  companion_->Step(kTestTime0 + 10 * kTestSecond);  // expires, next expiry in 1 s
  Companion::Wake wake = companion_->Step(kTestTime0 + 10 * kTestSecond + 400 * kTestMilli);
  EXPECT_FALSE(wake.busy);
  EXPECT_EQ(wake.wait_ns, 600 * kTestMilli);  // the next expiry
  wake = companion_->Step(kTestTime0 + kMinute - 5 * kTestMilli);
  EXPECT_EQ(wake.wait_ns, 5 * kTestMilli);  // the window turns first
  wake = companion_->Step(kTestTime0 + kMinute);
  EXPECT_EQ(wake.wait_ns, kTestSecond - 5 * kTestMilli);  // the next expiry
  wake = companion_->Step(kTestTime0 + kMinute + kTestSecond - 5 * kTestMilli);
  EXPECT_EQ(wake.wait_ns, kTestSecond);  // nothing due sooner: a second at most
}

TEST_F(CompanionTest, ClosedConnectionsExpireAtTheirTimeAtMostOnceASecond) {
  Resync();
  ASSERT_TRUE(broker_->Emit(CloseOfOne(kTestTime0)));
  companion_->Step(kTestTime0);
  EXPECT_EQ(registry_->closed_count(), 1u);
  companion_->Step(kTestTime0 + 4 * kTestSecond);
  EXPECT_EQ(registry_->closed_count(), 1u);  // closed_ttl is 5 s
  companion_->Step(kTestTime0 + 5 * kTestSecond + 100 * kTestMilli);
  EXPECT_EQ(registry_->closed_count(), 0u);
}

TEST_F(CompanionTest, ExpiryWaitsForItsSecond) {
  Resync();
  ASSERT_TRUE(broker_->Emit(CloseOfOne(kTestTime0)));
  companion_->Step(kTestTime0 + 5 * kTestSecond - kTestMilli);  // expires nothing yet
  EXPECT_EQ(registry_->closed_count(), 1u);
  // Due now, but the last expiry ran less than a second ago.
  companion_->Step(kTestTime0 + 5 * kTestSecond + 500 * kTestMilli);
  EXPECT_EQ(registry_->closed_count(), 1u);
  companion_->Step(kTestTime0 + 6 * kTestSecond);
  EXPECT_EQ(registry_->closed_count(), 0u);
}

TEST_F(CompanionTest, TheWindowTurnsAtTheMinute) {
  Resync();
  companion_->Step(kTestTime0 + kTestSecond);                    // the clock starts
  CloseEvent close = CloseOfOne(kTestTime0 + 58 * kTestSecond);  // kept 5 s: past the minute
  close.totals.publish_count = 7;
  ASSERT_TRUE(broker_->Emit(close));
  companion_->Step(kTestTime0 + 58 * kTestSecond);
  const auto recent = [this] {
    for (const Connection& c : registry_->Snapshot()) {
      if (c.seq == 1) return c.recent_statistics->publish_count;
    }
    return std::uint64_t{999};
  };
  EXPECT_EQ(recent(), 0u);
  companion_->Step(kTestTime0 + kMinute - kTestMilli);
  EXPECT_EQ(recent(), 0u);
  companion_->Step(kTestTime0 + kMinute);
  EXPECT_EQ(recent(), 7u);  // the minute it closed in has ended
}

}  // namespace
}  // namespace mqc
