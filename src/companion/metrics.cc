// SPDX-License-Identifier: BSD-3-Clause
// MetricsExporter (see metrics.h).
//
// Where the spec is silent:
// - A histogram's `_count` is its buckets' total (the overflow slot included), or the shared
//   `count` when that is ahead: the broker writes the slots one by one, and a scrape that saw a
//   bucket without its count would otherwise show a `+Inf` bucket below the `le="60"` one.
// - kubemq_mqtt_scrape_duration_seconds is a gauge of the previous render's time: Prometheus
//   already records its own scrape_duration_seconds per target, what it cannot see is how long
//   the companion spent rendering, and one recent value answers that.
// - Every operation x status and every label value of the broker's families is always present,
//   also at 0, so that rate() and absent() work from the first scrape.
#include "companion/metrics.h"

#include <prometheus/client_metric.h>
#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <iterator>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "companion/connection.h"
#include "companion/connection_registry.h"
#include "companion/metrics_views.h"
#include "link/shared_region.h"
#include "link/topic_mapping.h"

namespace mqc {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Label values, in the order of the enums that index the shared counters.
constexpr std::array<const char*, kOperationCount> kOperationLabels = {
    "publish_events", "publish_store", "publish_queues", "rpc_command", "rpc_query",
    "deliver_events", "deliver_store", "deliver_queues", "rpc_response"};
constexpr std::array<const char*, kStatusCount> kStatusLabels = {"success", "error", "dropped"};
constexpr std::array<const char*, kSubscribeStatusCount> kSubscribeStatusLabels = {"success",
                                                                                   "error"};
constexpr std::array<const char*, kDurationOperationCount> kDurationLabels = {
    "rpc_command", "rpc_query", "rpc_response"};
constexpr std::array<const char*, 8> kCloseReasonLabels = {  // by CloseReason
    "unknown",
    "client_disconnect",
    "connection_lost",
    "session_taken_over",
    "authentication_failed",
    "kicked",
    "broker_shutdown",
    "access_revoked"};
constexpr std::array<const char*, kPatternCount> kPatternLabels = {  // by Pattern
    "none", "events", "store", "queues", "commands", "queries"};

static_assert(static_cast<std::size_t>(CloseReason::kAccessRevoked) + 1 ==
                      kCloseReasonLabels.size() &&
                  std::extent_v<decltype(BrokerCounters::disconnects)> == kCloseReasonLabels.size(),
              "one disconnects counter and one label per CloseReason");
static_assert(static_cast<std::size_t>(Operation::kRpcResponse) + 1 == kOperationLabels.size() &&
                  static_cast<std::size_t>(OperationStatus::kDropped) + 1 == kStatusLabels.size(),
              "one label per Operation and per OperationStatus");
constexpr std::array<const char*, kDropReasonCount> kDropReasonLabels = {"queue_full", "offline"};
static_assert(static_cast<std::size_t>(DropReason::kOffline) + 1 == kDropReasonLabels.size(),
              "one label per DropReason");
static_assert(static_cast<std::size_t>(SubscribeStatus::kError) + 1 ==
                  kSubscribeStatusLabels.size(),
              "one label per SubscribeStatus");
static_assert(static_cast<std::size_t>(Pattern::kNone) == 0 &&
                  static_cast<std::size_t>(Pattern::kQueries) == 5,
              "kPatternLabels follows Pattern");

std::uint64_t Load(const std::atomic<std::uint64_t>& value) {
  return value.load(std::memory_order_relaxed);
}

MetricFamily NewFamily(std::string name, std::string help, MetricType type) {
  MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

// Labels must be given sorted by name: the serializer writes them in the order given.
void AddCounter(MetricFamily* family, std::uint64_t value,
                std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric metric;
  metric.label = std::move(labels);
  metric.counter.value = static_cast<double>(value);
  family->metric.push_back(std::move(metric));
}

void AddGauge(MetricFamily* family, std::uint64_t value,
              std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric metric;
  metric.label = std::move(labels);
  metric.gauge.value = static_cast<double>(value);
  family->metric.push_back(std::move(metric));
}

MetricFamily SingleCounter(std::string name, std::string help,
                           const std::atomic<std::uint64_t>& value) {
  MetricFamily family = NewFamily(std::move(name), std::move(help), MetricType::Counter);
  AddCounter(&family, Load(value));
  return family;
}

// A counter family by one label: counters[i] is the sample with label `label` = values[i].
template <std::size_t N>
MetricFamily CountersByLabel(std::string name, std::string help, const char* label,
                             const std::atomic<std::uint64_t> (&counters)[N],
                             const std::array<const char*, N>& values) {
  MetricFamily family = NewFamily(std::move(name), std::move(help), MetricType::Counter);
  for (std::size_t i = 0; i < N; ++i) AddCounter(&family, Load(counters[i]), {{label, values[i]}});
  return family;
}

ClientMetric DurationMetric(const char* operation, const SharedHistogram& shared) {
  ClientMetric metric;
  metric.label = {{"operation", operation}};
  auto& histogram = metric.histogram;
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < kDurationBucketCount; ++i) {
    cumulative += Load(shared.buckets[i]);
    histogram.bucket.push_back({cumulative, kDurationBuckets[i]});
  }
  cumulative += Load(shared.buckets[kDurationBucketCount]);  // above the last bound
  histogram.sample_count = std::max(cumulative, Load(shared.count));
  histogram.bucket.push_back({histogram.sample_count, std::numeric_limits<double>::infinity()});
  histogram.sample_sum = static_cast<double>(Load(shared.sum_ns)) / 1e9;
  return metric;
}

}  // namespace

