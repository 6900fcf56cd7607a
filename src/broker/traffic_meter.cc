// SPDX-License-Identifier: BSD-3-Clause
#include "broker/traffic_meter.h"

#include <cstring>

namespace mqc {

namespace {

// The operation of a message of `pattern`: publish_* as it arrives, deliver_* as it is queued
// to a subscriber. Only events, store and queues have both.
bool OperationOf(Pattern pattern, bool delivery, Operation* operation) {
  Operation publish;
  Operation deliver;
  switch (pattern) {
    case Pattern::kEvents:
      publish = Operation::kPublishEvents;
      deliver = Operation::kDeliverEvents;
      break;
    case Pattern::kStore:
      publish = Operation::kPublishStore;
      deliver = Operation::kDeliverStore;
      break;
    case Pattern::kQueues:
      publish = Operation::kPublishQueues;
      deliver = Operation::kDeliverQueues;
      break;
    default:
      return false;
  }
  *operation = delivery ? deliver : publish;
  return true;
}

}  // namespace

TrafficMeter::TrafficMeter(BrokerCounters* counters, DefaultPattern default_pattern,
                           const RpcTracker::Options& rpc)
    : counters_(counters), default_pattern_(default_pattern), rpc_(rpc, counters) {}

std::atomic<std::uint64_t>* TrafficMeter::Counter(Operation operation, bool valid, bool dropped) {
  const OperationStatus status = !valid    ? OperationStatus::kError
                                 : dropped ? OperationStatus::kDropped
                                           : OperationStatus::kSuccess;
  return &counters_
              ->operations[static_cast<std::size_t>(operation)][static_cast<std::size_t>(status)];
}

TopicClass TrafficMeter::Classify(std::string_view topic) {
  if (topic.size() == cached_size_ && std::memcmp(topic.data(), cached_topic_, cached_size_) == 0) {
    return cached_class_;
  }
  cached_class_ = ClassifyTopic(topic, default_pattern_);
  cached_verdict_ = KubemqPublishVerdictOf(topic, cached_class_);
  Operation deliver;
  const bool counted = OperationOf(cached_class_.pattern, /*delivery=*/true, &deliver);
  cached_deliver_[0] = counted ? Counter(deliver, cached_class_.valid, false) : &uncounted_;
  cached_deliver_[1] = counted ? Counter(deliver, cached_class_.valid, true) : &uncounted_;
  Operation publish;
  cached_publish_ = OperationOf(cached_class_.pattern, /*delivery=*/false, &publish)
                        ? Counter(publish, cached_class_.valid)
                        : &uncounted_;
  cached_publish_simple_ =
      cached_class_.pattern != Pattern::kCommands && cached_class_.pattern != Pattern::kQueries;
  if (topic.size() <= kCachedTopicMax) {
    std::memcpy(cached_topic_, topic.data(), topic.size());
    cached_topic_[topic.size()] = '\0';
    cached_size_ = topic.size();
  } else {
    cached_size_ = kNothingCached;
  }
  NoteFastPaths();
  return cached_class_;
}

bool TrafficMeter::OnPublish(const void* client, ConnectionStatsSlot* stats, const char* topic_text,
                             std::uint32_t payload_bytes, PublishDetails& details) {
  // However this ends (the details may throw): an RPC request just recorded turns the fast
  // paths off before the next message.
  struct NoteOnExit {
    TrafficMeter* meter;
    ~NoteOnExit() { meter->NoteFastPaths(); }
  } note_on_exit{this};
  CountPublished(stats, payload_bytes);
  std::size_t size = 0;
  const TopicClass topic_class = ClassifyCString(topic_text, &size);
  const std::string_view topic(topic_text, size);
  const KubemqPublishVerdict verdict = cached_verdict_;  // Classify set it for this topic
  bool accepted = verdict == KubemqPublishVerdict::kAccept;
  Operation operation;
  if (OperationOf(topic_class.pattern, /*delivery=*/false, &operation)) {
    Count(operation, topic_class.valid);
  } else if (topic_class.pattern == Pattern::kCommands ||
             topic_class.pattern == Pattern::kQueries) {
    if (!topic_class.valid) {
      Count(
          topic_class.pattern == Pattern::kCommands ? Operation::kRpcCommand : Operation::kRpcQuery,
          false);
    } else {
      response_topic_.clear();
      correlation_.clear();
      const int version = details.ProtocolVersion();
      const bool has_response = version == 5 && details.ResponseTopic(&response_topic_);
      const bool has_correlation = has_response && details.CorrelationData(&correlation_);
      accepted = verdict == KubemqPublishVerdict::kAcceptIfRpcRequest &&
                 KubemqAcceptsRpcRequest(version, has_response);
      rpc_.OnRequest(topic_class.pattern, client, version,
                     has_response ? response_topic_ : std::string_view(), correlation_,
                     has_correlation, details.MonotonicNs());
    }
  }
  if (rpc_.AwaitsTopic(topic)) {
    correlation_.clear();
    const bool has_correlation = details.CorrelationData(&correlation_);
    rpc_.OnResponse(topic, correlation_, has_correlation, details.MonotonicNs());
  }
  return accepted;
}

}  // namespace mqc
