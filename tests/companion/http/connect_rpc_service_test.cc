// SPDX-License-Identifier: BSD-3-Clause
// ConnectRpcService: the Connect unary protocol for ListConnections. Every refusal with its HTTP
// status, code and message; header, body and GET-form variants; deadlines through an injected
// clock; the exact response JSON of an open and a closed connection and what is left out; and
// paging through nextPageToken.
#include "companion/http/connect_rpc_service.h"

#include <gmock/gmock.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../../support/connection_builder.h"
#include "companion/connection.h"
#include "companion/http/http_router.h"
#include "companion/json_util.h"
#include "mqtt/connections/v1/connections.pb.h"

namespace mqc {
namespace {

using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr std::int64_t kSecond = 1'000'000'000;
constexpr std::int64_t kJune12 = 1781260200 * kSecond;  // 2026-06-12T10:30:00Z
constexpr char kMethod[] = "ListConnections";

// --- fixtures ------------------------------------------------------------------------------

class FakeSource : public ConnectionSource {
 public:
  std::vector<Connection> Snapshot() const override {
    ++snapshots;
    if (on_snapshot) on_snapshot();
    return connections;
  }
  std::vector<Connection> connections;
  std::function<void()> on_snapshot;
  mutable std::atomic<int> snapshots{0};
};

// A steady clock that moves only when told to.
struct FakeClock {
  std::chrono::steady_clock::time_point now{std::chrono::hours(1000)};
  ConnectRpcServiceOptions Options() {
    ConnectRpcServiceOptions options;
    options.clock = [this] { return now; };
    return options;
  }
};

HttpHeaders ConnectHeaders() {
  return {{"Content-Type", "application/json"}, {"Connect-Protocol-Version", "1"}};
}

HttpRequest Post(std::string body, HttpHeaders headers = ConnectHeaders()) {
  HttpRequest request;
  request.method = "POST";
  request.path = std::string(kConnectRpcServicePrefix) + kMethod;
  request.headers = std::move(headers);
  request.body = std::move(body);
  return request;
}

HttpRequest Get(QueryParams query, std::string method = "GET") {
  HttpRequest request;
  request.method = std::move(method);
  request.path = std::string(kConnectRpcServicePrefix) + kMethod;
  request.query = std::move(query);
  return request;
}

QueryParams GetQuery(std::string message) {
  return {{"connect", "v1"}, {"encoding", "json"}, {"message", std::move(message)}};
}

HttpHeaders With(HttpHeaders headers, const std::string& name, std::string value) {
  for (auto& [key, existing] : headers) {
    if (key == name) {
      existing = std::move(value);
      return headers;
    }
  }
  headers.emplace_back(name, std::move(value));
  return headers;
}

HttpHeaders Without(HttpHeaders headers, const std::string& name) {
  HttpHeaders kept;
  for (auto& header : headers) {
    if (header.first != name) kept.push_back(std::move(header));
  }
  return kept;
}

std::string EncodeBase64Url(std::string_view bytes, bool pad) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const auto n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i]) << 16 |
                                              static_cast<unsigned char>(bytes[i + 1]) << 8 |
                                              static_cast<unsigned char>(bytes[i + 2]));
    for (int shift = 18; shift >= 0; shift -= 6) out += kAlphabet[(n >> shift) & 63];
  }
  const std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    std::uint32_t n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i]) << 16);
    if (rest == 2) n |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1]) << 8);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    if (rest == 2) out += kAlphabet[(n >> 6) & 63];
    if (pad) out.append(3 - rest, '=');
  }
  return out;
}

// Checks a Connect error: status, JSON content type, exactly {"code","message"}.
void ExpectError(const HttpResponse& response, int status, const std::string& code,
                 const std::string& message_part) {
  EXPECT_EQ(response.status, status) << response.body;
  EXPECT_EQ(response.content_type, "application/json");
  const CjsonPtr root = ParseJson(response.body);
  ASSERT_NE(root, nullptr) << response.body;
  ASSERT_TRUE(cJSON_IsObject(root.get())) << response.body;
  EXPECT_EQ(cJSON_GetArraySize(root.get()), 2) << response.body;
  const cJSON* code_item = cJSON_GetObjectItemCaseSensitive(root.get(), "code");
  const cJSON* message_item = cJSON_GetObjectItemCaseSensitive(root.get(), "message");
  ASSERT_TRUE(cJSON_IsString(code_item)) << response.body;
  ASSERT_TRUE(cJSON_IsString(message_item)) << response.body;
  EXPECT_EQ(std::string(code_item->valuestring), code) << response.body;
  EXPECT_THAT(std::string(message_item->valuestring), HasSubstr(message_part));
}

// The parsed success body; fails the test on anything but a 200 JSON object.
CjsonPtr ExpectOk(const HttpResponse& response) {
  EXPECT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(response.content_type, "application/json");
  CjsonPtr root = ParseJson(response.body);
  EXPECT_TRUE(root != nullptr && cJSON_IsObject(root.get())) << response.body;
  return root;
}

// The uids listed in a 200 response, in order.
std::vector<std::string> ListedUids(const HttpResponse& response) {
  std::vector<std::string> uids;
  const CjsonPtr root = ExpectOk(response);
  if (root == nullptr) return uids;
  const cJSON* connections = cJSON_GetObjectItemCaseSensitive(root.get(), "connections");
  EXPECT_TRUE(cJSON_IsArray(connections)) << response.body;
  const cJSON* item = nullptr;
  cJSON_ArrayForEach(item, connections) {
    const cJSON* uid = cJSON_GetObjectItemCaseSensitive(item, "uid");
    uids.push_back(cJSON_IsString(uid) ? uid->valuestring : "?");
  }
  return uids;
}

std::string StringField(const HttpResponse& response, const char* name) {
  const CjsonPtr root = ParseJson(response.body);
  const cJSON* item = cJSON_GetObjectItemCaseSensitive(root.get(), name);
  return cJSON_IsString(item) ? item->valuestring : "";
}

Connection MakeConnection(std::string uid, std::int64_t open_time_ns, std::string client_id) {
  static std::uint64_t next_seq = 1000;  // the engine's final tiebreak: unique per connection
  Connection connection = TestConnection(next_seq++);
  connection.uid = std::move(uid);
  connection.open_time_ns = open_time_ns;
  connection.client_id = std::move(client_id);
  connection.ip_address = "10.0.0.1";
  // No listener and no authentication: the omission rules are tested on a bare connection.
  connection.listener_name.clear();
  connection.authentication = AuthenticationInfo();
  return connection;
}