// Reads the broker's counters and the ConnectionRegistry at each scrape; holds no state of its own.
class MetricsExporter::BrokerCollector : public prometheus::Collectable {
 public:
  BrokerCollector(const SharedHeader& shared, const ConnectionRegistry& registry,
                  std::uint32_t node_id, std::uint32_t top_clients)
      : shared_(shared), registry_(registry), node_id_(node_id), top_clients_(top_clients) {}

  std::vector<MetricFamily> Collect() const override {
    const BrokerCounters& counters = shared_.counters;
    std::vector<MetricFamily> families;
    families.push_back(Connections());
    families.push_back(Operations());
    families.push_back(Durations());
    families.push_back(SingleCounter("kubemq_mqtt_connects_total", "CONNECTs the broker accepted.",
                                     counters.connects));
    families.push_back(SingleCounter("kubemq_mqtt_connects_refused_total",
                                     "CONNECTs the broker refused.", counters.connects_refused));
    families.push_back(Disconnects());
    families.push_back(Subscriptions());
    families.push_back(Subscribes());
    if (Load(shared_.counters.acl_denials_shown) != 0) {
      families.push_back(AclDenials());
    }
    families.push_back(Dropped());
    families.push_back(SingleCounter("kubemq_mqtt_received_messages_total",
                                     "PUBLISH messages received from clients.",
                                     counters.received_messages));
    families.push_back(SingleCounter("kubemq_mqtt_received_bytes_total",
                                     "Payload bytes of PUBLISH messages received from clients.",
                                     counters.received_bytes));
    families.push_back(SingleCounter("kubemq_mqtt_delivered_messages_total",
                                     "Messages queued to subscribers.",
                                     counters.delivered_messages));
    families.push_back(SingleCounter("kubemq_mqtt_delivered_bytes_total",
                                     "Payload bytes of messages queued to subscribers.",
                                     counters.delivered_bytes));
    families.push_back(
        SingleCounter("kubemq_mqtt_events_lost_total",
                      "Broker events dropped on a full events ring (the companion then resyncs).",
                      shared_.broker.events_lost));
    if (top_clients_ > 0) families.push_back(TopClients());
    return families;
  }

