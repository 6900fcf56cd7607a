// SPDX-License-Identifier: BSD-3-Clause
// The codec layer of the Connect RPC service: content types and the GET `encoding` parameter,
// binary protobuf requests and responses through the real service (POST and GET), malformed
// binary input, the size limit whatever the codec, and the schema itself: the JSON the service
// writes reads back with protobuf's own JSON parser as exactly the message the binary codec
// sends, so both codecs carry the same values under the schema's names.
#include "companion/http/connect_codec.h"

#include <gmock/gmock.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../../support/connection_builder.h"
#include "companion/connection.h"
#include "companion/http/connect_rpc_proto.h"
#include "companion/http/connect_rpc_service.h"
#include "companion/http/http_router.h"
#include "companion/json_util.h"
#include "link/text_util.h"
#include "link/topic_mapping.h"

namespace mqc {
namespace {

using ::testing::HasSubstr;

constexpr std::int64_t kSecond = 1'000'000'000;
constexpr std::int64_t kJune12 = 1781260200 * kSecond;  // 2026-06-12T10:30:00Z
const std::string kPath = std::string(kConnectRpcServicePrefix) + "ListConnections";

class FakeSource : public ConnectionSource {
 public:
  std::vector<Connection> Snapshot() const override { return connections; }
  std::vector<Connection> connections;
};

Connection Open(std::string uid, std::string client_id, std::int64_t open_time_ns) {
  Connection c = TestConnection(0);
  c.uid = std::move(uid);
  c.client_id = std::move(client_id);
  c.open_time_ns = open_time_ns;
  c.node_id = 3;
  c.protocol_version = 5;
  c.clean_session = false;
  c.keep_alive = 45;
  c.username = "alice";
  c.ip_address = "127.0.0.1";
  c.port = 51234;
  c.listener_name = "mqtts:8883";
  c.tls->enabled = true;
  c.tls->peer_certificate_subject = "CN=sensor";
  c.authentication.mechanism = AuthMechanism::kMtls;
  c.authentication.state = AuthState::kSuccess;
  c.authentication.user_principal = "alice";
  const Subscription plain = MappedSubscription("events/site1/#", 1);
  Subscription broken;
  broken.filter = "a/+b";
  broken.mapping.error = "not a valid topic filter";
  broken.kubemq_error = "no KubeMQ channel: not a valid topic filter";
  c.subscriptions = {plain, broken};
  c.idle_ns = 1'500'000'000;
  c.total_statistics = {3, 15, 2, 10, 5};
  c.recent_statistics = {1, 5, 0, 0, 1};
  // Split counts, one of them a known 0 (written, unlike an unknown one).
  c.messages->out = {MessageQueue::Known::kSplit, 12, 0, 12};
  c.messages->in = {MessageQueue::Known::kSplit, 0, 1, 1};
  c.denials = {true, 2, 1, "secret/x", kJune12 + 42};
  return c;
}

// Open, closed (each reason, and one the schema does not name), and offline connections.
std::vector<Connection> Examples() {
  std::vector<Connection> all = {Open("uid-open", "sensor-1", kJune12 + 123456789)};
  all[0].drops = {true, 7};  // a 2.0 broker with a verified layout; the others hide them
  for (int reason = 0; reason <= 8; ++reason) {
    Connection c = Open("uid-closed-" + std::to_string(reason), "gone", kJune12 + reason);
    c.state = ConnectionState::kClosed;
    c.close_time_ns = kJune12 + 10 * kSecond;
    c.close_reason = static_cast<CloseReason>(reason);
    all.push_back(c);
  }
  Connection offline =
      TestOfflineSession("uid-offline", "sleeper", kJune12 - 5 * kSecond, kJune12 + 3600 * kSecond);
  all.push_back(offline);
  Connection anonymous = Open("uid-anon", "", kJune12 + 7);
  anonymous.username.clear();
  anonymous.authentication = AuthenticationInfo();
  anonymous.port = 0;
  anonymous.idle_ns = -1;
  anonymous.subscriptions.clear();
  anonymous.total_statistics = RequestStatistics();
  // A 2.0.11 broker: the sums only; and one direction unknown.
  anonymous.messages->out = {MessageQueue::Known::kTotal, 0, 0, 4};
  anonymous.messages->in = MessageQueue{};
  anonymous.denials = Denials{};  // a broker that hides denials: all four left out
  all.push_back(anonymous);
  Connection own_bridge = Open("uid-own-bridge", "local.edge.to-cloud", kJune12 + 8);
  own_bridge.bridge = BridgeRole::kOutgoing;
  own_bridge.bridge_name = "to-cloud";
  own_bridge.listener_name.clear();
  all.push_back(own_bridge);
  Connection incoming_bridge = Open("uid-incoming-bridge", "cloud.to-edge", kJune12 + 9);
  incoming_bridge.bridge = BridgeRole::kIncoming;
  all.push_back(incoming_bridge);
  Connection plain = Open("uid-plain", "plain", kJune12 + 10);
  plain.bridge = BridgeRole::kNone;
  plain.denials = {true, 0, 0, "", 0};  // shown, none yet: the counts only
  all.push_back(plain);
  return all;
}

HttpRequest Post(std::string body, std::string content_type) {
  HttpRequest request;
  request.method = "POST";
  request.path = kPath;
  request.headers = {{"Content-Type", std::move(content_type)}, {"Connect-Protocol-Version", "1"}};
  request.body = std::move(body);
  return request;
}

HttpRequest GetProto(std::string message, bool base64 = true) {
  HttpRequest request;
  request.method = "GET";
  request.path = kPath;
  request.query = {{"connect", "v1"}, {"encoding", "proto"}};
  if (base64) {
    request.query.emplace_back("base64", "1");
    message = EncodeBase64Url(message);
  }
  request.query.emplace_back("message", std::move(message));
  return request;
}

std::string Binary(const google::protobuf::Message& message) { return message.SerializeAsString(); }

class ConnectCodecTest : public ::testing::Test {
 protected:
  HttpResponse Call(const HttpRequest& request) const {
    return service_.Handle("ListConnections", request);
  }

