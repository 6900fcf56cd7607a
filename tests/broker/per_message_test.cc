// SPDX-License-Identifier: BSD-3-Clause
// The broker thread's per-message path allocates nothing: the plugin's own handlers
// (BrokerEvents, broker/broker_events.h) for every delivery and publish, driven through a
// FakeBroker, counted with a replaced global operator new that counts only while a test asks it
// to. The events ring's writer (BrokerLink) allocates nothing either, once warm.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "../support/fake_broker.h"
#include "../support/laid_out_client.h"
#include "../support/matrix_brokers.h"
#include "../support/null_sink.h"
#include "broker_core_fixture.h"
#include "broker/broker_core.h"
#include "broker/broker_events.h"
#include "broker/broker_link.h"
#include "broker/queue_drops.h"
#include "broker/stats_slot_pool.h"
#include "broker/subscription_list.h"
#include "link/shared_region.h"

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace mqc {
namespace {

// The plugin's state as the broker sees it on 2.0 without another ACL source (the plugin
// decides ACLs) or on 2.1, with many clients, so that the lookups walk grown, colliding probe
// chains, and some clients without a statistics slot.
class PerMessageTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    broker_ = GetParam() ? FakeBroker::Api21() : FakeBroker::Api20();
    auto core = CreateTestCore(&broker_, &sink_, &slots_, &counters_);
    ASSERT_TRUE(core.ok()) << core.status().message();
    core_ = std::move(core).value();
    core_->settings().decide_acl = true;
    core_->settings().watch_acl_21 = GetParam();
    clients_.resize(1000);
    BrokerEvents<FakeBroker> events(*core_);
    for (std::size_t i = 0; i < clients_.size(); ++i) {
      clients_[i] = Client("client-" + std::to_string(i));
      events.OnBasicAuth(clients_[i].handle());
      if (GetParam()) events.OnConnect21(clients_[i].handle());
    }
    core_->connects().Settle();
  }

  NullSink sink_;
  TestStatsSlots slots_ = TestStatsSlots(100);
  BrokerCounters counters_;
  FakeBroker broker_;
  std::unique_ptr<BrokerCore> core_;
  std::vector<FakeClient> clients_;
};

// Per publish: the ACL WRITE check (2.0) and MESSAGE; per delivery: the ACL READ check (2.0) or
// MESSAGE_OUT (2.1, with 2.1's ACL READ check too); on the topics of every pattern, the first
// time (classified) and again (cached), so that the fast paths and the general ones both run.
TEST_P(PerMessageTest, DeliveriesAndPublishesAllocateNothing) {
  const bool api_2_1 = GetParam();
  ASSERT_EQ(core_->sessions().open_count(), clients_.size());
  // Two subscribers with a statistics slot, two without, and an offline session the table
  // never saw (no socket).
  FakeClient offline = Client("offline");
  offline.socket = -1;
  std::vector<FakeClient*> subscribers = {&clients_[1], &clients_[50], &clients_[500],
                                          &clients_[999], &offline};
  FakeClient* publisher = &clients_[0];
  const std::string long_topic = "events/" + std::string(40, 'x');
  const char* topics[] = {"events/a", "store/b",     "queues/c",         "site/d",
                          "$SYS/x",   "events//bad", long_topic.c_str(), "events/a/much/longer"};

  BrokerEvents<FakeBroker> events(*core_);
  std::uint64_t deliveries = 0;
  allocations = 0;
  counting = true;
  for (int round = 0; round < 3; ++round) {
    for (const char* topic : topics) {
      if (!api_2_1) {
        EXPECT_EQ(events.OnAclCheck(AclCheck(publisher, kAclWrite, topic)), kBrokerSuccess);
      }
      EXPECT_EQ(events.OnMessage(Message(publisher, topic)), kBrokerSuccess);
      for (FakeClient* subscriber : subscribers) {
        if (api_2_1) {
          EXPECT_EQ(events.OnAclCheck21(AclCheck(subscriber, kAclRead, topic)),
                    kBrokerErrPluginIgnore);
          if (subscriber->socket >= 0) {
            EXPECT_EQ(events.OnMessageOut(Message(subscriber, topic)), kBrokerSuccess);
          }
        } else {
          EXPECT_EQ(events.OnAclCheck(AclCheck(subscriber, kAclRead, topic)), kBrokerSuccess);
        }
        ++deliveries;
      }
    }
  }
  counting = false;

  EXPECT_EQ(allocations.load(), 0);
  // Every delivery to an open client is counted as delivered; the offline session's QoS 0
  // copies are thrown away by the broker (counted as dropped, not delivered).
  EXPECT_EQ(counters_.delivered_messages.load(), deliveries - 24);
  EXPECT_EQ(counters_.received_messages.load(), 24u);
  EXPECT_EQ(slots_[1].deliver_count.load(), 24u);
  EXPECT_TRUE(broker_.later_acl_checks.empty());
}

