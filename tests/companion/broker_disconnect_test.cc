// SPDX-License-Identifier: BSD-3-Clause
// Tests for DisconnectThroughBroker (broker_disconnect.h) over a real shared region: the broker's
// side is played by a thread that reads the commands ring as the broker thread does (BrokerLink)
// and closes the connection in the registry. Covered: by client id and by uid, closed and unknown
// connections (not found, no kick queued), the kick's caller and token line, a reconnect under
// the same client id during the wait, a full commands ring, and a broker that never closes.
#include "companion/broker_disconnect.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../support/connection_builder.h"
#include "../support/test_region.h"
#include "broker/broker_link.h"
#include "companion/companion_link.h"
#include "companion/connection_registry.h"
#include "link/event_records.h"
#include "link/shared_region.h"
#include "link/status.h"

namespace mqc {
namespace {

using ::testing::HasSubstr;

class BrokerDisconnectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    region_ = TestRegion({4096, 4096, 0});
    ASSERT_NE(region_, nullptr);
    companion_ = std::make_unique<CompanionLink>(region_.get());
    broker_ = std::make_unique<BrokerLink>(region_.get());
    Apply(EventType::kResyncBegin, ResyncEvent{1});
    Apply(EventType::kResyncEnd, ResyncEvent{1});
    ASSERT_TRUE(registry_.synced());
  }
  void TearDown() override {
    if (broker_thread_.joinable()) broker_thread_.join();
  }
  template <typename Event>
  void Apply(EventType type, const Event& event) {
    std::string bytes;
    Encode(event, &bytes);
    ASSERT_TRUE(ApplyEventRecord(&registry_, type, bytes, 10));
  }
  std::string UidOf(std::uint64_t seq) {
    for (const Connection& c : registry_.Snapshot()) {
      if (c.seq == seq) return c.uid;
    }
    ADD_FAILURE() << "no connection " << seq;
    return "";
  }
  // The broker's side: at its "TICKs" (every millisecond, for at most 3 s) it reads the commands
  // ring; at the first kick it records it and closes connection `seq` (as the broker's close
  // event would), then opens `then_open` when that has a seq.
  void BrokerClosesOnKick(std::uint64_t seq, ConnectionEvent then_open = {}) {
    broker_thread_ = std::thread([this, seq, then_open] {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
      bool kicked = false;
      while (!kicked && std::chrono::steady_clock::now() < until) {
        broker_->DrainCommands([](const LogCommand&) {},
                               [&](const KickCommand& kick) {
                                 kicks_.push_back(kick);
                                 kicked = true;
                               });
        if (!kicked) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (!kicked) return;
      CloseEvent close;
      close.seq = seq;
      close.close_time_ns = 20;
      close.reason = CloseReason::kKicked;
      Apply(EventType::kClose, close);
      if (then_open.seq != 0) Apply(EventType::kConnection, then_open);
    });
  }
  std::size_t QueuedKicks() {
    std::size_t kicks = 0;
    broker_->DrainCommands([](const LogCommand&) {}, [&](const KickCommand&) { ++kicks; });
    return kicks;
  }

  std::unique_ptr<SharedRegion> region_;
  std::unique_ptr<CompanionLink> companion_;
  std::unique_ptr<BrokerLink> broker_;
  ConnectionRegistry registry_{ConnectionRegistryOptions{}};
  std::thread broker_thread_;
  std::vector<KickCommand> kicks_;  // the broker thread's until joined
  const Caller caller_{"127.0.0.1:41234", "admin token file line 3", ""};
};

TEST_F(BrokerDisconnectTest, AnOpenConnectionIsKickedByClientIdAndTheAnswerWaitsForItsClose) {
  Apply(EventType::kConnection, TestConnectionRecord(1, "sensor-1"));
  const std::string uid = UidOf(1);
  BrokerClosesOnKick(1);
  DisconnectTarget target;
  target.client_id = "sensor-1";
  const DisconnectOutcome outcome =
      DisconnectThroughBroker(registry_, companion_.get(), target, caller_);
  broker_thread_.join();
  EXPECT_TRUE(outcome.status.ok()) << outcome.status.message();
  EXPECT_EQ(outcome.client_id, "sensor-1");
  EXPECT_EQ(outcome.uid, uid);
  ASSERT_EQ(kicks_.size(), 1u);
  EXPECT_EQ(kicks_[0].client_id, "sensor-1");
  EXPECT_EQ(kicks_[0].caller, "127.0.0.1:41234");
  EXPECT_EQ(kicks_[0].token_line, "admin token file line 3");
  EXPECT_TRUE(kicks_[0].with_will);
  // The answer came once the registry showed it closed.
  ASSERT_EQ(registry_.Snapshot().size(), 1u);
  EXPECT_EQ(registry_.Snapshot()[0].state, ConnectionState::kClosed);
}

// A uid names one connection; the kick goes out by its client id (the broker knows no uids).
TEST_F(BrokerDisconnectTest, AConnectionIsFoundByItsUid) {
  Apply(EventType::kConnection, TestConnectionRecord(1, "sensor-1"));
  Apply(EventType::kConnection, TestConnectionRecord(2, "sensor-2"));
  DisconnectTarget target;
  target.uid = UidOf(2);
  BrokerClosesOnKick(2);
  const DisconnectOutcome outcome =
      DisconnectThroughBroker(registry_, companion_.get(), target, caller_);
  broker_thread_.join();
  EXPECT_TRUE(outcome.status.ok()) << outcome.status.message();
  EXPECT_EQ(outcome.client_id, "sensor-2");
  EXPECT_EQ(outcome.uid, target.uid);
  ASSERT_EQ(kicks_.size(), 1u);
  EXPECT_EQ(kicks_[0].client_id, "sensor-2");
}

// preventWill reaches the broker's kick as with_will false.
TEST_F(BrokerDisconnectTest, PreventWillKicksWithoutTheWill) {
  Apply(EventType::kConnection, TestConnectionRecord(1, "sensor-1"));
  BrokerClosesOnKick(1);
  DisconnectTarget target;
  target.client_id = "sensor-1";
  target.prevent_will = true;
  const DisconnectOutcome outcome =
      DisconnectThroughBroker(registry_, companion_.get(), target, caller_);
  broker_thread_.join();
  EXPECT_TRUE(outcome.status.ok()) << outcome.status.message();
  ASSERT_EQ(kicks_.size(), 1u);
  EXPECT_FALSE(kicks_[0].with_will);
}

// The client reconnecting under its id while the companion waits is a new connection: the one
// asked for is closed, and the answer does not wait for the new one.
TEST_F(BrokerDisconnectTest, AReconnectUnderTheSameClientIdEndsTheWait) {
  Apply(EventType::kConnection, TestConnectionRecord(1, "sensor-1"));
  const std::string uid = UidOf(1);
  BrokerClosesOnKick(1, TestConnectionRecord(2, "sensor-1"));
  DisconnectTarget target;
  target.client_id = "sensor-1";
  const auto start = std::chrono::steady_clock::now();
  const DisconnectOutcome outcome =
      DisconnectThroughBroker(registry_, companion_.get(), target, caller_);
  broker_thread_.join();
  EXPECT_TRUE(outcome.status.ok()) << outcome.status.message();
  EXPECT_EQ(outcome.uid, uid);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
}

TEST_F(BrokerDisconnectTest, NoOpenConnectionIsNotFoundAndNoKickIsQueued) {
  Apply(EventType::kConnection, TestConnectionRecord(1, "gone"));
  const std::string closed_uid = UidOf(1);
  Apply(EventType::kClose, CloseEvent{1, 20, CloseReason::kClientDisconnect, {}});
  DisconnectTarget by_id;
  by_id.client_id = "gone";
  DisconnectOutcome outcome = DisconnectThroughBroker(registry_, companion_.get(), by_id, caller_);
  EXPECT_EQ(outcome.status.code(), StatusCode::kNotFound);
  EXPECT_THAT(outcome.status.message(), HasSubstr("no open connection with client id"));
  EXPECT_THAT(outcome.status.message(), HasSubstr("gone"));
  by_id.client_id = "never-seen";
  outcome = DisconnectThroughBroker(registry_, companion_.get(), by_id, caller_);
  EXPECT_EQ(outcome.status.code(), StatusCode::kNotFound);
  DisconnectTarget by_uid;
  by_uid.uid = closed_uid;
  outcome = DisconnectThroughBroker(registry_, companion_.get(), by_uid, caller_);
  EXPECT_EQ(outcome.status.code(), StatusCode::kNotFound);
  EXPECT_THAT(outcome.status.message(), HasSubstr("no open connection with uid"));
  EXPECT_EQ(outcome.client_id, "");
  EXPECT_EQ(QueuedKicks(), 0u);
}

TEST_F(BrokerDisconnectTest, AFullCommandsRingIsResourceExhausted) {
  Apply(EventType::kConnection, TestConnectionRecord(1, "sensor-1"));
  KickCommand filler;  // the same size as the kick to come: the ring has no room left for it
  filler.client_id = "sensor-1";
  filler.caller = caller_.address;
  filler.token_line = caller_.token_line;
  int queued = 0;
  while (queued < 1000 && companion_->RequestKick(filler)) ++queued;
  ASSERT_LT(queued, 1000) << "the commands ring never filled";
  DisconnectTarget target;
  target.client_id = "sensor-1";
  const DisconnectOutcome outcome =
      DisconnectThroughBroker(registry_, companion_.get(), target, caller_);
  EXPECT_EQ(outcome.status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(outcome.client_id, "sensor-1");
  EXPECT_EQ(QueuedKicks(), static_cast<std::size_t>(queued));
}

// A broker that does not close the connection: after 5 s the answer is deadline_exceeded (the
// kick stays queued and may still act).
TEST_F(BrokerDisconnectTest, ABrokerThatNeverClosesIsDeadlineExceededAfterFiveSeconds) {
  Apply(EventType::kConnection, TestConnectionRecord(1, "stubborn"));
  DisconnectTarget target;
  target.client_id = "stubborn";
  const auto start = std::chrono::steady_clock::now();
  const DisconnectOutcome outcome =
      DisconnectThroughBroker(registry_, companion_.get(), target, caller_);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(outcome.status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_GE(waited, std::chrono::seconds(5));
  EXPECT_LT(waited, std::chrono::seconds(8));
  EXPECT_EQ(QueuedKicks(), 1u);
}

}  // namespace
}  // namespace mqc
