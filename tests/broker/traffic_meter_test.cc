// SPDX-License-Identifier: BSD-3-Clause
#include "broker/traffic_meter.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "../support/counted_operations_fixture.h"
#include "broker/rpc_tracker.h"

namespace mqc {
namespace {

class FakeDetails : public PublishDetails {
 public:
  int ProtocolVersion() override { return version; }
  bool ResponseTopic(std::string* topic) override {
    if (!has_response) return false;
    *topic = response_topic;
    return true;
  }
  bool CorrelationData(std::string* data) override {
    if (!has_correlation) return false;
    *data = correlation;
    return true;
  }
  std::int64_t MonotonicNs() override { return now; }

  int version = 5;
  bool has_response = false;
  std::string response_topic;
  bool has_correlation = false;
  std::string correlation;
  std::int64_t now = 0;
};

constexpr std::int64_t kMs = 1000000;

class TrafficMeterTest : public CountedOperationsTest {
 protected:
  // The requester publishes an RPC request of `size` bytes on `topic` naming `response_topic`;
  // the publishes after it carry no ResponseTopic.
  void Request(const char* topic, const char* response_topic, std::uint32_t size = 1) {
    details_.has_response = true;
    details_.response_topic = response_topic;
    meter_.OnPublish(&requester_, nullptr, topic, size, details_);
    details_.has_response = false;
  }

  RpcTracker::Options rpc_{1000 * kMs, 2};
  TrafficMeter meter_{&counters_, DefaultPattern::kEvents, rpc_};
  FakeDetails details_;
  ConnectionStatsSlot stats_;
  int requester_ = 0;
  int responder_ = 0;
};

TEST_F(TrafficMeterTest, PublishesCountByPatternWithBytesAndPerConnectionStatistics) {
  meter_.OnPublish(&requester_, &stats_, "events/a", 10, details_);
  meter_.OnPublish(&requester_, &stats_, "site1/temp", 5, details_);  // default pattern events
  meter_.OnPublish(&requester_, &stats_, "store/orders", 7, details_);
  meter_.OnPublish(&requester_, &stats_, "queues/jobs", 1, details_);
  meter_.OnPublish(&requester_, nullptr, "events//bad", 2, details_);  // invalid mapping
  meter_.OnPublish(&requester_, &stats_, "$SYS/x", 3, details_);       // not KubeMQ traffic
  ExpectCountedExactly({{Operation::kPublishEvents, OperationStatus::kSuccess, 2},
                        {Operation::kPublishEvents, OperationStatus::kError, 1},
                        {Operation::kPublishStore, OperationStatus::kSuccess, 1},
                        {Operation::kPublishQueues, OperationStatus::kSuccess, 1}});
  EXPECT_EQ(counters_.received_messages.load(), 6u);
  EXPECT_EQ(counters_.received_bytes.load(), 28u);
  EXPECT_EQ(stats_.publish_count.load(), 5u);
  EXPECT_EQ(stats_.publish_bytes.load(), 26u);
  EXPECT_EQ(stats_.request_count.load(), 5u);
}

TEST_F(TrafficMeterTest, OnPublishSaysWhetherKubemqAcceptsTheMessage) {
  EXPECT_TRUE(meter_.OnPublish(&requester_, &stats_, "events/a", 1, details_));
  EXPECT_TRUE(meter_.OnPublish(&requester_, &stats_, "$reply/requester/1", 1, details_));
  EXPECT_FALSE(meter_.OnPublish(&requester_, &stats_, "events//bad", 1, details_));
  EXPECT_FALSE(meter_.OnPublish(&requester_, &stats_, "store", 1, details_));
  EXPECT_FALSE(meter_.OnPublish(&requester_, &stats_, "$other/x", 1, details_));
  // RPC requests: MQTT 5 with a ResponseTopic only; the others are the tracker's errors.
  EXPECT_FALSE(meter_.OnPublish(&requester_, &stats_, "commands/svc", 1, details_));
  details_.version = 4;
  details_.has_response = true;
  details_.response_topic = "$reply/requester/2";
  EXPECT_FALSE(meter_.OnPublish(&requester_, &stats_, "queries/svc", 1, details_));
  details_.version = 5;
  EXPECT_TRUE(meter_.OnPublish(&requester_, &stats_, "commands/svc", 1, details_));
  EXPECT_FALSE(meter_.OnPublish(&requester_, &stats_, "commands//svc", 1, details_));
  EXPECT_EQ(Ops(Operation::kPublishEvents, OperationStatus::kError), 1u);
  EXPECT_EQ(Ops(Operation::kPublishStore, OperationStatus::kError), 1u);
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kError), 2u);
  EXPECT_EQ(Ops(Operation::kRpcQuery, OperationStatus::kError), 1u);
  // Unprefixed under default_pattern none names no KubeMQ pattern.
  TrafficMeter none(&counters_, DefaultPattern::kNone, rpc_);
  EXPECT_FALSE(none.OnPublish(&requester_, nullptr, "site1/temp", 1, details_));
  EXPECT_TRUE(none.OnPublish(&requester_, nullptr, "events/temp", 1, details_));
}