  // A 200 binary answer, parsed.
  connections_v1::ListConnectionsResponse ExpectProto(const HttpResponse& response) const {
    connections_v1::ListConnectionsResponse message;
    EXPECT_EQ(response.status, 200) << response.body;
    EXPECT_EQ(response.content_type, "application/proto");
    EXPECT_TRUE(message.ParseFromString(response.body));
    return message;
  }

  // A binary call listing what `filter` matches, its 200 answer parsed.
  connections_v1::ListConnectionsResponse ListInBinary(const std::string& filter) const {
    connections_v1::ListConnectionsRequest request;
    request.set_filter(filter);
    return ExpectProto(Call(Post(Binary(request), "application/proto")));
  }

  void ExpectJsonError(const HttpResponse& response, int status, const std::string& code,
                       const std::string& part) const {
    EXPECT_EQ(response.status, status) << response.body;
    EXPECT_EQ(response.content_type, "application/json");
    const CjsonPtr root = ParseJson(response.body);
    ASSERT_NE(root, nullptr) << response.body;
    const cJSON* code_item = cJSON_GetObjectItemCaseSensitive(root.get(), "code");
    const cJSON* message_item = cJSON_GetObjectItemCaseSensitive(root.get(), "message");
    ASSERT_TRUE(cJSON_IsString(code_item) && cJSON_IsString(message_item)) << response.body;
    EXPECT_EQ(std::string(code_item->valuestring), code);
    EXPECT_THAT(std::string(message_item->valuestring), HasSubstr(part));
  }

