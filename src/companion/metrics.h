// SPDX-License-Identifier: BSD-3-Clause
// The companion's Prometheus metrics: GET /metrics, text format 0.0.4 (spec README "GET /metrics").
//
// Two sources, one exposition:
// - What the broker counts (operations, RPC durations, connects, disconnects, traffic, events
//   lost) lives in the shared region, written by the broker thread alone. Those words are the
//   counters themselves, owned by the broker and kept across companion restarts, so they are read
//   here, never incremented: a prometheus-cpp Counter can only be incremented, so it could not
//   carry an absolute value without a second copy that drifts and resets when the companion
//   does. A custom prometheus::Collectable reads them, with relaxed loads, at each scrape; the
//   open connections and subscriptions come the same way from the companion's ConnectionRegistry.
// - What the companion counts itself (HTTP requests, the time of the last render) uses ordinary
//   prometheus-cpp families in a prometheus::Registry.
// One TextSerializer writes both. Only one family has a per-client label, and it is bounded and
// opt-in: kubemq_mqtt_top_client_messages_per_second (plugin_opt_metrics_top_clients N, at most
// 100, so at most 200 series), the N top talkers of the previous complete minute; a client that
// leaves the top N leaves the exposition. No other family has a client id, address or topic:
// the series count would grow with the clients.
//
// Threads: constructed on the companion's main thread before the HTTP server starts. Render()
// and CountHttpRequest() run on libmicrohttpd's threads, several at a time: the shared region
// is only loaded (atomics), the ConnectionRegistry takes its own lock, and the prometheus-cpp
// registry, families and metrics are thread-safe. The broker thread (another process) writes the
// region concurrently; a scrape may see one counter a few events ahead of another, which Prometheus
// tolerates.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace mqc {

class ConnectionRegistry;
struct SharedHeader;

class MetricsExporter {
 public:
  // `shared` and `registry` must outlive the exporter. `node_id` goes into the help text of
  // kubemq_mqtt_connections, not into a label: every series of a scrape is of this one node, and
  // Prometheus tells nodes apart by their scrape target.
  // `top_clients`: plugin_opt_metrics_top_clients (0: the top-clients family is left out).
  MetricsExporter(const SharedHeader& shared, const ConnectionRegistry& registry,
                  std::uint32_t node_id, std::uint32_t top_clients = 0);
  ~MetricsExporter();
  MetricsExporter(const MetricsExporter&) = delete;
  MetricsExporter& operator=(const MetricsExporter&) = delete;

  // Every family, in Prometheus text format 0.0.4. Also times itself: the time shows as
  // kubemq_mqtt_scrape_duration_seconds in the next render (a render cannot contain its own).
  std::string Render();

  // Adds mosquitto_connections_build_info{version, broker_version} 1 (the broker's version as the
  // plugin read it, "unknown" when empty), and mosquitto_connections_companion_start_time_seconds
  // (now). Once, before the HTTP server starts.
  void SetBuildInfo(const std::string& version, const std::string& broker_version);

  // Counts one answered HTTP request. `path_label`: HttpPathLabel(path) (http_router.h), one of
  // a few fixed values, so that scanners probing random paths cannot add series. Never throws: a
  // request is not failed for its metric.
  void CountHttpRequest(std::string_view path_label, int status) noexcept;

  // Adds mosquitto_connections_fleet_duplicate_client_ids (only a broker with fleet peers shows
  // it), for the fleet query to set after each answer. Once, before the HTTP server starts.
  prometheus::Gauge* AddFleetDuplicateClientIds();
  // Sets kubemq_mqtt_scrape_duration_seconds; Render() calls it with its own time.
  void ObserveScrape(double seconds) noexcept;

 private:
  class BrokerCollector;

  std::unique_ptr<BrokerCollector> broker_;
  std::unique_ptr<prometheus::Registry> own_;  // the companion's own families
  prometheus::Family<prometheus::Counter>* http_requests_;
  prometheus::Gauge* scrape_duration_;
  prometheus::Gauge* fleet_duplicates_ = nullptr;
};

}  // namespace mqc