// Every field set, most to a value that is not the default.
Connection OpenExample() {
  Connection c = ConnectionBuilder(SensorConnection(11))
                     .Identity("0b0e6c1e-5c2a-4d7e-9f3a-1b2c3d4e5f60", 7)
                     .Mqtt(5, false, 60)
                     .From("192.0.2.10", 55412, "mqtts:8883");
  c.open_time_ns = kJune12 + 123456789;
  c.tls->peer_certificate_subject = "CN=sensor-1";
  c.subscriptions = {MappedSubscription("events/site1/#", 1),
                     MappedSubscription("$share/workers/queues/jobs/email", 2),
                     RefusedSubscription("events//x", "empty level")};
  c.idle_ns = 1'500'000'000;
  c.network = {true, 41, 20, 2, 1024, 8, 1'500'000'000, 200'000'000};
  c.total_statistics = {1, 2, 3, 4, 5};
  c.recent_statistics = {std::numeric_limits<std::uint64_t>::max(), 0, 0, 0, 0};
  return c;
}

// A closed connection with everything "unknown" or empty that may be.
Connection ClosedExample() {
  Connection c = MakeConnection("uid-closed", kJune12, "");
  c.seq = 3;
  c.state = ConnectionState::kClosed;
  c.close_time_ns = kJune12 + 90 * kSecond + 5;
  c.close_reason = CloseReason::kSessionTakenOver;
  c.protocol_version = 4;
  c.clean_session = true;
  c.keep_alive = 0;
  c.ip_address = "::1";
  c.port = 0;
  c.authentication = {AuthMechanism::kPassword, AuthState::kFailure, "", {}};
  c.idle_ns = -1;
  return c;
}

constexpr char kOpenJson[] =
    R"({"nodeId":7,"uid":"0b0e6c1e-5c2a-4d7e-9f3a-1b2c3d4e5f60",)"
    R"("state":"MQTT_CONNECTION_STATE_OPEN","openTime":"2026-06-12T10:30:00.123456789Z",)"
    R"("clientId":"sensor-1","username":"alice","protocolVersion":5,"cleanSession":false,)"
    R"("keepAlive":60,"source":{"ipAddress":"192.0.2.10","port":55412},)"
    R"("listenerName":"mqtts:8883","tlsInfo":{"enabled":true,"tlsVersion":"TLSv1.3",)"
    R"("cipher":"TLS_AES_256_GCM_SHA384","peerCertificateSubject":"CN=sensor-1"},)"
    R"("authenticationInfo":{"mechanism":"AUTHENTICATION_MECHANISM_ENHANCED",)"
    R"("state":"AUTHENTICATION_STATE_SUCCESS","userPrincipal":"alice",)"
    R"("method":"SCRAM-SHA-256"},"subscriptions":[)"
    R"({"filter":"events/site1/#","qos":1,"pattern":"events","channel":"site1.>",)"
    R"("sharedGroup":"","kubemqValid":true},)"
    R"({"filter":"$share/workers/queues/jobs/email","qos":2,"pattern":"queues",)"
    R"("channel":"jobs.email","sharedGroup":"workers","kubemqValid":true},)"
    R"({"filter":"events//x","qos":0,"pattern":"","channel":"","sharedGroup":"",)"
    R"("mappingError":"empty level","kubemqValid":false,)"
    R"("kubemqError":"no KubeMQ channel: empty level"}],)"
    R"("idleDuration":"1.500s",)"
    R"("networkInfo":{"rttMicros":41,"rttVarianceMicros":20,"retransmits":2,)"
    R"("sendQueueBytes":1024,"receiveQueueBytes":8,"sinceLastReceive":"1.500s",)"
    R"("sinceLastSend":"0.200s"},)"
    R"("totalRequestStatistics":{"publishCount":"1","publishBytes":"2","deliverCount":"3",)"
    R"("deliverBytes":"4","requestCount":"5"},)"
    R"("recentRequestStatistics":{"publishCount":"18446744073709551615","publishBytes":"0",)"
    R"("deliverCount":"0","deliverBytes":"0","requestCount":"0"},"sequence":"11"})";

constexpr char kClosedJson[] =
    R"({"nodeId":0,"uid":"uid-closed","state":"MQTT_CONNECTION_STATE_CLOSED",)"
    R"("openTime":"2026-06-12T10:30:00.000000000Z","closeTime":"2026-06-12T10:31:30.000000005Z",)"
    R"("closeReason":"SESSION_TAKEN_OVER","clientId":"","protocolVersion":4,"cleanSession":true,)"
    R"("keepAlive":0,"source":{"ipAddress":"::1"},"tlsInfo":{"enabled":false},)"
    R"("authenticationInfo":{"mechanism":"AUTHENTICATION_MECHANISM_PASSWORD",)"
    R"("state":"AUTHENTICATION_STATE_FAILURE"},"subscriptions":[],)"
    R"("totalRequestStatistics":{"publishCount":"0","publishBytes":"0","deliverCount":"0",)"
    R"("deliverBytes":"0","requestCount":"0"},)"
    R"("recentRequestStatistics":{"publishCount":"0","publishBytes":"0","deliverCount":"0",)"
    R"("deliverBytes":"0","requestCount":"0"},"sequence":"3"})";

class ConnectRpcServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { source_.connections = {OpenExample(), ClosedExample()}; }
  HttpResponse Call(const HttpRequest& request, const std::string& method = kMethod) {
    return service_.Handle(method, request);
  }

  FakeSource source_;
  FakeClock clock_;
  ConnectRpcService service_{source_, clock_.Options()};
};

// --- the response --------------------------------------------------------------------------

TEST_F(ConnectRpcServiceTest, FullJsonOfAnOpenAndAClosedConnection) {
  const HttpResponse response = Call(Post(""));
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.content_type, "application/json");
  EXPECT_TRUE(response.headers.empty());
  // Default order: open_time, then uid: the closed one opened first.
  EXPECT_EQ(response.body, std::string(R"({"connections":[)") + kClosedJson + "," + kOpenJson +
                               R"(],"totalSize":"2"})");
}

TEST_F(ConnectRpcServiceTest, EmptyListStillHasConnectionsAndTotalSize) {
  source_.connections.clear();
  EXPECT_EQ(Call(Post("")).body, R"({"connections":[],"totalSize":"0"})");
}

TEST_F(ConnectRpcServiceTest, NextPageTokenOnlyWhenThereIsMore) {
  const HttpResponse first = Call(Post(R"({"pageSize":1})"));
  EXPECT_THAT(ListedUids(first), ::testing::ElementsAre("uid-closed"));
  EXPECT_EQ(StringField(first, "totalSize"), "2");
  EXPECT_NE(StringField(first, "nextPageToken"), "");
  const HttpResponse last =
      Call(Post(R"({"pageSize":1,"pageToken":")" + StringField(first, "nextPageToken") + R"("})"));
  EXPECT_THAT(ListedUids(last), ::testing::ElementsAre("0b0e6c1e-5c2a-4d7e-9f3a-1b2c3d4e5f60"));
  EXPECT_EQ(last.body.find("nextPageToken"), std::string::npos) << last.body;
  EXPECT_EQ(StringField(last, "totalSize"), "2");
}

