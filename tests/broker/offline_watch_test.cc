// SPDX-License-Identifier: BSD-3-Clause
#include "broker/offline_watch.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../support/fake_broker.h"

namespace mqc {
namespace {

constexpr std::int64_t kSecond = 1000000000;

class OfflineWatchTest : public ::testing::Test {
 protected:
  FakeBroker broker_;
  OfflineWatch watch_{&broker_};
};

// Not wanted (2.0, another ACL source, strict mode): never registered, whatever is kept.
TEST_F(OfflineWatchTest, AWatchNotWantedNeverRegisters) {
  watch_.Start(false, 3, 0);
  watch_.FirstOfflineSession();
  watch_.Tick(3, kSecond);
  watch_.Stop();
  EXPECT_TRUE(broker_.acl_watch_calls.empty());
  EXPECT_FALSE(watch_.on());
}

// On at the first session kept, from inside the call that keeps it; off after a minute with
// none at TICK, not before; on again at the next session.
TEST_F(OfflineWatchTest, OnAtTheFirstSessionOffAMinuteAfterTheLast) {
  watch_.Start(true, 0, 0);
  EXPECT_TRUE(broker_.acl_watch_calls.empty());
  watch_.FirstOfflineSession();
  EXPECT_TRUE(broker_.acl_watched);
  watch_.Tick(1, kSecond);
  watch_.Tick(0, 2 * kSecond);  // the session resumed
  watch_.Tick(0, 2 * kSecond + OfflineWatch::kReleaseAfterNs - 1);
  EXPECT_TRUE(broker_.acl_watched);
  watch_.Tick(0, 2 * kSecond + OfflineWatch::kReleaseAfterNs);
  EXPECT_FALSE(broker_.acl_watched);
  EXPECT_FALSE(watch_.on());
  watch_.FirstOfflineSession();
  EXPECT_TRUE(broker_.acl_watched);
  EXPECT_EQ(broker_.acl_watch_calls, (std::vector<bool>{true, false, true}));
}

// A session kept again within the minute starts the minute over.
TEST_F(OfflineWatchTest, ASessionWithinTheMinuteKeepsItOn) {
  watch_.Start(true, 0, 0);
  watch_.FirstOfflineSession();
  watch_.Tick(0, kSecond);
  watch_.FirstOfflineSession();
  watch_.Tick(0, 50 * kSecond);
  watch_.Tick(0, kSecond + OfflineWatch::kReleaseAfterNs);
  EXPECT_TRUE(broker_.acl_watched);
  watch_.Tick(0, 50 * kSecond + OfflineWatch::kReleaseAfterNs);
  EXPECT_FALSE(broker_.acl_watched);
  EXPECT_EQ(broker_.acl_watch_calls, (std::vector<bool>{true, false}));
}

// Sessions restored from the persistence file: on at the start.
TEST_F(OfflineWatchTest, SessionsKeptAtTheStartTurnItOnAtOnce) {
  watch_.Start(true, 2, 0);
  EXPECT_TRUE(broker_.acl_watched);
  watch_.Stop();
  EXPECT_FALSE(broker_.acl_watched);
  EXPECT_EQ(broker_.acl_watch_calls, (std::vector<bool>{true, false}));
}

// A registration the broker refuses is logged once and tried again at TICK while sessions are
// kept.
TEST_F(OfflineWatchTest, ARefusedRegistrationIsLoggedOnceAndTriedAgain) {
  broker_.watch_answer = 1;  // MOSQ_ERR_NOMEM
  watch_.Start(true, 0, 0);
  watch_.FirstOfflineSession();
  watch_.Tick(1, kSecond);
  EXPECT_FALSE(watch_.on());
  ASSERT_EQ(broker_.log.size(), 1u);
  EXPECT_EQ(broker_.log[0].first, LogLevel::kWarning);
  EXPECT_NE(broker_.log[0].second.find("cannot register for ACL_CHECK (error 1)"),
            std::string::npos);
  broker_.watch_answer = kBrokerSuccess;
  watch_.Tick(1, 2 * kSecond);
  EXPECT_TRUE(watch_.on());
  EXPECT_EQ(broker_.acl_watch_calls, (std::vector<bool>{true, true, true}));
  EXPECT_EQ(broker_.log.size(), 1u);
}

}  // namespace
}  // namespace mqc
