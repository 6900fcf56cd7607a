// SPDX-License-Identifier: BSD-3-Clause
// Tests for RpcTracker (rpc_tracker.h), called directly: which PUBLISH is a request's response
// (its topic, its correlation data, oldest request first), the delivery that completes it, what
// counts as an error (no ResponseTopic, MQTT 3.1.1, a timeout) and as dropped (beyond
// max_pending, a response never routed to its requester), the duration histograms, and the
// fast-path questions (AwaitsTopic, AwaitsDelivery, AwaitsAnyTopic) staying true exactly as long
// as something is pending. TrafficMeter's tests cover which topics reach the tracker.
#include "broker/rpc_tracker.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "../support/counted_operations_fixture.h"
#include "link/shared_region.h"
#include "link/topic_mapping.h"

namespace mqc {
namespace {

constexpr std::int64_t kMs = 1'000'000;

class RpcTrackerTest : public CountedOperationsTest {
 protected:
  // A command from `requester` with a ResponseTopic, as MQTT 5 sends it; `correlation` null: none.
  void Command(const void* requester, const char* response_topic, const char* correlation,
               std::int64_t now_ns) {
    tracker_.OnRequest(Pattern::kCommands, requester, 5, response_topic,
                       correlation != nullptr ? correlation : "", correlation != nullptr, now_ns);
  }

  RpcTracker tracker_{RpcTracker::Options{1000 * kMs, 3}, &counters_};
  int alice_ = 0;
  int bob_ = 0;
};

TEST_F(RpcTrackerTest, NothingIsAwaitedBeforeARequest) {
  EXPECT_FALSE(tracker_.AwaitsAnyTopic());
  EXPECT_FALSE(tracker_.AwaitsTopic("r/1"));
  EXPECT_FALSE(tracker_.AwaitsDelivery());
  tracker_.OnResponse("r/1", "", false, 5);
  tracker_.OnDelivery(&alice_, "r/1", 6);
  tracker_.OnTick(1'000'000 * kMs);
  EXPECT_EQ(Total(), 0u);
  EXPECT_EQ(tracker_.pending(), 0u);
}

TEST_F(RpcTrackerTest, ARequestItsResponseAndItsDeliveryCountWithTheirDurations) {
  Command(&alice_, "r/1", "c-1", 100 * kMs);
  EXPECT_EQ(tracker_.pending(), 1u);
  EXPECT_TRUE(tracker_.AwaitsAnyTopic());
  EXPECT_TRUE(tracker_.AwaitsTopic("r/1"));
  EXPECT_FALSE(tracker_.AwaitsTopic("r/2"));
  EXPECT_FALSE(tracker_.AwaitsDelivery());

  tracker_.OnResponse("r/1", "c-1", true, 130 * kMs);  // 30 ms: le 0.05
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kSuccess), 1u);
  EXPECT_EQ(Histogram(0).buckets[1].load(), 1u);
  EXPECT_EQ(Histogram(0).count.load(), 1u);
  EXPECT_EQ(Histogram(0).sum_ns.load(), static_cast<std::uint64_t>(30 * kMs));
  EXPECT_FALSE(tracker_.AwaitsTopic("r/1"));  // answered: no second response is counted
  EXPECT_TRUE(tracker_.AwaitsDelivery());
  tracker_.OnResponse("r/1", "c-1", true, 140 * kMs);
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kSuccess), 1u);

  tracker_.OnDelivery(&alice_, "r/1", 400 * kMs);  // 300 ms after the request: le 0.5
  EXPECT_EQ(Ops(Operation::kRpcResponse, OperationStatus::kSuccess), 1u);
  EXPECT_EQ(Histogram(2).buckets[4].load(), 1u);
  EXPECT_EQ(Histogram(2).sum_ns.load(), static_cast<std::uint64_t>(300 * kMs));
  EXPECT_EQ(tracker_.pending(), 0u);
  EXPECT_FALSE(tracker_.AwaitsDelivery());
  EXPECT_FALSE(tracker_.AwaitsAnyTopic());
  EXPECT_EQ(Total(), 2u);
}

TEST_F(RpcTrackerTest, CorrelationDataMustMatchWhenTheRequestHadSome) {
  Command(&alice_, "r/1", "c-1", 0);
  tracker_.OnResponse("r/1", "c-2", true, 1);
  tracker_.OnResponse("r/1", "", false, 2);  // none at all is no match either
  tracker_.OnResponse("r/other", "c-1", true, 3);
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kSuccess), 0u);
  EXPECT_TRUE(tracker_.AwaitsTopic("r/1"));
  tracker_.OnResponse("r/1", "c-1", true, 4);
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kSuccess), 1u);
}

