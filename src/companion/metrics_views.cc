// SPDX-License-Identifier: BSD-3-Clause
#include "companion/metrics_views.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "companion/connection_registry.h"

namespace mqc {
namespace {

// What the top clients rank by: messages in and out.
std::uint64_t Messages(const RequestStatistics& s) { return s.publish_count + s.deliver_count; }

RequestStatistics Plus(const RequestStatistics& a, const RequestStatistics& b) {
  return RequestStatistics{a.publish_count + b.publish_count, a.publish_bytes + b.publish_bytes,
                           a.deliver_count + b.deliver_count, a.deliver_bytes + b.deliver_bytes,
                           a.request_count + b.request_count};
}

}  // namespace

std::array<std::size_t, kPatternCount> SubscriptionsByPattern(const ConnectionRegistry& registry) {
  std::array<std::size_t, kPatternCount> counts{};
  registry.VisitForMetrics(nullptr, [&counts](const Connection& live, const RequestStatistics&) {
    for (const Subscription& subscription : live.subscriptions) {
      ++counts[static_cast<std::size_t>(subscription.mapping.pattern)];
    }
  });
  return counts;
}

std::vector<TopClient> TopClients(const ConnectionRegistry& registry, std::size_t n) {
  std::vector<TopClient> top;
  if (n == 0) return top;
  // "a before b": more messages, then the smaller client id.
  const auto before = [](const TopClient& a, const TopClient& b) {
    const std::uint64_t a_messages = Messages(a.recent);
    const std::uint64_t b_messages = Messages(b.recent);
    if (a_messages != b_messages) return a_messages > b_messages;
    return a.client_id < b.client_id;
  };
  std::vector<TopClient> kept;  // a heap whose top is the last of the kept ones
  kept.reserve(n + 1);
  const auto consider = [&](std::string_view client_id, const RequestStatistics& recent) {
    if (Messages(recent) == 0) return;
    if (kept.size() == n) {
      // Most connections lose here, before their client id is copied.
      const std::uint64_t messages = Messages(recent);
      const TopClient& last = kept.front();
      const std::uint64_t last_messages = Messages(last.recent);
      if (messages < last_messages || (messages == last_messages && client_id >= last.client_id)) {
        return;
      }
    }
    kept.push_back(TopClient{std::string(client_id), recent});
    std::push_heap(kept.begin(), kept.end(), before);
    if (kept.size() > n) {
      std::pop_heap(kept.begin(), kept.end(), before);
      kept.pop_back();
    }
  };
  // The closed connections with traffic in the minute (few: those closed about then), summed by
  // client id with the open connection or offline session of that id; the others ranked alone.
  std::unordered_map<std::string, RequestStatistics> closed;
  registry.VisitForMetrics(
      [&closed](const Connection& connection) {
        if (Messages(connection.recent_statistics) == 0) return;
        RequestStatistics& sum = closed[connection.client_id];
        sum = Plus(sum, connection.recent_statistics);
      },
      [&](const Connection& live, const RequestStatistics& recent) {
        if (Messages(recent) == 0) return;
        if (!closed.empty()) {
          const auto same = closed.find(live.client_id);
          if (same != closed.end()) {
            same->second = Plus(same->second, recent);
            return;
          }
        }
        consider(live.client_id, recent);
      });
  for (const auto& [client_id, recent] : closed) consider(client_id, recent);
  std::sort_heap(kept.begin(), kept.end(), before);
  return kept;
}

}  // namespace mqc
