// SPDX-License-Identifier: BSD-3-Clause
// MQTT 5 request/response tracking for rpc_command, rpc_query and rpc_response
// (topic-mapping.md, "Traffic"): a PUBLISH on commands/... or queries/... with a ResponseTopic is
// a request; the next PUBLISH on that ResponseTopic (with the same CorrelationData when the
// request had one) is its response; the response's delivery to the requester is rpc_response.
//
// Threads: the broker thread only. Per message it costs nothing while no request is pending,
// else one hash of the topic and a set lookup; it allocates and reads the clock only for
// requests, responses and their deliveries.
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>

#include "link/shared_region.h"
#include "link/topic_mapping.h"

namespace mqc {

class RpcTracker {
 public:
  struct Options {
    std::int64_t timeout_ns = 30'000'000'000;
    std::size_t max_pending = 1024;
  };

  RpcTracker(const Options& options, BrokerCounters* counters);

  // A PUBLISH on a commands/ or queries/ topic (`pattern` says which). `response_topic` empty:
  // the request had none.
  void OnRequest(Pattern pattern, const void* requester, int protocol_version,
                 std::string_view response_topic, std::string_view correlation,
                 bool has_correlation, std::int64_t now_ns);

  // Whether a PUBLISH on `topic` may be a response (then call OnResponse).
  bool AwaitsTopic(std::string_view topic) const noexcept {
    return !awaited_topics_.empty() && awaited_topics_.count(Hash(topic)) != 0;
  }
  void OnResponse(std::string_view topic, std::string_view correlation, bool has_correlation,
                  std::int64_t now_ns);

  // Whether any response is on its way to its requester (then call OnDelivery per delivery).
  bool AwaitsDelivery() const noexcept { return awaiting_delivery_ != 0; }
  // Whether a response is awaited on any topic (AwaitsTopic can then be true).
  bool AwaitsAnyTopic() const noexcept { return !awaited_topics_.empty(); }
  void OnDelivery(const void* client, std::string_view topic, std::int64_t now_ns);

  // At TICK: requests past their timeout count as errors; responses not routed to their
  // requester by now never will be (the broker routes a message while handling its PUBLISH),
  // so they count as dropped.
  void OnTick(std::int64_t now_ns);

  std::size_t pending() const { return pending_.size(); }

  // A configuration reload: pending requests stay tracked and time out by the new timeout; the
  // new max_pending applies to requests from now on.
  void SetOptions(const Options& options) { options_ = options; }

  static std::uint64_t Hash(std::string_view topic) noexcept;

 private:
  struct Request {
    Operation operation;
    const void* requester;
    std::string response_topic;
    std::string correlation;
    bool has_correlation;
    std::int64_t start_ns;
    bool responded = false;
  };

  void Count(Operation operation, OperationStatus status);
  void Observe(Operation operation, std::int64_t duration_ns);
  void Forget(std::list<Request>::iterator it);

  Options options_;
  BrokerCounters* counters_;
  std::list<Request> pending_;                                     // oldest first
  std::unordered_map<std::uint64_t, std::size_t> awaited_topics_;  // topic hash -> requests
  std::size_t awaiting_delivery_ = 0;
};

}  // namespace mqc