// Without correlation data a request takes the next PUBLISH on its topic, whatever it carries.
TEST_F(RpcTrackerTest, ARequestWithoutCorrelationTakesTheNextPublishOnItsTopic) {
  tracker_.OnRequest(Pattern::kQueries, &alice_, 5, "r/q", "", false, 0);
  tracker_.OnResponse("r/q", "anything", true, 70'000 * kMs);  // 70 s: beyond every bound
  EXPECT_EQ(Ops(Operation::kRpcQuery, OperationStatus::kSuccess), 1u);
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kSuccess), 0u);
  EXPECT_EQ(Histogram(1).buckets[kDurationBucketCount].load(), 1u);  // +Inf only
  EXPECT_EQ(Histogram(0).count.load(), 0u);
}

// Two requests awaiting one topic: the oldest is answered first, and the topic stays awaited
// until both are.
TEST_F(RpcTrackerTest, RequestsSharingATopicAreAnsweredOldestFirst) {
  Command(&alice_, "r/shared", nullptr, 0);
  Command(&bob_, "r/shared", nullptr, 10 * kMs);
  tracker_.OnResponse("r/shared", "", false, 20 * kMs);
  EXPECT_TRUE(tracker_.AwaitsTopic("r/shared"));
  tracker_.OnDelivery(&bob_, "r/shared", 30 * kMs);  // bob's request is not answered yet
  EXPECT_EQ(Ops(Operation::kRpcResponse, OperationStatus::kSuccess), 0u);
  tracker_.OnDelivery(&alice_, "r/shared", 30 * kMs);
  EXPECT_EQ(Ops(Operation::kRpcResponse, OperationStatus::kSuccess), 1u);
  EXPECT_EQ(tracker_.pending(), 1u);
  tracker_.OnResponse("r/shared", "", false, 40 * kMs);
  EXPECT_FALSE(tracker_.AwaitsTopic("r/shared"));
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kSuccess), 2u);
  // The first response took 20 ms (le 0.05), the second 30 ms (le 0.05).
  EXPECT_EQ(Histogram(0).buckets[1].load(), 2u);
  EXPECT_EQ(Histogram(0).sum_ns.load(), static_cast<std::uint64_t>(50 * kMs));
}

TEST_F(RpcTrackerTest, ADeliveryToAnotherClientOrOnAnotherTopicIsNotTheResponses) {
  Command(&alice_, "r/1", nullptr, 0);
  tracker_.OnResponse("r/1", "", false, 1);
  tracker_.OnDelivery(&bob_, "r/1", 2);
  tracker_.OnDelivery(&alice_, "r/2", 2);
  EXPECT_EQ(Ops(Operation::kRpcResponse, OperationStatus::kSuccess), 0u);
  EXPECT_TRUE(tracker_.AwaitsDelivery());
  tracker_.OnDelivery(&alice_, "r/1", 3);
  EXPECT_EQ(Ops(Operation::kRpcResponse, OperationStatus::kSuccess), 1u);
}

// KubeMQ drops a request it cannot answer: MQTT 3.1.1 has no ResponseTopic, and MQTT 5 may
// leave it out. Such a request is an error at once and nothing waits for it.
TEST_F(RpcTrackerTest, ARequestWithoutAResponseTopicIsAnError) {
  tracker_.OnRequest(Pattern::kCommands, &alice_, 4, "r/1", "c", true, 0);
  tracker_.OnRequest(Pattern::kCommands, &alice_, 3, "r/1", "", false, 0);
  tracker_.OnRequest(Pattern::kQueries, &alice_, 5, "", "c", true, 0);
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kError), 2u);
  EXPECT_EQ(Ops(Operation::kRpcQuery, OperationStatus::kError), 1u);
  EXPECT_EQ(tracker_.pending(), 0u);
  EXPECT_FALSE(tracker_.AwaitsAnyTopic());
}

