// SPDX-License-Identifier: BSD-3-Clause
#include "companion/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../support/connection_builder.h"
#include "../support/stats_slots.h"
#include "../support/test_region.h"
#include "companion/companion_link.h"
#include "companion/connection.h"
#include "companion/connection_registry.h"
#include "companion/http/http_router.h"
#include "link/event_records.h"
#include "link/shared_region.h"

namespace mqc {
namespace {

using ::testing::HasSubstr;
using ::testing::IsSubsetOf;
using ::testing::Not;
using ::testing::UnorderedElementsAreArray;

// The contract's label values (../shared/spec/README.md, "GET /metrics"), written out here rather
// than taken from metrics.cc, so that a value added there fails these tests.
const char* const kOperations[] = {"publish_events", "publish_store",  "publish_queues",
                                   "rpc_command",    "rpc_query",      "deliver_events",
                                   "deliver_store",  "deliver_queues", "rpc_response"};
const char* const kStatuses[] = {"success", "error", "dropped"};
const char* const kDurationOperations[] = {"rpc_command", "rpc_query", "rpc_response"};
const char* const kBounds[] = {"0.01", "0.05", "0.1", "0.25", "0.5", "1",
                               "2.5",  "5",    "10",  "30",   "60",  "+Inf"};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The sample lines of one series name (`name` or `name{...}`), comments left out.
std::vector<std::string> Samples(const std::string& text, const std::string& name) {
  std::vector<std::string> samples;
  for (const std::string& line : Lines(text)) {
    if (line.compare(0, name.size(), name) == 0 && line.size() > name.size() &&
        (line[name.size()] == '{' || line[name.size()] == ' ')) {
      samples.push_back(line);
    }
  }
  return samples;
}

// name="value" pairs of a sample line, in order; empty for a line without labels.
std::vector<std::pair<std::string, std::string>> LabelsOf(const std::string& line) {
  std::vector<std::pair<std::string, std::string>> labels;
  const std::size_t open = line.find('{');
  if (open == std::string::npos) return labels;
  std::size_t at = open + 1;
  while (at < line.size() && line[at] != '}') {
    const std::size_t equals = line.find("=\"", at);
    const std::size_t close = line.find('"', equals + 2);
    labels.emplace_back(line.substr(at, equals - at), line.substr(equals + 2, close - equals - 2));
    at = close + 1;
    if (at < line.size() && line[at] == ',') ++at;
  }
  return labels;
}

ConnectionEvent Open(std::uint64_t seq, const std::string& client_id) {
  ConnectionEvent e = TestConnectionRecord(seq, client_id);
  e.username = "user-" + client_id;
  e.ip_address = "192.0.2.7";
  e.protocol_version = 5;
  return e;
}

class MetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    region_ = TestRegion({1 << 12, 1 << 12, 16});
    ASSERT_NE(region_, nullptr);
    exporter_ = std::make_unique<MetricsExporter>(*region_->header(), registry_, 7);
  }

  BrokerCounters& counters() { return region_->header()->counters; }

  template <typename Event>
  void Apply(EventType type, const Event& event) {
    std::string bytes;
    Encode(event, &bytes);
    ASSERT_TRUE(ApplyEventRecord(&registry_, type, bytes, 10));
  }
  void Subscribe(std::uint64_t seq, const std::string& filter) {
    Apply(EventType::kSubscribe, SubscriptionEvent{seq, 1, filter});
  }