TEST_F(ConnectRpcServiceTest, OmissionRules) {
  Connection c = MakeConnection("u", kJune12, "c");
  c.port = 0;
  c.ip_address = "";
  c.idle_ns = 0;
  c.close_time_ns = 0;  // open: no closeTime, no closeReason even if a reason were set
  c.close_reason = CloseReason::kKicked;
  source_.connections = {c};
  const std::string body = Call(Post("")).body;
  for (const char* absent :
       {"closeTime", "closeReason", "username", "listenerName", "ipAddress", "port", "tlsVersion",
        "cipher", "peerCertificateSubject", "userPrincipal", "\"method\"", "mappingError",
        "nextPageToken", "networkInfo"}) {
    EXPECT_EQ(body.find(absent), std::string::npos) << absent << " in " << body;
  }
  for (const char* present :
       {R"("nodeId":0)", R"("clientId":"c")", R"("source":{})", R"("tlsInfo":{"enabled":false})",
        R"("mechanism":"AUTHENTICATION_MECHANISM_UNSPECIFIED")",
        R"("state":"AUTHENTICATION_STATE_UNSPECIFIED")", R"("subscriptions":[])",
        R"("idleDuration":"0s")", R"("cleanSession":true)", R"("keepAlive":0)",
        R"("totalSize":"1")"}) {
    EXPECT_NE(body.find(present), std::string::npos) << present << " not in " << body;
  }
}

// networkInfo: zeros are values (an idle loopback socket has empty queues and no
// retransmits); its durations are left out when the kernel did not tell them.
TEST_F(ConnectRpcServiceTest, NetworkInfoWritesZerosAndLeavesOutUnknownDurations) {
  Connection c = MakeConnection("u", kJune12, "c");
  c.network->known = true;
  c.network->since_last_send_ns = 0;
  source_.connections = {c};
  const std::string body = Call(Post("")).body;
  EXPECT_NE(body.find(R"("networkInfo":{"rttMicros":0,"rttVarianceMicros":0,"retransmits":0,)"
                      R"("sendQueueBytes":0,"receiveQueueBytes":0,"sinceLastSend":"0s"})"),
            std::string::npos)
      << body;
}

TEST_F(ConnectRpcServiceTest, AnOfflineSessionWithItsExpiryTimeAndFilteredByState) {
  Connection offline = MakeConnection("uid-offline", kJune12, "sleeper");
  offline.state = ConnectionState::kOffline;
  offline.clean_session = false;
  offline.idle_ns = -1;
  offline.session_expiry_time_ns = kJune12 + 3600'000'000'000;
  Connection never = offline;
  never.uid = "uid-never";
  never.session_expiry_time_ns = 0;  // unknown or never: no field
  source_.connections = {OpenExample(), offline, never};
  const HttpResponse response = Call(Post(R"({"filter":"state = MQTT_CONNECTION_STATE_OFFLINE"})"));
  EXPECT_THAT(ListedUids(response), ::testing::ElementsAre("uid-never", "uid-offline"));
  EXPECT_NE(response.body.find(R"("state":"MQTT_CONNECTION_STATE_OFFLINE")"), std::string::npos)
      << response.body;
  EXPECT_NE(response.body.find(R"("sessionExpiryTime":"2026-06-12T11:30:00.000000000Z")"),
            std::string::npos)
      << response.body;
  EXPECT_EQ(response.body.find("sessionExpiryTime"), response.body.rfind("sessionExpiryTime"));
  EXPECT_THAT(ListedUids(Call(Post(R"({"filter":"session_expiry_time > 2026-06-12T11:00:00Z"})"))),
              ::testing::ElementsAre("uid-offline"));
  EXPECT_THAT(ListedUids(Call(Post(R"({"filter":"state != MQTT_CONNECTION_STATE_OFFLINE"})"))),
              ::testing::ElementsAre("0b0e6c1e-5c2a-4d7e-9f3a-1b2c3d4e5f60"));
}

TEST_F(ConnectRpcServiceTest, ClosedWithoutKnownReasonOrTime) {
  Connection c = ClosedExample();
  c.close_reason = CloseReason::kUnspecified;
  c.close_time_ns = 0;
  source_.connections = {c};
  const std::string body = Call(Post("")).body;
  EXPECT_EQ(body.find("closeTime"), std::string::npos) << body;
  // The zero keeps its prefix: the schema names it CLOSE_REASON_UNSPECIFIED.
  EXPECT_NE(body.find(R"("closeReason":"CLOSE_REASON_UNSPECIFIED")"), std::string::npos) << body;
}

