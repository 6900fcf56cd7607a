// SPDX-License-Identifier: BSD-3-Clause
// Tests for filtering, ordering and paging of connections (connection_query.h and the pieces
// behind it): every operator on every kind of field, every filter / order_by error with its
// position, prefix matches, the subscriptions.* fields, orderings, keyset paging (also while
// connections come and go), page tokens, offset, and the literal syntaxes.
#include "companion/query/connection_query.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "companion/connection.h"
#include "companion/query/connection_fields.h"
#include "companion/query/connection_filter.h"
#include "companion/query/connection_order.h"
#include "companion/query/connection_page_token.h"
#include "companion/query/query_syntax.h"
#include "link/status.h"
#include "link/topic_mapping.h"

namespace mqc {
namespace {

using ::testing::HasSubstr;

constexpr std::int64_t kMilli = 1000000;
constexpr std::int64_t kSecond = 1000000000;
constexpr std::int64_t kT0 = 1767225600 * kSecond;  // 2026-01-01T00:00:00Z
constexpr std::uint64_t kMaxU64 = std::numeric_limits<std::uint64_t>::max();
constexpr std::int64_t kMaxI64 = std::numeric_limits<std::int64_t>::max();

// --- helpers -------------------------------------------------------------------------------

Subscription MakeSubscription(std::string filter, int qos, Pattern pattern, std::string channel,
                              std::string shared_group = "") {
  Subscription subscription;
  subscription.filter = std::move(filter);
  subscription.qos = qos;
  subscription.mapping.pattern = pattern;
  subscription.mapping.channel = std::move(channel);
  subscription.mapping.shared_group = std::move(shared_group);
  return subscription;
}

// An open, plain connection; each test sets what it looks at.
Connection MakeConnection(std::uint64_t seq) {
  Connection c;
  c.seq = seq;
  c.uid = "uid-" + std::to_string(seq);
  c.state = ConnectionState::kOpen;
  c.open_time_ns = kT0;
  c.client_id = "client-" + std::to_string(seq);
  c.protocol_version = 4;
  c.ip_address = "127.0.0.1";
  c.port = 40000;
  c.listener_name = "mqtt:1883";
  c.authentication.mechanism = AuthMechanism::kAnonymous;
  c.authentication.state = AuthState::kSuccess;
  return c;
}

// Four connections that differ in every field the filter tests look at.
std::vector<Connection> FilterFleet() {
  Connection c1 = MakeConnection(1);
  c1.uid = "a1";
  c1.node_id = 1;
  c1.client_id = "sensor-1";
  c1.username = "alice";
  c1.keep_alive = 60;
  c1.ip_address = "10.0.0.1";
  c1.port = 50001;
  c1.authentication = {AuthMechanism::kPassword, AuthState::kSuccess, "alice", ""};
  c1.subscriptions = {MakeSubscription("events/a", 1, Pattern::kEvents, "a"),
                      MakeSubscription("$share/g1/queues/q", 2, Pattern::kQueues, "q", "g1")};
  c1.idle_ns = 5 * kSecond;
  c1.total_statistics = {10, 1000, 20, 2000, 30};
  c1.recent_statistics = {1, 100, 2, 200, 3};

  Connection c2 = MakeConnection(2);
  c2.uid = "b2";
  c2.node_id = 2;
  c2.open_time_ns = kT0 + 3600 * kSecond;
  c2.client_id = "sensor-2";
  c2.protocol_version = 5;
  c2.clean_session = false;
  c2.keep_alive = 30;
  c2.ip_address = "10.0.0.2";
  c2.port = 0;
  c2.listener_name = "mqtts:8883";
  c2.tls = {true, "TLSv1.3", "TLS_AES_256_GCM_SHA384", "CN=dev2"};
  c2.authentication = {AuthMechanism::kMtls, AuthState::kSuccess, "CN=dev2", ""};
  c2.subscriptions = {MakeSubscription("store/b", 0, Pattern::kStore, "b")};
  c2.idle_ns = -1;

  Connection c3 = MakeConnection(3);
  c3.uid = "c3";
  c3.node_id = 1;
  c3.state = ConnectionState::kClosed;
  c3.close_reason = CloseReason::kKicked;
  c3.open_time_ns = kT0 - 3600 * kSecond;
  c3.close_time_ns = kT0 + 1800 * kSecond;
  c3.client_id = "actuator-3";
  c3.username = "bob";
  c3.protocol_version = 3;
  c3.keep_alive = 0;
  c3.ip_address = "::1";
  c3.port = 60000;
  c3.listener_name = "ws:8083";
  c3.authentication = {AuthMechanism::kAnonymous, AuthState::kUnauthenticated, "", ""};
  c3.idle_ns = 120 * kSecond;
  c3.total_statistics = {5, 0, 0, 0, 0};

  Connection c4 = MakeConnection(4);
  c4.uid = "d4";
  c4.node_id = 1;
  c4.state = ConnectionState::kClosed;
  c4.close_reason = CloseReason::kClientDisconnect;
  c4.close_time_ns = kT0 + 7200 * kSecond;
  c4.client_id = "sensor-4*";
  c4.username = "carol";
  c4.protocol_version = 5;
  c4.keep_alive = 120;
  c4.ip_address = "10.0.0.4";
  c4.tls = {true, "TLSv1.2", "", ""};
  c4.authentication = {AuthMechanism::kEnhanced, AuthState::kFailure, "", "SCRAM-SHA-1"};
  c4.subscriptions = {MakeSubscription("$SYS/#", 0, Pattern::kNone, ""),
                      MakeSubscription("commands/x", 1, Pattern::kCommands, "x")};
  c4.idle_ns = 100 * kMilli;
  c4.total_statistics = {7, kMaxU64, 0, 0, 0};
  return {c1, c2, c3, c4};
}

ConnectionQuery MakeQuery(std::string filter, std::string order_by = "", std::int64_t page_size = 0,
                          std::string page_token = "", std::int64_t offset = 0) {
  ConnectionQuery query;
  query.filter = std::move(filter);
  query.order_by = std::move(order_by);
  query.page_size = page_size;
  query.page_token = std::move(page_token);
  query.offset = offset;
  return query;
}

struct Outcome {
  bool ok = false;
  std::vector<std::uint64_t> seqs;  // in page order
  std::vector<Connection> connections;
  std::int64_t total_size = 0;
  std::string next_page_token;
  std::string error;
};

Outcome RunQuery(const std::vector<Connection>& snapshot, const ConnectionQuery& query) {
  Outcome outcome;
  ConnectionPage page;
  const Status status = RunConnectionQuery(snapshot, query, &page);
  outcome.ok = status.ok();
  outcome.error = status.message();
  for (const Connection& c : page.connections) outcome.seqs.push_back(c.seq);
  outcome.connections = std::move(page.connections);
  outcome.total_size = page.total_size;
  outcome.next_page_token = std::move(page.next_page_token);
  return outcome;
}

// The seqs a filter selects from the filter fleet, sorted; the error when it fails.
std::vector<std::uint64_t> Selected(const std::string& filter, std::string* error) {
  Outcome outcome = RunQuery(FilterFleet(), MakeQuery(filter));
  *error = outcome.error;
  std::sort(outcome.seqs.begin(), outcome.seqs.end());
  return outcome.seqs;
}

std::string FilterError(const std::string& filter) {
  const Outcome outcome = RunQuery(FilterFleet(), MakeQuery(filter));
  return outcome.ok ? "(no error)" : outcome.error;
}

std::string OrderError(const std::string& order_by) {
  const Outcome outcome = RunQuery(FilterFleet(), MakeQuery("", order_by));
  return outcome.ok ? "(no error)" : outcome.error;
}

// --- filter: every operator on every kind of field ------------------------------------------

struct FilterRow {
  const char* filter;
  std::vector<std::uint64_t> seqs;
};

void ExpectSelections(const std::vector<FilterRow>& rows) {
  for (const FilterRow& row : rows) {
    SCOPED_TRACE(row.filter);
    std::string error;
    EXPECT_EQ(Selected(row.filter, &error), row.seqs);
    EXPECT_EQ(error, "");
  }
}

TEST(ConnectionFilterTest, StringFields) {
  ExpectSelections({
      {R"(client_id = "sensor-1")", {1}},
      {R"(clientId = "sensor-1")", {1}},
      {R"(client_id != "sensor-1")", {2, 3, 4}},
      {R"(client_id < "sensor-1")", {3}},
      {R"(client_id <= "sensor-1")", {1, 3}},
      {R"(client_id > "sensor-2")", {4}},
      {R"(client_id >= "sensor-2")", {2, 4}},
      {R"(client_id = "sensor")", {}},
      {R"(client_id = "SENSOR-1")", {}},  // case-sensitive
      {R"(username = "")", {2}},
      {R"(username != "")", {1, 3, 4}},
      {R"(username = "\u0061lic\u0065")", {1}},
      {R"(uid = "c3")", {3}},
      {R"(source.ip_address = "::1")", {3}},
      {R"(source.ipAddress != "::1")", {1, 2, 4}},
      {R"(listener_name = "mqtt:1883")", {1, 4}},
      {R"(listenerName >= "mqtts")", {2, 3}},  // "mqtt:" < "mqtts" < "ws:"
      {R"(tls_info.tls_version = "TLSv1.3")", {2}},
      {R"(tlsInfo.tlsVersion > "")", {2, 4}},
      {R"(tls_info.cipher = "TLS_AES_256_GCM_SHA384")", {2}},
      {R"(tlsInfo.peerCertificateSubject = "CN=dev2")", {2}},
      {R"(tls_info.peer_certificate_subject < "A")", {1, 3, 4}},
      {R"(authentication_info.user_principal = "alice")", {1}},
      {R"(authenticationInfo.userPrincipal = "CN=dev2")", {2}},
      {R"(authentication_info.method = "SCRAM-SHA-1")", {4}},
      {R"(authenticationInfo.method != "")", {4}},
  });
}

TEST(ConnectionFilterTest, PrefixMatches) {
  ExpectSelections({
      {R"(client_id = "sensor-*")", {1, 2, 4}},
      {R"(client_id != "sensor-*")", {3}},
      {R"(client_id = "*")", {1, 2, 3, 4}},
      {R"(client_id != "*")", {}},
      {R"(username = "*")", {1, 2, 3, 4}},   // the empty prefix matches the empty string too
      {R"(client_id = "sensor-4\*")", {4}},  // an escaped star is a literal star
      {R"(client_id = "sensor-\*")", {}},
      {R"(client_id = "sensor-4**")", {4}},  // prefix "sensor-4*"
      {R"(client_id = "*-1")", {}},          // a star elsewhere is literal
      {R"(source.ip_address = "10.0.0.*")", {1, 2, 4}},
      {R"(tls_info.tls_version = "TLSv1.*")", {2, 4}},
  });
}

TEST(ConnectionFilterTest, IntegerFields) {
  ExpectSelections({
      {"node_id = 1", {1, 3, 4}},
      {"nodeId != 1", {2}},
      {"node_id > 1", {2}},
      {"node_id >= 2", {2}},
      {"node_id < 2", {1, 3, 4}},
      {"node_id <= 0", {}},
      {"protocol_version = 5", {2, 4}},
      {"protocolVersion < 4", {3}},
      {"keep_alive >= 60", {1, 4}},
      {"keepAlive = 0", {3}},
      {"source.port = 0", {2}},
      {"source.port > 50000", {1, 3}},
      {"source.port != 0", {1, 3, 4}},
      {"source.port > -1", {1, 2, 3, 4}},
      {"source.port <= -9223372036854775808", {}},
      {"source.port < 9223372036854775807", {1, 2, 3, 4}},
      {"node_id = 0001", {1, 3, 4}},
  });
}

TEST(ConnectionFilterTest, UnsignedFields) {
  ExpectSelections({
      {"total_request_statistics.publish_count = 10", {1}},
      {"total_request_statistics.publish_bytes = 18446744073709551615", {4}},
      {"totalRequestStatistics.publishBytes > 1000", {4}},
      {"total_request_statistics.publish_bytes >= 1000", {1, 4}},
      {"total_request_statistics.deliver_count != 0", {1}},
      {"total_request_statistics.deliver_bytes < 1", {2, 3, 4}},
      {"total_request_statistics.request_count <= 30", {1, 2, 3, 4}},
      {"recent_request_statistics.publish_count = 1", {1}},
      {"recent_request_statistics.publish_bytes >= 100", {1}},
      {"recent_request_statistics.deliver_count > 1", {1}},
      {"recentRequestStatistics.deliverBytes = 200", {1}},
      {"recent_request_statistics.request_count < 3", {2, 3, 4}},
  });
}

TEST(ConnectionFilterTest, BoolFields) {
  ExpectSelections({
      {"clean_session = true", {1, 3, 4}},
      {"clean_session = false", {2}},
      {"cleanSession != true", {2}},
      {"clean_session != false", {1, 3, 4}},
      {"tls_info.enabled = true", {2, 4}},
      {"tlsInfo.enabled != true", {1, 3}},
  });
}

TEST(ConnectionFilterTest, EnumFields) {
  ExpectSelections({
      {"state = MQTT_CONNECTION_STATE_OPEN", {1, 2}},
      {"state != MQTT_CONNECTION_STATE_OPEN", {3, 4}},
      {"state = MQTT_CONNECTION_STATE_CLOSED", {3, 4}},
      {"state = MQTT_CONNECTION_STATE_UNSPECIFIED", {}},
      {"close_reason = CLOSE_REASON_KICKED", {3}},
      {"close_reason = KICKED", {3}},
      {"closeReason = CLIENT_DISCONNECT", {4}},
      {"close_reason = CLOSE_REASON_UNSPECIFIED", {1, 2}},
      {"close_reason != UNSPECIFIED", {3, 4}},
      {"close_reason = CONNECTION_LOST", {}},
      {"close_reason = SESSION_TAKEN_OVER", {}},
      {"close_reason = AUTHENTICATION_FAILED", {}},
      {"close_reason = CLOSE_REASON_BROKER_SHUTDOWN", {}},
      {"close_reason = ACCESS_REVOKED", {}},
      {"authentication_info.mechanism = AUTHENTICATION_MECHANISM_PASSWORD", {1}},
      {"authenticationInfo.mechanism != AUTHENTICATION_MECHANISM_MTLS", {1, 3, 4}},
      {"authentication_info.mechanism = AUTHENTICATION_MECHANISM_ANONYMOUS", {3}},
      {"authentication_info.mechanism = AUTHENTICATION_MECHANISM_ENHANCED", {4}},
      {"authentication_info.mechanism = AUTHENTICATION_MECHANISM_PSK", {}},
      {"authentication_info.mechanism = AUTHENTICATION_MECHANISM_UNSPECIFIED", {}},
      {"authentication_info.state = AUTHENTICATION_STATE_SUCCESS", {1, 2}},
      {"authenticationInfo.state = AUTHENTICATION_STATE_FAILURE", {4}},
      {"authentication_info.state = AUTHENTICATION_STATE_UNAUTHENTICATED", {3}},
      {"authentication_info.state != AUTHENTICATION_STATE_UNSPECIFIED", {1, 2, 3, 4}},
  });
}

TEST(ConnectionFilterTest, TimestampFields) {
  ExpectSelections({
      {"open_time = 2026-01-01T00:00:00Z", {1, 4}},
      {"open_time != 2026-01-01T00:00:00Z", {2, 3}},
      {"open_time > 2026-01-01T00:00:00Z", {2}},
      {"open_time >= 2026-01-01T00:00:00Z", {1, 2, 4}},
      {"open_time < 2026-01-01T00:00:00Z", {3}},
      {"open_time <= 2025-12-31T23:00:00Z", {3}},
      {"open_time = 2026-01-01T01:00:00+01:00", {1, 4}},
      {"open_time = 2025-12-31T19:00:00-05:00", {1, 4}},
      {"open_time < 2026-01-01T00:00:00.000000001Z", {1, 3, 4}},
      {"openTime > 2025-12-31t23:59:59.999999999z", {1, 2, 4}},
      // close_time is unset while open: only != holds for it.
      {"close_time > 2026-01-01T00:00:00Z", {3, 4}},
      {"close_time < 2026-01-01T01:00:00Z", {3}},
      {"close_time = 2026-01-01T00:30:00Z", {3}},
      {"close_time != 2026-01-01T00:30:00Z", {1, 2, 4}},
      {"closeTime >= 1970-01-01T00:00:00Z", {3, 4}},
      {"close_time <= 2262-01-01T00:00:00Z", {3, 4}},
      {"close_time > 1677-09-22T00:00:00Z", {3, 4}},
  });
}

TEST(ConnectionFilterTest, DurationFields) {
  ExpectSelections({
      // idle_duration is unknown (unset) for seq 2: only != holds for it.
      {"idle_duration > 30s", {3}},
      {"idle_duration >= 5s", {1, 3}},
      {"idle_duration < 1s", {4}},
      {"idle_duration <= 100ms", {4}},
      {"idle_duration = 2m", {3}},
      {"idle_duration = 120s", {3}},
      {"idle_duration = 0.1s", {4}},
      {"idle_duration = 100000us", {4}},
      {"idleDuration = 100000000ns", {4}},
      {"idle_duration = 5000ms", {1}},
      {"idle_duration != 5s", {2, 3, 4}},
      {"idle_duration > 1h", {}},
      {"idle_duration < 1h30m", {1, 3, 4}},
      {"idle_duration = 1.5s", {}},
      {"idle_duration >= 0", {1, 3, 4}},
  });
}

// networkInfo is unset without a known socket: only != holds then, and such connections sort
// first ascending.
TEST(ConnectionFilterTest, NetworkInfoFieldsAreUnsetWithoutASocket) {
  Connection slow = MakeConnection(1);
  slow.network = {true, 20000, 500, 3, 65536, 0, 2 * kSecond, 10 * kMilli};
  Connection fast = MakeConnection(2);
  fast.network = {true, 40, 20, 0, 0, 0, 50 * kMilli, 50 * kMilli};
  Connection unknown = MakeConnection(3);  // a Unix socket listener, say
  const std::vector<Connection> snapshot = {slow, fast, unknown};
  const auto seqs = [&](const std::string& filter, const std::string& order_by = "") {
    const Outcome outcome = RunQuery(snapshot, MakeQuery(filter, order_by));
    EXPECT_TRUE(outcome.ok) << outcome.error;
    return outcome.seqs;
  };
  using Seqs = std::vector<std::uint64_t>;
  EXPECT_EQ(seqs("network_info.rtt_micros > 10000"), Seqs{1});
  EXPECT_EQ(seqs("networkInfo.rttMicros >= 0"), (Seqs{1, 2}));
  EXPECT_EQ(seqs("network_info.retransmits != 0"), (Seqs{1, 3}));
  EXPECT_EQ(seqs("network_info.since_last_receive > 1s"), Seqs{1});
  EXPECT_EQ(seqs("network_info.since_last_send < 20ms"), Seqs{1});
  EXPECT_EQ(seqs("", "network_info.send_queue_bytes desc"), (Seqs{1, 2, 3}));
  EXPECT_EQ(seqs("", "network_info.rtt_micros asc"), (Seqs{3, 2, 1}));
}

TEST(ConnectionFilterTest, SubscriptionFieldsMatchAnySubscription) {
  ExpectSelections({
      {R"(subscriptions.filter = "events/a")", {1}},
      {R"(subscriptions.filter = "$share/*")", {1}},
      {R"(subscriptions.filter != "events/a")", {2, 3, 4}},  // no subscription equals
      {R"(subscriptions.filter != "store/b")", {1, 3, 4}},
      {R"(subscriptions.filter > "s")", {2}},
      {R"(subscriptions.pattern = "queues")", {1}},
      {R"(subscriptions.pattern = "")", {4}},
      {R"(subscriptions.pattern != "events")", {2, 3, 4}},
      {R"(subscriptions.pattern = "*")", {1, 2, 4}},  // has any subscription
      {R"(subscriptions.pattern != "*")", {3}},       // has none
      {R"(subscriptions.pattern = "commands")", {4}},
      {R"(subscriptions.pattern = "store")", {2}},
      {R"(subscriptions.channel = "b")", {2}},
      {R"(subscriptions.channel > "q")", {4}},
      {R"(subscriptions.shared_group = "g1")", {1}},
      {R"(subscriptions.sharedGroup != "")", {3}},
      {"subscriptions.qos = 2", {1}},
      {"subscriptions.qos > 0", {1, 4}},
      {"subscriptions.qos < 1", {2, 4}},
      {"subscriptions.qos != 0", {1, 3}},
      {"subscriptions.qos >= 0", {1, 2, 4}},
      {"subscriptions.qos <= 2", {1, 2, 4}},
      // Each clause picks its own subscription.
      {R"(subscriptions.pattern = "events" AND subscriptions.qos = 2)", {1}},
  });
}

TEST(ConnectionFilterTest, ClausesJoinedByAnd) {
  ExpectSelections({
      {"", {1, 2, 3, 4}},
      {" \t\n ", {1, 2, 3, 4}},
      {R"(client_id = "sensor-*" AND state = MQTT_CONNECTION_STATE_OPEN)", {1, 2}},
      {R"(client_id = "sensor-*" AND state = MQTT_CONNECTION_STATE_OPEN AND tls_info.enabled = true)",
       {2}},
      {R"(client_id="sensor-*"AND protocol_version=5)", {2, 4}},
      {"node_id = 1\nAND\tprotocol_version = 5", {4}},
      {R"(client_id = "sensor-1" AND client_id = "sensor-2")", {}},
      {R"(  client_id = "sensor-1"   )", {1}},
  });
}

// Every scalar field, in both spellings, reads its own member of the model.
TEST(ConnectionFilterTest, EveryFieldReadsItsOwnMember) {
  Connection c = MakeConnection(9);
  c.node_id = 7;
  c.uid = "u-9";
  c.state = ConnectionState::kClosed;
  c.open_time_ns = kT0 + 1;
  c.close_time_ns = kT0 + 2;
  c.session_expiry_time_ns = kT0 + 3;
  c.close_reason = CloseReason::kSessionTakenOver;
  c.client_id = "cid";
  c.username = "user";
  c.protocol_version = 5;
  c.clean_session = false;
  c.keep_alive = 11;
  c.ip_address = "1.2.3.4";
  c.port = 12;
  c.listener_name = "lst";
  c.tls = {true, "tv", "ci", "subj"};
  c.authentication = {AuthMechanism::kPsk, AuthState::kFailure, "prin", "meth"};
  c.idle_ns = 13;
  c.network = {true, 41, 42, 43, 44, 45, 46, 47};
  c.total_statistics = {21, 22, 23, 24, 25};
  c.recent_statistics = {31, 32, 33, 34, 35};
  c.subscriptions = {MakeSubscription("queues/ch", 2, Pattern::kQueues, "ch", "grp")};
  const std::vector<Connection> snapshot = {c, MakeConnection(1)};
  struct Row {
    const char* snake;
    const char* camel;
    const char* value;
  };
  const Row rows[] = {
      {"node_id", "nodeId", "7"},
      {"uid", "uid", R"("u-9")"},
      {"state", "state", "MQTT_CONNECTION_STATE_CLOSED"},
      {"open_time", "openTime", "2026-01-01T00:00:00.000000001Z"},
      {"close_time", "closeTime", "2026-01-01T00:00:00.000000002Z"},
      {"session_expiry_time", "sessionExpiryTime", "2026-01-01T00:00:00.000000003Z"},
      {"close_reason", "closeReason", "CLOSE_REASON_SESSION_TAKEN_OVER"},
      {"client_id", "clientId", R"("cid")"},
      {"username", "username", R"("user")"},
      {"protocol_version", "protocolVersion", "5"},
      {"clean_session", "cleanSession", "false"},
      {"keep_alive", "keepAlive", "11"},
      {"source.ip_address", "source.ipAddress", R"("1.2.3.4")"},
      {"source.port", "source.port", "12"},
      {"listener_name", "listenerName", R"("lst")"},
      {"tls_info.enabled", "tlsInfo.enabled", "true"},
      {"tls_info.tls_version", "tlsInfo.tlsVersion", R"("tv")"},
      {"tls_info.cipher", "tlsInfo.cipher", R"("ci")"},
      {"tls_info.peer_certificate_subject", "tlsInfo.peerCertificateSubject", R"("subj")"},
      {"authentication_info.mechanism", "authenticationInfo.mechanism",
       "AUTHENTICATION_MECHANISM_PSK"},
      {"authentication_info.state", "authenticationInfo.state", "AUTHENTICATION_STATE_FAILURE"},
      {"authentication_info.user_principal", "authenticationInfo.userPrincipal", R"("prin")"},
      {"authentication_info.method", "authenticationInfo.method", R"("meth")"},
      {"idle_duration", "idleDuration", "13ns"},
      {"network_info.rtt_micros", "networkInfo.rttMicros", "41"},
      {"network_info.rtt_variance_micros", "networkInfo.rttVarianceMicros", "42"},
      {"network_info.retransmits", "networkInfo.retransmits", "43"},
      {"network_info.send_queue_bytes", "networkInfo.sendQueueBytes", "44"},
      {"network_info.receive_queue_bytes", "networkInfo.receiveQueueBytes", "45"},
      {"network_info.since_last_receive", "networkInfo.sinceLastReceive", "46ns"},
      {"network_info.since_last_send", "networkInfo.sinceLastSend", "47ns"},
      {"total_request_statistics.publish_count", "totalRequestStatistics.publishCount", "21"},
      {"total_request_statistics.publish_bytes", "totalRequestStatistics.publishBytes", "22"},
      {"total_request_statistics.deliver_count", "totalRequestStatistics.deliverCount", "23"},
      {"total_request_statistics.deliver_bytes", "totalRequestStatistics.deliverBytes", "24"},
      {"total_request_statistics.request_count", "totalRequestStatistics.requestCount", "25"},
      {"recent_request_statistics.publish_count", "recentRequestStatistics.publishCount", "31"},
      {"recent_request_statistics.publish_bytes", "recentRequestStatistics.publishBytes", "32"},
      {"recent_request_statistics.deliver_count", "recentRequestStatistics.deliverCount", "33"},
      {"recent_request_statistics.deliver_bytes", "recentRequestStatistics.deliverBytes", "34"},
      {"recent_request_statistics.request_count", "recentRequestStatistics.requestCount", "35"},
      {"subscriptions.filter", "subscriptions.filter", R"("queues/ch")"},
      {"subscriptions.pattern", "subscriptions.pattern", R"("queues")"},
      {"subscriptions.channel", "subscriptions.channel", R"("ch")"},
      {"subscriptions.shared_group", "subscriptions.sharedGroup", R"("grp")"},
      {"subscriptions.qos", "subscriptions.qos", "2"},
  };
  EXPECT_EQ(std::size(rows), ConnectionFields().size());
  std::set<std::string> covered;
  for (const Row& row : rows) {
    covered.insert(row.snake);
    for (const char* name : {row.snake, row.camel}) {
      const std::string filter = std::string(name) + " = " + row.value;
      SCOPED_TRACE(filter);
      const Outcome equal = RunQuery(snapshot, MakeQuery(filter));
      EXPECT_TRUE(equal.ok) << equal.error;
      EXPECT_EQ(equal.seqs, std::vector<std::uint64_t>{9});
      const Outcome not_equal =
          RunQuery(snapshot, MakeQuery(std::string(name) + " != " + row.value));
      EXPECT_EQ(not_equal.seqs, std::vector<std::uint64_t>{1});
    }
  }
  for (const FieldDef& field : ConnectionFields())
    EXPECT_EQ(covered.count(std::string(field.path)), 1u) << field.path;
}

// --- filter errors ------------------------------------------------------------------------

struct ErrorRow {
  std::string input;
  std::string message;
};

TEST(ConnectionFilterTest, ErrorMessagesNameWhatAndWhere) {
  const std::string states =
      "MQTT_CONNECTION_STATE_UNSPECIFIED, MQTT_CONNECTION_STATE_OPEN, "
      "MQTT_CONNECTION_STATE_CLOSED, MQTT_CONNECTION_STATE_OFFLINE";
  const std::string reasons =
      "CLOSE_REASON_UNSPECIFIED, CLOSE_REASON_CLIENT_DISCONNECT, CLOSE_REASON_CONNECTION_LOST, "
      "CLOSE_REASON_SESSION_TAKEN_OVER, CLOSE_REASON_AUTHENTICATION_FAILED, CLOSE_REASON_KICKED, "
      "CLOSE_REASON_BROKER_SHUTDOWN, CLOSE_REASON_ACCESS_REVOKED";
  const std::string escapes = R"((allowed: \" \\ \/ \b \f \n \r \t \uXXXX \*))";
  const std::vector<ErrorRow> rows = {
      // The spec's example.
      {"client_id = x",
       "Expected quoted literal for field 'client_id', got unquoted 'x' at position 13"},
      {"clientId = 42",
       "Expected quoted literal for field 'clientId', got unquoted '42' at position 12"},
      {R"(subscriptions.pattern = events)",
       "Expected quoted literal for field 'subscriptions.pattern', got unquoted 'events' at "
       "position 25"},
      // Unknown fields.
      {"port = 1", "Unknown field 'port' at position 1"},
      {"foo.bar = 1", "Unknown field 'foo.bar' at position 1"},
      {"client_Id = \"a\"", "Unknown field 'client_Id' at position 1"},
      {"ClientId = \"a\"", "Unknown field 'ClientId' at position 1"},
      {"source = \"a\"", "Unknown field 'source' at position 1"},
      {"subscriptions = \"a\"", "Unknown field 'subscriptions' at position 1"},
      {"seq = 1", "Unknown field 'seq' at position 1"},
      {R"(client_id = "a" AND foo = 1)", "Unknown field 'foo' at position 21"},
      // Quoted values where unquoted ones belong.
      {R"(source.port = "80")",
       "Expected an unquoted integer for field 'source.port', got quoted \"80\" at position 15"},
      {R"(subscriptions.qos = "1")",
       "Expected an unquoted integer for field 'subscriptions.qos', got quoted \"1\" at position "
       "21"},
      {R"(total_request_statistics.publish_count = "1")",
       "Expected an unquoted integer for field 'total_request_statistics.publish_count', got "
       "quoted \"1\" at position 42"},
      {R"(clean_session = "true")",
       "Expected an unquoted boolean (true or false) for field 'clean_session', got quoted "
       "\"true\" at position 17"},
      {R"(state = "MQTT_CONNECTION_STATE_OPEN")",
       "Expected an unquoted enum name for field 'state', got quoted "
       "\"MQTT_CONNECTION_STATE_OPEN\" at position 9"},
      {R"(open_time = "2026-01-01T00:00:00Z")",
       "Expected an unquoted RFC 3339 timestamp for field 'open_time', got quoted "
       "\"2026-01-01T00:00:00Z\" at position 13"},
      {R"(idle_duration > "30s")",
       "Expected an unquoted duration for field 'idle_duration', got quoted \"30s\" at position "
       "17"},
      // Operators that a kind does not take.
      {"state < MQTT_CONNECTION_STATE_OPEN",
       "Operator '<' is not supported for enum field 'state' (only =, != and IN) at position 7"},
      {"close_reason >= KICKED",
       "Operator '>=' is not supported for enum field 'close_reason' (only =, != and IN) at "
       "position 14"},
      {"clean_session >= true",
       "Operator '>=' is not supported for bool field 'clean_session' (only =, != and IN) at "
       "position 15"},
      {"tls_info.enabled > false",
       "Operator '>' is not supported for bool field 'tls_info.enabled' (only =, != and IN) at "
       "position 18"},
      {R"(client_id < "a*")",
       "A prefix match (a trailing '*') works only with =, != and IN (field 'client_id'); write "
       "\\* for a literal star at position 13"},
      // Bad values.
      {"state = OPEN",
       "Unknown value 'OPEN' for enum field 'state'; expected one of " + states + " at position 9"},
      {"state = mqtt_connection_state_open",
       "Unknown value 'mqtt_connection_state_open' for enum field 'state'; expected one of " +
           states + " at position 9"},
      {"close_reason = GONE",
       "Unknown value 'GONE' for enum field 'close_reason'; expected one of " + reasons +
           " (the CLOSE_REASON_ prefix may be left out) at position 16"},
      {"authentication_info.mechanism = PASSWORD",
       "Unknown value 'PASSWORD' for enum field 'authentication_info.mechanism'; expected one of "
       "AUTHENTICATION_MECHANISM_UNSPECIFIED, AUTHENTICATION_MECHANISM_ANONYMOUS, "
       "AUTHENTICATION_MECHANISM_PASSWORD, AUTHENTICATION_MECHANISM_MTLS, "
       "AUTHENTICATION_MECHANISM_PSK, AUTHENTICATION_MECHANISM_ENHANCED at position 33"},
      {"authentication_info.state = 2",
       "Unknown value '2' for enum field 'authentication_info.state'; expected one of "
       "AUTHENTICATION_STATE_UNSPECIFIED, AUTHENTICATION_STATE_UNAUTHENTICATED, "
       "AUTHENTICATION_STATE_SUCCESS, AUTHENTICATION_STATE_FAILURE at position 29"},
      {"keep_alive = abc", "Expected an integer for field 'keep_alive', got 'abc' at position 14"},
      {"keep_alive = 1.5", "Expected an integer for field 'keep_alive', got '1.5' at position 14"},
      {"keep_alive = 99999999999999999999",
       "Integer '99999999999999999999' is out of range for field 'keep_alive' at position 14"},
      {"total_request_statistics.publish_count > -1",
       "Expected a non-negative integer for field 'total_request_statistics.publish_count', got "
       "'-1' at position 42"},
      {"total_request_statistics.publish_count > 18446744073709551616",
       "Integer '18446744073709551616' is out of range for field "
       "'total_request_statistics.publish_count' at position 42"},
      {"clean_session = yes",
       "Expected true or false for field 'clean_session', got 'yes' at position 17"},
      {"clean_session = TRUE",
       "Expected true or false for field 'clean_session', got 'TRUE' at position 17"},
      {"idle_duration > 30",
       "Invalid duration '30' for field 'idle_duration': missing unit (ns, us, ms, s, m or h) "
       "(e.g. 30s, 100ms, 1.5s, 2m, 1h) at position 17"},
      {"idle_duration > 30x",
       "Invalid duration '30x' for field 'idle_duration': unknown unit at 'x' (e.g. 30s, 100ms, "
       "1.5s, 2m, 1h) at position 17"},
      {"idle_duration > 1.s",
       "Invalid duration '1.s' for field 'idle_duration': expected digits after '.' (e.g. 30s, "
       "100ms, 1.5s, 2m, 1h) at position 17"},
      {"idle_duration > s",
       "Invalid duration 's' for field 'idle_duration': expected a number at 's' (e.g. 30s, "
       "100ms, 1.5s, 2m, 1h) at position 17"},
      {"idle_duration > 3000000h",
       "Invalid duration '3000000h' for field 'idle_duration': out of range (e.g. 30s, 100ms, "
       "1.5s, 2m, 1h) at position 17"},
      {"open_time > 2026-13-01T00:00:00Z",
       "Invalid timestamp '2026-13-01T00:00:00Z' for field 'open_time': month out of range (e.g. "
       "2026-01-01T00:00:00Z) at position 13"},
      {"open_time > 2026-01-01",
       "Invalid timestamp '2026-01-01' for field 'open_time': expected "
       "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM) (e.g. 2026-01-01T00:00:00Z) at position "
       "13"},
      {"open_time > 2026-02-29T00:00:00Z",
       "Invalid timestamp '2026-02-29T00:00:00Z' for field 'open_time': day out of range (e.g. "
       "2026-01-01T00:00:00Z) at position 13"},
      {"close_time > 2026-01-01T24:00:00Z",
       "Invalid timestamp '2026-01-01T24:00:00Z' for field 'close_time': time of day out of range "
       "(e.g. 2026-01-01T00:00:00Z) at position 14"},
      {"open_time > 2026-01-01T00:00:00+0100",
       "Invalid timestamp '2026-01-01T00:00:00+0100' for field 'open_time': expected a zone "
       "offset like +02:00 (e.g. 2026-01-01T00:00:00Z) at position 13"},
      {"open_time > 2026-01-01T00:00:00ZZ",
       "Invalid timestamp '2026-01-01T00:00:00ZZ' for field 'open_time': unexpected 'Z' after the "
       "zone (e.g. 2026-01-01T00:00:00Z) at position 13"},
      {"open_time > 3000-01-01T00:00:00Z",
       "Invalid timestamp '3000-01-01T00:00:00Z' for field 'open_time': out of the supported "
       "range (1677-09-21T00:12:44Z to 2262-04-11T23:47:16.854775807Z) (e.g. 2026-01-01T00:00:00Z) "
       "at position 13"},
      // Structure.
      {R"(client_id = "a" and state = X)",
       "'and' is not supported: write AND in upper case at position 17"},
      {R"(client_id = "a" And state = X)",
       "'And' is not supported: write AND in upper case at position 17"},
      {R"(client_id = "a" or client_id = "b")",
       "'or' is not supported: write OR in upper case at position 17"},
      {R"(client_id = "a")", ""},
      {R"(client_id:"a")", "The ':' (has) operator is not supported at position 10"},
      {R"(client_id : "a")", "The ':' (has) operator is not supported at position 11"},
      {R"(client_id = "a" extra)", "Expected AND, OR or end of filter, got 'extra' at position 17"},
      {R"(client_id = "a" "b")",
       "Expected AND, OR or end of filter, got quoted \"b\" at position 17"},
      {R"(client_id = "a" = "b")", "Expected AND, OR or end of filter, got '=' at position 17"},
      {R"(client_id = "a" AND)",
       "Expected a field name after AND, got end of filter at position 20"},
      {R"(client_id = "a" AND   )",
       "Expected a field name after AND, got end of filter at position 23"},
      {R"(client_id = "a" AND AND state = X)", "Expected a field name, got 'AND' at position 21"},
      {R"(AND client_id = "a")", "Expected a field name, got 'AND' at position 1"},
      {R"(= "a")", "Expected a field name, got '=' at position 1"},
      {R"("a" = client_id)", "Expected a field name, got quoted \"a\" at position 1"},
      {"client_id",
       "Expected an operator (=, !=, <, <=, >, >=, IN) after field 'client_id', got end of filter "
       "at position 10"},
      {R"(client_id "a")",
       "Expected an operator (=, !=, <, <=, >, >=, IN) after field 'client_id', got quoted \"a\" "
       "at position 11"},
      {R"(client_id ~ "a")",
       "Expected an operator (=, !=, <, <=, >, >=, IN) after field 'client_id', got '~' at "
       "position 11"},
      {"client_id =", "Expected a value for field 'client_id', got end of filter at position 12"},
      {R"(client_id = = "a")", "Expected a value for field 'client_id', got '=' at position 13"},
      {R"(client_id == "a")", "Expected a value for field 'client_id', got '=' at position 12"},
      {R"(client_id ! "a")", "Expected '=' after '!' (the operator is !=) at position 11"},
      // String literals.
      {R"(client_id = "abc)", "Unterminated string literal at position 13"},
      {R"(client_id = "abc\)", "Unterminated escape in string literal at position 17"},
      {R"(client_id = "a\qb")",
       "Invalid escape '\\q' in string literal " + escapes + " at position 15"},
      {R"(client_id = "\u12")",
       "Invalid \\u escape in string literal: expected four hex digits at position 14"},
      {R"(client_id = "\u12g4")",
       "Invalid \\u escape in string literal: expected four hex digits at position 14"},
      {R"(client_id = "\ud800")",
       "Invalid \\u escape in string literal: unpaired high surrogate at position 14"},
      {R"(client_id = "\ud800\u0041")",
       "Invalid \\u escape in string literal: unpaired high surrogate at position 14"},
      {R"(client_id = "x\udc00")",
       "Invalid \\u escape in string literal: unpaired low surrogate at position 15"},
      // Positions count characters, not bytes.
      {"client_id = \"\xC3\xA9\" x", "Expected AND, OR or end of filter, got 'x' at position 17"},
  };
  for (const ErrorRow& row : rows) {
    SCOPED_TRACE(row.input);
    EXPECT_EQ(FilterError(row.input), row.message.empty() ? "(no error)" : row.message);
  }
}

TEST(ConnectionFilterTest, LengthLimit) {
  const std::string head = "client_id = \"";
  const auto filter_of_length = [&head](std::size_t length) {
    return head + std::string(length - head.size() - 1, 'x') + "\"";
  };
  EXPECT_EQ(FilterError(filter_of_length(1024)), "(no error)");
  EXPECT_EQ(FilterError(filter_of_length(1025)),
            "Filter is longer than 1024 characters at position 1025");
  EXPECT_EQ(FilterError(std::string(5000, ' ')),
            "Filter is longer than 1024 characters at position 1025");
  // 1000 two-byte characters: 2000 bytes but only 1000 + 14 characters.
  std::string accents;
  for (int i = 0; i < 1000; ++i) accents += "\xC3\xA9";
  EXPECT_EQ(FilterError(head + accents + "\""), "(no error)");
  // Bytes that start no character still count against a byte limit.
  EXPECT_EQ(FilterError(head + std::string(5000, '\x80') + "\""),
            "Filter is longer than 4096 bytes at position 14");
}

// --- literal syntaxes ------------------------------------------------------------------------

TEST(QuerySyntaxTest, Durations) {
  const std::pair<const char*, std::int64_t> good[] = {
      {"0", 0},
      {"0s", 0},
      {"30s", 30 * kSecond},
      {"100ms", 100 * kMilli},
      {"1.5s", 1500 * kMilli},
      {"1.500s", 1500 * kMilli},
      {"2m", 120 * kSecond},
      {"1h", 3600 * kSecond},
      {"500us", 500000},
      {"500\xC2\xB5s", 500000},
      {"500\xCE\xBCs", 500000},
      {"10ns", 10},
      {"1h30m", 5400 * kSecond},
      {"1m0.5s", 60500 * kMilli},
      {"1.000000001s", kSecond + 1},
      {"1.0000000019s", kSecond + 1},  // finer than a nanosecond: cut off
      {"0.5ns", 0},
      {"0.25h", 900 * kSecond},
      {"2562047h", 2562047LL * 3600 * kSecond},
      {"9223372036854775807ns", kMaxI64},
  };
  for (const auto& [text, nanos] : good) {
    SCOPED_TRACE(text);
    std::int64_t parsed = -7;
    std::string why;
    EXPECT_TRUE(ParseDuration(text, &parsed, &why)) << why;
    EXPECT_EQ(parsed, nanos);
  }
  const std::pair<const char*, const char*> bad[] = {
      {"", "empty"},
      {"s", "expected a number at 's'"},
      {"1", "missing unit (ns, us, ms, s, m or h)"},
      {"1x", "unknown unit at 'x'"},
      {"1S", "unknown unit at 'S'"},
      {"1.s", "expected digits after '.'"},
      {".5s", "expected a number at '.5s'"},
      {"-1s", "expected a number at '-1s'"},
      {"1s ", "expected a number at ' '"},
      {"1s2", "missing unit (ns, us, ms, s, m or h)"},
      {"2562048h", "out of range"},
      {"9223372036854775808ns", "out of range"},
      {"99999999999999999999s", "out of range"},
      {"2562047h2562047h", "out of range"},
  };
  for (const auto& [text, expected_why] : bad) {
    SCOPED_TRACE(text);
    std::int64_t parsed = -7;
    std::string why;
    EXPECT_FALSE(ParseDuration(text, &parsed, &why));
    EXPECT_EQ(why, expected_why);
    EXPECT_EQ(parsed, -7);
  }
}

TEST(QuerySyntaxTest, Timestamps) {
  const std::pair<const char*, std::int64_t> good[] = {
      {"1970-01-01T00:00:00Z", 0},
      {"2026-01-01T00:00:00Z", kT0},
      {"2026-01-01t00:00:00z", kT0},
      {"2026-01-01T00:00:00.5Z", kT0 + 500 * kMilli},
      {"2026-01-01T00:00:00.123456789Z", kT0 + 123456789},
      {"2026-01-01T00:00:00.1234567891Z", kT0 + 123456789},
      {"2026-01-01T01:30:00+01:30", kT0},
      {"2025-12-31T22:00:00-02:00", kT0},
      {"2026-01-01T00:00:00-00:00", kT0},
      {"2000-02-29T12:30:15Z", 951827415 * kSecond},
      {"1969-12-31T23:59:59Z", -kSecond},
      {"1969-12-31T23:59:59.5Z", -500 * kMilli},
      {"2262-04-11T23:47:16.854775807Z", kMaxI64},
      {"1677-09-22T00:00:00Z", -9223286400LL * kSecond},
      {"1677-09-21T00:12:44Z", -9223372036LL * kSecond},
  };
  for (const auto& [text, nanos] : good) {
    SCOPED_TRACE(text);
    std::int64_t parsed = -7;
    std::string why;
    EXPECT_TRUE(ParseTimestamp(text, &parsed, &why)) << why;
    EXPECT_EQ(parsed, nanos);
  }
  const std::string format = "expected YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)";
  const std::pair<const char*, std::string> bad[] = {
      {"", format},
      {"2026-1-01T00:00:00Z", format},
      {"2026-01-01 00:00:00Z", format},
      {"2026-01-01T00:00:00", format},
      {"2026-01-01T00:00Z", format},
      {"+2026-01-01T00:00:00Z", format},
      {"2026-00-01T00:00:00Z", "month out of range"},
      {"2026-01-32T00:00:00Z", "day out of range"},
      {"2026-04-31T00:00:00Z", "day out of range"},
      {"2100-02-29T00:00:00Z", "day out of range"},
      {"2026-01-01T00:60:00Z", "time of day out of range"},
      {"2026-01-01T00:00:60Z", "time of day out of range"},
      {"2026-01-01T00:00:00+24:00", "zone offset out of range"},
      {"2026-01-01T00:00:00+01:60", "zone offset out of range"},
      {"2026-01-01T00:00:00+01", "expected a zone offset like +02:00"},
      {"2026-01-01T00:00:00.Z", "expected digits after '.'"},
      {"2026-01-01T00:00:00.5", "expected 'Z' or a zone offset like +02:00"},
      {"2026-01-01T00:00:00Zx", "unexpected 'x' after the zone"},
      {"2262-04-11T23:47:16.854775808Z",
       "out of the supported range (1677-09-21T00:12:44Z to 2262-04-11T23:47:16.854775807Z)"},
      {"1677-09-21T00:12:43.999999999Z",
       "out of the supported range (1677-09-21T00:12:44Z to 2262-04-11T23:47:16.854775807Z)"},
      {"0001-01-01T00:00:00Z",
       "out of the supported range (1677-09-21T00:12:44Z to 2262-04-11T23:47:16.854775807Z)"},
  };
  for (const auto& [text, expected_why] : bad) {
    SCOPED_TRACE(text);
    std::int64_t parsed = -7;
    std::string why;
    EXPECT_FALSE(ParseTimestamp(text, &parsed, &why));
    EXPECT_EQ(why, expected_why);
    EXPECT_EQ(parsed, -7);
  }
}

TEST(QuerySyntaxTest, StringLiterals) {
  struct Row {
    std::string literal;
    std::string value;
    bool prefix;
  };
  const Row rows[] = {
      {R"("abc")", "abc", false},
      {R"("")", "", false},
      {R"("a\"b")", "a\"b", false},
      {R"("\\")", "\\", false},
      {R"("\/")", "/", false},
      {R"("\b\f\n\r\t")", "\b\f\n\r\t", false},
      {R"("\u00e9\u00C9")", "\xC3\xA9\xC3\x89", false},
      {R"("\u20ac")", "\xE2\x82\xAC", false},
      {R"("\uD83D\uDE00")", "\xF0\x9F\x98\x80", false},
      {R"("\u0000")", std::string(1, '\0'), false},
      {R"("\u007f")", "\x7f", false},
      {R"("a*")", "a", true},
      {R"("*")", "", true},
      {R"("a**")", "a*", true},
      {R"("a\*")", "a*", false},
      {R"("a*\*")", "a**", false},
      {R"("*a")", "*a", false},
      {"\"\xC3\xA9\xFF\x01\"", "\xC3\xA9\xFF\x01", false},  // raw bytes are taken as they are
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.literal);
    StringLiteral literal;
    SyntaxError error;
    ASSERT_TRUE(ReadStringLiteral(row.literal + " rest", 0, &literal, &error)) << error.message;
    EXPECT_EQ(literal.value, row.value);
    EXPECT_EQ(literal.prefix, row.prefix);
    EXPECT_EQ(literal.end, row.literal.size());
  }
}

TEST(QuerySyntaxTest, QuoteFilterString) {
  const std::pair<std::string, std::string> rows[] = {
      {"sensor-1", R"("sensor-1")"},
      {"", R"("")"},
      {"a\"b\\c", R"("a\"b\\c")"},
      {"sensor-*", R"("sensor-\*")"},
      {"*a*", R"("\*a\*")"},
      {"\n\r\t\x01\x7f", R"("\n\r\t\u0001\u007f")"},
      {std::string(1, '\0'), R"("\u0000")"},
      {"\xC3\xA9", "\"\xC3\xA9\""},
      {"/", R"("/")"},
  };
  for (const auto& [value, quoted] : rows) {
    SCOPED_TRACE(quoted);
    EXPECT_EQ(QuoteFilterString(value), quoted);
  }
}

// Whatever the bytes, a quoted value matches exactly the connection that has it.
TEST(QuerySyntaxTest, QuotedValuesRoundTrip) {
  std::mt19937 rng(7);
  std::vector<std::string> values = {"", "*", "a*", "\\*", "\"", "\\", "\x80\xFF", "\xF0\x9F\x98"};
  for (int i = 0; i < 300; ++i) {
    std::string value(rng() % 24, '\0');
    for (char& c : value) c = static_cast<char>(rng() % 256);
    values.push_back(value);
  }
  std::vector<Connection> snapshot;
  for (std::size_t i = 0; i < values.size(); ++i) {
    snapshot.push_back(MakeConnection(i + 1));
    snapshot.back().client_id = values[i];
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::string quoted = QuoteFilterString(values[i]);
    StringLiteral literal;
    SyntaxError error;
    ASSERT_TRUE(ReadStringLiteral(quoted, 0, &literal, &error)) << error.message;
    EXPECT_EQ(literal.value, values[i]);
    EXPECT_FALSE(literal.prefix);
    EXPECT_EQ(literal.end, quoted.size());
    const Outcome outcome = RunQuery(snapshot, MakeQuery("client_id = " + quoted));
    ASSERT_TRUE(outcome.ok) << outcome.error;
    for (const std::uint64_t seq : outcome.seqs) EXPECT_EQ(values[seq - 1], values[i]);
    EXPECT_EQ(std::count(outcome.seqs.begin(), outcome.seqs.end(), i + 1), 1);
  }
}

TEST(QuerySyntaxTest, ColumnsCountCharacters) {
  const std::string text = "a\xC3\xA9\xE2\x82\xAC b";
  EXPECT_EQ(TextColumn(text, 0), 1u);
  EXPECT_EQ(TextColumn(text, 1), 2u);
  EXPECT_EQ(TextColumn(text, 3), 3u);
  EXPECT_EQ(TextColumn(text, 6), 4u);
  EXPECT_EQ(TextColumn(text, 7), 5u);
  EXPECT_EQ(TextColumn(text, 100), 6u);
  EXPECT_EQ(AtPosition(text, 7), " at position 5");
  EXPECT_EQ(Excerpt(std::string(64, 'x')), std::string(64, 'x'));
  EXPECT_EQ(Excerpt(std::string(65, 'x')), std::string(64, 'x') + "...");
  EXPECT_EQ(Excerpt(std::string(63, 'x') + "\xC3\xA9zz"), std::string(63, 'x') + "...");
}

TEST(QuerySyntaxTest, Integers) {
  std::int64_t value = 0;
  EXPECT_EQ(ParseInt64("-9223372036854775808", &value), NumberStatus::kOk);
  EXPECT_EQ(value, std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(ParseInt64("9223372036854775807", &value), NumberStatus::kOk);
  EXPECT_EQ(value, kMaxI64);
  EXPECT_EQ(ParseInt64("9223372036854775808", &value), NumberStatus::kOutOfRange);
  EXPECT_EQ(ParseInt64("-9223372036854775809", &value), NumberStatus::kOutOfRange);
  EXPECT_EQ(ParseInt64("-", &value), NumberStatus::kNotANumber);
  EXPECT_EQ(ParseInt64("+1", &value), NumberStatus::kNotANumber);
  EXPECT_EQ(ParseInt64("", &value), NumberStatus::kNotANumber);
  std::uint64_t unsigned_value = 0;
  EXPECT_EQ(ParseUint64("18446744073709551615", &unsigned_value), NumberStatus::kOk);
  EXPECT_EQ(unsigned_value, kMaxU64);
  EXPECT_EQ(ParseUint64("18446744073709551616", &unsigned_value), NumberStatus::kOutOfRange);
  EXPECT_EQ(ParseUint64("184467440737095516160x", &unsigned_value), NumberStatus::kNotANumber);
}

// --- order_by ----------------------------------------------------------------------------------

std::vector<Connection> OrderFleet() {
  Connection o1 = MakeConnection(1);
  o1.uid = "u2";
  o1.client_id = "b";
  o1.state = ConnectionState::kClosed;
  o1.close_time_ns = kT0 + 10;
  o1.idle_ns = -1;
  o1.port = 0;
  o1.total_statistics.publish_bytes = 3;

  Connection o2 = MakeConnection(2);
  o2.uid = "u1";
  o2.client_id = "a";
  o2.username = "x";
  o2.idle_ns = 5;
  o2.port = 100;
  o2.protocol_version = 5;
  o2.total_statistics.publish_bytes = 1;

  Connection o3 = MakeConnection(3);
  o3.uid = "u3";
  o3.client_id = "c";
  o3.username = "y";
  o3.open_time_ns = kT0 - 1;
  o3.idle_ns = 0;
  o3.port = 50;
  o3.total_statistics.publish_bytes = 2;

  Connection o4 = MakeConnection(4);
  o4.uid = "u0";
  o4.client_id = "a";
  o4.state = ConnectionState::kClosed;
  o4.close_time_ns = kT0 + 5;
  o4.open_time_ns = kT0 + 1;
  o4.idle_ns = 1;
  o4.port = 0;
  o4.protocol_version = 3;
  o4.total_statistics.publish_bytes = kMaxU64;
  return {o1, o2, o3, o4};
}

TEST(ConnectionOrderTest, Orders) {
  const std::pair<const char*, std::vector<std::uint64_t>> rows[] = {
      {"", {3, 2, 1, 4}},  // open_time, then uid, then seq
      {"  ", {3, 2, 1, 4}},
      {"client_id", {2, 4, 1, 3}},  // the two "a" by seq
      {"client_id asc", {2, 4, 1, 3}},
      {"client_id Asc", {2, 4, 1, 3}},
      {"client_id desc", {3, 1, 2, 4}},  // ties still by seq ascending
      {"clientId DESC", {3, 1, 2, 4}},
      {"state", {2, 3, 1, 4}},  // OPEN (1) before CLOSED (2): by number, not by name
      {"state desc", {1, 4, 2, 3}},
      {"close_time", {2, 3, 4, 1}},       // unset first
      {"close_time desc", {1, 4, 2, 3}},  // unset last
      {"idle_duration", {1, 3, 4, 2}},
      {"idleDuration desc", {2, 4, 3, 1}},
      {"source.port", {1, 4, 3, 2}},
      {"username", {1, 4, 2, 3}},
      {"protocol_version desc, client_id", {2, 1, 3, 4}},
      {"protocol_version, client_id desc", {4, 3, 1, 2}},
      {" open_time desc , uid ", {4, 2, 1, 3}},
      {"open_time desc,uid desc", {4, 1, 2, 3}},
      {"uid", {4, 2, 1, 3}},
      {"clean_session", {1, 2, 3, 4}},
      {"clean_session desc", {1, 2, 3, 4}},
      {"totalRequestStatistics.publishBytes", {2, 3, 1, 4}},
      {"total_request_statistics.publish_bytes desc", {4, 1, 3, 2}},
  };
  for (const auto& [order_by, seqs] : rows) {
    SCOPED_TRACE(order_by);
    const Outcome outcome = RunQuery(OrderFleet(), MakeQuery("", order_by));
    EXPECT_TRUE(outcome.ok) << outcome.error;
    EXPECT_EQ(outcome.seqs, seqs);
  }
}

// Every scalar field sorts, both ways, and the result is monotonic in that field.
TEST(ConnectionOrderTest, EveryScalarFieldSorts) {
  std::vector<Connection> snapshot = FilterFleet();
  for (const Connection& c : OrderFleet()) {
    snapshot.push_back(c);
    snapshot.back().seq += 10;
  }
  for (const FieldDef& field : ConnectionFields()) {
    if (field.repeated()) continue;
    for (const char* direction : {" asc", " desc"}) {
      const std::string order_by = std::string(field.path) + direction;
      SCOPED_TRACE(order_by);
      const Outcome outcome = RunQuery(snapshot, MakeQuery("", order_by));
      ASSERT_TRUE(outcome.ok) << outcome.error;
      ASSERT_EQ(outcome.connections.size(), snapshot.size());
      for (std::size_t i = 1; i < outcome.connections.size(); ++i) {
        const int comparison = CompareFieldValues(field.kind, field.get(outcome.connections[i - 1]),
                                                  field.get(outcome.connections[i]));
        EXPECT_TRUE(direction[1] == 'a' ? comparison <= 0 : comparison >= 0) << i;
        if (comparison == 0) {
          EXPECT_LT(outcome.connections[i - 1].seq, outcome.connections[i].seq);
        }
      }
    }
  }
}

TEST(ConnectionOrderTest, ErrorMessagesNameWhatAndWhere) {
  const std::vector<ErrorRow> rows = {
      {"foo", "Unknown order_by field 'foo' at position 1"},
      {"seq", "Unknown order_by field 'seq' at position 1"},
      {"client_id, foo desc", "Unknown order_by field 'foo' at position 12"},
      {"client_id up",
       "Unknown order_by direction 'up' for field 'client_id' (expected asc or desc) at position "
       "11"},
      {"client_id ascending",
       "Unknown order_by direction 'ascending' for field 'client_id' (expected asc or desc) at "
       "position 11"},
      {"client_id asc desc", "Expected ',' or end of order_by, got 'desc' at position 15"},
      {"subscriptions.qos",
       "order_by cannot use the repeated field 'subscriptions.qos' at position 1"},
      {"uid, subscriptions.filter desc",
       "order_by cannot use the repeated field 'subscriptions.filter' at position 6"},
      {"uid, client_id, uid desc", "order_by names the field 'uid' more than once at position 17"},
      {"clientId, client_id", "order_by names the field 'client_id' more than once at position 11"},
      {"client_id,", "Expected a field name in order_by, got end of order_by at position 11"},
      {"client_id, ", "Expected a field name in order_by, got end of order_by at position 12"},
      {"client_id,,uid", "Expected a field name in order_by, got ',' at position 11"},
      {",client_id", "Expected a field name in order_by, got ',' at position 1"},
      {std::string(1025, ' '), "order_by is longer than 1024 characters at position 1025"},
  };
  for (const ErrorRow& row : rows) {
    SCOPED_TRACE(row.input);
    EXPECT_EQ(OrderError(row.input), row.message);
  }
}

// --- pages -----------------------------------------------------------------------------------

// A connection with random sort keys drawn from small ranges, so that ties are common.
Connection RandomConnection(std::uint64_t seq, std::mt19937* rng) {
  Connection c = MakeConnection(seq);
  c.uid = "uid-" + std::to_string((*rng)() % 1000);
  c.open_time_ns = kT0 + static_cast<std::int64_t>((*rng)() % 50) * kSecond;
  c.client_id = "client-" + std::to_string((*rng)() % 300);
  c.protocol_version = 3 + static_cast<int>((*rng)() % 3);
  c.idle_ns = static_cast<std::int64_t>((*rng)() % 20) - 1;
  if ((*rng)() % 3 == 0) {
    c.state = ConnectionState::kClosed;
    c.close_time_ns = c.open_time_ns + static_cast<std::int64_t>((*rng)() % 10) * kSecond;
  }
  c.username = (*rng)() % 4 == 0 ? "" : "user-" + std::to_string((*rng)() % 5);
  return c;
}

std::vector<Connection> RandomFleet(std::size_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Connection> fleet;
  for (std::size_t i = 0; i < count; ++i) fleet.push_back(RandomConnection(i + 1, &rng));
  std::shuffle(fleet.begin(), fleet.end(), rng);
  return fleet;
}

// Follows next_page_token to the end; checks every page on the way.
std::vector<std::uint64_t> AllPages(const std::vector<Connection>& snapshot,
                                    const std::string& filter, const std::string& order_by,
                                    std::int64_t page_size) {
  const std::size_t limit = static_cast<std::size_t>(page_size == 0 ? 1000 : page_size);
  std::vector<std::uint64_t> seqs;
  std::string token;
  std::int64_t total = -1;
  for (int pages = 0; pages < 100000; ++pages) {
    const Outcome outcome = RunQuery(snapshot, MakeQuery(filter, order_by, page_size, token));
    EXPECT_TRUE(outcome.ok) << outcome.error;
    if (!outcome.ok) break;
    if (total < 0) total = outcome.total_size;
    EXPECT_EQ(outcome.total_size, total);
    seqs.insert(seqs.end(), outcome.seqs.begin(), outcome.seqs.end());
    if (outcome.next_page_token.empty()) {
      EXPECT_LE(outcome.seqs.size(), limit);
      break;
    }
    EXPECT_EQ(outcome.seqs.size(), limit);
    EXPECT_EQ(outcome.next_page_token.find_first_not_of(
                  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
              std::string::npos);
    token = outcome.next_page_token;
  }
  EXPECT_EQ(static_cast<std::int64_t>(seqs.size()), total);
  return seqs;
}

TEST(ConnectionPagesTest, PagesVisitEveryMatchOnceInOrder) {
  const std::vector<Connection> fleet = RandomFleet(2500, 1);
  struct Row {
    const char* filter;
    const char* order_by;
    std::int64_t small_page;  // besides 1000 and the default; 7 costs a few hundred pages
  };
  const Row rows[] = {
      {"", "", 7},
      {"", "client_id desc", 7},
      {"", "protocol_version, open_time desc", 7},
      {"", "close_time, idle_duration desc", 97},
      {"", "username desc, uid", 97},
      {"state = MQTT_CONNECTION_STATE_OPEN", "idle_duration", 7},
      {R"(client_id = "client-1*")", "open_time desc", 7},
  };
  for (const auto& [filter, order_by, small_page] : rows) {
    const Outcome all = RunQuery(fleet, MakeQuery(filter, order_by, kMaxPageSize));
    ASSERT_TRUE(all.ok) << all.error;
    EXPECT_TRUE(all.next_page_token.empty());
    for (const std::int64_t page_size : {small_page, std::int64_t{1000}, std::int64_t{0}}) {
      SCOPED_TRACE(std::string(filter) + " / " + order_by + " / " + std::to_string(page_size));
      EXPECT_EQ(AllPages(fleet, filter, order_by, page_size), all.seqs);
    }
  }
  const Outcome everything = RunQuery(fleet, MakeQuery("", "", kMaxPageSize));
  EXPECT_EQ(everything.seqs.size(), 2500u);
  EXPECT_EQ(std::set<std::uint64_t>(everything.seqs.begin(), everything.seqs.end()).size(), 2500u);
}

TEST(ConnectionPagesTest, DefaultPageSizeIs1000) {
  const std::vector<Connection> fleet = RandomFleet(2500, 2);
  const Outcome first = RunQuery(fleet, MakeQuery("", "", 0));
  ASSERT_TRUE(first.ok);
  EXPECT_EQ(first.seqs.size(), 1000u);
  EXPECT_EQ(first.total_size, 2500);
  EXPECT_FALSE(first.next_page_token.empty());
  const Outcome largest = RunQuery(fleet, MakeQuery("", "", 10000));
  EXPECT_EQ(largest.seqs.size(), 2500u);
  EXPECT_TRUE(largest.next_page_token.empty());
  const Outcome exact = RunQuery(fleet, MakeQuery("", "", 2500));
  EXPECT_EQ(exact.seqs.size(), 2500u);
  EXPECT_TRUE(exact.next_page_token.empty());
  const Outcome empty = RunQuery({}, MakeQuery(""));
  EXPECT_TRUE(empty.ok);
  EXPECT_TRUE(empty.seqs.empty());
  EXPECT_EQ(empty.total_size, 0);
  EXPECT_TRUE(empty.next_page_token.empty());
}

// Keyset pages: connections that stay are neither skipped nor repeated while others come and go.
TEST(ConnectionPagesTest, PagesStayConsistentWhileConnectionsComeAndGo) {
  for (const char* order_by : {"", "client_id desc", "protocol_version, username desc"}) {
    SCOPED_TRACE(order_by);
    std::mt19937 rng(3);
    std::vector<Connection> live = RandomFleet(600, 4);
    std::uint64_t next_seq = 601;
    std::set<std::uint64_t> stayed;
    for (const Connection& c : live) stayed.insert(c.seq);
    ConnectionOrder order;
    ASSERT_TRUE(ConnectionOrder::Parse(order_by, &order).ok());

    std::vector<Connection> returned;
    std::string token;
    for (int pages = 0; pages < 1000; ++pages) {
      const Outcome outcome = RunQuery(live, MakeQuery("", order_by, 7, token));
      ASSERT_TRUE(outcome.ok) << outcome.error;
      returned.insert(returned.end(), outcome.connections.begin(), outcome.connections.end());
      token = outcome.next_page_token;
      if (token.empty()) break;
      for (int i = 0; i < 4 && !live.empty(); ++i) {  // some leave, also ones already returned
        const std::size_t victim = rng() % live.size();
        stayed.erase(live[victim].seq);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(victim));
      }
      for (int i = 0; i < 5; ++i) live.push_back(RandomConnection(next_seq++, &rng));
    }
    ASSERT_TRUE(token.empty());
    std::map<std::uint64_t, int> times;
    for (const Connection& c : returned) ++times[c.seq];
    for (const auto& [seq, count] : times) EXPECT_EQ(count, 1) << "seq " << seq;
    for (const std::uint64_t seq : stayed) EXPECT_EQ(times.count(seq), 1u) << "seq " << seq;
    for (std::size_t i = 1; i < returned.size(); ++i) {
      EXPECT_LT(order.Compare(returned[i - 1], returned[i]), 0) << i;
    }
  }
}

TEST(ConnectionPagesTest, TokensBelongToTheirFilterAndOrder) {
  const std::vector<Connection> fleet = FilterFleet();
  const Outcome first = RunQuery(fleet, MakeQuery(R"(client_id = "sensor-*")", "client_id", 1));
  ASSERT_TRUE(first.ok);
  ASSERT_FALSE(first.next_page_token.empty());
  const std::string token = first.next_page_token;
  const std::string foreign = "page_token does not belong to this filter and order_by";
  const std::pair<ConnectionQuery, std::string> rows[] = {
      {MakeQuery(R"(client_id = "sensor-*")", "client_id", 1, token), ""},
      {MakeQuery(R"(client_id = "sensor-*")", "client_id", 500, token), ""},  // sizes may change
      {MakeQuery(R"(client_id = "sensor*")", "client_id", 1, token), foreign},
      {MakeQuery(R"(client_id="sensor-*")", "client_id", 1, token), foreign},
      {MakeQuery("", "client_id", 1, token), foreign},
      {MakeQuery(R"(client_id = "sensor-*")", "client_id desc", 1, token), foreign},
      {MakeQuery(R"(client_id = "sensor-*")", "", 1, token), foreign},
  };
  for (const auto& [query, message] : rows) {
    SCOPED_TRACE(query.filter + " / " + query.order_by);
    const Outcome outcome = RunQuery(fleet, query);
    EXPECT_EQ(outcome.ok ? "" : outcome.error, message);
  }
  // The filter and order_by are part of the fingerprint with a boundary between them.
  EXPECT_NE(QueryFingerprint("ab", "c"), QueryFingerprint("a", "bc"));
}

TEST(ConnectionPagesTest, MalformedTokens) {
  const std::vector<Connection> fleet = FilterFleet();
  const Outcome first = RunQuery(fleet, MakeQuery("", "client_id, open_time", 1));
  ASSERT_FALSE(first.next_page_token.empty());
  const std::string token = first.next_page_token;
  std::string other_version = token;
  other_version[0] = 'B';  // the version byte becomes 5
  const std::string rows[] = {
      "!!!!",
      "A",
      "AAAA",
      token + "A",
      token + "AA",
      token + "=",
      token.substr(0, token.size() - 2),
      token.substr(0, 12),
      "a b",
      other_version,
  };
  for (const std::string& bad : rows) {
    SCOPED_TRACE(bad);
    const Outcome outcome = RunQuery(fleet, MakeQuery("", "client_id, open_time", 1, bad));
    EXPECT_FALSE(outcome.ok);
    EXPECT_EQ(outcome.error, "malformed page_token");
    EXPECT_TRUE(outcome.seqs.empty());
  }
}

TEST(ConnectionPagesTest, TokensRoundTripEveryKindOfValue) {
  ConnectionOrder order;
  const Status parsed = ConnectionOrder::Parse(
      "client_id desc, close_time, source.port, total_request_statistics.publish_bytes, state, "
      "idle_duration",
      &order);
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  OrderCursor cursor;
  cursor.seq = kMaxU64 - 3;
  std::string every_byte;
  for (int b = 0; b < 256; ++b) every_byte.push_back(static_cast<char>(b));
  cursor.values = {
      {true, 0, 0, every_byte}, {false, 0, 0, ""},
      {true, -5, 0, ""},        {true, 0, kMaxU64, ""},
      {true, 2, 0, ""},         {true, std::numeric_limits<std::int64_t>::min(), 0, ""}};
  const std::string token = EncodePageToken(42, order, cursor);
  OrderCursor decoded;
  const Status decoded_status = DecodePageToken(token, 42, order, &decoded);
  ASSERT_TRUE(decoded_status.ok()) << decoded_status.message();
  EXPECT_EQ(decoded.seq, cursor.seq);
  ASSERT_EQ(decoded.values.size(), cursor.values.size());
  for (std::size_t i = 0; i < cursor.values.size(); ++i) {
    EXPECT_EQ(decoded.values[i].is_set, cursor.values[i].is_set);
    EXPECT_EQ(decoded.values[i].number, cursor.values[i].number);
    EXPECT_EQ(decoded.values[i].unsigned_number, cursor.values[i].unsigned_number);
    EXPECT_EQ(decoded.values[i].text, cursor.values[i].text);
  }
  const Status foreign = DecodePageToken(token, 43, order, &decoded);
  EXPECT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.message(), "page_token does not belong to this filter and order_by");
  // Every strict prefix of the token is malformed.
  for (std::size_t length = 1; length < token.size(); ++length) {
    EXPECT_FALSE(DecodePageToken(token.substr(0, length), 42, order, &decoded).ok());
  }
}

TEST(ConnectionPagesTest, Offset) {
  const std::vector<Connection> fleet = FilterFleet();  // default order: 3, 1, 4, 2
  const std::pair<std::int64_t, std::vector<std::uint64_t>> rows[] = {
      {0, {3, 1}}, {1, {1, 4}}, {3, {2}}, {4, {}}, {100, {}},
  };
  for (const auto& [offset, seqs] : rows) {
    SCOPED_TRACE(offset);
    const Outcome outcome = RunQuery(fleet, MakeQuery("", "", 2, "", offset));
    ASSERT_TRUE(outcome.ok) << outcome.error;
    EXPECT_EQ(outcome.seqs, seqs);
    EXPECT_EQ(outcome.total_size, 4);
    EXPECT_EQ(outcome.next_page_token.empty(), offset + 2 >= 4);
  }
  // The token of a page reached by offset continues after it; offset is ignored with a token.
  const Outcome skipped = RunQuery(fleet, MakeQuery("", "", 1, "", 1));
  ASSERT_EQ(skipped.seqs, std::vector<std::uint64_t>{1});
  const Outcome next = RunQuery(fleet, MakeQuery("", "", 2, skipped.next_page_token, 3));
  EXPECT_EQ(next.seqs, (std::vector<std::uint64_t>{4, 2}));
  EXPECT_TRUE(next.next_page_token.empty());
  // With a filter, offset counts matches only.
  const Outcome filtered = RunQuery(fleet, MakeQuery("node_id = 1", "", 10, "", 1));
  EXPECT_EQ(filtered.seqs, (std::vector<std::uint64_t>{1, 4}));
  EXPECT_EQ(filtered.total_size, 3);
}

TEST(ConnectionPagesTest, PagingErrors) {
  const std::vector<Connection> fleet = FilterFleet();
  const std::pair<ConnectionQuery, std::string> rows[] = {
      {MakeQuery("", "", -1), "page_size must be between 0 and 10000, got -1"},
      {MakeQuery("", "", 10001), "page_size must be between 0 and 10000, got 10001"},
      {MakeQuery("", "", std::numeric_limits<std::int64_t>::min()),
       "page_size must be between 0 and 10000, got -9223372036854775808"},
      {MakeQuery("", "", 0, "", -1), "offset must not be negative, got -1"},
      // The first problem is reported: paging values, filter, order_by, token.
      {MakeQuery("bad", "bad", -1, "bad"), "page_size must be between 0 and 10000, got -1"},
      {MakeQuery("bad", "bad", 0, "bad"), "Unknown field 'bad' at position 1"},
      {MakeQuery("", "bad", 0, "bad"), "Unknown order_by field 'bad' at position 1"},
      {MakeQuery("", "", 0, "bad"), "malformed page_token"},
  };
  for (const auto& [query, message] : rows) {
    SCOPED_TRACE(message);
    ConnectionPage page;
    page.total_size = 99;
    page.next_page_token = "stale";
    page.connections.push_back(MakeConnection(5));
    const Status status = RunConnectionQuery(fleet, query, &page);
    EXPECT_FALSE(status.ok());
    EXPECT_EQ(status.message(), message);
    EXPECT_TRUE(page.connections.empty());
    EXPECT_EQ(page.total_size, 0);
    EXPECT_TRUE(page.next_page_token.empty());
  }
}

TEST(ConnectionPagesTest, TotalSizeCountsEveryMatch) {
  const std::vector<Connection> fleet = RandomFleet(300, 5);
  const Outcome outcome = RunQuery(fleet, MakeQuery("protocol_version = 4", "", 10));
  ASSERT_TRUE(outcome.ok);
  const auto expected = std::count_if(fleet.begin(), fleet.end(),
                                      [](const Connection& c) { return c.protocol_version == 4; });
  EXPECT_EQ(outcome.total_size, expected);
  EXPECT_EQ(outcome.seqs.size(), 10u);
  EXPECT_THAT(outcome.error, ::testing::IsEmpty());
  EXPECT_THAT(FilterError("client_id = x"), HasSubstr("client_id"));
}

// A typed query pages through one large snapshot by reference: the snapshot is only read (not
// moved from, not reordered), every connection comes exactly once, in order, and the cursor of
// one page is where the next one starts.
TEST(TypedConnectionQueryTest, PagesALargeSnapshotByReference) {
  const std::vector<Connection> fleet = RandomFleet(50000, 11);
  const std::vector<Connection> before = fleet;
  TypedConnectionQuery query;
  query.order = ConnectionOrder({OrderKey{FindField("client_id")}});
  query.page_size = kMaxPageSize;
  std::vector<std::uint64_t> seqs;
  std::string previous;
  for (int pages = 0; pages < 10; ++pages) {
    TypedConnectionPage page;
    const Status status = RunConnectionQuery(fleet, query, &page);
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(page.total_size, 50000);
    for (const Connection& c : page.connections) {
      EXPECT_LE(previous, c.client_id);
      previous = c.client_id;
      seqs.push_back(c.seq);
    }
    if (!page.next) break;
    query.after = std::move(page.next);
  }
  std::sort(seqs.begin(), seqs.end());
  ASSERT_EQ(seqs.size(), 50000u);
  for (std::size_t i = 0; i < seqs.size(); ++i) ASSERT_EQ(seqs[i], i + 1);
  ASSERT_EQ(fleet.size(), before.size());
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    ASSERT_EQ(fleet[i].seq, before[i].seq);
    ASSERT_EQ(fleet[i].client_id, before[i].client_id);
  }
}

TEST(TypedConnectionQueryTest, ClausesAreMatchedAsGivenAndPagingIsChecked) {
  std::vector<Connection> fleet = {MakeConnection(1), MakeConnection(2), MakeConnection(3)};
  fleet[1].client_id = std::string(5000, 'a') + "\" = \"";
  FilterClause clause;
  clause.field = FindField("client_id");
  clause.text = fleet[1].client_id;
  TypedConnectionQuery query;
  query.filter = ConnectionFilter({clause});
  TypedConnectionPage page;
  const Status found = RunConnectionQuery(fleet, query, &page);
  ASSERT_TRUE(found.ok()) << found.message();
  ASSERT_EQ(page.connections.size(), 1u);
  EXPECT_EQ(page.connections[0].seq, 2u);
  EXPECT_FALSE(page.next);

  query.page_size = kMaxPageSize + 1;
  const Status refused = RunConnectionQuery(fleet, query, &page);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("page_size"));
  EXPECT_TRUE(page.connections.empty());
}

// --- the source path: shared snapshot, client id index, details for the page only ----------

namespace source_path {

// A source over a fleet that behaves like the registry: shared connections without their
// details, an index by client id, details added by seq. Counts which way each query went.
class FleetSource : public ConnectionSource {
 public:
  explicit FleetSource(std::vector<Connection> fleet) : fleet_(std::move(fleet)) {
    for (const Connection& c : fleet_) {
      Connection bare = c;
      bare.idle_ns = -1;
      bare.total_statistics = RequestStatistics{};
      bare.recent_statistics = RequestStatistics{};
      bare_.push_back(std::make_shared<const Connection>(std::move(bare)));
    }
  }
  std::vector<Connection> Snapshot() const override {
    ++snapshots;
    return fleet_;
  }
  ConnectionList SharedSnapshot() const override {
    ++shared_snapshots;
    return std::make_shared<const std::vector<ConnectionPtr>>(bare_);
  }
  std::vector<ConnectionPtr> FindByClientId(std::string_view client_id) const override {
    ++lookups;
    std::vector<ConnectionPtr> found;
    for (const ConnectionPtr& c : bare_) {
      if (c->client_id == client_id) found.push_back(c);
    }
    return found;
  }
  void AddDetails(std::vector<Connection>* connections) const override {
    details_added += connections->size();
    for (Connection& c : *connections) {
      for (const Connection& full : fleet_) {
        if (full.seq != c.seq) continue;
        c.idle_ns = full.idle_ns;
        c.total_statistics = full.total_statistics;
        c.recent_statistics = full.recent_statistics;
      }
    }
  }

  mutable int snapshots = 0;
  mutable int shared_snapshots = 0;
  mutable int lookups = 0;
  mutable std::size_t details_added = 0;

 private:
  std::vector<Connection> fleet_;
  std::vector<ConnectionPtr> bare_;
};

Outcome RunOnSource(const ConnectionSource& source, const ConnectionQuery& query) {
  Outcome outcome;
  ConnectionPage page;
  const Status status = RunConnectionQuery(source, query, &page);
  outcome.ok = status.ok();
  outcome.error = status.message();
  for (const Connection& c : page.connections) outcome.seqs.push_back(c.seq);
  outcome.connections = std::move(page.connections);
  outcome.total_size = page.total_size;
  outcome.next_page_token = std::move(page.next_page_token);
  return outcome;
}

TEST(ConnectionSourceQueryTest, AnswersAsTheSnapshotDoesPageForPage) {
  const std::vector<Connection> fleet = RandomFleet(700, 11);
  const FleetSource source(fleet);
  const char* filters[] = {"",
                           "client_id = \"client-7\"",
                           "client_id = \"client-1*\"",
                           "state = MQTT_CONNECTION_STATE_OPEN AND client_id = \"client-42\"",
                           "idle_duration > 5ns",
                           "client_id = \"nobody\"",
                           "bad field = 1"};
  const char* orders[] = {"", "client_id desc", "idle_duration", "bad"};
  for (const char* filter : filters) {
    for (const char* order_by : orders) {
      SCOPED_TRACE(std::string(filter) + " | " + order_by);
      std::string token;
      for (int pages = 0; pages < 100; ++pages) {
        const ConnectionQuery query = MakeQuery(filter, order_by, 60, token);
        const Outcome expected = RunQuery(fleet, query);
        const Outcome actual = RunOnSource(source, query);
        EXPECT_EQ(actual.ok, expected.ok);
        EXPECT_EQ(actual.error, expected.error);
        EXPECT_EQ(actual.seqs, expected.seqs);
        EXPECT_EQ(actual.total_size, expected.total_size);
        EXPECT_EQ(actual.next_page_token, expected.next_page_token);
        for (std::size_t i = 0; i < actual.connections.size() && i < expected.connections.size();
             ++i) {
          // Details came back for the page.
          EXPECT_EQ(actual.connections[i].idle_ns, expected.connections[i].idle_ns);
          EXPECT_EQ(actual.connections[i].total_statistics.publish_count,
                    expected.connections[i].total_statistics.publish_count);
        }
        if (expected.next_page_token.empty()) break;
        token = expected.next_page_token;
      }
    }
  }
}

TEST(ConnectionSourceQueryTest, OneClientIdIsLookedUpNotScanned) {
  const FleetSource source(RandomFleet(500, 3));
  const Outcome outcome = RunOnSource(source, MakeQuery("client_id = \"client-9\""));
  ASSERT_TRUE(outcome.ok) << outcome.error;
  EXPECT_EQ(source.lookups, 1);
  EXPECT_EQ(source.shared_snapshots, 0);
  EXPECT_EQ(source.snapshots, 0);
  EXPECT_EQ(source.details_added, outcome.seqs.size());
  // A prefix is no single client id: the shared snapshot is read.
  ASSERT_TRUE(RunOnSource(source, MakeQuery("client_id = \"client-9*\"")).ok);
  EXPECT_EQ(source.lookups, 1);
  EXPECT_EQ(source.shared_snapshots, 1);
}

TEST(ConnectionSourceQueryTest, OnlyThePageIsCopiedAndDetailed) {
  const FleetSource source(RandomFleet(500, 4));
  const Outcome outcome = RunOnSource(source, MakeQuery("", "", 25));
  ASSERT_TRUE(outcome.ok);
  EXPECT_EQ(outcome.seqs.size(), 25u);
  EXPECT_EQ(source.details_added, 25u);
  EXPECT_EQ(source.snapshots, 0);
}

TEST(ConnectionSourceQueryTest, AFilterOrOrderOnADetailReadsTheDetailedSnapshot) {
  const FleetSource source(RandomFleet(100, 5));
  ASSERT_TRUE(RunOnSource(source, MakeQuery("total_request_statistics.publish_count > 3")).ok);
  EXPECT_EQ(source.snapshots, 1);
  ASSERT_TRUE(RunOnSource(source, MakeQuery("", "recent_request_statistics.deliver_bytes")).ok);
  EXPECT_EQ(source.snapshots, 2);
  EXPECT_EQ(source.shared_snapshots, 0);
  EXPECT_EQ(source.details_added, 0u);  // they came with the snapshot
}

TEST(ConnectionSourceQueryTest, TheSourcesExceptionPassesThrough) {
  class Failing : public ConnectionSource {
   public:
    std::vector<Connection> Snapshot() const override { throw std::out_of_range("gone"); }
  };
  ConnectionPage page;
  EXPECT_THROW(RunConnectionQuery(Failing(), MakeQuery(""), &page), std::out_of_range);
  EXPECT_TRUE(page.connections.empty());
}

TEST(ConnectionSourceQueryTest, TypedPagesShareTheStoredConnectionsAndCanBeUnlimited) {
  const FleetSource source(RandomFleet(300, 6));
  TypedConnectionQuery query;
  query.order = ConnectionOrder({OrderKey{FindField("client_id")}});
  query.unlimited = true;
  query.offset = 10;
  SharedConnectionPage page;
  ASSERT_TRUE(RunConnectionQuery(source, query, &page).ok());
  EXPECT_EQ(page.total_size, 300);
  ASSERT_EQ(page.connections.size(), 290u);
  EXPECT_FALSE(page.next);
  const std::vector<ConnectionPtr> stored = *source.SharedSnapshot();
  EXPECT_NE(std::find(stored.begin(), stored.end(), page.connections[0]), stored.end());
  for (std::size_t i = 1; i < page.connections.size(); ++i) {
    EXPECT_LE(page.connections[i - 1]->client_id, page.connections[i]->client_id);
  }
}

}  // namespace source_path

}  // namespace
}  // namespace mqc