 private:
  MetricFamily Connections() const {
    MetricFamily family =
        NewFamily("kubemq_mqtt_connections",
                  "Open MQTT connections on this node (node_id " + std::to_string(node_id_) +
                      "); a session takeover never counts twice, a refused CONNECT never counts.",
                  MetricType::Gauge);
    AddGauge(&family, registry_.open_count());
    return family;
  }

  MetricFamily Operations() const {
    MetricFamily family =
        NewFamily("kubemq_mqtt_operations_total",
                  "MQTT traffic as KubeMQ bridge operations, by outcome.", MetricType::Counter);
    for (std::size_t op = 0; op < kOperationCount; ++op) {
      for (std::size_t status = 0; status < kStatusCount; ++status) {
        AddCounter(&family, Load(shared_.counters.operations[op][status]),
                   {{"operation", kOperationLabels[op]}, {"status", kStatusLabels[status]}});
      }
    }
    return family;
  }

  MetricFamily Durations() const {
    MetricFamily family =
        NewFamily("kubemq_mqtt_operation_duration_seconds",
                  "Request-to-response time of RPC operations.", MetricType::Histogram);
    for (std::size_t op = 0; op < kDurationOperationCount; ++op) {
      family.metric.push_back(DurationMetric(kDurationLabels[op], shared_.counters.durations[op]));
    }
    return family;
  }

  MetricFamily Disconnects() const {
    return CountersByLabel("kubemq_mqtt_disconnects_total",
                           "Closed MQTT connections, by why they closed.", "reason",
                           shared_.counters.disconnects, kCloseReasonLabels);
  }

  MetricFamily Subscriptions() const {
    MetricFamily family =
        NewFamily("kubemq_mqtt_subscriptions",
                  "Subscriptions of open connections and of offline sessions, by KubeMQ pattern "
                  "(none: $ topics, and unprefixed ones under default_pattern none).",
                  MetricType::Gauge);
    const auto counts = SubscriptionsByPattern(registry_);
    for (std::size_t pattern = 0; pattern < counts.size(); ++pattern) {
      AddGauge(&family, counts[pattern], {{"pattern", kPatternLabels[pattern]}});
    }
    return family;
  }

  // The project's own family, not kubemq_mqtt_operations_total: KubeMQ has no subscribe
  // operation, and a tenth operation would change every `sum by (operation)` of a KubeMQ
  // dashboard.
  MetricFamily Subscribes() const {
    return CountersByLabel(
        "mosquitto_connections_subscribes_total",
        "SUBSCRIBE filters: made by the broker (success), refused by KubeMQ strict mode (error).",
        "status", shared_.counters.subscribes, kSubscribeStatusLabels);
  }

  // ACL denials by access, where the broker shows them (BrokerControl::denials_shown; left out
  // where it hides them, so that no 0 passes for a count). Per client only in the rich API.
  MetricFamily AclDenials() const {
    constexpr std::array<const char*, kAclAccessCount> kLabels = {"publish", "subscribe"};
    return CountersByLabel("mosquitto_connections_acl_denials_total",
                           "Requests of clients an ACL source refused: PUBLISHes (access "
                           "publish) and SUBSCRIBE filters (access subscribe).",
                           "access", shared_.counters.acl_denials, kLabels);
  }

  // Messages the broker threw away, by the causes the plugin sees (docs/broker-versions.md,
  // "Dropped messages"); per client only in the rich API (messagesDropped).
  MetricFamily Dropped() const {
    return CountersByLabel(
        "mosquitto_connections_messages_dropped_total",
        "Messages the broker threw away instead of queueing them for a subscriber, by cause: a "
        "full queue (max_queued_messages, max_queued_bytes), a QoS 0 message for an offline "
        "session.",
        "reason", shared_.counters.messages_dropped, kDropReasonLabels);
  }

