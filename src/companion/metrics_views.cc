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
  registry.VisitForMetrics([](const ConnectionPtr&) {},
                           [&counts](const ConnectionPtr& live, const RequestStatistics&) {
                             for (const Subscription& subscription : live->subscriptions) {
                               ++counts[static_cast<std::size_t>(subscription.mapping.pattern)];
                             }
                           });
  return counts;
}

std::vector<TopClient> TopClients(const ConnectionRegistry& registry, std::size_t n) {
  struct Candidate {
    std::uint64_t messages;
    std::string_view client_id;  // owner's
    RequestStatistics recent;
    ConnectionPtr owner;  // keeps client_id alive once the registry's lock is released
  };
  // "a before b": more messages, then the smaller client id.
  const auto before = [](const Candidate& a, const Candidate& b) {
    if (a.messages != b.messages) return a.messages > b.messages;
    return a.client_id < b.client_id;
  };
  std::vector<Candidate> kept;  // a heap whose top is the last of the kept ones
  std::vector<TopClient> top;
  if (n == 0) return top;
  kept.reserve(n + 1);
  const auto consider = [&](const ConnectionPtr& owner, const RequestStatistics& recent) {
    const std::uint64_t messages = Messages(recent);
    if (messages == 0) return;
    // Most connections lose here, before their owner is shared: not before the last kept.
    if (kept.size() == n) {
      const Candidate& last = kept.front();
      if (messages < last.messages ||
          (messages == last.messages && owner->client_id >= last.client_id)) {
        return;
      }
    }
    kept.push_back(Candidate{messages, owner->client_id, recent, owner});
    std::push_heap(kept.begin(), kept.end(), before);
    if (kept.size() > n) {
      std::pop_heap(kept.begin(), kept.end(), before);
      kept.pop_back();
    }
  };
  // The closed connections with traffic in the minute (few: those closed about then), summed by
  // client id (first) with the open connection or offline session of that id (then); the others
  // are ranked alone.
  struct ClosedSum {
    ConnectionPtr owner;  // one closed connection of the client id
    RequestStatistics recent;
  };
  std::unordered_map<std::string_view, ClosedSum> closed;
  registry.VisitForMetrics(
      [&closed](const ConnectionPtr& connection) {
        if (Messages(connection->recent_statistics) == 0) return;
        auto [it, added] = closed.try_emplace(connection->client_id, ClosedSum{connection, {}});
        it->second.recent = Plus(it->second.recent, connection->recent_statistics);
      },
      [&](const ConnectionPtr& live, const RequestStatistics& recent) {
        if (Messages(recent) == 0) return;
        if (!closed.empty()) {
          const auto same = closed.find(live->client_id);
          if (same != closed.end()) {
            same->second.recent = Plus(same->second.recent, recent);
            return;
          }
        }
        consider(live, recent);
      });
  for (const auto& [client_id, sum] : closed) consider(sum.owner, sum.recent);
  std::sort_heap(kept.begin(), kept.end(), before);
  top.reserve(kept.size());
  for (const Candidate& candidate : kept) {
    top.push_back(TopClient{std::string(candidate.client_id), candidate.recent});
  }
  return top;
}

}  // namespace mqc
