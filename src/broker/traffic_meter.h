// SPDX-License-Identifier: BSD-3-Clause
// Counts MQTT traffic into the shared region, on the broker thread: publishes and deliveries by
// KubeMQ pattern (kubemq_mqtt_operations_total), bytes, per-connection statistics, and the RPC
// request/response pairs (RpcTracker).
//
// The per-message path takes no lock, makes no syscall and allocates nothing: the topic is
// classified by looking at its first level (ClassifyTopic), and every counter has one writer
// (this thread), so it is bumped without a locked instruction (Bump: an aligned 64-bit word
// that the companion reads whole). Only RPC messages read the clock and the MQTT 5 properties.
//
// Threads: the broker thread only.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "broker/c_string_compare.h"
#include "broker/rpc_tracker.h"
#include "link/kubemq_strict.h"
#include "link/shared_region.h"
#include "link/topic_mapping.h"

namespace mqc {

// What the plugin reads from the broker about a PUBLISH only when it is needed.
class PublishDetails {
 public:
  virtual ~PublishDetails() = default;
  virtual int ProtocolVersion() = 0;
  virtual bool ResponseTopic(std::string* topic) = 0;
  virtual bool CorrelationData(std::string* data) = 0;
  virtual std::int64_t MonotonicNs() = 0;
};

class TrafficMeter {
 public:
  TrafficMeter(BrokerCounters* counters, DefaultPattern default_pattern,
               const RpcTracker::Options& rpc);

  // MESSAGE: a PUBLISH the broker accepted from `client`, on its NUL-terminated `topic`.
  // `stats` may be null (a client the plugin does not know, or no free statistics slot).
  // Returns whether KubeMQ would accept it (kubemq_strict.h); where it would not, the message
  // has been counted as an error of its operation (an RPC request as the tracker counts it).
  bool OnPublish(const void* client, ConnectionStatsSlot* stats, const char* topic,
                 std::uint32_t payload_bytes, PublishDetails& details);

  // ACL_CHECK READ that the broker allowed: a message queued for a subscriber. `online`: a
  // connected client (else an offline persistent session, where a QoS 0 message is thrown
  // away). `queue_full`: the broker drops it at a full queue (broker/queue_drops.h). Both
  // count as dropped, by cause. `topic` is the broker's NUL-terminated topic. Inline: this runs
  // for every delivery, and after a message's first subscriber the topic is the cached one (a
  // compare, no classification, the counter to bump already known).
  void OnDeliver(const void* client, ConnectionStatsSlot* stats, bool online, const char* topic,
                 std::uint32_t payload_bytes, std::uint8_t qos, PublishDetails& clock,
                 bool queue_full = false) {
    const bool offline_drop = !online && qos == 0;
    const bool dropped = offline_drop || queue_full;
    if (!dropped) {
      CountDelivered(stats, payload_bytes);
    } else {
      CountDropped(stats, queue_full ? DropReason::kQueueFull : DropReason::kOffline);
    }
    std::size_t size = 0;
    ClassifyCString(topic, &size);
    Bump(*cached_deliver_[dropped ? 1 : 0]);
    if (rpc_.AwaitsDelivery() && !dropped) {
      rpc_.OnDelivery(client, std::string_view(topic, size), clock.MonotonicNs());
      NoteFastPaths();
    }
  }

  // The common cases of OnPublish and OnDeliver, for the callbacks to try first: the topic is
  // the cached one, it is no RPC request, and no RPC response is awaited. They count exactly
  // what OnPublish (OnDeliver to a connected client) would and return true; otherwise they
  // count nothing and return false, and the caller calls OnPublish (OnDeliver).
  bool TryPublishCached(ConnectionStatsSlot* stats, const char* topic,
                        std::uint32_t payload_bytes) {
    if (!publish_fast_ || !QuickEqualsCString(topic, cached_topic_, cached_size_)) return false;
    CountPublished(stats, payload_bytes);
    Bump(*cached_publish_);
    return true;
  }
  bool TryDeliverCached(ConnectionStatsSlot* stats, const char* topic,
                        std::uint32_t payload_bytes) {
    if (!deliver_fast_ || !QuickEqualsCString(topic, cached_topic_, cached_size_)) return false;
    CountDelivered(stats, payload_bytes);
    Bump(*cached_deliver_[0]);
    return true;
  }

  // After TryPublishCached returned true: whether KubeMQ would refuse that topic (strict mode
  // then refuses the message, already counted as an error of its operation).
  bool cached_kubemq_refused() const { return cached_verdict_ == KubemqPublishVerdict::kRefuse; }

  // SUBSCRIBE and UNSUBSCRIBE are requests too (requestCount).
  static void OnRequest(ConnectionStatsSlot* stats) {
    if (stats != nullptr) Bump(stats->request_count);
  }
  // A SUBSCRIBE filter: a request, and a count of mosquitto_connections_subscribes_total,
  // success when the broker made the subscription, error when strict mode refused it.
  void OnSubscribe(ConnectionStatsSlot* stats, bool made) {
    OnRequest(stats);
    const SubscribeStatus status = made ? SubscribeStatus::kSuccess : SubscribeStatus::kError;
    Bump(counters_->subscribes[static_cast<std::size_t>(status)]);
  }

  void OnTick(std::int64_t monotonic_ns) {
    rpc_.OnTick(monotonic_ns);
    NoteFastPaths();
  }