  // The top talkers, recomputed at each scrape: a client that left the top N has no series.
  MetricFamily TopClients() const {
    MetricFamily family = NewFamily(
        "kubemq_mqtt_top_client_messages_per_second",
        "The " + std::to_string(top_clients_) +
            " clients with the most PUBLISH messages received plus messages delivered in the "
            "previous complete minute (plugin_opt_metrics_top_clients), per second of it.",
        MetricType::Gauge);
    for (const TopClient& client : mqc::TopClients(registry_, top_clients_)) {
      for (const auto& [direction, count] :
           {std::pair<const char*, std::uint64_t>{"deliver", client.recent.deliver_count},
            std::pair<const char*, std::uint64_t>{"publish", client.recent.publish_count}}) {
        ClientMetric metric;
        metric.label = {{"client_id", client.client_id}, {"direction", direction}};
        metric.gauge.value = static_cast<double>(count) / 60.0;
        family.metric.push_back(std::move(metric));
      }
    }
    return family;
  }

  const SharedHeader& shared_;
  const ConnectionRegistry& registry_;
  const std::uint32_t node_id_;
  const std::uint32_t top_clients_;
};

MetricsExporter::MetricsExporter(const SharedHeader& shared, const ConnectionRegistry& registry,
                                 std::uint32_t node_id, std::uint32_t top_clients)
    : broker_(std::make_unique<BrokerCollector>(shared, registry, node_id,
                                                std::min<std::uint32_t>(top_clients, 100))),
      own_(std::make_unique<prometheus::Registry>()),
      http_requests_(&prometheus::BuildCounter()
                          .Name("kubemq_mqtt_http_requests_total")
                          .Help("HTTP requests the companion answered, by path and status.")
                          .Register(*own_)),
      scrape_duration_(&prometheus::BuildGauge()
                            .Name("kubemq_mqtt_scrape_duration_seconds")
                            .Help("Time the companion took to render the previous /metrics.")
                            .Register(*own_)
                            .Add({})) {}

MetricsExporter::~MetricsExporter() = default;

void MetricsExporter::SetBuildInfo(const std::string& version, const std::string& broker_version) {
  prometheus::BuildGauge()
      .Name("mosquitto_connections_build_info")
      .Help("Always 1: the plugin's version and the broker's, as labels.")
      .Register(*own_)
      .Add({{"broker_version", broker_version.empty() ? "unknown" : broker_version},
            {"version", version}})
      .Set(1);
  // A restarted companion is a new value: alert rules count its changes.
  prometheus::BuildGauge()
      .Name("mosquitto_connections_companion_start_time_seconds")
      .Help("When this companion process started, in seconds since the Unix epoch.")
      .Register(*own_)
      .Add({})
      .Set(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
               .count());
}

prometheus::Gauge* MetricsExporter::AddFleetDuplicateClientIds() {
  fleet_duplicates_ = &prometheus::BuildGauge()
                           .Name("mosquitto_connections_fleet_duplicate_client_ids")
                           .Help(
                               "Client ids open on two brokers or more, among the open "
                               "connections of the last fleet ListConnections answer "
                               "(docs/fleet.md); 0 until the first.")
                           .Register(*own_)
                           .Add({});
  return fleet_duplicates_;
}

std::string MetricsExporter::Render() {
  const auto start = std::chrono::steady_clock::now();
  std::vector<MetricFamily> families = broker_->Collect();
  std::vector<MetricFamily> own = own_->Collect();
  families.insert(families.end(), std::make_move_iterator(own.begin()),
                  std::make_move_iterator(own.end()));
  std::string text = prometheus::TextSerializer().Serialize(families);
  ObserveScrape(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return text;
}

void MetricsExporter::CountHttpRequest(std::string_view path_label, int status) noexcept {
  try {
    // A status outside HTTP's range would be a bug elsewhere; it must not add series.
    const std::string status_label =
        status >= 100 && status <= 599 ? std::to_string(status) : "other";
    http_requests_->Add({{"path", std::string(path_label)}, {"status", status_label}}).Increment();
  } catch (...) {
    // Out of memory: the request is answered anyway, only its count is lost.
  }
}

void MetricsExporter::ObserveScrape(double seconds) noexcept { scrape_duration_->Set(seconds); }

}  // namespace mqc