  FakeSource source_;
  ConnectRpcService service_{source_};
};

TEST(ConnectCodecNames, ContentTypes) {
  ConnectCodec codec = ConnectCodec::kProto;
  for (const char* json :
       {"application/json", "Application/JSON", "application/json; charset=utf-8",
        " application/json ; charset = \"UTF-8\" ", "application/json;"}) {
    EXPECT_TRUE(CodecOfContentType(json, &codec)) << json;
    EXPECT_EQ(codec, ConnectCodec::kJson) << json;
  }
  for (const char* proto :
       {"application/proto", "APPLICATION/Proto", " application/proto ", "application/proto;"}) {
    codec = ConnectCodec::kJson;
    EXPECT_TRUE(CodecOfContentType(proto, &codec)) << proto;
    EXPECT_EQ(codec, ConnectCodec::kProto) << proto;
  }
  for (const char* other :
       {"application/proto; charset=utf-8", "application/protobuf", "application/x-protobuf",
        "application/grpc", "application/connect+proto", "application/json; charset=latin1",
        "text/plain", "", "proto"}) {
    EXPECT_FALSE(CodecOfContentType(other, &codec)) << other;
  }
}

TEST(ConnectCodecNames, GetEncodings) {
  ConnectCodec codec = ConnectCodec::kJson;
  EXPECT_TRUE(CodecOfEncoding("proto", &codec));
  EXPECT_EQ(codec, ConnectCodec::kProto);
  EXPECT_TRUE(CodecOfEncoding("json", &codec));
  EXPECT_EQ(codec, ConnectCodec::kJson);
  for (const char* other : {"PROTO", "Json", "protobuf", "", " json"}) {
    EXPECT_FALSE(CodecOfEncoding(other, &codec)) << other;
  }
}

TEST(ConnectSchema, EnumNumbersAreTheModelsAndListIsSideEffectFree) {
  namespace v1 = connections_v1;
  EXPECT_EQ(v1::MQTT_CONNECTION_STATE_OPEN, static_cast<int>(ConnectionState::kOpen));
  EXPECT_EQ(v1::MQTT_CONNECTION_STATE_CLOSED, static_cast<int>(ConnectionState::kClosed));
  EXPECT_EQ(v1::MQTT_CONNECTION_STATE_OFFLINE, static_cast<int>(ConnectionState::kOffline));
  EXPECT_EQ(v1::CLIENT_DISCONNECT, static_cast<int>(CloseReason::kClientDisconnect));
  EXPECT_EQ(v1::CONNECTION_LOST, static_cast<int>(CloseReason::kConnectionLost));
  EXPECT_EQ(v1::SESSION_TAKEN_OVER, static_cast<int>(CloseReason::kSessionTakenOver));
  EXPECT_EQ(v1::AUTHENTICATION_FAILED, static_cast<int>(CloseReason::kAuthenticationFailed));
  EXPECT_EQ(v1::KICKED, static_cast<int>(CloseReason::kKicked));
  EXPECT_EQ(v1::BROKER_SHUTDOWN, static_cast<int>(CloseReason::kBrokerShutdown));
  EXPECT_EQ(v1::ACCESS_REVOKED, static_cast<int>(CloseReason::kAccessRevoked));
  EXPECT_EQ(v1::AUTHENTICATION_MECHANISM_ENHANCED, static_cast<int>(AuthMechanism::kEnhanced));
  EXPECT_EQ(v1::AUTHENTICATION_STATE_FAILURE, static_cast<int>(AuthState::kFailure));
  EXPECT_EQ(v1::BRIDGE_ROLE_UNSPECIFIED, static_cast<int>(BridgeRole::kUnknown));
  EXPECT_EQ(v1::BRIDGE_ROLE_NONE, static_cast<int>(BridgeRole::kNone));
  EXPECT_EQ(v1::BRIDGE_ROLE_OUTGOING, static_cast<int>(BridgeRole::kOutgoing));
  EXPECT_EQ(v1::BRIDGE_ROLE_INCOMING, static_cast<int>(BridgeRole::kIncoming));
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          "mqtt.connections.v1.ConnectionsService");
  ASSERT_NE(service, nullptr);
  const google::protobuf::MethodDescriptor* list = service->FindMethodByName("ListConnections");
  ASSERT_NE(list, nullptr);
  EXPECT_EQ(list->options().idempotency_level(), google::protobuf::MethodOptions::NO_SIDE_EFFECTS);
  ASSERT_NE(service->FindMethodByName("DisconnectConnection"), nullptr);
}

// The schema's own JSON parser reads what the JSON codec writes as exactly what the binary codec
// sends: same names, same enum names (close reasons bare), int64 as strings, timestamps and
// durations. A field the JSON side renamed or an enum name the schema does not know fails here.
TEST_F(ConnectCodecTest, JsonAnswerIsTheBinaryAnswerUnderProtobufsJsonMapping) {
  source_.connections = Examples();
  const HttpResponse json = Call(Post(R"({"pageSize":5})", "application/json"));
  ASSERT_EQ(json.status, 200) << json.body;
  connections_v1::ListConnectionsResponse from_json;
  google::protobuf::util::JsonParseOptions strict;
  strict.ignore_unknown_fields = false;
  const auto parsed = google::protobuf::util::JsonStringToMessage(json.body, &from_json, strict);
  ASSERT_TRUE(parsed.ok()) << parsed.ToString() << "\n" << json.body;

  connections_v1::ListConnectionsRequest request;
  request.set_page_size(5);
  const connections_v1::ListConnectionsResponse binary =
      ExpectProto(Call(Post(Binary(request), "application/proto")));
  std::string difference;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&difference);
  EXPECT_TRUE(differencer.Compare(from_json, binary)) << difference;
  EXPECT_EQ(binary.connections_size(), 5);
  EXPECT_EQ(binary.total_size(), static_cast<std::int64_t>(Examples().size()));
  EXPECT_FALSE(binary.next_page_token().empty());
}