TEST_F(ConnectRpcServiceTest, EveryCloseReasonNameAndTheFilterAcceptsIt) {
  const std::pair<CloseReason, const char*> reasons[] = {
      {CloseReason::kClientDisconnect, "CLIENT_DISCONNECT"},
      {CloseReason::kConnectionLost, "CONNECTION_LOST"},
      {CloseReason::kSessionTakenOver, "SESSION_TAKEN_OVER"},
      {CloseReason::kAuthenticationFailed, "AUTHENTICATION_FAILED"},
      {CloseReason::kKicked, "KICKED"},
      {CloseReason::kBrokerShutdown, "BROKER_SHUTDOWN"},
      {CloseReason::kAccessRevoked, "ACCESS_REVOKED"},
  };
  source_.connections.clear();
  for (const auto& [reason, name] : reasons) {
    Connection c = ClosedExample();
    c.uid = name;
    c.close_reason = reason;
    source_.connections.push_back(c);
  }
  for (const auto& [reason, name] : reasons) {
    const std::string bare = std::string(R"({"filter":"close_reason = )") + name + R"("})";
    const std::string full =
        std::string(R"({"filter":"close_reason = CLOSE_REASON_)") + name + R"("})";
    for (const std::string& body : {bare, full}) {
      const HttpResponse response = Call(Post(body));
      EXPECT_THAT(ListedUids(response), ::testing::ElementsAre(name)) << body;
      EXPECT_NE(response.body.find(std::string(R"("closeReason":")") + name + "\""),
                std::string::npos);
    }
  }
}

TEST_F(ConnectRpcServiceTest, EnumValuesWithoutANameAreNumbers) {
  Connection c = ClosedExample();
  c.close_reason = static_cast<CloseReason>(42);
  c.authentication.mechanism = static_cast<AuthMechanism>(77);
  source_.connections = {c};
  const std::string body = Call(Post("")).body;
  EXPECT_NE(body.find(R"("closeReason":42)"), std::string::npos) << body;
  EXPECT_NE(body.find(R"("mechanism":77)"), std::string::npos) << body;
}

TEST_F(ConnectRpcServiceTest, DurationsAsProtobufWritesThem) {
  const std::pair<std::int64_t, const char*> cases[] = {
      {0, "0s"},
      {1, "0.000000001s"},
      {1'500'000, "0.001500s"},
      {1'500'000'000, "1.500s"},
      {2'000'001'000, "2.000001s"},
      {3600 * kSecond, "3600s"},
      {std::numeric_limits<std::int64_t>::max(), "9223372036.854775807s"},
  };
  for (const auto& [nanos, text] : cases) {
    Connection c = MakeConnection("u", kJune12, "c");
    c.idle_ns = nanos;
    source_.connections = {c};
    EXPECT_NE(Call(Post("")).body.find(std::string(R"("idleDuration":")") + text + "\""),
              std::string::npos)
        << text;
  }
}

TEST_F(ConnectRpcServiceTest, StringsAreMadeValidUtf8) {
  Connection c = MakeConnection("u", kJune12, "bad\xFF\"id");
  source_.connections = {c};
  const HttpResponse response = Call(Post(""));
  EXPECT_NE(response.body.find(R"("clientId":"bad)"
                               "\xEF\xBF\xBD"
                               R"(\"id")"),
            std::string::npos)
      << response.body;
}

// --- paging --------------------------------------------------------------------------------

TEST_F(ConnectRpcServiceTest, PagingReturnsEveryConnectionExactlyOnce) {
  source_.connections.clear();
  for (int i = 0; i < 25; ++i) {
    // Ties on open_time, so the order's uid tiebreak matters.
    source_.connections.push_back(MakeConnection("uid-" + std::to_string(100 + i),
                                                 kJune12 + (i % 4) * kSecond,
                                                 "client-" + std::to_string(i % 3)));
  }
  for (const bool use_get : {false, true}) {
    for (const char* order : {"", "client_id desc", "open_time, client_id"}) {
      std::set<std::string> seen;
      std::string token;
      int pages = 0;
      do {
        std::string message = std::string(R"({"pageSize":7,"orderBy":")") + order + "\"";
        if (!token.empty()) message += R"(,"pageToken":")" + token + "\"";
        message += "}";
        const HttpResponse response = use_get ? Call(Get(GetQuery(message))) : Call(Post(message));
        for (const std::string& uid : ListedUids(response)) {
          EXPECT_TRUE(seen.insert(uid).second) << uid << " twice, order " << order;
        }
        EXPECT_EQ(StringField(response, "totalSize"), "25");
        token = StringField(response, "nextPageToken");
        ASSERT_LT(++pages, 10);
      } while (!token.empty());
      EXPECT_EQ(pages, 4) << order;
      EXPECT_EQ(seen.size(), 25u) << order;
    }
  }
}

TEST_F(ConnectRpcServiceTest, PageTokenFromAnotherQueryIsRefused) {
  source_.connections.clear();
  for (int i = 0; i < 3; ++i) {
    source_.connections.push_back(MakeConnection("u" + std::to_string(i), kJune12, "c"));
  }
  const std::string token = StringField(Call(Post(R"({"pageSize":1})")), "nextPageToken");
  ASSERT_FALSE(token.empty());
  ExpectError(Call(Post(R"({"orderBy":"client_id","pageToken":")" + token + R"("})")), 400,
              "invalid_argument", "");
  ExpectError(Call(Post(R"({"pageToken":"not-a-token"})")), 400, "invalid_argument", "");
}

// --- method and HTTP method ----------------------------------------------------------------

TEST_F(ConnectRpcServiceTest, UnknownMethodIsUnimplemented) {
  for (const std::string method : {"Foo", "", "listConnections", "ListConnections/", "Get"}) {
    const HttpResponse response = Call(Post(""), method);
    ExpectError(response, 501, "unimplemented",
                "method '" + method + "' is not implemented; implemented: ListConnections");
  }
  EXPECT_EQ(source_.snapshots.load(), 0);
  EXPECT_EQ(service_.Methods(), std::vector<std::string>{"ListConnections"});  // no live view
}

TEST_F(ConnectRpcServiceTest, OtherHttpMethodsAreRefused) {
  HttpRequest request = Post("");
  request.method = "PUT";
  const HttpResponse response = Call(request);
  ExpectError(response, 405, "unimplemented", "'PUT' is not allowed");
  EXPECT_THAT(response.headers, ::testing::ElementsAre(Pair("Allow", "GET, HEAD, POST")));
}

TEST_F(ConnectRpcServiceTest, HandlerIsWhatTheRouterCalls) {
  HttpRouter router(source_, nullptr, service_.Handler());
  const HttpResponse ok = router.Handle(Post(R"({"filter":"client_id = \"sensor-1\""})"));
  EXPECT_THAT(ListedUids(ok), ::testing::ElementsAre("0b0e6c1e-5c2a-4d7e-9f3a-1b2c3d4e5f60"));
  HttpRequest other = Post("");
  other.path = std::string(kConnectRpcServicePrefix) + "Watch";
  ExpectError(router.Handle(other), 501, "unimplemented", "'Watch'");
}

// --- headers -------------------------------------------------------------------------------

TEST_F(ConnectRpcServiceTest, ContentTypeVariantsAccepted) {
  for (const char* type :
       {"application/json", "Application/JSON", "application/json; charset=utf-8",
        "application/json;charset=UTF-8", " application/json ; charset = \"utf-8\" ",
        "application/json;", "application/json; ; charset=utf-8"}) {
    EXPECT_EQ(Call(Post("{}", With(ConnectHeaders(), "Content-Type", type))).status, 200) << type;
  }
}

TEST_F(ConnectRpcServiceTest, OtherContentTypesAre415) {
  for (const char* type :
       {"text/plain", "application/protobuf", "application/connect+json", "application/jsonx",
        "application/json; charset=latin1", "application/json; foo=bar",
        "application/json; charset", "application/proto; charset=utf-8", "", "json", "proto"}) {
    const HttpResponse response = Call(Post("{}", With(ConnectHeaders(), "Content-Type", type)));
    ExpectError(response, 415, "invalid_argument", "header 'Content-Type' is '");
    EXPECT_THAT(response.headers,
                ::testing::ElementsAre(Pair("Accept-Post", "application/json, application/proto")));
  }
  ExpectError(Call(Post("{}", Without(ConnectHeaders(), "Content-Type"))), 415, "invalid_argument",
              "missing header 'Content-Type'");
  EXPECT_EQ(source_.snapshots.load(), 0);
}

TEST_F(ConnectRpcServiceTest, HeaderNamesAreCaseInsensitive) {
  const HttpHeaders lower = {{"content-type", "application/json"},
                             {"connect-protocol-version", "1"},
                             {"connect-timeout-ms", "5000"}};
  EXPECT_EQ(Call(Post("{}", lower)).status, 200);
}

TEST_F(ConnectRpcServiceTest, ProtocolVersionRequiredAndOne) {
  ExpectError(Call(Post("{}", Without(ConnectHeaders(), "Connect-Protocol-Version"))), 400,
              "invalid_argument", "missing required header 'Connect-Protocol-Version'");
  for (const char* version : {"2", "", "1.0", "v1", "01"}) {
    ExpectError(Call(Post("{}", With(ConnectHeaders(), "Connect-Protocol-Version", version))), 400,
                "invalid_argument",
                std::string("header 'Connect-Protocol-Version' is '") + version + "'");
  }
  EXPECT_EQ(Call(Post("{}", With(ConnectHeaders(), "Connect-Protocol-Version", " 1 "))).status,
            200);
}

TEST_F(ConnectRpcServiceTest, TimeoutHeaderSyntax) {
  for (const char* timeout : {"1", "5000", "0000000001", "9999999999", " 250 "}) {
    EXPECT_EQ(Call(Post("{}", With(ConnectHeaders(), "Connect-Timeout-Ms", timeout))).status, 200)
        << timeout;
  }
  for (const char* timeout : {"abc", "-1", "+5", "1.5", "12345678901", "", "0x10", "1 0", "5s"}) {
    ExpectError(Call(Post("{}", With(ConnectHeaders(), "Connect-Timeout-Ms", timeout))), 400,
                "invalid_argument",
                std::string("header 'Connect-Timeout-Ms' is '") + timeout + "'");
  }
}

TEST_F(ConnectRpcServiceTest, ContentEncodingOnlyIdentity) {
  for (const char* coding : {"identity", "IDENTITY", "", " identity "}) {
    EXPECT_EQ(Call(Post("{}", With(ConnectHeaders(), "Content-Encoding", coding))).status, 200)
        << coding;
  }
  for (const char* coding : {"gzip", "br", "zstd", "identity, gzip"}) {
    ExpectError(Call(Post("{}", With(ConnectHeaders(), "Content-Encoding", coding))), 501,
                "unimplemented", "is not supported; supported: identity");
  }
}

TEST_F(ConnectRpcServiceTest, ChecksRunInOrder) {
  // Content type before protocol version before timeout before body.
  HttpHeaders all_bad = {{"Content-Type", "text/plain"},
                         {"Connect-Protocol-Version", "2"},
                         {"Connect-Timeout-Ms", "x"}};
  EXPECT_EQ(Call(Post("[", all_bad)).status, 415);
  all_bad = With(all_bad, "Content-Type", "application/json");
  ExpectError(Call(Post("[", all_bad)), 400, "invalid_argument", "Connect-Protocol-Version");
  all_bad = With(all_bad, "Connect-Protocol-Version", "1");
  ExpectError(Call(Post("[", all_bad)), 400, "invalid_argument", "Connect-Timeout-Ms");
  all_bad = With(all_bad, "Connect-Timeout-Ms", "10");
  ExpectError(Call(Post("[", all_bad)), 400, "invalid_argument", "request body is not valid JSON");
}

// --- deadlines -----------------------------------------------------------------------------

TEST_F(ConnectRpcServiceTest, DeadlineExceededWhenTheWorkTakesTheWholeBudget) {
  source_.on_snapshot = [this] { clock_.now += std::chrono::milliseconds(100); };
  const HttpResponse late = Call(Post("{}", With(ConnectHeaders(), "Connect-Timeout-Ms", "100")));
  ExpectError(late, 504, "deadline_exceeded", "header 'Connect-Timeout-Ms' allows 100 ms, 100 ms");
  EXPECT_EQ(Call(Post("{}", With(ConnectHeaders(), "Connect-Timeout-Ms", "101"))).status, 200);
  // No header: no deadline, however long it takes.
  source_.on_snapshot = [this] { clock_.now += std::chrono::hours(24); };
  EXPECT_EQ(Call(Post("{}")).status, 200);
}

TEST_F(ConnectRpcServiceTest, ZeroBudgetIsExceededBeforeAnyWork) {
  ExpectError(Call(Post("{}", With(ConnectHeaders(), "Connect-Timeout-Ms", "0"))), 504,
              "deadline_exceeded", "allows 0 ms, 0 ms");
  HttpRequest get = Get(GetQuery("{}"));
  get.headers = {{"Connect-Timeout-Ms", "0"}};
  ExpectError(Call(get), 504, "deadline_exceeded", "allows 0 ms");
  EXPECT_EQ(source_.snapshots.load(), 0);
  // A bad request is reported as such, even with no budget left.
  ExpectError(Call(Post("[", With(ConnectHeaders(), "Connect-Timeout-Ms", "0"))), 400,
              "invalid_argument", "request body is not valid JSON");
}

TEST_F(ConnectRpcServiceTest, SlowBuildOfTheResponseCountsToo) {
  // The clock moves on every reading: start, before the snapshot, after the response.
  ConnectRpcServiceOptions options;
  auto ticks = std::make_shared<int>(0);
  options.clock = [ticks] {
    return std::chrono::steady_clock::time_point(std::chrono::milliseconds(50 * (*ticks)++));
  };
  ConnectRpcService service(source_, options);
  ExpectError(
      service.Handle(kMethod, Post("{}", With(ConnectHeaders(), "Connect-Timeout-Ms", "100"))), 504,
      "deadline_exceeded", "100 ms have passed");
  *ticks = 0;
  EXPECT_EQ(service.Handle(kMethod, Post("{}", With(ConnectHeaders(), "Connect-Timeout-Ms", "101")))
                .status,
            200);
}

// fleetPeers: every answer of a broker with peers says how many, node scope and fleet scope
// alike, in both codecs; a broker without peers leaves it out and answers FLEET as NODE.
TEST_F(ConnectRpcServiceTest, AnswersNameTheFleetPeers) {
  EXPECT_EQ(Call(Post("{}")).body.find("fleetPeers"), std::string::npos);
  EXPECT_EQ(Call(Post(R"({"scope":"CONNECTION_SCOPE_FLEET"})")).body, Call(Post("{}")).body);
  ConnectRpcServiceOptions options;
  options.fleet_peers = 2;
  int fleet_calls = 0;
  options.fleet = [&fleet_calls](const ListConnectionsRequest&, std::chrono::steady_clock::time_point,
                                 ConnectionPage*) {
    ++fleet_calls;
    return Status();
  };
  ConnectRpcService service(source_, options);
  for (const char* body : {"{}", R"({"scope":"CONNECTION_SCOPE_FLEET"})"}) {
    const HttpResponse response = service.Handle(kMethod, Post(body));
    ASSERT_EQ(response.status, 200) << response.body;
    EXPECT_NE(response.body.find(R"("fleetPeers":2})"), std::string::npos) << response.body;
  }
  EXPECT_EQ(fleet_calls, 1);
  const HttpResponse binary = service.Handle(
      kMethod, Post("", With(ConnectHeaders(), "Content-Type", "application/proto")));
  mqtt::connections::v1::ListConnectionsResponse answer;
  ASSERT_TRUE(answer.ParseFromString(binary.body));
  EXPECT_EQ(answer.fleet_peers(), 2u);
}

// nodeId in every answer, and a fleet answer's nodeAnswers: the same in both codecs, the JSON
// read by the schema's own parser.
TEST_F(ConnectRpcServiceTest, AnswersNameTheirNodeAndAFleetAnswerEachBrokersPart) {
  ConnectRpcServiceOptions options;
  options.node_id = 7;
  options.fleet_peers = 1;
  options.fleet = [](const ListConnectionsRequest&, std::chrono::steady_clock::time_point,
                     ConnectionPage* page) {
    page->total_size = 12;
    page->node_answers = {{"", 7, 5, 0.25}, {"http://127.0.0.1:9", 8, 7, 12.5}};
    return Status();
  };
  ConnectRpcService service(source_, options);
  EXPECT_NE(service.Handle(kMethod, Post("{}")).body.find(R"("fleetPeers":1,"nodeId":7})"),
            std::string::npos);
  const HttpResponse json =
      service.Handle(kMethod, Post(R"({"scope":"CONNECTION_SCOPE_FLEET"})"));
  ASSERT_EQ(json.status, 200) << json.body;
  EXPECT_NE(json.body.find(R"("nodeId":7,"nodeAnswers":[{"nodeId":7,"totalSize":"5",)"
                           R"("answerMs":0.25},{"peer":"http://127.0.0.1:9","nodeId":8,)"
                           R"("totalSize":"7","answerMs":12.5}]})"),
            std::string::npos)
      << json.body;
  mqtt::connections::v1::ListConnectionsResponse from_json;
  google::protobuf::util::JsonParseOptions strict;
  strict.ignore_unknown_fields = false;
  const auto parsed = google::protobuf::util::JsonStringToMessage(json.body, &from_json, strict);
  ASSERT_TRUE(parsed.ok()) << parsed.ToString();
  mqtt::connections::v1::ListConnectionsRequest request;
  request.set_scope(mqtt::connections::v1::CONNECTION_SCOPE_FLEET);
  const HttpResponse binary =
      service.Handle(kMethod, Post(request.SerializeAsString(),
                                   With(ConnectHeaders(), "Content-Type", "application/proto")));
  mqtt::connections::v1::ListConnectionsResponse answer;
  ASSERT_TRUE(answer.ParseFromString(binary.body));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(from_json, answer))
      << from_json.DebugString() << answer.DebugString();
  EXPECT_EQ(answer.node_answers(1).answer_ms(), 12.5);
}

// --- the request body ----------------------------------------------------------------------

TEST_F(ConnectRpcServiceTest, EmptyBodyAndEmptyObjectAreTheDefaults) {
  const std::string all = Call(Post("")).body;
  EXPECT_EQ(Call(Post("{}")).body, all);
  EXPECT_EQ(Call(Post(" \r\n\t{ } \n")).body, all);
  EXPECT_EQ(Call(Post(R"({"filter":null,"orderBy":null,"pageSize":null,"pageToken":null})")).body,
            all);
  EXPECT_EQ(Call(Post(R"({"filter":"","orderBy":"","pageSize":0,"pageToken":""})")).body, all);
}

TEST_F(ConnectRpcServiceTest, SnakeCaseAndCamelCaseFieldNames) {
  const char* const kSensorFirst = "0b0e6c1e-5c2a-4d7e-9f3a-1b2c3d4e5f60";
  for (const char* body : {R"({"orderBy":"client_id desc","pageSize":1})",
                           R"({"order_by":"client_id desc","page_size":1})"}) {
    const HttpResponse response = Call(Post(body));
    EXPECT_THAT(ListedUids(response), ::testing::ElementsAre(kSensorFirst)) << body;
    const std::string token = StringField(response, "nextPageToken");
    for (const char* token_name : {"pageToken", "page_token"}) {
      const std::string next = std::string(R"({"order_by":"client_id desc",")") + token_name +
                               R"(":")" + token + R"("})";
      EXPECT_THAT(ListedUids(Call(Post(next))), ::testing::ElementsAre("uid-closed")) << next;
    }
  }
}

