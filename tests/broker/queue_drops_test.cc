// SPDX-License-Identifier: BSD-3-Clause
#include "broker/queue_drops.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "../support/fake_broker.h"
#include "../support/laid_out_client.h"
#include "../support/matrix_brokers.h"
#include "broker_core_fixture.h"

namespace mqc {
namespace {

// The broker's side of a subscriber that reads nothing: what db__message_insert does with each
// message it does not drop (src/database.c, 2.0): in flight while the quota lasts, else queued.
// 2.0.11/2.0.12 count both in msg_count12 (QueueFields::queued_count12 there).
struct Subscriber {
  QueueFields queue;
  bool split = true;
  int dropped = 0;

  void Offer(const BrokerConfig::Queues& limits, int qos, bool online, std::int64_t bytes = 10) {
    if (WouldDrop(limits, queue, qos, online)) {
      ++dropped;
      return;
    }
    if (qos == 0) return;  // written at once (online), or not this case
    if (online && queue.inflight_quota > 0) {
      --queue.inflight_quota;
      queue.bytes12 += bytes;
      if (!split) {
        ++queue.queued_count12;
        queue.queued_bytes12 += bytes;
      }
      return;
    }
    ++queue.queued_count12;
    queue.queued_bytes12 += bytes;
  }
};

Subscriber Online(bool split, int inflight_maximum) {
  Subscriber subscriber;
  subscriber.split = split;
  subscriber.queue.inflight_maximum = inflight_maximum;
  subscriber.queue.inflight_quota = inflight_maximum;
  return subscriber;
}

BrokerConfig::Queues Limits(std::int64_t max_queued_messages) {
  BrokerConfig::Queues limits;
  limits.max_queued_messages = max_queued_messages;
  return limits;
}

TEST(QueueDropsTest, AQos1SubscriberThatReadsNothingHoldsItsWindowAndTheQueueBeyondIt) {
  // 2.0.13 on: the queue's limit is counted beyond the in-flight window for a connected client
  // (queued_count12 - inflight_maximum < max_queued_messages), so 20 in flight and 30 queued.
  Subscriber split = Online(/*split=*/true, 20);
  for (int i = 0; i < 100; ++i) split.Offer(Limits(10), 1, /*online=*/true);
  EXPECT_EQ(split.queue.inflight_quota, 0);
  EXPECT_EQ(split.queue.queued_count12, 30);
  EXPECT_EQ(split.dropped, 50);
  // 2.0.11/2.0.12: msg_count12 counts the window too, so 30 in all.
  Subscriber old = Online(/*split=*/false, 20);
  for (int i = 0; i < 100; ++i) old.Offer(Limits(10), 1, /*online=*/true);
  EXPECT_EQ(old.queue.queued_count12, 30);
  EXPECT_EQ(old.dropped, 70);
}

TEST(QueueDropsTest, NoLimitNoWindowNoDrop) {
  Subscriber unlimited = Online(true, 20);
  for (int i = 0; i < 5000; ++i) unlimited.Offer(Limits(0), 1, true);
  EXPECT_EQ(unlimited.dropped, 0);
  // max_inflight_messages 0: everything goes in flight.
  Subscriber no_window = Online(true, 0);
  for (int i = 0; i < 5000; ++i) no_window.Offer(Limits(10), 1, true);
  EXPECT_EQ(no_window.dropped, 0);
}

TEST(QueueDropsTest, Qos0IsDroppedOnlyWhenTheSocketQueueIsAtTheLimit) {
  QueueFields queue;
  queue.inflight_maximum = 20;
  queue.inflight_quota = 0;  // a full window does not matter to QoS 0
  queue.out_packet_count = 9;
  EXPECT_FALSE(WouldDrop(Limits(10), queue, 0, true));
  queue.out_packet_count = 10;
  EXPECT_TRUE(WouldDrop(Limits(10), queue, 0, true));
  EXPECT_FALSE(WouldDrop(Limits(0), queue, 0, true));
}

TEST(QueueDropsTest, AnOfflineSessionQueuesUpToTheLimitWithoutAWindow) {
  Subscriber offline = Online(true, 20);
  for (int i = 0; i < 25; ++i) offline.Offer(Limits(10), 1, /*online=*/false);
  EXPECT_EQ(offline.queue.queued_count12, 10);
  EXPECT_EQ(offline.dropped, 15);
  // QoS 0 reaches the queue only with queue_qos0_messages.
  QueueFields empty;
  BrokerConfig::Queues limits = Limits(10);
  EXPECT_TRUE(WouldDrop(limits, empty, 0, false));
  limits.queue_qos0_messages = true;
  EXPECT_FALSE(WouldDrop(limits, empty, 0, false));
}

TEST(QueueDropsTest, ByteLimitsCountTheirBytes) {
  BrokerConfig::Queues limits = Limits(0);
  limits.max_queued_bytes = 100;
  Subscriber offline = Online(true, 20);
  for (int i = 0; i < 20; ++i) offline.Offer(limits, 1, false, /*bytes=*/30);
  EXPECT_EQ(offline.queue.queued_bytes12, 120);  // 0, 30, 60, 90 were below 100
  EXPECT_EQ(offline.dropped, 16);
  // Both limits: the first one reached drops.
  limits.max_queued_messages = 2;
  Subscriber both = Online(true, 20);
  for (int i = 0; i < 20; ++i) both.Offer(limits, 1, false, 30);
  EXPECT_EQ(both.queue.queued_count12, 2);
  EXPECT_EQ(both.dropped, 18);
}

TEST(QueueDropsTest, TheQueuedQosIsTheOneSubscriptionsAndTheMessagesLower) {
  EXPECT_EQ(QueuedQos(1, 1, 0, false), 0);
  EXPECT_EQ(QueuedQos(1, 1, 2, false), 1);
  EXPECT_EQ(QueuedQos(0, 1, 2, true), 2);
  EXPECT_FALSE(QueuedQos(1, 0, 1, false));  // a subscription the plugin does not know
  EXPECT_FALSE(QueuedQos(1, 2, 1, false));  // several copies
}

TEST(QueueDropsTest, TheOffsetsFollowTheVerifiedLayout) {
  // Debian 13's 2.0.21: msgs_out follows msgs_in (struct mosquitto_msg_data is 72 bytes there);
  // out_packet_count lies 116 bytes after keepalive (last_mid, state, three time_t, in_packet,
  // current_out_packet, out_packet, will, aliases, will_delay_entry, alias_count).
  const BrokerLayout& debian = Debian2021Layout();
  const auto offsets = QueueOffsetsOf(debian);
  ASSERT_TRUE(offsets);
  EXPECT_TRUE(offsets->split);
  EXPECT_EQ(offsets->msgs_out, debian.place(LayoutField::kMsgsInInflightCount).offset - 32 + 72);
  EXPECT_EQ(offsets->out_packet_count, debian.place(LayoutField::kKeepalive).offset + 116);
  EXPECT_EQ(offsets->inflight_quota, offsets->msgs_out + 64);
  EXPECT_LE(offsets->end, debian.End());
  // Debian 12's 2.0.11 (2.0.12's layout): 48 bytes per direction, one count.
  const BrokerLayout& old =
      *Named(BrokerLayoutCandidates(Version(2, 0, 11)), "2.0.12 TLS ADNS WebSockets");
  const auto old_offsets = QueueOffsetsOf(old);
  ASSERT_TRUE(old_offsets);
  EXPECT_FALSE(old_offsets->split);
  EXPECT_EQ(old_offsets->msgs_out, old.place(LayoutField::kMsgsInCount).offset - 32 + 48);
  EXPECT_EQ(old_offsets->inflight_quota, old_offsets->msgs_out + 40);
  EXPECT_EQ(old_offsets->out_packet_count, old.place(LayoutField::kKeepalive).offset + 116);
  // 2.1 queues an open connection's messages without a check the plugin sees.
  EXPECT_FALSE(QueueOffsetsOf(Builtin21Layout()));
}

TEST(QueueDropsTest, MayDropReadsTwoIntsAndPredictReadsTheRest) {
  FakeBroker broker = FakeBroker::Api20();
  const BrokerLayout& truth = Debian2021Layout();
  FakeClient client = LaidOut(truth, "slow", true, 60);
  BrokerLayoutVerifier layout({&truth}, Version(2, 0, 21));
  QueueDrops drops;
  drops.Configure(Limits(10));
  // Unarmed (no verified layout yet): nothing is read, nothing predicted.
  EXPECT_FALSE(drops.MayDrop(broker, client.handle()));
  EXPECT_EQ(broker.int_reads, 0);
  EXPECT_FALSE(drops.Predict(broker, client.handle(), true));
  layout.Observe(broker, client.handle());
  ASSERT_TRUE(layout.verified());
  drops.Arm(&layout, /*api_2_1=*/false);
  ASSERT_TRUE(drops.armed());
  const QueueOffsets offsets = *QueueOffsetsOf(truth);

  PutQueue(&client, offsets, /*quota=*/5, 20, 0, 0);
  EXPECT_FALSE(drops.MayDrop(broker, client.handle()));
  EXPECT_EQ(broker.int_reads, 2);
  PutQueue(&client, offsets, 0, 20, 29, 0);
  EXPECT_TRUE(drops.MayDrop(broker, client.handle()));
  auto verdict = drops.Predict(broker, client.handle(), true);
  ASSERT_TRUE(verdict);
  EXPECT_FALSE(verdict->qos12);  // room for one more
  EXPECT_FALSE(verdict->qos0);   // QoS 0 goes out
  PutQueue(&client, offsets, 0, 20, 30, 0);
  EXPECT_TRUE(drops.Predict(broker, client.handle(), true)->qos12);
  PutQueue(&client, offsets, 7, 20, 0, 10);  // the socket's queue at the limit: QoS 0 drops
  EXPECT_TRUE(drops.MayDrop(broker, client.handle()));
  verdict = drops.Predict(broker, client.handle(), true);
  EXPECT_TRUE(verdict->qos0);
  EXPECT_FALSE(verdict->qos12);
  // The same client offline: QoS 0 is not this cause (thrown away before the queue).
  EXPECT_FALSE(drops.Predict(broker, client.handle(), false)->qos0);

  // A byte limit: every delivery goes on to Predict.
  BrokerConfig::Queues bytes = Limits(10);
  bytes.max_queued_bytes = 1000;
  drops.Configure(bytes);
  PutQueue(&client, offsets, 5, 20, 0, 0);
  EXPECT_TRUE(drops.MayDrop(broker, client.handle()));
  EXPECT_FALSE(drops.Predict(broker, client.handle(), true)->qos12);

  // 2.1 is never armed.
  QueueDrops on21;
  on21.Arm(&layout, /*api_2_1=*/true);
  EXPECT_FALSE(on21.armed());
}

}  // namespace
}  // namespace mqc