// The fast path declines a topic whose 16-byte reads would cross a page's end
// (QuickEqualsCString), as a string literal's can: these topics are 16-byte aligned, as the
// broker's heap-allocated ones are, so their reads never cross one.
TEST_F(TrafficMeterTest, TheCachedTopicKeepsItsVerdictForTheFastPath) {
  alignas(16) const char bad[16] = "events//bad";
  alignas(16) const char good[16] = "events/good";
  meter_.OnPublish(&requester_, &stats_, bad, 1, details_);  // classified and cached
  ASSERT_TRUE(meter_.TryPublishCached(&stats_, bad, 1));
  EXPECT_TRUE(meter_.cached_kubemq_refused());
  EXPECT_EQ(Ops(Operation::kPublishEvents, OperationStatus::kError), 2u);
  meter_.OnPublish(&requester_, &stats_, good, 1, details_);
  ASSERT_TRUE(meter_.TryPublishCached(&stats_, good, 1));
  EXPECT_FALSE(meter_.cached_kubemq_refused());
  // A new topic is no cached one: the general path classifies it (and its verdict) first.
  EXPECT_FALSE(meter_.TryPublishCached(&stats_, "events//other", 1));
}

// The fast paths decline where the RPC tracker must see the message: every publish while a
// response is awaited, every delivery while a response's delivery is; and after a reload,
// which forgets the cached topic. Each change is seen at the next message.
TEST_F(TrafficMeterTest, TheFastPathsDeclineWhileTheRpcTrackerAwaitsAMessage) {
  alignas(16) const char topic[16] = "events/a";
  alignas(16) const char reply[16] = "r/1";
  meter_.OnPublish(&requester_, &stats_, topic, 1, details_);
  ASSERT_TRUE(meter_.TryPublishCached(&stats_, topic, 1));
  ASSERT_TRUE(meter_.TryDeliverCached(&stats_, topic, 1));
  Request("commands/a", "r/1");
  meter_.OnPublish(&requester_, &stats_, topic, 1, details_);  // cached again
  EXPECT_FALSE(meter_.TryPublishCached(&stats_, topic, 1));
  EXPECT_TRUE(meter_.TryDeliverCached(&stats_, topic, 1));
  meter_.OnPublish(&responder_, nullptr, reply, 1, details_);  // the response
  meter_.OnPublish(&requester_, &stats_, topic, 1, details_);
  EXPECT_TRUE(meter_.TryPublishCached(&stats_, topic, 1));
  EXPECT_FALSE(meter_.TryDeliverCached(&stats_, topic, 1));
  meter_.OnDeliver(&requester_, &stats_, true, reply, 1, 0, details_);  // delivered
  meter_.OnPublish(&requester_, &stats_, topic, 1, details_);
  EXPECT_TRUE(meter_.TryDeliverCached(&stats_, topic, 1));
  Request("commands/a", "r/1");
  meter_.OnPublish(&responder_, nullptr, reply, 1, details_);
  meter_.OnPublish(&requester_, &stats_, topic, 1, details_);
  EXPECT_FALSE(meter_.TryDeliverCached(&stats_, topic, 1));
  meter_.OnTick(0);  // not delivered by the next TICK: never will be
  EXPECT_TRUE(meter_.TryDeliverCached(&stats_, topic, 1));
  meter_.SetOptions(DefaultPattern::kEvents, rpc_);  // a reload
  EXPECT_FALSE(meter_.TryDeliverCached(&stats_, topic, 1));
  EXPECT_FALSE(meter_.TryPublishCached(&stats_, topic, 1));
}