TEST_F(RpcTrackerTest, BeyondMaxPendingARequestIsDroppedAndAFreedPlaceIsTakenAgain) {
  for (int i = 0; i < 4; ++i) Command(&alice_, "r/1", nullptr, 0);
  EXPECT_EQ(tracker_.pending(), 3u);
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kDropped), 1u);
  tracker_.OnResponse("r/1", "", false, 1);
  tracker_.OnDelivery(&alice_, "r/1", 2);  // one request done: a place is free
  EXPECT_EQ(tracker_.pending(), 2u);
  Command(&alice_, "r/1", nullptr, 3);
  EXPECT_EQ(tracker_.pending(), 3u);
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kDropped), 1u);
}

TEST_F(RpcTrackerTest, ATimedOutRequestIsAnErrorAtTheTickThatReachesItsTimeout) {
  Command(&alice_, "r/1", nullptr, 0);
  tracker_.OnRequest(Pattern::kQueries, &alice_, 5, "r/2", "", false, 500 * kMs);
  tracker_.OnTick(999 * kMs);
  EXPECT_EQ(tracker_.pending(), 2u);
  tracker_.OnTick(1000 * kMs);  // the timeout is inclusive
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kError), 1u);
  EXPECT_EQ(Ops(Operation::kRpcQuery, OperationStatus::kError), 0u);
  EXPECT_FALSE(tracker_.AwaitsTopic("r/1"));
  EXPECT_TRUE(tracker_.AwaitsTopic("r/2"));
  tracker_.OnTick(1500 * kMs);
  EXPECT_EQ(Ops(Operation::kRpcQuery, OperationStatus::kError), 1u);
  EXPECT_FALSE(tracker_.AwaitsAnyTopic());
  // A response after the timeout is no response.
  tracker_.OnResponse("r/1", "", false, 1600 * kMs);
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kSuccess), 0u);
}

// The broker routes a response while handling its PUBLISH: one not delivered to its requester by
// the next TICK never will be, whatever the timeout.
TEST_F(RpcTrackerTest, AResponseNotDeliveredByTheNextTickIsDropped) {
  Command(&alice_, "r/1", nullptr, 0);
  tracker_.OnResponse("r/1", "", false, 1);
  tracker_.OnTick(2);
  EXPECT_EQ(Ops(Operation::kRpcResponse, OperationStatus::kDropped), 1u);
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kError), 0u);
  EXPECT_FALSE(tracker_.AwaitsDelivery());
  EXPECT_EQ(tracker_.pending(), 0u);
  tracker_.OnDelivery(&alice_, "r/1", 3);
  EXPECT_EQ(Ops(Operation::kRpcResponse, OperationStatus::kSuccess), 0u);
}

TEST_F(RpcTrackerTest, NewOptionsKeepPendingRequestsAndApplyTheirTimeoutToThem) {
  Command(&alice_, "r/1", nullptr, 0);
  tracker_.SetOptions(RpcTracker::Options{10 * kMs, 1});
  EXPECT_EQ(tracker_.pending(), 1u);
  Command(&alice_, "r/2", nullptr, 0);  // the new max_pending: full
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kDropped), 1u);
  tracker_.OnTick(10 * kMs);
  EXPECT_EQ(Ops(Operation::kRpcCommand, OperationStatus::kError), 1u);
  EXPECT_EQ(tracker_.pending(), 0u);
}

// Bucket bounds are inclusive (le), and a clock that went back counts as no time at all.
TEST_F(RpcTrackerTest, HistogramBoundsAreInclusiveAndANegativeDurationIsZero) {
  Command(&alice_, "r/1", nullptr, 100 * kMs);
  tracker_.OnResponse("r/1", "", false, 110 * kMs);  // exactly 0.01 s
  EXPECT_EQ(Histogram(0).buckets[0].load(), 1u);
  Command(&alice_, "r/2", nullptr, 100 * kMs);
  tracker_.OnResponse("r/2", "", false, 50 * kMs);
  EXPECT_EQ(Histogram(0).buckets[0].load(), 2u);
  EXPECT_EQ(Histogram(0).sum_ns.load(), static_cast<std::uint64_t>(10 * kMs));
  EXPECT_EQ(Histogram(0).count.load(), 2u);
}

TEST(RpcTrackerHashTest, TheTopicHashIsStableAndTellsTopicsApart) {
  EXPECT_EQ(RpcTracker::Hash("r/1"), RpcTracker::Hash(std::string("r/1")));
  EXPECT_NE(RpcTracker::Hash("r/1"), RpcTracker::Hash("r/2"));
  EXPECT_NE(RpcTracker::Hash(""), RpcTracker::Hash("r"));
}

}  // namespace
}  // namespace mqc
