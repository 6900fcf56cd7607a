// Counts MQTT traffic into the shared region, on the broker thread: publishes and deliveries by
// KubeMQ pattern (kubemq_mqtt_operations_total), bytes, per-connection statistics, and the RPC
// request/response pairs (RpcTracker).
//
// The per-message path takes no lock, makes no syscall and allocates nothing: the topic is
// classified by looking at its first level (ClassifyTopic), and every counter has one writer
// (this thread), so it is bumped with a plain load and store of an aligned 64-bit word that the
// companion reads whole. Only RPC messages read the clock and the MQTT 5 properties.
//
// Threads: the broker thread only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "broker/rpc_tracker.h"
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

  // MESSAGE: a PUBLISH the broker accepted from `client`. `stats` may be null (a client the
  // plugin does not know, or no free statistics slot).
  void OnPublish(const void* client, ConnectionStatsSlot* stats, std::string_view topic,
                 std::uint32_t payload_bytes, PublishDetails& details);

  // ACL_CHECK READ that the broker allowed: a message queued for a subscriber. `online`: a
  // connected client (else an offline persistent session, where a QoS 0 message is thrown
  // away).
  void OnDeliver(const void* client, ConnectionStatsSlot* stats, bool online,
                 std::string_view topic, std::uint32_t payload_bytes, std::uint8_t qos,
                 PublishDetails& clock);

  // SUBSCRIBE and UNSUBSCRIBE are requests too (requestCount).
  static void OnRequest(ConnectionStatsSlot* stats) {
    if (stats != nullptr) Bump(stats->request_count);
  }

  void OnTick(std::int64_t monotonic_ns) { rpc_.OnTick(monotonic_ns); }

  const RpcTracker& rpc() const { return rpc_; }

  // A configuration reload changed the options: topics are classified anew from here on.
  void SetOptions(DefaultPattern default_pattern, const RpcTracker::Options& rpc) {
    default_pattern_ = default_pattern;
    cached_size_ = kCachedTopicMax + 1;
    rpc_.SetOptions(rpc);
  }

 private:
  void Count(Operation operation, bool valid, bool dropped = false);
  // ClassifyTopic, remembering the last topic: a message is classified when it arrives and
  // again for each of its subscribers, with the same topic each time.
  TopicClass Classify(std::string_view topic);

  BrokerCounters* counters_;
  DefaultPattern default_pattern_;
  RpcTracker rpc_;
  std::string response_topic_;  // reused buffers: RPC messages only
  std::string correlation_;
  static constexpr std::size_t kCachedTopicMax = 256;
  char cached_topic_[kCachedTopicMax] = {};
  std::size_t cached_size_ = kCachedTopicMax + 1;  // nothing cached yet
  TopicClass cached_class_;
};

}  // namespace mqc