  std::unique_ptr<SharedRegion> region_;
  ConnectionRegistry registry_{
      ConnectionRegistryOptions{7, DefaultPattern::kEvents, 10, 1'000'000'000, {}, nullptr, 0}};
  std::unique_ptr<MetricsExporter> exporter_;
};

TEST_F(MetricsTest, EveryFamilyHasItsTypeLine) {
  exporter_->CountHttpRequest(HttpPathLabel("/metrics"),
                              200);  // a family without a series is not written
  const std::map<std::string, std::string> types = {
      {"kubemq_mqtt_connections", "gauge"},
      {"kubemq_mqtt_operations_total", "counter"},
      {"kubemq_mqtt_operation_duration_seconds", "histogram"},
      {"kubemq_mqtt_connects_total", "counter"},
      {"kubemq_mqtt_connects_refused_total", "counter"},
      {"kubemq_mqtt_disconnects_total", "counter"},
      {"kubemq_mqtt_subscriptions", "gauge"},
      {"kubemq_mqtt_received_messages_total", "counter"},
      {"kubemq_mqtt_received_bytes_total", "counter"},
      {"kubemq_mqtt_delivered_messages_total", "counter"},
      {"kubemq_mqtt_delivered_bytes_total", "counter"},
      {"kubemq_mqtt_events_lost_total", "counter"},
      {"kubemq_mqtt_http_requests_total", "counter"},
      {"kubemq_mqtt_scrape_duration_seconds", "gauge"},
      {"mosquitto_connections_subscribes_total", "counter"},
      {"mosquitto_connections_messages_dropped_total", "counter"},
  };
  std::vector<std::string> expected_types;
  for (const auto& [name, type] : types) expected_types.push_back("# TYPE " + name + " " + type);

  const std::string text = exporter_->Render();
  std::vector<std::string> type_lines;
  std::vector<std::string> help_names;
  for (const std::string& line : Lines(text)) {
    if (line.rfind("# TYPE ", 0) == 0) type_lines.push_back(line);
    if (line.rfind("# HELP ", 0) == 0) help_names.push_back(line.substr(7, line.find(' ', 7) - 7));
  }
  EXPECT_THAT(type_lines, UnorderedElementsAreArray(expected_types));
  std::vector<std::string> names;
  for (const auto& [name, type] : types) names.push_back(name);
  EXPECT_THAT(help_names, UnorderedElementsAreArray(names));
}

TEST_F(MetricsTest, BuildInfoNamesBothVersions) {
  exporter_->SetBuildInfo("9.8.7", "2.0.21");
  const std::string text = exporter_->Render();
  EXPECT_THAT(text, HasSubstr("# TYPE mosquitto_connections_build_info gauge\n"));
  EXPECT_THAT(text, HasSubstr("mosquitto_connections_build_info{broker_version=\"2.0.21\",version="
                              "\"9.8.7\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE mosquitto_connections_companion_start_time_seconds gauge"));
  MetricsExporter unknown(*region_->header(), registry_, 7);
  unknown.SetBuildInfo("9.8.7", "");
  EXPECT_THAT(unknown.Render(), HasSubstr("broker_version=\"unknown\""));
}

TEST_F(MetricsTest, EveryOperationAndStatusIsPresentAtZero) {
  std::vector<std::string> expected;
  for (const char* operation : kOperations) {
    for (const char* status : kStatuses) {
      expected.push_back(std::string("kubemq_mqtt_operations_total{operation=\"") + operation +
                         "\",status=\"" + status + "\"} 0");
    }
  }
  EXPECT_THAT(Samples(exporter_->Render(), "kubemq_mqtt_operations_total"),
              UnorderedElementsAreArray(expected));
}

TEST_F(MetricsTest, OperationsAreReadFromTheSharedCounters) {
  const auto op = [](Operation o) { return static_cast<std::size_t>(o); };
  const auto st = [](OperationStatus s) { return static_cast<std::size_t>(s); };
  counters().operations[op(Operation::kPublishEvents)][st(OperationStatus::kSuccess)] = 12;
  counters().operations[op(Operation::kDeliverStore)][st(OperationStatus::kDropped)] = 3;
  counters().operations[op(Operation::kRpcResponse)][st(OperationStatus::kError)] = 1;
  const auto samples = Samples(exporter_->Render(), "kubemq_mqtt_operations_total");
  EXPECT_EQ(samples.size(), 27u);  // 9 operations x 3 statuses
  EXPECT_THAT(
      samples,
      testing::IsSupersetOf({
          "kubemq_mqtt_operations_total{operation=\"publish_events\",status=\"success\"} 12",
          "kubemq_mqtt_operations_total{operation=\"deliver_store\",status=\"dropped\"} 3",
          "kubemq_mqtt_operations_total{operation=\"rpc_response\",status=\"error\"} 1",
          "kubemq_mqtt_operations_total{operation=\"publish_events\",status=\"error\"} 0",
      }));
}

// The project's own families, by one label each and without a client label: subscribe
// outcomes (not an operation: no operation="subscribe" anywhere), ACL denials by access where
// the broker shows them, dropped messages by cause.
TEST_F(MetricsTest, TheProjectsOwnFamiliesCountByOneLabel) {
  counters().subscribes[static_cast<std::size_t>(SubscribeStatus::kSuccess)] = 5;
  counters().subscribes[static_cast<std::size_t>(SubscribeStatus::kError)] = 2;
  counters().acl_denials[static_cast<std::size_t>(AclAccess::kPublish)] = 4;
  counters().acl_denials[static_cast<std::size_t>(AclAccess::kSubscribe)] = 1;
  counters().acl_denials_shown = 1;
  counters().messages_dropped[static_cast<std::size_t>(DropReason::kQueueFull)] = 40;
  counters().messages_dropped[static_cast<std::size_t>(DropReason::kOffline)] = 3;
  const std::string text = exporter_->Render();
  const std::pair<std::string, std::vector<std::string>> families[] = {
      {"mosquitto_connections_subscribes_total",
       {"mosquitto_connections_subscribes_total{status=\"success\"} 5",
        "mosquitto_connections_subscribes_total{status=\"error\"} 2"}},
      {"mosquitto_connections_acl_denials_total",
       {"mosquitto_connections_acl_denials_total{access=\"publish\"} 4",
        "mosquitto_connections_acl_denials_total{access=\"subscribe\"} 1"}},
      {"mosquitto_connections_messages_dropped_total",
       {"mosquitto_connections_messages_dropped_total{reason=\"queue_full\"} 40",
        "mosquitto_connections_messages_dropped_total{reason=\"offline\"} 3"}},
  };
  for (const auto& [family, samples] : families) {
    SCOPED_TRACE(family);
    EXPECT_THAT(text, HasSubstr("# TYPE " + family + " counter\n"));
    EXPECT_THAT(Samples(text, family), UnorderedElementsAreArray(samples));
  }
  EXPECT_THAT(text, Not(HasSubstr("subscribe\",")));
}

// Where the broker hides ACL denials the family is left out rather than written as zeros.
TEST_F(MetricsTest, AclDenialsAreLeftOutWhereTheBrokerHidesThem) {
  counters().acl_denials[static_cast<std::size_t>(AclAccess::kPublish)] = 4;
  counters().acl_denials_shown = 0;
  EXPECT_THAT(exporter_->Render(), Not(HasSubstr("mosquitto_connections_acl_denials_total")));
}

// KubeMQ dashboards sum the seed's families by operation and status: every kubemq_mqtt_* sample
// that carries one of those labels holds one of the contract's values, and the seed's families
// carry exactly the contract's label names. Every counter of the region is non-zero here, so a
// family that writes only its non-zero series would show its values too.
TEST_F(MetricsTest, KubemqFamiliesCarryOnlyTheContractsLabelValues) {
  for (auto& row : counters().operations) {
    for (auto& counter : row) counter = 1;
  }
  for (auto& histogram : counters().durations) {
    for (auto& bucket : histogram.buckets) bucket = 1;
    histogram.count = kDurationBucketCount + 1;
    histogram.sum_ns = 1;
  }
  for (auto& counter : counters().subscribes) counter = 1;
  for (auto& counter : counters().disconnects) counter = 1;
  Apply(EventType::kConnection, Open(1, "c"));
  Subscribe(1, "events/a");
  exporter_->CountHttpRequest(HttpPathLabel("/metrics"), 200);
  exporter_->SetBuildInfo("1.2.3", "2.0.21");
  const std::set<std::string> operations(std::begin(kOperations), std::end(kOperations));
  const std::set<std::string> statuses(std::begin(kStatuses), std::end(kStatuses));
  const std::set<std::string> duration_operations(std::begin(kDurationOperations),
                                                  std::end(kDurationOperations));
  const std::string prefix = "kubemq_mqtt_";

  std::set<std::string> operations_seen;
  std::set<std::string> statuses_seen;
  std::set<std::string> duration_operations_seen;
  int checked = 0;
  for (const std::string& line : Lines(exporter_->Render())) {
    if (line.empty() || line[0] == '#' || line.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string name = line.substr(0, line.find_first_of("{ "));
    std::set<std::string> label_names;
    for (const auto& [label, value] : LabelsOf(line)) {
      label_names.insert(label);
      if (label == "operation") {
        EXPECT_THAT(operations, testing::Contains(value)) << line;
      }
      // An HTTP request's status is its HTTP status, not an operation's outcome.
      if (label == "status" && name != "kubemq_mqtt_http_requests_total") {
        EXPECT_THAT(statuses, testing::Contains(value)) << line;
      }
    }
    if (name == "kubemq_mqtt_connections") {
      EXPECT_TRUE(label_names.empty()) << line;
    } else if (name == "kubemq_mqtt_operations_total") {
      EXPECT_EQ(label_names, (std::set<std::string>{"operation", "status"})) << line;
      for (const auto& [label, value] : LabelsOf(line)) {
        (label == "operation" ? operations_seen : statuses_seen).insert(value);
      }
    } else if (name.compare(0, 38, "kubemq_mqtt_operation_duration_seconds") == 0) {
      const auto labels = LabelsOf(line);
      ASSERT_FALSE(labels.empty()) << line;
      EXPECT_EQ(labels[0].first, "operation") << line;
      duration_operations_seen.insert(labels[0].second);
    }
    ++checked;
  }
  EXPECT_GT(checked, 27 + 3 * (12 + 2));  // the parser did see the families
  EXPECT_EQ(operations_seen, operations);
  EXPECT_EQ(statuses_seen, statuses);
  EXPECT_EQ(duration_operations_seen, duration_operations);
}

TEST_F(MetricsTest, DurationHistogramsHaveTheSpecBucketsForRpcOnly) {
  const std::string text = exporter_->Render();
  std::vector<std::string> expected;
  for (const char* operation : kDurationOperations) {
    for (const char* bound : kBounds) {
      expected.push_back(std::string("kubemq_mqtt_operation_duration_seconds_bucket{operation=\"") +
                         operation + "\",le=\"" + bound + "\"} 0");
    }
  }
  EXPECT_THAT(Samples(text, "kubemq_mqtt_operation_duration_seconds_bucket"),
              UnorderedElementsAreArray(expected));
  EXPECT_THAT(Samples(text, "kubemq_mqtt_operation_duration_seconds_count"),
              UnorderedElementsAreArray({
                  "kubemq_mqtt_operation_duration_seconds_count{operation=\"rpc_command\"} 0",
                  "kubemq_mqtt_operation_duration_seconds_count{operation=\"rpc_query\"} 0",
                  "kubemq_mqtt_operation_duration_seconds_count{operation=\"rpc_response\"} 0",
              }));
  EXPECT_THAT(Samples(text, "kubemq_mqtt_operation_duration_seconds_sum"),
              UnorderedElementsAreArray({
                  "kubemq_mqtt_operation_duration_seconds_sum{operation=\"rpc_command\"} 0",
                  "kubemq_mqtt_operation_duration_seconds_sum{operation=\"rpc_query\"} 0",
                  "kubemq_mqtt_operation_duration_seconds_sum{operation=\"rpc_response\"} 0",
              }));
}

TEST_F(MetricsTest, DurationBucketsAreCumulativeWithSumInSeconds) {
  SharedHistogram& query = counters().durations[1];  // rpc_query
  const std::uint64_t per_bucket[kDurationBucketCount + 1] = {1, 2, 0, 0, 3, 0, 0, 0, 0, 0, 1, 4};
  for (std::size_t i = 0; i <= kDurationBucketCount; ++i) query.buckets[i] = per_bucket[i];
  query.sum_ns = 212'500'000'000;  // 212.5 s
  query.count = 11;
  const std::string text = exporter_->Render();

  const std::uint64_t cumulative[] = {1, 3, 3, 3, 6, 6, 6, 6, 6, 6, 7, 11};
  std::vector<std::string> expected;
  for (std::size_t i = 0; i < std::size(kBounds); ++i) {
    expected.push_back(
        std::string("kubemq_mqtt_operation_duration_seconds_bucket{operation=\"rpc_query\",le=\"") +
        kBounds[i] + "\"} " + std::to_string(cumulative[i]));
  }
  std::vector<std::string> query_buckets;
  for (const std::string& line : Samples(text, "kubemq_mqtt_operation_duration_seconds_bucket")) {
    if (line.find("\"rpc_query\"") != std::string::npos) query_buckets.push_back(line);
  }
  EXPECT_THAT(query_buckets, testing::ElementsAreArray(expected));  // in bound order
  EXPECT_THAT(
      text,
      HasSubstr("\nkubemq_mqtt_operation_duration_seconds_sum{operation=\"rpc_query\"} 212.5\n"));
  EXPECT_THAT(
      text,
      HasSubstr("\nkubemq_mqtt_operation_duration_seconds_count{operation=\"rpc_query\"} 11\n"));
  EXPECT_THAT(
      text,
      HasSubstr("\nkubemq_mqtt_operation_duration_seconds_count{operation=\"rpc_command\"} 0\n"));
}

// The broker writes a bucket and the count one after the other: a scrape between the two must
// still show +Inf == _count >= every bucket.
TEST_F(MetricsTest, DurationCountIsNeverBelowItsBuckets) {
  SharedHistogram& command = counters().durations[0];
  command.buckets[0] = 2;
  command.count = 1;
  const std::string text = exporter_->Render();
  EXPECT_THAT(text, HasSubstr("\nkubemq_mqtt_operation_duration_seconds_bucket{operation=\""
                              "rpc_command\",le=\"+Inf\"} 2\n"));
  EXPECT_THAT(
      text,
      HasSubstr("\nkubemq_mqtt_operation_duration_seconds_count{operation=\"rpc_command\"} 2\n"));

  command.count = 5;  // the count ahead of its buckets: the count wins
  EXPECT_THAT(exporter_->Render(),
              HasSubstr("\nkubemq_mqtt_operation_duration_seconds_bucket{operation=\""
                        "rpc_command\",le=\"+Inf\"} 5\n"));
}

TEST_F(MetricsTest, BrokerCountersAreExported) {
  counters().connects = 40;
  counters().connects_refused = 2;
  counters().disconnects[static_cast<int>(CloseReason::kUnspecified)] = 1;
  counters().disconnects[static_cast<int>(CloseReason::kClientDisconnect)] = 30;
  counters().disconnects[static_cast<int>(CloseReason::kConnectionLost)] = 4;
  counters().disconnects[static_cast<int>(CloseReason::kSessionTakenOver)] = 2;
  counters().disconnects[static_cast<int>(CloseReason::kAuthenticationFailed)] = 0;
  counters().disconnects[static_cast<int>(CloseReason::kKicked)] = 3;
  counters().disconnects[static_cast<int>(CloseReason::kBrokerShutdown)] = 5;
  counters().disconnects[static_cast<int>(CloseReason::kAccessRevoked)] = 7;
  counters().received_messages = 100;
  counters().received_bytes = 12345;
  counters().delivered_messages = 200;
  counters().delivered_bytes = 9'007'199'254'740'992;  // 2^53: exact in a double
  region_->header()->broker.events_lost = 6;
  const std::string text = exporter_->Render();

  EXPECT_THAT(Samples(text, "kubemq_mqtt_connects_total"),
              testing::ElementsAre("kubemq_mqtt_connects_total 40"));
  EXPECT_THAT(Samples(text, "kubemq_mqtt_connects_refused_total"),
              testing::ElementsAre("kubemq_mqtt_connects_refused_total 2"));
  EXPECT_THAT(Samples(text, "kubemq_mqtt_disconnects_total"),
              UnorderedElementsAreArray({
                  "kubemq_mqtt_disconnects_total{reason=\"client_disconnect\"} 30",
                  "kubemq_mqtt_disconnects_total{reason=\"connection_lost\"} 4",
                  "kubemq_mqtt_disconnects_total{reason=\"session_taken_over\"} 2",
                  "kubemq_mqtt_disconnects_total{reason=\"authentication_failed\"} 0",
                  "kubemq_mqtt_disconnects_total{reason=\"kicked\"} 3",
                  "kubemq_mqtt_disconnects_total{reason=\"broker_shutdown\"} 5",
                  "kubemq_mqtt_disconnects_total{reason=\"access_revoked\"} 7",
                  "kubemq_mqtt_disconnects_total{reason=\"unknown\"} 1",
              }));
  EXPECT_THAT(Samples(text, "kubemq_mqtt_received_messages_total"),
              testing::ElementsAre("kubemq_mqtt_received_messages_total 100"));
  EXPECT_THAT(Samples(text, "kubemq_mqtt_received_bytes_total"),
              testing::ElementsAre("kubemq_mqtt_received_bytes_total 12345"));
  EXPECT_THAT(Samples(text, "kubemq_mqtt_delivered_messages_total"),
              testing::ElementsAre("kubemq_mqtt_delivered_messages_total 200"));
  EXPECT_THAT(Samples(text, "kubemq_mqtt_delivered_bytes_total"),
              testing::ElementsAre("kubemq_mqtt_delivered_bytes_total 9007199254740992"));
  EXPECT_THAT(Samples(text, "kubemq_mqtt_events_lost_total"),
              testing::ElementsAre("kubemq_mqtt_events_lost_total 6"));
}

// The samples of the subscription gauge, one per pattern, from the counts of events, store,
// queues, commands, queries and none in that order.
std::vector<std::string> SubscriptionSamples(const std::array<int, 6>& counts) {
  const char* const patterns[] = {"events", "store", "queues", "commands", "queries", "none"};
  std::vector<std::string> samples;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    samples.push_back("kubemq_mqtt_subscriptions{pattern=\"" + std::string(patterns[i]) + "\"} " +
                      std::to_string(counts[i]));
  }
  return samples;
}

TEST_F(MetricsTest, ConnectionsAndSubscriptionsComeFromTheRegistry) {
  auto subscriptions = [this] { return Samples(exporter_->Render(), "kubemq_mqtt_subscriptions"); };
  EXPECT_THAT(Samples(exporter_->Render(), "kubemq_mqtt_connections"),
              testing::ElementsAre("kubemq_mqtt_connections 0"));
  EXPECT_THAT(subscriptions(), UnorderedElementsAreArray(SubscriptionSamples({0, 0, 0, 0, 0, 0})));

  for (std::uint64_t seq = 1; seq <= 3; ++seq) {
    Apply(EventType::kConnection, Open(seq, "client-" + std::to_string(seq)));
  }
  Subscribe(1, "events/site1/#");
  Subscribe(1, "sensors/temperature");  // unprefixed: the default pattern, events
  Subscribe(1, "$share/workers/queues/jobs");
  Subscribe(2, "queues/jobs/email");
  Subscribe(2, "commands/lights");
  Subscribe(2, "$reply/client-2/+");
  Subscribe(2, "store/orders");
  Apply(EventType::kUnsubscribe, SubscriptionEvent{2, 0, "store/orders"});
  Subscribe(3, "queries/stock");
  CloseEvent close;
  close.seq = 3;
  close.close_time_ns = 20;
  close.reason = CloseReason::kClientDisconnect;
  Apply(EventType::kClose, close);

  EXPECT_THAT(Samples(exporter_->Render(), "kubemq_mqtt_connections"),
              testing::ElementsAre("kubemq_mqtt_connections 2"));
  EXPECT_THAT(subscriptions(), UnorderedElementsAreArray(SubscriptionSamples({2, 0, 2, 1, 0, 1})));
}

TEST_F(MetricsTest, ConnectionsHelpNamesTheNode) {
  EXPECT_THAT(exporter_->Render(), HasSubstr("# HELP kubemq_mqtt_connections Open MQTT "
                                             "connections on this node (node_id 7)"));
}

TEST_F(MetricsTest, HttpRequestsAreCountedByBoundedPathAndStatus) {
  EXPECT_THAT(Samples(exporter_->Render(), "kubemq_mqtt_http_requests_total"), testing::IsEmpty());
  exporter_->CountHttpRequest(HttpPathLabel("/metrics"), 200);
  exporter_->CountHttpRequest(HttpPathLabel("/metrics"), 200);
  exporter_->CountHttpRequest(HttpPathLabel("/api/mqtt/connections"), 400);
  exporter_->CountHttpRequest(
      HttpPathLabel("/mqtt.connections.v1.ConnectionsService/ListConnections"), 200);
  exporter_->CountHttpRequest(HttpPathLabel("/mqtt.connections.v1.ConnectionsService/Kick"), 501);
  exporter_->CountHttpRequest(HttpPathLabel("/client-secret-path"), 404);
  exporter_->CountHttpRequest(HttpPathLabel("/wp-login.php"), 404);
  exporter_->CountHttpRequest(HttpPathLabel("/metrics"),
                              42);  // not an HTTP status: no series of its own
  EXPECT_THAT(
      Samples(exporter_->Render(), "kubemq_mqtt_http_requests_total"),
      UnorderedElementsAreArray({
          "kubemq_mqtt_http_requests_total{path=\"/metrics\",status=\"200\"} 2",
          "kubemq_mqtt_http_requests_total{path=\"/api/mqtt/connections\",status=\"400\"} 1",
          "kubemq_mqtt_http_requests_total{path=\"/mqtt.connections.v1.ConnectionsService/"
          "ListConnections\",status=\"200\"} 1",
          "kubemq_mqtt_http_requests_total{path=\"other\",status=\"501\"} 1",
          "kubemq_mqtt_http_requests_total{path=\"other\",status=\"404\"} 2",
          "kubemq_mqtt_http_requests_total{path=\"/metrics\",status=\"other\"} 1",
      }));
}

TEST_F(MetricsTest, ScrapeDurationIsAGaugeOfThePreviousRender) {
  exporter_->ObserveScrape(0.25);
  EXPECT_THAT(Samples(exporter_->Render(), "kubemq_mqtt_scrape_duration_seconds"),
              testing::ElementsAre("kubemq_mqtt_scrape_duration_seconds 0.25"));
  // Now the render's own time, well under a second on any machine that runs these tests.
  const auto samples = Samples(exporter_->Render(), "kubemq_mqtt_scrape_duration_seconds");
  ASSERT_EQ(samples.size(), 1u);
  const double seconds = std::stod(samples[0].substr(samples[0].find(' ') + 1));
  EXPECT_GT(seconds, 0.0);
  EXPECT_LT(seconds, 1.0);
}

TEST_F(MetricsTest, NoLabelHoldsAClientId) {
  for (std::uint64_t seq = 1; seq <= 3; ++seq) {
    Apply(EventType::kConnection, Open(seq, "secret-client-" + std::to_string(seq)));
    Subscribe(seq, "events/secret-channel-" + std::to_string(seq));
  }
  exporter_->CountHttpRequest(HttpPathLabel("/api/mqtt/connections?client_id=secret-client-1"),
                              200);
  exporter_->CountHttpRequest(HttpPathLabel("/metrics"), 200);
  const std::string text = exporter_->Render();
  EXPECT_THAT(text, Not(HasSubstr("secret")));
  EXPECT_THAT(text, Not(HasSubstr("192.0.2.7")));

  const std::set<std::string> allowed = {"operation", "status", "le", "reason", "pattern", "path"};
  std::set<std::string> seen;
  for (const std::string& line : Lines(text)) {
    if (line.empty() || line[0] == '#') continue;
    for (const auto& [name, value] : LabelsOf(line)) seen.insert(name);
  }
  EXPECT_THAT(seen, IsSubsetOf(allowed));
  EXPECT_EQ(seen, allowed);  // the parser found every label name: it does parse
}

// Scrapes and request counts run on several HTTP threads while the broker writes the region
// and the event thread feeds the registry (meant for -fsanitize=thread).
TEST_F(MetricsTest, ScrapesRunConcurrentlyWithWritersAndEachOther) {
  constexpr int kRequests = 2000;
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {  // the broker
    while (!done.load()) {
      Bump(counters().operations[0][0]);
      Bump(counters().durations[2].buckets[3]);
      Bump(counters().durations[2].count);
      Bump(counters().durations[2].sum_ns, 200'000'000);
    }
  });
  threads.emplace_back([&] {  // the event thread
    for (std::uint64_t seq = 1; !done.load(); ++seq) {
      std::string bytes;
      Encode(Open(seq, "c"), &bytes);
      ApplyEventRecord(&registry_, EventType::kConnection, bytes, 10);
      Encode(SubscriptionEvent{seq, 0, "queues/q"}, &bytes);
      ApplyEventRecord(&registry_, EventType::kSubscribe, bytes, 10);
    }
  });
  for (int t = 0; t < 2; ++t) {  // HTTP threads
    threads.emplace_back([&] {
      for (int i = 0; i < kRequests; ++i) {
        if (i % 100 == 0) {
          EXPECT_THAT(exporter_->Render(), HasSubstr("kubemq_mqtt_connections "));
        }
        exporter_->CountHttpRequest(HttpPathLabel("/api/mqtt/connections"), 200);
      }
    });
  }
  threads[2].join();
  threads[3].join();
  done.store(true);
  threads[0].join();
  threads[1].join();
  EXPECT_THAT(Samples(exporter_->Render(), "kubemq_mqtt_http_requests_total"),
              testing::ElementsAre("kubemq_mqtt_http_requests_total{path=\"/api/mqtt/"
                                   "connections\",status=\"200\"} " +
                                   std::to_string(2 * kRequests)));
}

TEST_F(MetricsTest, TopClientsFamilyIsLeftOutByDefault) {
  Apply(EventType::kConnection, Open(1, "talker"));
  EXPECT_THAT(exporter_->Render(), Not(HasSubstr("kubemq_mqtt_top_client")));
}

TEST_F(MetricsTest, TopClientsFamilyShowsTheTopTalkersOnlyAndDropsThoseWhoLeave) {
  TestStatsSlots slots(3);
  ConnectionRegistry registry(
      ConnectionRegistryOptions{7, DefaultPattern::kEvents, 10, 1'000'000'000, {}, slots.view()});
  MetricsExporter exporter(*region_->header(), registry, 7, /*top_clients=*/2);
  const std::int64_t minute = 60'000'000'000;
  for (std::uint64_t seq = 1; seq <= 3; ++seq) {
    ConnectionEvent e = Open(seq, "client \"" + std::to_string(seq) + "\"");
    e.stats_slot = static_cast<std::uint32_t>(seq - 1);
    slots[seq - 1].seq.store(seq);
    std::string bytes;
    Encode(e, &bytes);
    ASSERT_TRUE(ApplyEventRecord(&registry, EventType::kConnection, bytes, 10 * minute + 1));
  }
  registry.RollStatisticsWindow(10 * minute + 2);
  Bump(slots[0].publish_count, 60);  // client "1": 1/s out, 2/s in
  Bump(slots[0].deliver_count, 120);
  Bump(slots[1].publish_count, 600);  // client "2": 10/s
  Bump(slots[2].publish_count, 6);    // client "3": the third, left out
  registry.RollStatisticsWindow(11 * minute);
  std::string text = exporter.Render();
  EXPECT_THAT(text, HasSubstr("# TYPE kubemq_mqtt_top_client_messages_per_second gauge"));
  std::vector<std::string> samples = Samples(text, "kubemq_mqtt_top_client_messages_per_second");
  EXPECT_THAT(samples,
              UnorderedElementsAreArray({"kubemq_mqtt_top_client_messages_per_second{client_id="
                                         "\"client \\\"2\\\"\",direction=\"deliver\"} 0",
                                         "kubemq_mqtt_top_client_messages_per_second{client_id="
                                         "\"client \\\"2\\\"\",direction=\"publish\"} 10",
                                         "kubemq_mqtt_top_client_messages_per_second{client_id="
                                         "\"client \\\"1\\\"\",direction=\"deliver\"} 2",
                                         "kubemq_mqtt_top_client_messages_per_second{client_id="
                                         "\"client \\\"1\\\"\",direction=\"publish\"} 1"}));
  // The next minute only client "3" talks: the others' series disappear.
  Bump(slots[2].publish_count, 30);
  registry.RollStatisticsWindow(12 * minute);
  samples = Samples(exporter.Render(), "kubemq_mqtt_top_client_messages_per_second");
  EXPECT_THAT(samples,
              UnorderedElementsAreArray({"kubemq_mqtt_top_client_messages_per_second{client_id="
                                         "\"client \\\"3\\\"\",direction=\"deliver\"} 0",
                                         "kubemq_mqtt_top_client_messages_per_second{client_id="
                                         "\"client \\\"3\\\"\",direction=\"publish\"} 0.5"}));
}

}  // namespace
}  // namespace mqc
