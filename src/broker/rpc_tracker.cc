// SPDX-License-Identifier: BSD-3-Clause
#include "broker/rpc_tracker.h"

#include <iterator>

#include "link/text_util.h"

namespace mqc {

namespace {

std::size_t DurationIndex(Operation operation) {
  switch (operation) {
    case Operation::kRpcCommand:
      return 0;
    case Operation::kRpcQuery:
      return 1;
    default:
      return 2;  // kRpcResponse
  }
}

}  // namespace

RpcTracker::RpcTracker(const Options& options, BrokerCounters* counters)
    : options_(options), counters_(counters) {}

std::uint64_t RpcTracker::Hash(std::string_view topic) noexcept { return Fnv1a64(topic); }

void RpcTracker::Count(Operation operation, OperationStatus status) {
  Bump(
      counters_->operations[static_cast<std::size_t>(operation)][static_cast<std::size_t>(status)]);
}

void RpcTracker::Observe(Operation operation, std::int64_t duration_ns) {
  SharedHistogram& histogram = counters_->durations[DurationIndex(operation)];
  const double seconds = static_cast<double>(duration_ns < 0 ? 0 : duration_ns) / 1e9;
  std::size_t bucket = 0;
  while (bucket < kDurationBucketCount && seconds > kDurationBuckets[bucket]) ++bucket;
  Bump(histogram.buckets[bucket]);
  Bump(histogram.sum_ns, static_cast<std::uint64_t>(duration_ns < 0 ? 0 : duration_ns));
  Bump(histogram.count);
}

void RpcTracker::OnRequest(Pattern pattern, const void* requester, int protocol_version,
                           std::string_view response_topic, std::string_view correlation,
                           bool has_correlation, std::int64_t now_ns) {
  const Operation operation =
      pattern == Pattern::kCommands ? Operation::kRpcCommand : Operation::kRpcQuery;
  // KubeMQ drops requests it cannot answer: MQTT 3.1.1 has no ResponseTopic.
  if (protocol_version != 5 || response_topic.empty()) {
    Count(operation, OperationStatus::kError);
    return;
  }
  if (pending_.size() >= options_.max_pending) {
    Count(operation, OperationStatus::kDropped);
    return;
  }
  pending_.push_back(Request{operation, requester, std::string(response_topic),
                             std::string(correlation), has_correlation, now_ns});
  ++awaited_topics_[Hash(response_topic)];
}

void RpcTracker::Forget(std::list<Request>::iterator it) {
  if (it->responded) {
    --awaiting_delivery_;
  } else {
    auto awaited = awaited_topics_.find(Hash(it->response_topic));
    if (awaited != awaited_topics_.end() && --awaited->second == 0) awaited_topics_.erase(awaited);
  }
  pending_.erase(it);
}

void RpcTracker::OnResponse(std::string_view topic, std::string_view correlation,
                            bool has_correlation, std::int64_t now_ns) {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->responded || it->response_topic != topic) continue;
    if (it->has_correlation && (!has_correlation || it->correlation != correlation)) continue;
    Count(it->operation, OperationStatus::kSuccess);
    Observe(it->operation, now_ns - it->start_ns);
    auto awaited = awaited_topics_.find(Hash(it->response_topic));
    if (awaited != awaited_topics_.end() && --awaited->second == 0) awaited_topics_.erase(awaited);
    it->responded = true;
    ++awaiting_delivery_;
    return;
  }
}

void RpcTracker::OnDelivery(const void* client, std::string_view topic, std::int64_t now_ns) {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (!it->responded || it->requester != client || it->response_topic != topic) continue;
    Count(Operation::kRpcResponse, OperationStatus::kSuccess);
    Observe(Operation::kRpcResponse, now_ns - it->start_ns);
    Forget(it);
    return;
  }
}

void RpcTracker::OnTick(std::int64_t now_ns) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    auto next = std::next(it);
    if (it->responded) {
      Count(Operation::kRpcResponse, OperationStatus::kDropped);
      Forget(it);
    } else if (now_ns - it->start_ns >= options_.timeout_ns) {
      Count(it->operation, OperationStatus::kError);
      Forget(it);
    }
    it = next;
  }
}

}  // namespace mqc