// The message counts: split, sums only (2.0.11), unknown; both codecs agree, and JSON leaves
// out exactly what is unknown.
TEST_F(ConnectCodecTest, MessageCountsAreWrittenOnlyWhereKnown) {
  source_.connections = Examples();
  for (const char* uid : {"uid-anon", "uid-open", "uid-offline"}) {
    const std::string filter = std::string("uid = \"") + uid + "\"";
    const HttpResponse json = Call(
        Post(std::string(R"({"filter":")") + "uid = \\\"" + uid + "\\\"\"}", "application/json"));
    ASSERT_EQ(json.status, 200) << json.body;
    connections_v1::ListConnectionsResponse from_json;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.body, &from_json).ok());
    const auto binary = ListInBinary(filter);
    ASSERT_EQ(binary.connections_size(), 1);
    google::protobuf::util::MessageDifferencer differencer;
    std::string difference;
    differencer.ReportDifferencesToString(&difference);
    EXPECT_TRUE(differencer.Compare(from_json, binary)) << difference;
    const connections_v1::Connection& c = binary.connections(0);
    if (std::string(uid) == "uid-anon") {
      EXPECT_FALSE(c.has_messages_queued());
      EXPECT_FALSE(c.has_messages_in_flight());
      ASSERT_TRUE(c.has_messages_pending());
      EXPECT_EQ(c.messages_pending(), 4u);
      EXPECT_FALSE(c.has_incoming_messages_pending());
      EXPECT_EQ(json.body.find("messagesQueued"), std::string::npos);
      EXPECT_NE(json.body.find(R"("messagesPending":4)"), std::string::npos) << json.body;
      // Drops this broker hides are left out, not 0.
      EXPECT_FALSE(c.has_messages_dropped());
      EXPECT_EQ(json.body.find("messagesDropped"), std::string::npos);
    } else if (std::string(uid) == "uid-offline") {
      EXPECT_FALSE(c.has_messages_pending());
      EXPECT_EQ(json.body.find("essages"), std::string::npos) << json.body;
    } else {
      EXPECT_NE(json.body.find(R"("messagesInFlight":0)"), std::string::npos) << json.body;
      ASSERT_TRUE(c.has_messages_dropped());
      EXPECT_EQ(c.messages_dropped(), 7u);
      EXPECT_EQ(c.messages_dropped_queue_full(), 7u);
      EXPECT_NE(json.body.find(R"("messagesDropped":"7","messagesDroppedQueueFull":"7")"),
                std::string::npos)
          << json.body;
    }
  }
}