// SUBSCRIBE outcomes have a family of their own: no KubeMQ operation moves.
TEST_F(TrafficMeterTest, SubscriptionsCountAsRequestsAndInTheirOwnCounters) {
  meter_.OnSubscribe(&stats_, /*made=*/true);
  meter_.OnSubscribe(&stats_, /*made=*/true);
  meter_.OnSubscribe(nullptr, /*made=*/false);
  EXPECT_EQ(counters_.subscribes[static_cast<int>(SubscribeStatus::kSuccess)].load(), 2u);
  EXPECT_EQ(counters_.subscribes[static_cast<int>(SubscribeStatus::kError)].load(), 1u);
  EXPECT_EQ(stats_.request_count.load(), 2u);
  for (std::size_t op = 0; op < kOperationCount; ++op) {
    for (std::size_t status = 0; status < kStatusCount; ++status) {
      EXPECT_EQ(counters_.operations[op][status].load(), 0u) << op << " " << status;
    }
  }
}

TEST_F(TrafficMeterTest, DefaultPatternDecidesUnprefixedTopics) {
  TrafficMeter store(&counters_, DefaultPattern::kStore, rpc_);
  store.OnPublish(&requester_, nullptr, "site1/temp", 1, details_);
  EXPECT_EQ(Ops(Operation::kPublishStore, OperationStatus::kSuccess), 1u);
  TrafficMeter none(&counters_, DefaultPattern::kNone, rpc_);
  none.OnPublish(&requester_, nullptr, "site1/temp", 1, details_);
  EXPECT_EQ(Total(), 1u);
}

// A topic of no KubeMQ operation (an unprefixed one under default_pattern none; a command's
// delivery) is counted in the totals and per connection on the fast paths as on the general
// ones, and moves no operation counter.
TEST_F(TrafficMeterTest, TheFastPathsCountATopicOfNoOperationInTheTotalsOnly) {
  alignas(16) const char plain[16] = "site1/temp";
  alignas(16) const char command[16] = "commands/x";
  TrafficMeter none(&counters_, DefaultPattern::kNone, rpc_);
  none.OnPublish(&requester_, &stats_, plain, 3, details_);
  ASSERT_TRUE(none.TryPublishCached(&stats_, plain, 3));
  none.OnDeliver(&responder_, &stats_, true, plain, 3, 0, details_);
  ASSERT_TRUE(none.TryDeliverCached(&stats_, plain, 3));
  none.OnDeliver(&responder_, &stats_, true, command, 5, 0, details_);
  ASSERT_TRUE(none.TryDeliverCached(&stats_, command, 5));
  EXPECT_EQ(counters_.received_messages.load(), 2u);
  EXPECT_EQ(counters_.received_bytes.load(), 6u);
  EXPECT_EQ(counters_.delivered_messages.load(), 4u);
  EXPECT_EQ(counters_.delivered_bytes.load(), 16u);
  EXPECT_EQ(stats_.publish_count.load(), 2u);
  EXPECT_EQ(stats_.deliver_count.load(), 4u);
  EXPECT_EQ(stats_.deliver_bytes.load(), 16u);
  EXPECT_EQ(Total(), 0u);
}

TEST_F(TrafficMeterTest, DeliveriesCountByPatternAndQos0ToAnOfflineSessionIsDropped) {
  meter_.OnDeliver(&responder_, &stats_, true, "events/a", 4, 0, details_);
  meter_.OnDeliver(&responder_, &stats_, true, "store/a", 4, 1, details_);
  meter_.OnDeliver(&responder_, nullptr, false, "queues/a", 4, 1, details_);   // queued offline
  meter_.OnDeliver(&responder_, nullptr, false, "events/a", 4, 0, details_);   // thrown away
  meter_.OnDeliver(&responder_, &stats_, true, "commands/x", 4, 0, details_);  // no deliver op
  ExpectCountedExactly({{Operation::kDeliverEvents, OperationStatus::kSuccess, 1},
                        {Operation::kDeliverEvents, OperationStatus::kDropped, 1},
                        {Operation::kDeliverStore, OperationStatus::kSuccess, 1},
                        {Operation::kDeliverQueues, OperationStatus::kSuccess, 1}});
  EXPECT_EQ(counters_.delivered_messages.load(), 4u);
  EXPECT_EQ(stats_.deliver_count.load(), 3u);
  EXPECT_EQ(stats_.deliver_bytes.load(), 12u);
}

