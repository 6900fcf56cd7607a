// SPDX-License-Identifier: BSD-3-Clause
// Tests for the filter (connection_filter.h): every operator on every kind of field, prefix
// matches, the subscriptions.* fields, clauses joined by AND, every error with its position and
// the length limits; then the boolean part: OR, NOT and '-', parentheses and their precedence,
// `field IN (...)` on every kind of field, the errors of each new form with their positions, the
// length rules around IN lists, and the client ids a filter narrows to (the index path of
// RunConnectionQuery, counted on a source that behaves like the registry, against the reference).
#include "companion/query/connection_filter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../../support/connection_builder.h"
#include "../../support/fleet_source.h"
#include "../../support/query_fleet.h"
#include "../../support/reference_query.h"
#include "companion/connection.h"
#include "companion/query/connection_fields.h"
#include "companion/query/connection_query.h"
#include "link/status.h"
#include "link/topic_mapping.h"

namespace mqc {
namespace {

// --- comparisons: every operator on every kind of field -----------------------------------

// The seqs a filter selects from the filter fleet, sorted; the error when it fails.
std::vector<std::uint64_t> Selected(const std::string& filter, std::string* error) {
  Outcome outcome = RunQuery(FilterFleet(), MakeQuery(filter));
  *error = outcome.error;
  std::sort(outcome.seqs.begin(), outcome.seqs.end());
  return outcome.seqs;
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
      {R"(proxy.ip_address = "192.0.2.10")", {1}},
      {R"(proxy.ip_address = "")", {2, 3, 4}},
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
      {R"(client_id = "sensor-1 and more*")", {}},  // longer than every id
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
      {"proxy.port = 41000", {1}},
      {"proxy.port = 0", {2, 3, 4}},
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
  Connection slow = TestConnection(1);
  slow.network = {true, 20000, 500, 3, 65536, 0, 2 * kTestSecond, 10 * kTestMilli};
  Connection fast = TestConnection(2);
  fast.network = {true, 40, 20, 0, 0, 0, 50 * kTestMilli, 50 * kTestMilli};
  Connection unknown = TestConnection(3);  // a Unix socket listener, say
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

// The message counts: unknown (no verified layout, a closed connection) is unset, never 0; on
// 2.0.11/2.0.12 only the *_pending sums are set. `messages_queued desc` puts the slow consumer
// first and the unknown ones last.
TEST(ConnectionFilterTest, MessageCountsAreUnsetWhereUnknown) {
  Connection slow = TestConnection(1);
  slow.messages->out = {MessageQueue::Known::kSplit, 900, 20, 920};
  slow.messages->in = {MessageQueue::Known::kSplit, 0, 0, 0};
  Connection reader = TestConnection(2);
  reader.messages->out = {MessageQueue::Known::kSplit, 0, 0, 0};
  reader.messages->in = {MessageQueue::Known::kSplit, 0, 3, 3};
  Connection old_broker = TestConnection(3);  // 2.0.11: sums only
  old_broker.messages->out = {MessageQueue::Known::kTotal, 0, 0, 40};
  old_broker.messages->in = {MessageQueue::Known::kTotal, 0, 0, 0};
  Connection unknown = TestConnection(4);
  const std::vector<Connection> snapshot = {unknown, reader, old_broker, slow};
  const auto seqs = [&](const std::string& filter, const std::string& order_by = "") {
    const Outcome outcome = RunQuery(snapshot, MakeQuery(filter, order_by));
    EXPECT_TRUE(outcome.ok) << outcome.error;
    return outcome.seqs;
  };
  using Seqs = std::vector<std::uint64_t>;
  EXPECT_EQ(seqs("messages_queued > 0"), Seqs{1});
  EXPECT_EQ(seqs("messagesQueued = 0"), Seqs{2});
  EXPECT_EQ(seqs("messages_in_flight >= 0"), (Seqs{1, 2}));
  EXPECT_EQ(seqs("messages_pending > 10"), (Seqs{1, 3}));
  EXPECT_EQ(seqs("incoming_messages_in_flight > 0"), Seqs{2});
  EXPECT_EQ(seqs("incoming_messages_pending = 0"), (Seqs{1, 3}));
  EXPECT_EQ(seqs("", "messages_queued desc, uid"), (Seqs{1, 2, 3, 4}));
  EXPECT_EQ(seqs("", "messages_pending desc, uid"), (Seqs{1, 3, 2, 4}));
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

// --- the boolean part: OR, NOT, parentheses, IN ----------------------------------------------

Connection MakeConnection(std::uint64_t seq, std::string client_id) {
  Connection c = TestConnection(seq);
  c.open_time_ns = kTestTime0 + static_cast<std::int64_t>(seq) * kTestSecond;
  c.client_id = std::move(client_id);
  return c;
}

// Six connections: sensors and actuators, two protocol versions, one closed, some subscribed.
std::vector<Connection> Fleet() {
  std::vector<Connection> fleet;
  const char* const ids[] = {"sensor-1", "sensor-2", "actuator-1", "actuator-2", "gateway", "x*"};
  for (std::uint64_t i = 0; i < 6; ++i) fleet.push_back(MakeConnection(i + 1, ids[i]));
  fleet[1].protocol_version = 5;
  fleet[3].protocol_version = 5;
  fleet[4].state = ConnectionState::kClosed;
  fleet[4].close_time_ns = kTestTime0 + 100 * kTestSecond;
  fleet[0].username = "alice";
  fleet[2].username = "bob";
  Subscription subscription;
  subscription.filter = "events/a";
  subscription.qos = 1;
  subscription.mapping.pattern = Pattern::kEvents;
  fleet[0].subscriptions.push_back(subscription);
  subscription.qos = 2;
  fleet[2].subscriptions.push_back(subscription);
  return fleet;
}

// The seqs the filter matches in Fleet(), or the error message.
std::string Matching(std::string_view text) {
  ConnectionFilter filter;
  const Status status = ConnectionFilter::Parse(text, &filter);
  if (!status.ok()) return status.message();
  std::string seqs;
  for (const Connection& c : Fleet()) {
    if (filter.Matches(c)) seqs += (seqs.empty() ? "" : " ") + std::to_string(c.seq);
  }
  return "[" + seqs + "]";
}

std::string Error(std::string_view text) {
  ConnectionFilter filter;
  const Status status = ConnectionFilter::Parse(text, &filter);
  return status.ok() ? "(no error)" : status.message();
}

TEST(ConnectionFilterBooleanTest, OrNotAndParentheses) {
  const std::pair<const char*, const char*> rows[] = {
      {R"(client_id = "sensor-1" OR client_id = "gateway")", "[1 5]"},
      {R"(client_id = "sensor-*" OR client_id = "actuator-*")", "[1 2 3 4]"},
      {R"(NOT client_id = "sensor-*")", "[3 4 5 6]"},
      {R"(-client_id = "sensor-*")", "[3 4 5 6]"},
      {R"(-(client_id = "sensor-*" OR protocol_version = 5))", "[3 5 6]"},
      {R"(NOT NOT client_id = "gateway")", "[5]"},
      {R"(NOT(client_id = "gateway"))", "[1 2 3 4 6]"},
      {R"(NOT -client_id = "gateway")", "[5]"},
      // NOT binds tightest, then AND, then OR.
      {R"(client_id = "sensor-1" OR client_id = "actuator-*" AND protocol_version = 5)", "[1 4]"},
      {R"((client_id = "sensor-1" OR client_id = "actuator-*") AND protocol_version = 5)", "[4]"},
      {R"(protocol_version = 5 AND client_id = "actuator-*" OR client_id = "sensor-1")", "[1 4]"},
      {R"(NOT protocol_version = 5 AND client_id = "actuator-*")", "[3]"},
      {R"(NOT (protocol_version = 5 AND client_id = "actuator-*"))", "[1 2 3 5 6]"},
      {R"(((client_id = "gateway")))", "[5]"},
      {R"(client_id = "a"OR(client_id = "gateway"))", "[5]"},
      {R"(state = MQTT_CONNECTION_STATE_CLOSED OR username = "bob" OR client_id = "x\*")",
       "[3 5 6]"},
      // A negated != is =, also for unset values and subscriptions.
      {R"(NOT close_time != 2026-01-01T00:01:40Z)", "[5]"},
      {R"(NOT subscriptions.qos != 2)", "[3]"},
      {R"(-subscriptions.qos = 2)", "[1 2 4 5 6]"},
  };
  for (const auto& [text, expected] : rows) {
    SCOPED_TRACE(text);
    EXPECT_EQ(Matching(text), expected);
  }
}

TEST(ConnectionFilterBooleanTest, InOnEveryKindOfField) {
  const std::pair<const char*, const char*> rows[] = {
      {R"(client_id IN ("sensor-1", "gateway", "nobody"))", "[1 5]"},
      {R"(client_id IN ("gateway"))", "[5]"},
      {R"(client_id IN("sensor-1","sensor-1"))", "[1]"},
      {R"(client_id IN ("sensor-*", "gateway"))", "[1 2 5]"},
      {R"(client_id IN ("x\*"))", "[6]"},
      {R"(clientId IN ("gateway"))", "[5]"},
      {R"(NOT client_id IN ("sensor-1", "gateway"))", "[2 3 4 6]"},
      {R"(-client_id IN ("sensor-1", "gateway"))", "[2 3 4 6]"},
      {R"(protocol_version IN (3, 5))", "[2 4]"},
      {R"(state IN (MQTT_CONNECTION_STATE_CLOSED, MQTT_CONNECTION_STATE_OFFLINE))", "[5]"},
      {R"(clean_session IN (true))", "[1 2 3 4 5 6]"},
      {R"(clean_session IN (false))", "[]"},
      {R"(total_request_statistics.publish_count IN (0, 18446744073709551615))", "[1 2 3 4 5 6]"},
      // An unset value is in no list.
      {R"(close_time IN (2026-01-01T00:01:40Z, 2026-01-01T00:00:01Z))", "[5]"},
      {R"(idle_duration IN (0, 1s))", "[]"},
      // Repeated fields: ANY subscription in the list; NOT IN: none.
      {R"(subscriptions.qos IN (1, 2))", "[1 3]"},
      {R"(subscriptions.qos IN (2))", "[3]"},
      {R"(NOT subscriptions.qos IN (2))", "[1 2 4 5 6]"},
      {R"(subscriptions.filter IN ("events/*"))", "[1 3]"},
      {R"(username IN ("alice", "bob") AND protocol_version = 4)", "[1 3]"},
  };
  for (const auto& [text, expected] : rows) {
    SCOPED_TRACE(text);
    EXPECT_EQ(Matching(text), expected);
  }
}

TEST(ConnectionFilterBooleanTest, ErrorsNameWhatAndWhere) {
  const std::pair<const char*, const char*> rows[] = {
      // Keywords in another case.
      {R"(client_id = "a" or client_id = "b")",
       "'or' is not supported: write OR in upper case at position 17"},
      {R"(not client_id = "a")", "'not' is not supported: write NOT in upper case at position 1"},
      {R"(client_id in ("a"))", "'in' is not supported: write IN in upper case at position 11"},
      {R"(client_id In ("a"))", "'In' is not supported: write IN in upper case at position 11"},
      // OR and NOT without an operand.
      {R"(client_id = "a" OR)", "Expected a field name after OR, got end of filter at position 19"},
      {R"(client_id = "a" OR OR client_id = "b")",
       "Expected a field name, got 'OR' at position 20"},
      {R"(OR client_id = "a")", "Expected a field name, got 'OR' at position 1"},
      {"NOT", "Expected a field name or '(' after NOT, got end of filter at position 4"},
      {R"(client_id = "a" AND NOT)",
       "Expected a field name or '(' after NOT, got end of filter at position 24"},
      {R"(NOT = "a")", "Expected a field name, got '=' at position 5"},
      {R"(client_id = "a" NOT client_id = "b")",
       "Expected AND, OR or end of filter, got 'NOT' at position 17"},
      // '-'.
      {R"(- client_id = "a")",
       "Expected a field name or '(' right after '-' (no space between) at position 1"},
      {"-", "Expected a field name or '(' right after '-' (no space between) at position 1"},
      {R"(-nonsense = "a")", "Unknown field 'nonsense' at position 2"},
      {R"(client_id = "a" -client_id = "b")",
       "Expected AND, OR or end of filter, got '-client_id' at position 17"},
      // Parentheses.
      {R"((client_id = "a")",
       "Expected ')' to close the '(' at position 1, got end of filter "
       "at position 17"},
      {R"(client_id = "a")", "(no error)"},
      {R"(client_id = "a"))", "Unmatched ')' at position 16"},
      {"()", "Expected a field name, NOT or '(' inside parentheses, got ')' at position 2"},
      {"(", "Expected a field name after '(', got end of filter at position 2"},
      {R"((client_id = "a" "b"))", "Expected AND, OR or ')', got quoted \"b\" at position 18"},
      {R"((client_id = "a" and state = OPEN))",
       "'and' is not supported: write AND in upper case at position 18"},
      {R"(client_id = ("a"))", "Expected a value for field 'client_id', got '(' at position 13"},
      {R"(client_id = "a" ())", "Expected AND, OR or end of filter, got '(' at position 17"},
      // IN.
      {R"(client_id IN "a")", "Expected '(' after IN, got quoted \"a\" at position 14"},
      {"client_id IN", "Expected '(' after IN, got end of filter at position 13"},
      {"client_id IN ()",
       "Expected a value in the IN list of field 'client_id', got ')' (an empty list) at "
       "position 15"},
      {R"(client_id IN ("a",))", "Expected a value for field 'client_id', got ')' at position 19"},
      {R"(client_id IN ("a" "b"))",
       "Expected ',' or ')' in the IN list of field 'client_id', got quoted \"b\" at position 19"},
      {R"(client_id IN ("a")",
       "Expected ',' or ')' in the IN list of field 'client_id', got end of filter at "
       "position 18"},
      {R"(client_id IN ("a", b))",
       "Expected quoted literal for field 'client_id', got unquoted 'b' at position 20"},
      {"protocol_version IN (4, \"5\")",
       "Expected an unquoted integer for field 'protocol_version', got quoted \"5\" at "
       "position 25"},
      {R"(client_id IN ("a\q"))",
       "Invalid escape '\\q' in string literal (allowed: \\\" \\\\ \\/ \\b \\f \\n \\r \\t "
       "\\uXXXX \\*) at position 17"},
      {R"(IN ("a"))", "Expected a field name, got 'IN' at position 1"},
      {R"(client_id = "a" IN ("b"))", "Expected AND, OR or end of filter, got 'IN' at position 17"},
      // Positions count characters.
      {"client_id IN (\"\xC3\xA9\" x)",
       "Expected ',' or ')' in the IN list of field 'client_id', got 'x' at position 19"},
  };
  for (const auto& [text, expected] : rows) {
    SCOPED_TRACE(text);
    EXPECT_EQ(Error(text), expected);
  }
  const std::string enum_error = Error("close_reason IN (CLIENT_DISCONNECT, GONE)");
  EXPECT_EQ(enum_error.rfind("Unknown value 'GONE' for enum field 'close_reason'; expected", 0), 0u)
      << enum_error;
  EXPECT_EQ(enum_error.substr(enum_error.size() - 15), " at position 37") << enum_error;
}

TEST(ConnectionFilterBooleanTest, NestingIsBounded) {
  std::string nested = R"(client_id = "gateway")";
  for (int i = 0; i < 63; ++i) nested = "(" + nested + ")";
  EXPECT_EQ(Matching(nested), "[5]");
  EXPECT_EQ(Error("(" + nested + ")"),
            "Parentheses and negations nest deeper than 64 at position 65");
  std::string negations;
  for (int i = 0; i < 63; ++i) negations += "NOT ";
  EXPECT_EQ(Matching(negations + R"(client_id = "gateway")"), "[1 2 3 4 6]");
  EXPECT_EQ(Error(negations + R"(NOT client_id = "gateway")"),
            "Parentheses and negations nest deeper than 64 at position 257");
  EXPECT_EQ(Error(std::string(64, '-') + R"(client_id = "a")"),
            "Parentheses and negations nest deeper than 64 at position 65");
}

// `n` distinct quoted client ids, comma separated.
std::string IdList(std::size_t n) {
  std::string list;
  for (std::size_t i = 0; i < n; ++i) {
    list += (i == 0 ? "\"" : ", \"") + std::string("id-") + std::to_string(i) + "\"";
  }
  return list;
}

TEST(ConnectionFilterBooleanTest, InListsAreLeftOutOfTheLengthLimit) {
  // 10,000 values (about 120,000 characters) pass; the 10,001st is refused where it is.
  const std::string most = "client_id IN (" + IdList(kMaxInValues) + ")";
  EXPECT_EQ(Error(most), "(no error)");
  const std::string one_more = "client_id IN (" + IdList(kMaxInValues + 1) + ")";
  const std::size_t last = one_more.rfind("\"id-");
  EXPECT_EQ(Error(one_more),
            "The IN list of field 'client_id' has more than 10000 values at "
            "position " +
                std::to_string(last + 1));
  // Outside the lists, the limit holds as before: 1024 characters.
  const std::string list = "client_id IN (" + IdList(2000) + ")";
  // Outside: "client_id IN (" and ")" (15), " AND username = \"" (17), the u's and '"' (1).
  std::string text = list + " AND username = \"" + std::string(1024 - 15 - 17 - 1, 'u') + "\"";
  EXPECT_EQ(Error(text), "(no error)");
  text.insert(text.size() - 1, "u");
  EXPECT_EQ(Error(text),
            "Filter is longer than 1024 characters at position " + std::to_string(text.size()));
  // A syntax error inside a long list is reported as such, not as a length problem.
  const std::string broken = "client_id IN (" + IdList(2000) + " x)";
  EXPECT_EQ(Error(broken),
            "Expected ',' or ')' in the IN list of field 'client_id', got 'x' at "
            "position " +
                std::to_string(broken.size() - 1));
  // The whole text is bounded too.
  EXPECT_EQ(Error(std::string(kMaxFilterTextBytes + 1, ' ')),
            "Filter is longer than 1048576 bytes at position 1048577");
}

TEST(ConnectionFilterBooleanTest, ClausesMadeInCodeMayHoldInLists) {
  FilterClause clause;
  clause.field = FindField("client_id");
  clause.op = CompareOp::kIn;
  clause.in.texts = {"gateway", "sensor-2", "gateway"};  // any order, repeats allowed
  clause.in.prefixes = {"actuator-"};
  const ConnectionFilter filter({clause});
  std::string seqs;
  for (const Connection& c : Fleet()) {
    if (filter.Matches(c)) seqs += std::to_string(c.seq);
  }
  EXPECT_EQ(seqs, "2345");
}

// What ClientIdCandidates gives: the ids, or "scan".
std::string Candidates(std::string_view text) {
  ConnectionFilter filter;
  const Status status = ConnectionFilter::Parse(text, &filter);
  if (!status.ok()) return status.message();
  std::vector<std::string_view> ids;
  if (!filter.ClientIdCandidates(&ids)) return "scan";
  std::string joined;
  for (const std::string_view id : ids) joined += (joined.empty() ? "" : ",") + std::string(id);
  return "{" + joined + "}";
}

TEST(ConnectionFilterBooleanTest, ClientIdCandidatesFollowTheTree) {
  const std::pair<const char*, const char*> rows[] = {
      {"", "scan"},
      {R"(client_id = "a")", "{a}"},
      {R"(client_id = "a*")", "scan"},
      {R"(client_id != "a")", "scan"},
      {R"(client_id IN ("b", "a", "b"))", "{a,b}"},
      {R"(client_id IN ("b", "a*"))", "scan"},
      {R"(client_id = "a" OR client_id IN ("c", "b"))", "{a,b,c}"},
      {R"(client_id = "a" OR username = "u")", "scan"},
      {R"(client_id IN ("a", "b", "c") AND (client_id = "d" OR client_id = "e"))", "{d,e}"},
      {R"(username = "u" AND client_id IN ("a", "b"))", "{a,b}"},
      {R"(NOT client_id = "a")", "scan"},
      {R"(NOT NOT client_id = "a")", "scan"},
      {R"(subscriptions.filter = "a")", "scan"},
  };
  for (const auto& [text, expected] : rows) {
    SCOPED_TRACE(text);
    EXPECT_EQ(Candidates(text), expected);
  }
}

TEST(ConnectionFilterBooleanTest, QueriesNarrowedToClientIdsUseTheIndexAndAnswerAlike) {
  const std::vector<Connection> fleet = Fleet();
  const char* const filters[] = {
      R"(client_id IN ("sensor-1", "gateway", "nobody", "sensor-1"))",
      R"(client_id = "sensor-2" OR client_id = "actuator-1" AND protocol_version = 4)",
      R"((client_id = "sensor-2" OR client_id = "actuator-2") AND protocol_version = 5)",
      R"(client_id IN ("sensor-1", "sensor-2") AND NOT username = "alice")",
  };
  for (const char* text : filters) {
    SCOPED_TRACE(text);
    ConnectionQuery query;
    query.filter = text;
    ConnectionPage from_snapshot;
    ASSERT_TRUE(RunReferenceQuery(fleet, query, &from_snapshot).ok());
    const FleetSource source(fleet);
    ConnectionPage from_index;
    ASSERT_TRUE(RunConnectionQuery(source, query, &from_index).ok());
    EXPECT_EQ(source.shared_snapshots, 0);
    EXPECT_GT(source.lookups, 0);
    ASSERT_EQ(from_index.connections.size(), from_snapshot.connections.size());
    EXPECT_GT(from_index.connections.size(), 0u);
    for (std::size_t i = 0; i < from_index.connections.size(); ++i) {
      EXPECT_EQ(from_index.connections[i].seq, from_snapshot.connections[i].seq);
    }
    EXPECT_EQ(from_index.total_size, from_snapshot.total_size);
  }
  // One lookup per distinct id.
  const FleetSource source(fleet);
  ConnectionQuery query;
  query.filter = R"(client_id IN ("sensor-1", "gateway", "nobody", "sensor-1"))";
  ConnectionPage page;
  ASSERT_TRUE(RunConnectionQuery(source, query, &page).ok());
  EXPECT_EQ(source.lookups, 3);
  // An OR with a clause the index cannot answer reads the snapshot.
  const FleetSource scanned(fleet);
  query.filter = R"(client_id = "sensor-1" OR username = "bob")";
  ASSERT_TRUE(RunConnectionQuery(scanned, query, &page).ok());
  EXPECT_EQ(scanned.lookups, 0);
  EXPECT_EQ(scanned.shared_snapshots, 1);
  EXPECT_EQ(page.total_size, 2);
}

}  // namespace
}  // namespace mqc