TEST_F(ConnectCodecTest, BinaryAnswerCarriesEveryField) {
  source_.connections = Examples();
  const auto page = ListInBinary(R"(client_id = "sensor-*")");
  ASSERT_EQ(page.connections_size(), 1);
  const connections_v1::Connection& c = page.connections(0);
  EXPECT_EQ(c.uid(), "uid-open");
  EXPECT_EQ(c.node_id(), 3u);
  EXPECT_EQ(c.state(), connections_v1::MQTT_CONNECTION_STATE_OPEN);
  EXPECT_EQ(c.open_time().seconds(), kJune12 / kSecond);
  EXPECT_EQ(c.open_time().nanos(), 123456789);
  EXPECT_FALSE(c.has_close_time());
  EXPECT_EQ(c.close_reason(), connections_v1::CLOSE_REASON_UNSPECIFIED);
  EXPECT_EQ(c.client_id(), "sensor-1");
  EXPECT_EQ(c.username(), "alice");
  EXPECT_EQ(c.protocol_version(), 5);
  EXPECT_FALSE(c.clean_session());
  EXPECT_EQ(c.keep_alive(), 45);
  EXPECT_EQ(c.source().ip_address(), "127.0.0.1");
  EXPECT_EQ(c.source().port(), 51234);
  EXPECT_EQ(c.listener_name(), "mqtts:8883");
  EXPECT_TRUE(c.tls_info().enabled());
  EXPECT_EQ(c.tls_info().peer_certificate_subject(), "CN=sensor");
  EXPECT_EQ(c.authentication_info().mechanism(), connections_v1::AUTHENTICATION_MECHANISM_MTLS);
  EXPECT_EQ(c.authentication_info().state(), connections_v1::AUTHENTICATION_STATE_SUCCESS);
  ASSERT_EQ(c.subscriptions_size(), 2);
  EXPECT_EQ(c.subscriptions(0).filter(), "events/site1/#");
  EXPECT_EQ(c.subscriptions(0).qos(), 1);
  EXPECT_EQ(c.subscriptions(0).pattern(), "events");
  EXPECT_EQ(c.subscriptions(0).channel(), "site1.>");
  EXPECT_EQ(c.subscriptions(1).mapping_error(), "not a valid topic filter");
  EXPECT_TRUE(c.subscriptions(0).kubemq_valid());
  EXPECT_EQ(c.subscriptions(0).kubemq_error(), "");
  EXPECT_FALSE(c.subscriptions(1).kubemq_valid());
  EXPECT_EQ(c.subscriptions(1).kubemq_error(), "no KubeMQ channel: not a valid topic filter");
  EXPECT_EQ(c.idle_duration().seconds(), 1);
  EXPECT_EQ(c.idle_duration().nanos(), 500'000'000);
  EXPECT_EQ(c.total_request_statistics().publish_bytes(), 15u);
  EXPECT_EQ(c.total_request_statistics().request_count(), 5u);
  EXPECT_EQ(c.recent_request_statistics().publish_count(), 1u);
  EXPECT_TRUE(c.has_denied_publish_count());
  EXPECT_EQ(c.denied_publish_count(), 2u);
  EXPECT_EQ(c.denied_subscribe_count(), 1u);
  EXPECT_EQ(c.last_denied_topic(), "secret/x");
  EXPECT_EQ(c.last_denied_time().nanos(), 42);
  EXPECT_FALSE(c.has_network_info());
  ASSERT_TRUE(c.has_messages_queued());
  EXPECT_EQ(c.messages_queued(), 12u);
  ASSERT_TRUE(c.has_messages_in_flight());
  EXPECT_EQ(c.messages_in_flight(), 0u);
  EXPECT_EQ(c.messages_pending(), 12u);
  EXPECT_EQ(c.incoming_messages_queued(), 0u);
  EXPECT_TRUE(c.has_incoming_messages_queued());
  EXPECT_EQ(c.incoming_messages_in_flight(), 1u);
  EXPECT_EQ(c.incoming_messages_pending(), 1u);
  EXPECT_EQ(page.total_size(), 1);
  EXPECT_TRUE(page.next_page_token().empty());
}