// 2.0 with another ACL source (asked through the nested check): every PUBLISH's WRITE check asks
// it, and a refused one is counted with its topic copied into the slot's fixed field (a long
// one cut): neither allocates.
TEST_P(PerMessageTest, RefusedPublishesAllocateNothing) {
  if (GetParam()) GTEST_SKIP() << "2.1 registers no ACL check where another source decides";
  broker_ = FakeBroker::Api20(/*acl_check=*/true);
  core_->settings().decide_acl = false;
  core_->SetDenialsShown();
  FakeClient* publisher = &clients_[0];
  const std::string long_topic = "denied/" + std::string(300, 'x');
  const char* topics[] = {"denied/a", long_topic.c_str(), "allowed/b"};
  broker_.later_acl_checks.reserve(16);  // the fake's own record of the checks
  BrokerEvents<FakeBroker> events(*core_);
  // The first check looks for the broker's chain once and logs what it found: not per message.
  broker_.later_acl_answer = kBrokerSuccess;
  events.OnAclCheck(AclCheck(publisher, kAclWrite, "warm/up"));
  allocations = 0;
  counting = true;
  for (int round = 0; round < 3; ++round) {
    for (const char* topic : topics) {
      broker_.later_acl_answer =
          topic[0] == 'd' ? kBrokerErrAclDenied : kBrokerSuccess;
      events.OnAclCheck(AclCheck(publisher, kAclWrite, topic));
    }
  }
  counting = false;
  EXPECT_EQ(allocations.load(), 0);
  EXPECT_EQ(counters_.acl_denials[static_cast<int>(AclAccess::kPublish)].load(), 6u);
  EXPECT_EQ(slots_.rare(0).denied[static_cast<int>(AclAccess::kPublish)].load(), 6u);
}

INSTANTIATE_TEST_SUITE_P(BothApis, PerMessageTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "Api21" : "Api20";
                         });

// A client whose queue is full goes the full path at every delivery (broker/queue_drops.h): the
// prediction's reads, the match against its subscriptions and the drop's counting allocate
// nothing either.
TEST(QueueFullAllocationTest, APredictedDropAllocatesNothing) {
  FakeBroker broker = FakeBroker::Api20();
  NullSink sink;
  TestStatsSlots slots(4);
  BrokerCounters counters;
  auto created = CreateTestCore(&broker, &sink, &slots, &counters);
  ASSERT_TRUE(created.ok()) << created.status().message();
  std::unique_ptr<BrokerCore> core = std::move(created).value();
  core->settings().decide_acl = true;
  const BrokerLayout& truth = Debian2021Layout();
  core->UseLayout(std::make_unique<BrokerLayoutVerifier>(BrokerLayoutCandidates(Version(2, 0, 21)),
                                                         Version(2, 0, 21)));
  FakeClient slow = LaidOut(truth, "slow", true, 60);
  BrokerEvents<FakeBroker> events(*core);
  events.OnBasicAuth(slow.handle());
  core->connects().Settle();
  SetSubCount(&slow, truth, 1);
  events.OnAclCheck(AclCheck(&slow, kAclSubscribe, "events/#", 1));  // verifies, arms
  ASSERT_TRUE(core->drops().armed());
  // The window and the queue full (max_queued_messages 1000 beyond a window of 20).
  PutQueue(&slow, *QueueOffsetsOf(truth), /*quota=*/0, /*maximum=*/20, /*queued_count12=*/1020,
           /*out_packets=*/0);

  allocations = 0;
  counting = true;
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(events.OnAclCheck(AclCheck(&slow, kAclRead, "events/a", 1)), kBrokerSuccess);
  }
  counting = false;
  EXPECT_EQ(allocations.load(), 0);
  EXPECT_EQ(counters.messages_dropped[static_cast<std::size_t>(DropReason::kQueueFull)].load(),
            100u);
}

