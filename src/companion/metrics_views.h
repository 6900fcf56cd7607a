// SPDX-License-Identifier: BSD-3-Clause
// What /metrics reads from the ConnectionRegistry besides its counts: the subscriptions by
// KubeMQ pattern and the top talkers of the previous minute. Both are views of /metrics, not
// the registry's business; they read it through ConnectionRegistry::VisitForMetrics, one pass
// under its lock, copying no connection.
//
// Threads: any thread (libmicrohttpd's, at a scrape), several at once: the registry takes its
// own lock; nothing here keeps state.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "companion/connection.h"
#include "companion/connection_registry.h"

namespace mqc {

// Subscriptions of open connections and of offline sessions (the broker still routes to those),
// indexed by Pattern (kNone first): the kubemq_mqtt_subscriptions{pattern} gauge.
std::array<std::size_t, kPatternCount> SubscriptionsByPattern(const ConnectionRegistry& registry);

// The top talkers of /metrics (plugin_opt_metrics_top_clients): the `n` client ids with the most
// publishes plus deliveries in the previous complete minute of Unix time
// (recentRequestStatistics), most first, ties by client id; none without traffic. A client id's
// figure is the sum over its open connection or offline session and its closed connections
// that show traffic (one that connected, sent and left in that minute), so that it is one
// series of /metrics. Keeps at most `n` (n <= 100) while it passes.
struct TopClient {
  std::string client_id;
  RequestStatistics recent;
};
std::vector<TopClient> TopClients(const ConnectionRegistry& registry, std::size_t n);

}  // namespace mqc