// Bridges in both codecs, found by their role and name; the JSON one writes the role only
// when known, as protobuf's JSON mapping does.
TEST_F(ConnectCodecTest, BridgesByRoleInBothCodecs) {
  source_.connections = Examples();
  auto page = ListInBinary("bridge_role = BRIDGE_ROLE_OUTGOING");
  ASSERT_EQ(page.connections_size(), 1);
  EXPECT_EQ(page.connections(0).client_id(), "local.edge.to-cloud");
  EXPECT_EQ(page.connections(0).bridge_role(), connections_v1::BRIDGE_ROLE_OUTGOING);
  EXPECT_EQ(page.connections(0).bridge_name(), "to-cloud");
  page =
      ListInBinary(R"(bridge_role != BRIDGE_ROLE_NONE AND bridge_role != BRIDGE_ROLE_UNSPECIFIED)");
  ASSERT_EQ(page.connections_size(), 2);
  page = ListInBinary(R"(bridge_name = "to-cloud")");
  ASSERT_EQ(page.connections_size(), 1);

  HttpResponse json =
      Call(Post(R"({"filter":"bridge_role = BRIDGE_ROLE_INCOMING"})", "application/json"));
  ASSERT_EQ(json.status, 200) << json.body;
  EXPECT_NE(json.body.find(R"("bridgeRole":"BRIDGE_ROLE_INCOMING")"), std::string::npos)
      << json.body;
  json = Call(Post(R"({"filter":"client_id = \"sensor-1\""})", "application/json"));
  EXPECT_EQ(json.body.find("bridgeRole"), std::string::npos) << json.body;  // unknown
  EXPECT_EQ(json.body.find("bridgeName"), std::string::npos) << json.body;

  // The JSON answer is the binary one under protobuf's JSON mapping, for these too.
  json = Call(Post(R"({"filter":"bridge_role != BRIDGE_ROLE_UNSPECIFIED"})", "application/json"));
  ASSERT_EQ(json.status, 200) << json.body;
  connections_v1::ListConnectionsResponse from_json;
  const auto parsed = google::protobuf::util::JsonStringToMessage(json.body, &from_json);
  ASSERT_TRUE(parsed.ok()) << parsed.ToString() << "\n" << json.body;
  page = ListInBinary("bridge_role != BRIDGE_ROLE_UNSPECIFIED");
  EXPECT_EQ(page.connections_size(), 3);
  std::string difference;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&difference);
  EXPECT_TRUE(differencer.Compare(from_json, page)) << difference;
}

TEST_F(ConnectCodecTest, ClosedAndOfflineInBinary) {
  source_.connections = Examples();
  auto page = ListInBinary("close_reason = KICKED");
  ASSERT_EQ(page.connections_size(), 1);
  EXPECT_EQ(page.connections(0).state(), connections_v1::MQTT_CONNECTION_STATE_CLOSED);
  EXPECT_EQ(page.connections(0).close_reason(), connections_v1::KICKED);
  EXPECT_EQ(page.connections(0).close_time().seconds(), kJune12 / kSecond + 10);
  page = ListInBinary("state = MQTT_CONNECTION_STATE_OFFLINE");
  ASSERT_EQ(page.connections_size(), 1);
  EXPECT_EQ(page.connections(0).session_expiry_time().seconds(), kJune12 / kSecond + 3600);
  EXPECT_FALSE(page.connections(0).has_idle_duration());
}