TEST_F(TrafficMeterTest, CommandRoundTripCountsRequestResponseAndDelivery) {
  details_.has_correlation = true;
  details_.correlation = "c-1";
  details_.now = 0;
  Request("commands/svc/reboot", "$reply/requester/1", 3);
  EXPECT_EQ(meter_.rpc().pending(), 1u);
  // A publish on the response topic with another correlation is not the response.
  details_.correlation = "other";
  details_.now = 20 * kMs;
  meter_.OnPublish(&responder_, nullptr, "$reply/requester/1", 2, details_);
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kSuccess), 0u);
  details_.correlation = "c-1";
  details_.now = 30 * kMs;
  meter_.OnPublish(&responder_, nullptr, "$reply/requester/1", 2, details_);
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kSuccess), 1u);
  // 30 ms falls in the 0.05 bucket (index 1).
  EXPECT_EQ(Histogram(0).buckets[1].load(), 1u);
  EXPECT_EQ(Histogram(0).count.load(), 1u);
  EXPECT_EQ(Histogram(0).sum_ns.load(), static_cast<std::uint64_t>(30 * kMs));
  // Delivery to someone else is not the response's delivery; to the requester it is.
  details_.now = 200 * kMs;
  meter_.OnDeliver(&responder_, nullptr, true, "$reply/requester/1", 2, 0, details_);
  EXPECT_EQ(Ops(Operation::kRpcResponse, OperationStatus::kSuccess), 0u);
  meter_.OnDeliver(&requester_, nullptr, true, "$reply/requester/1", 2, 0, details_);
  EXPECT_EQ(Ops(Operation::kRpcResponse, OperationStatus::kSuccess), 1u);
  EXPECT_EQ(Histogram(2).buckets[3].load(), 1u);  // 0.2 s -> le 0.25
  EXPECT_EQ(meter_.rpc().pending(), 0u);
}

TEST_F(TrafficMeterTest, QueryWithoutCorrelationTakesTheNextPublishOnItsTopic) {
  Request("queries/svc/status", "events/answers");
  details_.now = 70 * 1000 * kMs;  // 70 s: beyond every bound
  meter_.OnPublish(&responder_, nullptr, "events/answers", 1, details_);
  EXPECT_EQ(Ops(Operation::kRpcQuery, OperationStatus::kSuccess), 1u);
  EXPECT_EQ(Ops(Operation::kPublishEvents, OperationStatus::kSuccess), 1u);  // also an event
  EXPECT_EQ(Histogram(1).buckets[kDurationBucketCount].load(), 1u);          // +Inf only
}

TEST_F(TrafficMeterTest, RequestsThatKubeMqWouldDropAreErrors) {
  details_.version = 4;  // MQTT 3.1.1 has no ResponseTopic
  meter_.OnPublish(&requester_, nullptr, "commands/a", 1, details_);
  details_.version = 5;
  details_.has_response = false;  // MQTT 5 without one
  meter_.OnPublish(&requester_, nullptr, "queries/a", 1, details_);
  meter_.OnPublish(&requester_, nullptr, "commands//bad", 1, details_);
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kError), 2u);
  EXPECT_EQ(Ops(Operation::kRpcQuery, OperationStatus::kError), 1u);
  EXPECT_EQ(meter_.rpc().pending(), 0u);
}

TEST_F(TrafficMeterTest, TimeoutIsAnErrorAndBeyondMaxPendingIsDropped) {
  for (int i = 0; i < 3; ++i) Request("commands/a", "r/1");
  EXPECT_EQ(meter_.rpc().pending(), 2u);
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kDropped), 1u);
  meter_.OnTick(999 * kMs);
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kError), 0u);
  meter_.OnTick(1000 * kMs);
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kError), 2u);
  EXPECT_EQ(meter_.rpc().pending(), 0u);
  EXPECT_FALSE(meter_.rpc().AwaitsTopic("r/1"));
}

TEST_F(TrafficMeterTest, ReloadedOptionsApplyFromTheNextMessageAndKeepPendingRequests) {
  details_.has_response = true;
  details_.response_topic = "r/1";
  meter_.OnPublish(&requester_, nullptr, "site1/temp", 1, details_);  // classified, then cached
  meter_.OnPublish(&requester_, nullptr, "commands/a", 1, details_);
  meter_.SetOptions(DefaultPattern::kStore, RpcTracker::Options{10 * kMs, 3});
  meter_.OnPublish(&requester_, nullptr, "site1/temp", 1, details_);
  EXPECT_EQ(Ops(Operation::kPublishEvents, OperationStatus::kSuccess), 1u);
  EXPECT_EQ(Ops(Operation::kPublishStore, OperationStatus::kSuccess), 1u);
  for (int i = 0; i < 3; ++i) meter_.OnPublish(&requester_, nullptr, "commands/a", 1, details_);
  EXPECT_EQ(meter_.rpc().pending(), 3u);  // the new max_pending
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kDropped), 1u);
  meter_.OnTick(10 * kMs);  // the new timeout: every request, the one from before included
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kError), 3u);
  EXPECT_EQ(meter_.rpc().pending(), 0u);
}

