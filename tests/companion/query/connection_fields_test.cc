// SPDX-License-Identifier: BSD-3-Clause
// Tests for the fields a filter and an order_by name (connection_fields.h): the table has one
// entry per field of the model, each read by its snake_case and its camelCase name from its own
// member.
#include "companion/query/connection_fields.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "../../support/connection_builder.h"
#include "../../support/query_fleet.h"
#include "companion/connection.h"
#include "link/topic_mapping.h"

namespace mqc {
namespace {

// Every scalar field, in both spellings, reads its own member of the model.
TEST(ConnectionFieldsTest, EveryFieldReadsItsOwnMember) {
  Connection c = ConnectionBuilder(9)
                     .Identity("u-9", 7)
                     .Client("cid", "user")
                     .Mqtt(5, false, 11)
                     .From("1.2.3.4", 12, "lst")
                     .Proxy("5.6.7.8", 41000)
                     .Closed(kTestTime0 + 2, CloseReason::kSessionTakenOver);
  c.open_time_ns = kTestTime0 + 1;
  c.session_expiry_time_ns = kTestTime0 + 3;
  c.tls = {true, "tv", "ci", "subj"};
  c.authentication = {AuthMechanism::kPsk, AuthState::kFailure, "prin", std::string("meth")};
  c.idle_ns = 13;
  c.network = {true, 41, 42, 43, 44, 45, 46, 47};
  c.total_statistics = {21, 22, 23, 24, 25};
  c.recent_statistics = {31, 32, 33, 34, 35};
  c.messages->out = {MessageQueue::Known::kSplit, 51, 52, 103};
  c.messages->in = {MessageQueue::Known::kSplit, 61, 62, 123};
  c.subscriptions = {TestSubscription("queues/ch", 2, Pattern::kQueues, "ch", "grp")};
  c.bridge = BridgeRole::kOutgoing;
  c.bridge_name = "brn";
  c.will = WillState::kSet;
  c.duplicate_client_id = true;
  c.drops = {true, 81};
  c.flapping = {71, 72, 73, 74, {}};
  c.denials = {true, 81, 82, "den/ied", kTestTime0 + 4};
  const std::vector<Connection> snapshot = {c, TestConnection(1)};
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
      {"proxy.ip_address", "proxy.ipAddress", R"("5.6.7.8")"},
      {"proxy.port", "proxy.port", "41000"},
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
      {"bridge_role", "bridgeRole", "BRIDGE_ROLE_OUTGOING"},
      {"bridge_name", "bridgeName", R"("brn")"},
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
      {"messages_queued", "messagesQueued", "51"},
      {"messages_in_flight", "messagesInFlight", "52"},
      {"messages_pending", "messagesPending", "103"},
      {"incoming_messages_queued", "incomingMessagesQueued", "61"},
      {"incoming_messages_in_flight", "incomingMessagesInFlight", "62"},
      {"incoming_messages_pending", "incomingMessagesPending", "123"},
      {"has_will", "hasWill", "true"},
      {"duplicate_client_id", "duplicateClientId", "true"},
      {"messages_dropped", "messagesDropped", "81"},
      {"messages_dropped_queue_full", "messagesDroppedQueueFull", "81"},
      {"reconnects_last_minute", "reconnectsLastMinute", "71"},
      {"reconnects_last_hour", "reconnectsLastHour", "72"},
      {"takeovers_last_minute", "takeoversLastMinute", "73"},
      {"takeovers_last_hour", "takeoversLastHour", "74"},
      {"denied_publish_count", "deniedPublishCount", "81"},
      {"denied_subscribe_count", "deniedSubscribeCount", "82"},
      {"last_denied_topic", "lastDeniedTopic", R"("den/ied")"},
      {"last_denied_time", "lastDeniedTime", "2026-01-01T00:00:00.000000004Z"},
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

}  // namespace
}  // namespace mqc