TEST(ConnectProtoMapping, NetworkInfoWhenKnown) {
  Connection c = Open("uid-net", "net", kJune12);
  connections_v1::Connection message;
  ConnectionToProto(c, &message);
  EXPECT_FALSE(message.has_network_info());
  c.network->known = true;
  c.network->rtt_us = 250;
  c.network->rtt_variance_us = 40;
  c.network->retransmits = 2;
  c.network->send_queue_bytes = 1000;
  c.network->receive_queue_bytes = 7;
  c.network->since_last_receive_ns = 1'500'000'000;
  c.network->since_last_send_ns = -1;
  message.Clear();
  ConnectionToProto(c, &message);
  ASSERT_TRUE(message.has_network_info());
  const connections_v1::NetworkInfo& n = message.network_info();
  EXPECT_EQ(n.rtt_micros(), 250u);
  EXPECT_EQ(n.rtt_variance_micros(), 40u);
  EXPECT_EQ(n.retransmits(), 2u);
  EXPECT_EQ(n.send_queue_bytes(), 1000u);
  EXPECT_EQ(n.receive_queue_bytes(), 7u);
  EXPECT_EQ(n.since_last_receive().seconds(), 1);
  EXPECT_EQ(n.since_last_receive().nanos(), 500'000'000);
  EXPECT_FALSE(n.has_since_last_send());
  // The JSON names of the cross-team contract.
  std::string json;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(n, &json).ok());
  EXPECT_EQ(json,
            R"({"rttMicros":250,"rttVarianceMicros":40,"retransmits":2,"sendQueueBytes":1000,)"
            R"("receiveQueueBytes":7,"sinceLastReceive":"1.500s"})");
}

TEST(ConnectProtoMapping, TimesBefore1970AndInvalidUtf8) {
  Connection c = Open("uid-old", "bad\xff", -1);  // one nanosecond before 1970
  connections_v1::Connection message;
  ConnectionToProto(c, &message);
  EXPECT_EQ(message.open_time().seconds(), -1);
  EXPECT_EQ(message.open_time().nanos(), 999'999'999);
  EXPECT_EQ(message.client_id(), "bad\xef\xbf\xbd");  // U+FFFD, as the JSON side writes it
}

TEST_F(ConnectCodecTest, GetFormWithProtoEncoding) {
  source_.connections = Examples();
  connections_v1::ListConnectionsRequest request;
  request.set_filter(R"(client_id = "sleeper")");
  for (const bool base64 : {true, false}) {
    const auto page = ExpectProto(Call(GetProto(Binary(request), base64)));
    ASSERT_EQ(page.connections_size(), 1) << base64;
    EXPECT_EQ(page.connections(0).uid(), "uid-offline");
  }
  // No message: the default request, every connection.
  HttpRequest bare = GetProto("");
  bare.query.pop_back();
  EXPECT_EQ(ExpectProto(Call(bare)).connections_size(), static_cast<int>(Examples().size()));
  // HEAD is answered like GET.
  HttpRequest head = GetProto(Binary(request));
  head.method = "HEAD";
  EXPECT_EQ(Call(head).content_type, "application/proto");
}

TEST_F(ConnectCodecTest, EmptyBinaryBodyIsTheDefaultRequest) {
  source_.connections = Examples();
  const auto page = ExpectProto(Call(Post("", "application/proto")));
  EXPECT_EQ(page.connections_size(), static_cast<int>(Examples().size()));
}

TEST_F(ConnectCodecTest, UnknownBinaryFieldsAreSkipped) {
  source_.connections = Examples();
  connections_v1::ListConnectionsRequest request;
  request.set_page_size(2);
  // Field 99, varint 1: a field a newer client might send.
  const std::string bytes = Binary(request) + std::string("\x98\x06\x01", 3);
  EXPECT_EQ(ExpectProto(Call(Post(bytes, "application/proto"))).connections_size(), 2);
}

TEST_F(ConnectCodecTest, MalformedBinaryIsInvalidArgumentInJson) {
  connections_v1::ListConnectionsRequest request;
  request.set_filter("client_id = \"x\"");
  const std::string good = Binary(request);
  const std::string bad_utf8 = std::string("\x0a\x02\xc3\x28", 4);  // filter: invalid UTF-8
  for (const std::string& bytes :
       {good.substr(0, good.size() - 1),
        std::string("\x0a\x05"
                    "ab",
                    4),
        std::string("{}"), std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11),
        bad_utf8, std::string("\x18", 1)}) {
    ExpectJsonError(
        Call(Post(bytes, "application/proto")), 400, "invalid_argument",
        "request body is not a valid binary mqtt.connections.v1.ListConnectionsRequest");
  }
  ExpectJsonError(Call(GetProto("\x0a\x09short")), 400, "invalid_argument",
                  "query parameter 'message' is not a valid binary "
                  "mqtt.connections.v1.ListConnectionsRequest");
}