  const RpcTracker& rpc() const { return rpc_; }

  // A configuration reload changed the options: topics are classified anew from here on.
  void SetOptions(DefaultPattern default_pattern, const RpcTracker::Options& rpc) {
    default_pattern_ = default_pattern;
    cached_size_ = kNothingCached;
    rpc_.SetOptions(rpc);
    NoteFastPaths();
  }

 private:
  // A message received from a client (`stats` its slot, or null), and one delivered to one: the
  // broker's totals and the connection's statistics, counted the same way on every path.
  void CountPublished(ConnectionStatsSlot* stats, std::uint32_t payload_bytes) {
    BrokerCounters* const counters = counters_;  // read once: the bumps are atomic stores
    Bump(counters->received_messages);
    Bump(counters->received_bytes, payload_bytes);
    if (stats != nullptr) {
      Bump(stats->publish_count);
      Bump(stats->publish_bytes, payload_bytes);
      Bump(stats->request_count);
    }
  }
  void CountDelivered(ConnectionStatsSlot* stats, std::uint32_t payload_bytes) {
    BrokerCounters* const counters = counters_;  // read once: the bumps are atomic stores
    Bump(counters->delivered_messages);
    Bump(counters->delivered_bytes, payload_bytes);
    if (stats != nullptr) {
      Bump(stats->deliver_count);
      Bump(stats->deliver_bytes, payload_bytes);
    }
  }

  // A message the broker threw away instead of queueing it: by cause, and per connection where
  // it has one (`stats`: only a full queue has).
  void CountDropped(ConnectionStatsSlot* stats, DropReason reason) {
    Bump(counters_->messages_dropped[static_cast<std::size_t>(reason)]);
    if (stats != nullptr && reason == DropReason::kQueueFull) {
      // Known from the first drop on (the bit a refresh sets otherwise: MarkDropsKnown).
      const std::uint64_t word = stats->dropped_queue_full.load(std::memory_order_relaxed);
      stats->dropped_queue_full.store((word | kDropsKnown) + 1, std::memory_order_relaxed);
    }
  }

  std::atomic<std::uint64_t>* Counter(Operation operation, bool valid, bool dropped = false);
  void Count(Operation operation, bool valid, bool dropped = false) {
    Bump(*Counter(operation, valid, dropped));
  }
  // Whether the fast paths may count at all, kept after every change of what they depend on (the
  // cached topic, the RPC tracker's awaited responses): one byte each on the per-message path.
  void NoteFastPaths() noexcept {
    deliver_fast_ = cached_size_ != kNothingCached && !rpc_.AwaitsDelivery();
    publish_fast_ =
        cached_size_ != kNothingCached && cached_publish_simple_ && !rpc_.AwaitsAnyTopic();
  }
  // Whether the broker's NUL-terminated topic is the cached one: one compare, its NUL included
  // (equal only for the same topic). False also where QuickEqualsCString cannot tell: Classify
  // then compares in full, and the fast paths leave the message to the general path.
  bool IsCached(const char* topic) const {
    return cached_size_ != kNothingCached && QuickEqualsCString(topic, cached_topic_, cached_size_);
  }
  // Classify for the broker's NUL-terminated topic, setting `*size` to its length.
  TopicClass ClassifyCString(const char* topic, std::size_t* size) {
    *size = cached_size_;
    if (IsCached(topic)) return cached_class_;
    *size = std::strlen(topic);
    return Classify(std::string_view(topic, *size));
  }
  // ClassifyTopic, remembering the last topic and the delivery counters of its class: a
  // message is classified when it arrives and again for each of its subscribers, with the same
  // topic each time.
  TopicClass Classify(std::string_view topic);

  BrokerCounters* counters_;
  DefaultPattern default_pattern_;
  RpcTracker rpc_;
  std::string response_topic_;  // reused buffers: RPC messages only
  std::string correlation_;
  static constexpr std::size_t kCachedTopicMax = 256;
  // NUL-terminated, padded for QuickEqualsCString.
  alignas(kCStringChunk) char cached_topic_[(kCachedTopicMax + kCStringChunk) / kCStringChunk *
                                            kCStringChunk] = {};
  // No topic's length (strlen cannot return it): nothing cached, as after a long topic.
  static constexpr std::size_t kNothingCached = std::string_view::npos;
  std::size_t cached_size_ = kNothingCached;
  TopicClass cached_class_;
  KubemqPublishVerdict cached_verdict_ = KubemqPublishVerdict::kAccept;
  // What a pattern without the operation bumps instead of its counter: the fast paths bump
  // without a test. Read by nothing.
  std::atomic<std::uint64_t> uncounted_{0};
  // The operation counter a delivery of the cached topic bumps, [0] delivered and [1] dropped;
  // uncounted_ when its pattern has no delivery operation.
  std::atomic<std::uint64_t>* cached_deliver_[2] = {&uncounted_, &uncounted_};
  // The same for a publish: its operation counter (uncounted_: none), and whether its pattern
  // is counted without the RPC tracker (not commands or queries).
  std::atomic<std::uint64_t>* cached_publish_ = &uncounted_;
  bool cached_publish_simple_ = false;
  bool deliver_fast_ = false;  // NoteFastPaths
  bool publish_fast_ = false;
};

}  // namespace mqc