TEST_F(TrafficMeterTest, AResponseNeverRoutedToItsRequesterIsDroppedAtTheNextTick) {
  Request("commands/a", "r/2");
  meter_.OnPublish(&responder_, nullptr, "r/2", 1, details_);
  EXPECT_TRUE(meter_.rpc().AwaitsDelivery());
  meter_.OnTick(1);
  EXPECT_EQ(Ops(Operation::kRpcResponse, OperationStatus::kDropped), 1u);
  EXPECT_FALSE(meter_.rpc().AwaitsDelivery());
}

TEST_F(TrafficMeterTest, HistogramBoundsAreInclusive) {
  Request("commands/a", "r/3");
  details_.now = 10 * kMs;  // exactly 0.01 s: le="0.01"
  meter_.OnPublish(&responder_, nullptr, "r/3", 1, details_);
  EXPECT_EQ(Histogram(0).buckets[0].load(), 1u);
}

}  // namespace
}  // namespace mqc

namespace mqc {
namespace {

// The callbacks' fast paths count exactly what the general ones do, and decline (counting
// nothing) where only the general ones can count: a new topic, an RPC request, an awaited
// response.
TEST(TrafficMeterFastPathTest, TryPublishAndTryDeliverCountAsOnPublishAndOnDeliver) {
  BrokerCounters general_counters;
  BrokerCounters fast_counters;
  const RpcTracker::Options rpc{1000 * kMs, 2};
  TrafficMeter general(&general_counters, DefaultPattern::kEvents, rpc);
  TrafficMeter fast(&fast_counters, DefaultPattern::kEvents, rpc);
  ConnectionStatsSlot general_stats;
  ConnectionStatsSlot fast_stats;
  FakeDetails details;
  details.has_response = true;
  details.response_topic = "$reply/1";
  int client = 0;
  const char* topics[] = {"events/a", "events/a", "store/b",    "store/b",
                          "site/c",   "site/c",   "$SYS/x",     "$SYS/x",
                          "events//", "events//", "commands/q", "commands/q",
                          "$reply/1", "$reply/1", "queues/d",   "queues/d"};
  int declined = 0;
  for (const char* topic : topics) {
    general.OnPublish(&client, &general_stats, topic, 7, details);
    if (!fast.TryPublishCached(&fast_stats, topic, 7)) {
      ++declined;
      fast.OnPublish(&client, &fast_stats, topic, 7, details);
    }
    for (int i = 0; i < 2; ++i) {
      general.OnDeliver(&client, &general_stats, true, topic, 5, 1, details);
      if (!fast.TryDeliverCached(&fast_stats, topic, 5)) {
        ++declined;
        fast.OnDeliver(&client, &fast_stats, true, topic, 5, 1, details);
      }
    }
  }
  EXPECT_GT(declined, 8);  // new topics, the RPC request and its awaited response
  EXPECT_EQ(fast_counters.received_messages.load(), general_counters.received_messages.load());
  EXPECT_EQ(fast_counters.received_bytes.load(), general_counters.received_bytes.load());
  EXPECT_EQ(fast_counters.delivered_messages.load(), general_counters.delivered_messages.load());
  EXPECT_EQ(fast_counters.delivered_bytes.load(), general_counters.delivered_bytes.load());
  for (std::size_t op = 0; op < kOperationCount; ++op) {
    for (std::size_t status = 0; status < kStatusCount; ++status) {
      EXPECT_EQ(fast_counters.operations[op][status].load(),
                general_counters.operations[op][status].load())
          << "operation " << op << " status " << status;
    }
  }
  EXPECT_EQ(fast_stats.publish_count.load(), general_stats.publish_count.load());
  EXPECT_EQ(fast_stats.deliver_bytes.load(), general_stats.deliver_bytes.load());
  EXPECT_EQ(fast_stats.request_count.load(), general_stats.request_count.load());
  EXPECT_EQ(fast.rpc().pending(), general.rpc().pending());
}

}  // namespace
}  // namespace mqc