TEST_F(ConnectRpcServiceTest, PageSizeAsNumberOrString) {
  for (const char* size : {"1", "\"1\"", "1.0", "\"1.0\"", "1e0", "\"1e0\"", "0.1e1", "\"10e-1\"",
                           "\"1E+0\"", "100e-2"}) {
    EXPECT_EQ(ListedUids(Call(Post(std::string(R"({"pageSize":)") + size + "}"))).size(), 1u)
        << size;
  }
  for (const char* size : {"0", "\"0\"", "-0", "\"-0\"", "\"0e5\"", "\"0.000\""}) {
    EXPECT_EQ(ListedUids(Call(Post(std::string(R"({"pageSize":)") + size + "}"))).size(), 2u)
        << size;
  }
}

TEST_F(ConnectRpcServiceTest, UnknownFieldsAreIgnored) {
  EXPECT_EQ(
      Call(Post(R"({"foo":1,"bar":{"x":[1,2,{"y":null}]},"filter":"client_id = \"sensor-1\"",)"
                R"("FILTER":5,"Filter":true,"page-size":"x","a\\u0000b":"\\u0000"})"))
          .status,
      200);
  EXPECT_EQ(ListedUids(Call(Post(R"({"filter":"client_id = \"sensor-1\"","extra":[]})"))).size(),
            1u);
}

