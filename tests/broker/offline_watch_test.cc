// SPDX-License-Identifier: BSD-3-Clause
#include "broker/offline_watch.h"

#include <gtest/gtest.h>

#include <vector>

#include "../support/fake_broker.h"

namespace mqc {
namespace {

constexpr std::int64_t kSecond = 1000000000;

// Not wanted (2.0, another ACL source, strict mode): never registered, whatever is kept.
TEST(OfflineWatchTest, AWatchNotWantedNeverRegisters) {
  FakeBroker broker;
  OfflineWatch watch(&broker);
  watch.Start(false, 3, 0);
  watch.FirstOfflineSession();
  watch.Tick(3, kSecond);
  watch.Stop();
  EXPECT_TRUE(broker.acl_watch_calls.empty());
  EXPECT_FALSE(watch.on());
}

// On at the first session kept, from inside the call that keeps it; off after a minute with
// none at TICK, not before; on again at the next session.
TEST(OfflineWatchTest, OnAtTheFirstSessionOffAMinuteAfterTheLast) {
  FakeBroker broker;
  OfflineWatch watch(&broker);
  watch.Start(true, 0, 0);
  EXPECT_TRUE(broker.acl_watch_calls.empty());
  watch.FirstOfflineSession();
  EXPECT_TRUE(broker.acl_watched);
  watch.Tick(1, kSecond);
  watch.Tick(0, 2 * kSecond);  // the session resumed
  watch.Tick(0, 2 * kSecond + OfflineWatch::kReleaseAfterNs - 1);
  EXPECT_TRUE(broker.acl_watched);
  watch.Tick(0, 2 * kSecond + OfflineWatch::kReleaseAfterNs);
  EXPECT_FALSE(broker.acl_watched);
  EXPECT_FALSE(watch.on());
  watch.FirstOfflineSession();
  EXPECT_TRUE(broker.acl_watched);
  EXPECT_EQ(broker.acl_watch_calls, (std::vector<bool>{true, false, true}));
}

// A session kept again within the minute starts the minute over.
TEST(OfflineWatchTest, ASessionWithinTheMinuteKeepsItOn) {
  FakeBroker broker;
  OfflineWatch watch(&broker);
  watch.Start(true, 0, 0);
  watch.FirstOfflineSession();
  watch.Tick(0, kSecond);
  watch.FirstOfflineSession();
  watch.Tick(0, 50 * kSecond);
  watch.Tick(0, kSecond + OfflineWatch::kReleaseAfterNs);
  EXPECT_TRUE(broker.acl_watched);
  watch.Tick(0, 50 * kSecond + OfflineWatch::kReleaseAfterNs);
  EXPECT_FALSE(broker.acl_watched);
  EXPECT_EQ(broker.acl_watch_calls, (std::vector<bool>{true, false}));
}

// Sessions restored from the persistence file: on at the start.
TEST(OfflineWatchTest, SessionsKeptAtTheStartTurnItOnAtOnce) {
  FakeBroker broker;
  OfflineWatch watch(&broker);
  watch.Start(true, 2, 0);
  EXPECT_TRUE(broker.acl_watched);
  watch.Stop();
  EXPECT_FALSE(broker.acl_watched);
  EXPECT_EQ(broker.acl_watch_calls, (std::vector<bool>{true, false}));
}

// A registration the broker refuses is logged once and tried again at TICK while sessions are
// kept.
TEST(OfflineWatchTest, ARefusedRegistrationIsLoggedOnceAndTriedAgain) {
  FakeBroker broker;
  broker.watch_answer = 1;  // MOSQ_ERR_NOMEM
  OfflineWatch watch(&broker);
  watch.Start(true, 0, 0);
  watch.FirstOfflineSession();
  watch.Tick(1, kSecond);
  EXPECT_FALSE(watch.on());
  ASSERT_EQ(broker.log.size(), 1u);
  EXPECT_EQ(broker.log[0].first, LogLevel::kWarning);
  EXPECT_NE(broker.log[0].second.find("cannot register for ACL_CHECK (error 1)"),
            std::string::npos);
  broker.watch_answer = kBrokerSuccess;
  watch.Tick(1, 2 * kSecond);
  EXPECT_TRUE(watch.on());
  EXPECT_EQ(broker.acl_watch_calls, (std::vector<bool>{true, true, true}));
  EXPECT_EQ(broker.log.size(), 1u);
}

}  // namespace
}  // namespace mqc