// The statistics slots are taken at each CONNECT and given back at each DISCONNECT on the
// broker thread: the pool's free list was reserved in full when it was made, so neither ever
// allocates, whatever the order slots come back in.
TEST(StatsSlotPoolAllocationTest, TakingAndGivingBackAllocateNothing) {
  TestStatsSlots slots(64);
  StatsSlotPool pool(slots.view());
  std::vector<std::uint32_t> taken;
  taken.reserve(slots.size());
  std::uint64_t owner = 0;
  allocations = 0;
  counting = true;
  for (int round = 0; round < 4; ++round) {
    for (std::uint32_t slot = pool.Take(++owner); slot != kNoStatsSlot; slot = pool.Take(++owner)) {
      taken.push_back(slot);
    }
    // Back in another order than taken: odd positions first, then even.
    for (std::size_t i = 1; i < taken.size(); i += 2) pool.GiveBack(taken[i]);
    for (std::size_t i = 0; i < taken.size(); i += 2) pool.GiveBack(taken[i]);
    taken.clear();
  }
  counting = false;
  EXPECT_EQ(allocations.load(), 0);
  EXPECT_EQ(pool.free_count(), slots.size());
}

// BrokerLink encodes every event it is handed into one reused buffer: once that buffer (and the
// Fits scratch) has grown to the largest record, neither an event nor a resync's fit check
// allocates. Every record is written for real, into a ring large enough to take them all.
TEST(EventPathAllocationTest, BrokerLinkEncodesEventsWithoutAllocatingOnceWarm) {
  SharedRegionSizes sizes;
  sizes.events_capacity = 1 << 20;
  sizes.commands_capacity = 4096;
  auto created = SharedRegion::Create(sizes);
  ASSERT_TRUE(created.ok()) << created.status().message();
  std::unique_ptr<SharedRegion> region = std::move(created).value();
  BrokerLink link(region.get());

  ConnectionEvent connection;
  connection.seq = 7;
  connection.client_id = "a-client-id-longer-than-any-short-string-" + std::string(40, 'c');
  connection.username = "a-user-name-longer-than-a-short-string";
  connection.ip_address = "2001:db8:0:0:0:0:0:1";
  CloseEvent close;
  close.seq = 7;
  SubscriptionEvent subscription;
  subscription.seq = 7;
  subscription.filter = "sensors/+/temperature/and/a/longer/filter/" + std::string(30, 'f');
  OfflineSessionEvent offline;
  offline.seq = 8;
  offline.client_id = connection.client_id;
  offline.username = connection.username;
  SubscriptionList subscriptions;
  subscriptions.Set(subscription.filter, 1);
  subscriptions.Set("short", 0);
  subscriptions.Set(std::string(200, 'x'), 2);
  auto round = [&](std::uint64_t i) {
    bool ok = link.Emit(EventType::kResyncBegin, ResyncEvent{i});
    ok = link.Fits(connection, subscriptions) && ok;
    ok = link.Emit(connection) && ok;
    ok = link.Emit(EventType::kSubscribe, subscription) && ok;
    ok = link.Emit(EventType::kUnsubscribe, subscription) && ok;
    ok = link.Emit(BridgeEvent{7, BridgeRole::kNone}) && ok;
    ok = link.Emit(close) && ok;
    ok = link.Fits(offline, subscriptions) && ok;
    ok = link.Emit(offline) && ok;
    ok = link.Emit(OfflineSessionEndEvent{8}) && ok;
    ok = link.Emit(SettingsEvent{}) && ok;
    ok = link.Fits(ResyncEvent{i}) && ok;
    ok = link.Emit(EventType::kResyncEnd, ResyncEvent{i}) && ok;
    return ok;
  };
  ASSERT_TRUE(round(0));  // warm-up

  const std::uint64_t head_before = region->header()->events.head.load();
  bool all_written = true;
  allocations = 0;
  counting = true;
  for (std::uint64_t i = 1; i <= 100; ++i) all_written = round(i) && all_written;
  counting = false;

  EXPECT_EQ(allocations.load(), 0);
  EXPECT_TRUE(all_written);
  EXPECT_EQ(link.events_lost(), 0u);
  EXPECT_GT(region->header()->events.head.load(),
            head_before + 100 * 11 * sizeof(RingRecordHeader));
}

// The counter itself counts: the test above would pass with a counter that never counts.
TEST(PerMessageCounterTest, TheCountingAllocatorSeesAnAllocation) {
  allocations = 0;
  counting = true;
  auto* text = new std::string(100, 'x');
  counting = false;
  delete text;
  EXPECT_GE(allocations.exchange(0), 1);
}

}  // namespace
}  // namespace mqc