TEST_F(ConnectRpcServiceTest, WrongTypesNameTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"filter":5})", "field 'filter' must be a string, got a number"},
      {R"({"filter":["a"]})", "field 'filter' must be a string, got an array"},
      {R"({"orderBy":true})", "field 'orderBy' must be a string, got a boolean"},
      {R"({"order_by":{}})", "field 'order_by' must be a string, got an object"},
      {R"({"pageToken":1})", "field 'pageToken' must be a string, got a number"},
      {R"({"page_token":false})", "field 'page_token' must be a string, got a boolean"},
      {R"({"pageSize":true})", "field 'pageSize' must be an int32 (a number, or a string"},
      {R"({"pageSize":[1]})", "field 'pageSize' must be an int32"},
      {R"({"page_size":{}})", "field 'page_size' must be an int32"},
      {R"({"pageSize":1.5})", "field 'pageSize' must be an integer, got 1.5"},
      {R"({"pageSize":"1.5"})", "field 'pageSize' must be an integer, got '1.5'"},
      {R"({"pageSize":"abc"})", "field 'pageSize' is 'abc'; expected an int32"},
      {R"({"pageSize":""})", "field 'pageSize' is ''; expected an int32"},
      {R"({"pageSize":" 1"})", "field 'pageSize' is ' 1'; expected an int32"},
      {R"({"pageSize":"01"})", "field 'pageSize' is '01'; expected an int32"},
      {R"({"pageSize":"+1"})", "field 'pageSize' is '+1'; expected an int32"},
      {R"({"pageSize":"0x10"})", "field 'pageSize' is '0x10'; expected an int32"},
      {R"({"pageSize":"1e"})", "field 'pageSize' is '1e'; expected an int32"},
      {R"({"pageSize":"1e-99999999999999999999"})", "field 'pageSize' must be an integer"},
  };
  for (const auto& [body, message] : cases) {
    ExpectError(Call(Post(body)), 400, "invalid_argument", std::string("request body: ") + message);
  }
}