TEST_F(ConnectCodecTest, QueryErrorsInBinaryRequestsAreJsonErrors) {
  connections_v1::ListConnectionsRequest request;
  request.set_filter("client_id = x");
  ExpectJsonError(Call(Post(Binary(request), "application/proto")), 400, "invalid_argument",
                  "Expected quoted literal for field 'client_id'");
  request.Clear();
  request.set_page_size(10001);
  ExpectJsonError(Call(Post(Binary(request), "application/proto")), 400, "invalid_argument",
                  "10001");
  request.Clear();
  request.set_page_token("garbage");
  ExpectJsonError(Call(Post(Binary(request), "application/proto")), 400, "invalid_argument",
                  "page_token");
}

// DisconnectConnection's binary messages, for its handler: either name, none, or bad bytes.
TEST(ConnectProtoMapping, DisconnectConnectionMessages) {
  std::string client_id = "stale";
  std::string uid = "stale";
  bool prevent_will = true;  // stale too: the decoder resets it
  std::optional<std::uint32_t> node_id = 9;
  connections_v1::DisconnectConnectionRequest request;
  request.set_client_id("sensor-1");
  ASSERT_TRUE(DecodeDisconnectConnectionRequestProto(Binary(request), "request body", &client_id,
                                                     &uid, &prevent_will, &node_id)
                  .ok());
  EXPECT_EQ(client_id, "sensor-1");
  EXPECT_EQ(uid, "");
  request.set_uid("uid-7");  // the oneof keeps the last one set
  ASSERT_TRUE(DecodeDisconnectConnectionRequestProto(Binary(request), "request body", &client_id,
                                                     &uid, &prevent_will, &node_id)
                  .ok());
  EXPECT_EQ(client_id, "");
  EXPECT_EQ(uid, "uid-7");
  EXPECT_FALSE(prevent_will);
  EXPECT_FALSE(node_id.has_value());
  request.set_prevent_will(true);
  request.set_node_id(0);  // set to 0 is not unset: node 0 is a node id
  ASSERT_TRUE(DecodeDisconnectConnectionRequestProto(Binary(request), "request body", &client_id,
                                                     &uid, &prevent_will, &node_id)
                  .ok());
  EXPECT_TRUE(prevent_will);
  ASSERT_TRUE(node_id.has_value());
  EXPECT_EQ(*node_id, 0u);
  ASSERT_TRUE(DecodeDisconnectConnectionRequestProto("", "request body", &client_id, &uid,
                                                     &prevent_will, &node_id)
                  .ok());
  EXPECT_EQ(client_id + uid, "");
  const Status bad =
      DecodeDisconnectConnectionRequestProto(std::string("\x0a\x09short", 7), "request body",
                                             &client_id, &uid, &prevent_will, &node_id);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(),
              HasSubstr("not a valid binary mqtt.connections.v1.DisconnectConnectionRequest"));

  connections_v1::DisconnectConnectionResponse response;
  ASSERT_TRUE(
      response.ParseFromString(EncodeDisconnectConnectionResponseProto("sensor-1", "uid-7", true)));
  EXPECT_EQ(response.client_id(), "sensor-1");
  EXPECT_EQ(response.uid(), "uid-7");
  EXPECT_TRUE(response.disconnected());
}

// The router's body limit holds whatever the codec: 413 with a Connect error in JSON.
TEST(ConnectCodecLimits, BinaryBodyOverTheLimitIs413) {
  FakeSource source;
  ConnectRpcService service(source);
  HttpRouter router(source, {}, service.Handler());
  HttpRequest request = Post("", "application/proto");
  request.body_too_large = true;
  const HttpResponse response = router.Handle(request);
  EXPECT_EQ(response.status, 413);
  EXPECT_EQ(response.content_type, "application/json");
  EXPECT_THAT(response.body, HasSubstr(R"("code":"resource_exhausted")"));
}

}  // namespace
}  // namespace mqc