TEST_F(ConnectRpcServiceTest, HugeNumbers) {
  const std::pair<const char*, const char*> out_of_range[] = {
      {"2147483648", "2147483648"},
      {"-2147483649", "-2147483649"},
      {"1e20", "1e+20"},
      {"1e400", "inf"},
      {"-1e400", "-inf"},
      {"\"2147483648\"", "'2147483648'"},
      {"\"99999999999999999999999999\"", "'99999999999999999999999999'"},
      {"\"1e99999999999999999999\"", "'1e99999999999999999999'"},
      {"\"-2147483649\"", "'-2147483649'"},
  };
  for (const auto& [size, shown] : out_of_range) {
    ExpectError(Call(Post(std::string(R"({"pageSize":)") + size + "}")), 400, "invalid_argument",
                std::string("field 'pageSize' is out of the int32 range: ") + shown);
  }
  // Within int32 but beyond the engine's maximum, or negative: the engine's message.
  for (const char* size : {"2147483647", "\"-2147483648\"", "10001", "-1"}) {
    ExpectError(Call(Post(std::string(R"({"pageSize":)") + size + "}")), 400, "invalid_argument",
                "page_size must be between 0 and 10000");
  }
  EXPECT_EQ(Call(Post(R"({"pageSize":10000})")).status, 200);
  EXPECT_EQ(Call(Post(R"({"pageSize":"1e4"})")).status, 200);
}

TEST_F(ConnectRpcServiceTest, InvalidJson) {
  for (const char* body :
       {"{", "}", "{\"filter\":}", "nul", "{} {}", "{}x", "{\"a\" 1}", "  ", "{'filter':'x'}",
        "{\"a\":[1,]}", "{\"a\":\"\\x\"}", "{\"a\":\"\\ud800\"}"}) {
    ExpectError(Call(Post(body)), 400, "invalid_argument", "request body is not valid JSON");
  }
  // What cJSON would take but RFC 8259 does not.
  const std::pair<std::string, std::string> strict[] = {
      {R"({"a":01})", "malformed number '01' at byte 5"},
      {R"({"a":1.})", "malformed number '1.' at byte 5"},
      {R"({"a":-01.5})", "malformed number '-01.5' at byte 5"},
      {R"({"a":[1,1.e5]})", "malformed number '1.e5' at byte 8"},
      {std::string("{\"filter\":\"a\nb\"}"), "a control character inside a string at byte 12"},
      {std::string("{\"a\tb\":1}"), "a control character inside a string at byte 3"},
      {R"({"filter":"a\u0000b"})", "a \\u0000 escape at byte 12"},
      {R"({"x\u0000":1})", "a \\u0000 escape at byte 3"},
  };
  for (const auto& [body, why] : strict) {
    ExpectError(Call(Post(body)), 400, "invalid_argument",
                "request body is not valid JSON: " + why);
  }
  ExpectError(Call(Post(std::string("{\"a\":1}\0", 8))), 400, "invalid_argument",
              "request body is not valid JSON: a NUL byte at byte 7");
  // Escapes that only look like \u0000, and a valid surrogate pair.
  EXPECT_EQ(Call(Post(R"({"x":"\\u0000","y":"\u0001\ud83d\ude00"})")).status, 200);
  EXPECT_EQ(source_.snapshots.load(), 1);
}

TEST_F(ConnectRpcServiceTest, BodyMustBeAnObject) {
  const std::pair<const char*, const char*> cases[] = {
      {"[]", "an array"}, {"\"x\"", "a string"}, {"1", "a number"},
      {"null", "null"},   {"true", "a boolean"}, {"[{}]", "an array"},
  };
  for (const auto& [body, type] : cases) {
    ExpectError(Call(Post(body)), 400, "invalid_argument",
                std::string("request body must be a JSON object, got ") + type);
  }
}

TEST_F(ConnectRpcServiceTest, BodyMustBeUtf8) {
  ExpectError(Call(Post("{\"filter\":\"\xFF\"}")), 400, "invalid_argument",
              "request body is not valid UTF-8 (at byte 11)");
  ExpectError(Call(Post("{\"x\":\"\xC3\"}")), 400, "invalid_argument", "at byte 6");
  ExpectError(Call(Post("{\"x\":\"\xED\xA0\x80\"}")), 400, "invalid_argument",  // a surrogate
              "not valid UTF-8");
  EXPECT_EQ(Call(Post("{\"x\":\"\xC3\xA9\xF0\x9F\x98\x80\"}")).status, 200);
}

TEST_F(ConnectRpcServiceTest, FieldGivenTwice) {
  ExpectError(Call(Post(R"({"pageSize":1,"page_size":2})")), 400, "invalid_argument",
              "field 'page_size' is given more than once (first as 'pageSize')");
  ExpectError(Call(Post(R"({"filter":"","filter":""})")), 400, "invalid_argument",
              "field 'filter' is given more than once");
  ExpectError(Call(Post(R"({"order_by":null,"orderBy":"uid"})")), 400, "invalid_argument",
              "field 'orderBy' is given more than once (first as 'order_by')");
}

TEST_F(ConnectRpcServiceTest, QueryEngineErrorsAreInvalidArgument) {
  ExpectError(Call(Post(R"({"filter":"nope = 1"})")), 400, "invalid_argument", "nope");
  ExpectError(Call(Post(R"({"filter":"client_id = x"})")), 400, "invalid_argument",
              "Expected quoted literal for field 'client_id'");
  ExpectError(Call(Post(R"({"orderBy":"client_id sideways"})")), 400, "invalid_argument",
              "sideways");
  ExpectError(Call(Post(R"({"filter":"state < MQTT_CONNECTION_STATE_OPEN"})")), 400,
              "invalid_argument", "");
}

// The router answers it `internal` with a fixed text and logs the exception
// (http_router_test.cc): the service neither answers nor echoes it.
TEST_F(ConnectRpcServiceTest, FailingSourceThrowsToTheRouter) {
  source_.on_snapshot = [] { throw std::runtime_error("boom"); };
  EXPECT_THROW(Call(Post("")), std::runtime_error);
  source_.on_snapshot = [] { throw 42; };
  EXPECT_THROW(Call(Post("")), int);
}

// --- the GET form --------------------------------------------------------------------------

TEST_F(ConnectRpcServiceTest, GetGivesWhatPostGives) {
  const std::string message = R"({"filter":"state = MQTT_CONNECTION_STATE_OPEN","pageSize":5})";
  const HttpResponse post = Call(Post(message));
  ASSERT_EQ(post.status, 200);
  for (const char* method : {"GET", "HEAD"}) {
    const HttpResponse get = Call(Get(GetQuery(message), method));
    EXPECT_EQ(get.status, 200);
    EXPECT_EQ(get.content_type, "application/json");
    EXPECT_EQ(get.body, post.body);
  }
  // Parameters in any order, unknown ones ignored, Content-Type and protocol headers not needed.
  HttpRequest shuffled = Get({{"message", message},
                              {"x", "y"},
                              {"encoding", "json"},
                              {"compression", "identity"},
                              {"connect", "v1"},
                              {"base64", "0"}});
  shuffled.headers = {{"Content-Type", "text/plain"}, {"Connect-Protocol-Version", "7"}};
  EXPECT_EQ(Call(shuffled).body, post.body);
}

TEST_F(ConnectRpcServiceTest, GetWithBase64) {
  // Its URL-safe base64 has both '-' and '_' (checked against Python's urlsafe_b64encode).
  const std::string message = R"({"x":"???~~~>>>","filter":"client_id = \"sensor-1\""})";
  const std::string encoded =
      "eyJ4IjoiPz8_fn5-Pj4-IiwiZmlsdGVyIjoiY2xpZW50X2lkID0gXCJzZW5zb3ItMVwiIn0=";
  EXPECT_EQ(EncodeBase64Url(message, true), encoded);
  const HttpResponse post = Call(Post(message));
  EXPECT_THAT(ListedUids(post), ::testing::ElementsAre("0b0e6c1e-5c2a-4d7e-9f3a-1b2c3d4e5f60"));
  for (const bool pad : {false, true}) {
    QueryParams query = GetQuery(EncodeBase64Url(message, pad));
    query.emplace_back("base64", "1");
    EXPECT_EQ(Call(Get(query)).body, post.body) << pad;
  }
  // Without base64=1 the same text is taken as JSON, and is not.
  ExpectError(Call(Get(GetQuery(encoded))), 400, "invalid_argument",
              "query parameter 'message' is not valid JSON");
  // The empty message is the defaults, in base64 too.
  QueryParams empty = GetQuery("");
  empty.emplace_back("base64", "1");
  EXPECT_EQ(Call(Get(empty)).body, Call(Post("")).body);
  // Binary after decoding must still be UTF-8 JSON.
  QueryParams binary = GetQuery(EncodeBase64Url("{\"a\":\"\xFF\"}", false));
  binary.emplace_back("base64", "1");
  ExpectError(Call(Get(binary)), 400, "invalid_argument",
              "query parameter 'message' is not valid UTF-8 (at byte 6)");
}

TEST_F(ConnectRpcServiceTest, GetWithBadBase64) {
  for (const char* text :
       {"e30=x", "!!!!", "e30 ", "e3+0", "e3/0", "e", "e30==", "e3===", "=", "e30=e30="}) {
    QueryParams query = GetQuery(text);
    query.emplace_back("base64", "1");
    ExpectError(Call(Get(query)), 400, "invalid_argument",
                "query parameter 'message' is not valid URL-safe base64");
  }
  for (const char* text : {"e30", "e30="}) {  // "{}"
    QueryParams query = GetQuery(text);
    query.emplace_back("base64", "1");
    EXPECT_EQ(Call(Get(query)).status, 200) << text;
  }
}

TEST_F(ConnectRpcServiceTest, GetParameterErrors) {
  ExpectError(Call(Get({{"encoding", "json"}, {"message", "{}"}})), 400, "invalid_argument",
              "missing query parameter 'connect'; expected 'v1'");
  ExpectError(Call(Get({{"connect", "v2"}, {"encoding", "json"}})), 400, "invalid_argument",
              "query parameter 'connect' is 'v2'; expected 'v1'");
  ExpectError(Call(Get({{"connect", "v1"}, {"message", "{}"}})), 400, "invalid_argument",
              "missing query parameter 'encoding'; expected 'json' or 'proto'");
  for (const char* encoding : {"protobuf", "JSON", "PROTO", ""}) {
    const HttpResponse response = Call(Get({{"connect", "v1"}, {"encoding", encoding}}));
    ExpectError(
        response, 415, "invalid_argument",
        std::string("query parameter 'encoding' is '") + encoding + "'; supported: json, proto");
  }
  for (const char* compression : {"gzip", "br", ""}) {
    QueryParams query = GetQuery("{}");
    query.emplace_back("compression", compression);
    ExpectError(Call(Get(query)), 501, "unimplemented",
                std::string("query parameter 'compression' '") + compression +
                    "' is not supported; supported: identity");
  }
  for (const char* name : {"connect", "encoding", "message", "base64", "compression"}) {
    QueryParams query = GetQuery("{}");
    query.emplace_back(name, "v1");
    if (query.size() == 4) query.emplace_back(name, "v1");  // not in GetQuery: twice here
    ExpectError(Call(Get(query)), 400, "invalid_argument",
                std::string("query parameter '") + name + "' is given more than once");
  }
  ExpectError(Call(Get(GetQuery("[1]"))), 400, "invalid_argument",
              "query parameter 'message' must be a JSON object, got an array");
  ExpectError(Call(Get(GetQuery(R"({"pageSize":"x"})"))), 400, "invalid_argument",
              "query parameter 'message': field 'pageSize' is 'x'");
  EXPECT_EQ(source_.snapshots.load(), 0);
}

TEST_F(ConnectRpcServiceTest, GetWithoutMessageIsTheDefaults) {
  EXPECT_EQ(Call(Get({{"connect", "v1"}, {"encoding", "json"}})).body, Call(Post("")).body);
}

TEST_F(ConnectRpcServiceTest, GetHonoursTheTimeoutHeader) {
  source_.on_snapshot = [this] { clock_.now += std::chrono::seconds(2); };
  HttpRequest request = Get(GetQuery("{}"));
  request.headers = {{"Connect-Timeout-Ms", "2000"}};
  ExpectError(Call(request), 504, "deadline_exceeded", "");
  request.headers = {{"Connect-Timeout-Ms", "2001"}};
  EXPECT_EQ(Call(request).status, 200);
  request.headers = {{"Connect-Timeout-Ms", "soon"}};
  ExpectError(Call(request), 400, "invalid_argument", "header 'Connect-Timeout-Ms' is 'soon'");
}

// --- threads -------------------------------------------------------------------------------

TEST(ConnectRpcServiceThreads, ConcurrentCallsAgree) {
  FakeSource source;
  for (int i = 0; i < 20; ++i) {
    source.connections.push_back(
        MakeConnection("u" + std::to_string(i), kJune12 + i, "c" + std::to_string(i % 5)));
  }
  const ConnectRpcService service(source);
  const std::string expected =
      service.Handle(kMethod, Post(R"({"filter":"client_id = \"c1\"","pageSize":"3"})")).body;
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        const HttpResponse response =
            i % 2 == 0
                ? service.Handle(kMethod, Post(R"({"filter":"client_id = \"c1\"","pageSize":"3"})"))
                : service.Handle(
                      kMethod, Get(GetQuery(R"({"filter":"client_id = \"c1\"","pageSize":"3"})")));
        if (response.body != expected) ++mismatches;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace mqc
