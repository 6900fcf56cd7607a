// SPDX-License-Identifier: BSD-3-Clause
// HttpRouter: which view answers which path and method, and the error format of each path.
#include "companion/http/http_router.h"

#include <gmock/gmock.h>
#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "companion/activity_history.h"
#include "companion/client_history.h"
#include "companion/connection.h"
#include "companion/connection_changes.h"
#include "companion/http/access_tokens.h"
#include "companion/http/connect_rpc_service.h"
#include "companion/http/host_check.h"
#include "companion/json_util.h"
#include "mqtt/connections/v1/connections.pb.h"

namespace mqc {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

class FakeSource : public ConnectionSource {
 public:
  std::vector<Connection> Snapshot() const override { return connections; }
  std::vector<Connection> connections;
};

HttpRequest Request(std::string method, std::string path, QueryParams query = {}) {
  HttpRequest request;
  request.method = std::move(method);
  request.path = std::move(path);
  request.query = std::move(query);
  return request;
}

const char kEmptyList[] =
    R"({"error":false,"error_string":"","data":{"connections":[],"total":0}})";

class HttpRouterTest : public ::testing::Test {
 protected:
  HttpRouterTest() {
    TokenSet set;
    set.entries.push_back({"read-token-0123456789", AccessLevel::kRead, "token file line 1"});
    read_token_.Replace(std::move(set));
  }

  FakeSource source_;
  HttpRouter bare_{source_, nullptr, nullptr};  // no metrics, no Connect
  AccessTokens read_token_{true};               // tokens required; the one there reads
};

TEST_F(HttpRouterTest, ConnectionsEndpoint) {
  for (const char* method : {"GET", "HEAD"}) {
    const HttpResponse response = bare_.Handle(Request(method, "/api/mqtt/connections"));
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.content_type, "application/json");
    EXPECT_EQ(response.Body(), kEmptyList);  // MHD drops it for HEAD
  }
}

TEST_F(HttpRouterTest, ConnectionsEndpointReadsTheSourceAndTheQuery) {
  Connection connection;
  connection.state = ConnectionState::kOpen;
  connection.client_id = "c1";
  connection.protocol_version = 5;
  source_.connections = {connection};
  EXPECT_NE(bare_.Handle(Request("GET", "/api/mqtt/connections")).Body().find("\"total\":1"),
            std::string::npos);
  EXPECT_EQ(
      bare_.Handle(Request("GET", "/api/mqtt/connections", {{"protocol_version", "4"}})).Body(),
      kEmptyList);
  const HttpResponse refused =
      bare_.Handle(Request("GET", "/api/mqtt/connections", {{"foo", "1"}}));
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(refused.body,
            R"({"error":true,"error_string":"unknown query parameter 'foo'; accepted: )"
            R"(client_id, username, pattern, protocol_version, limit, offset","data":null})");
}

TEST_F(HttpRouterTest, UnknownPathIs404WithTheEnvelope) {
  for (const char* path :
       {"/index.html", "//", "/api/mqtt/connections/", "/API/mqtt/connections", "/metricsx",
        "/console", "/api/openapi.json/", "/mqtt.connections.v1.OtherService/ListConnections"}) {
    const HttpResponse response = bare_.Handle(Request("GET", path));
    EXPECT_EQ(response.status, 404) << path;
    EXPECT_EQ(response.content_type, "application/json");
    EXPECT_EQ(response.body, std::string(R"({"error":true,"error_string":"unknown path ')") + path +
                                 R"('","data":null})");
  }
  // Also with a method nothing serves: the path is checked first.
  EXPECT_EQ(bare_.Handle(Request("DELETE", "/nothing")).status, 404);
}

TEST_F(HttpRouterTest, WrongMethodIs405WithAllow) {
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"}) {
    const HttpResponse response = bare_.Handle(Request(method, "/api/mqtt/connections"));
    EXPECT_EQ(response.status, 405) << method;
    EXPECT_THAT(response.headers, UnorderedElementsAre(Pair("Allow", "GET, HEAD")));
    EXPECT_EQ(response.body, std::string(R"({"error":true,"error_string":"method ')") + method +
                                 R"(' is not allowed on '/api/mqtt/connections'; allowed: )"
                                 R"(GET, HEAD","data":null})");
  }
}

TEST_F(HttpRouterTest, BodyTooLargeIs413WithTheEnvelope) {
  HttpRequest request = Request("GET", "/api/mqtt/connections");
  request.body_too_large = true;
  const HttpResponse response = bare_.Handle(request);
  EXPECT_EQ(response.status, 413);
  EXPECT_EQ(response.body, R"({"error":true,"error_string":"request body too large","data":null})");
}

TEST_F(HttpRouterTest, MetricsWithoutProviderIs404) {
  EXPECT_EQ(bare_.Handle(Request("GET", "/metrics")).status, 404);
}

TEST_F(HttpRouterTest, MetricsFromTheProvider) {
  const HttpRouter router(
      source_, [] { return std::string("kubemq_mqtt_connections 3\n"); }, nullptr);
  for (const char* method : {"GET", "HEAD"}) {
    const HttpResponse response = router.Handle(Request(method, "/metrics"));
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.content_type, "text/plain; version=0.0.4; charset=utf-8");
    EXPECT_EQ(response.body, "kubemq_mqtt_connections 3\n");
  }
  const HttpResponse wrong = router.Handle(Request("POST", "/metrics"));
  EXPECT_EQ(wrong.status, 405);
  EXPECT_THAT(wrong.headers, UnorderedElementsAre(Pair("Allow", "GET, HEAD")));
}

TEST_F(HttpRouterTest, FailingViewIs500InThePathsFormatWithAFixedTextAndALogLine) {
  HttpRouter router(
      source_, []() -> std::string { throw std::runtime_error("registry gone at 0x7ffd1234"); },
      [](const std::string&, const HttpRequest&) -> HttpResponse { throw 42; });
  std::vector<std::string> logged;
  router.SetErrorLog([&logged](const std::string& line) { logged.push_back(line); });
  const HttpResponse metrics = router.Handle(Request("GET", "/metrics"));
  EXPECT_EQ(metrics.status, 500);
  EXPECT_EQ(metrics.body, R"({"error":true,"error_string":"internal error","data":null})");
  const HttpResponse connect =
      router.Handle(Request("POST", "/mqtt.connections.v1.ConnectionsService/ListConnections"));
  EXPECT_EQ(connect.status, 500);
  EXPECT_EQ(connect.body, R"({"code":"internal","message":"internal error"})");
  EXPECT_THAT(logged,
              ::testing::ElementsAre(
                  "HTTP GET /metrics failed: registry gone at 0x7ffd1234",
                  "HTTP POST /mqtt.connections.v1.ConnectionsService/ListConnections failed: "
                  "an exception of unknown type"));
}

TEST_F(HttpRouterTest, FailingSourceIs500WithAFixedTextOnEveryReadingPath) {
  class FailingSource : public ConnectionSource {
   public:
    std::vector<Connection> Snapshot() const override {
      throw std::length_error("vector::_M_realloc_insert secret detail");
    }
  } failing;
  ConnectRpcService service(failing);
  HttpRouter router(failing, nullptr, service.Handler());
  std::vector<std::string> logged;
  router.SetErrorLog([&logged](const std::string& line) { logged.push_back(line); });
  HttpRequest rpc = Request("POST", "/mqtt.connections.v1.ConnectionsService/ListConnections");
  rpc.headers = {{"Content-Type", "application/json"}, {"Connect-Protocol-Version", "1"}};
  rpc.body = "{}";
  for (const HttpRequest& request : {Request("GET", "/api/mqtt/connections"), rpc}) {
    const HttpResponse response = router.Handle(request);
    EXPECT_EQ(response.status, 500) << request.path;
    EXPECT_THAT(response.body, HasSubstr("internal error")) << request.path;
    EXPECT_THAT(response.body, Not(HasSubstr("secret"))) << request.path;
  }
  ASSERT_EQ(logged.size(), 2u);
  EXPECT_THAT(logged[0], HasSubstr("HTTP GET /api/mqtt/connections failed: vector::"));
  EXPECT_THAT(logged[1], HasSubstr("secret detail"));
}

TEST_F(HttpRouterTest, ALoggedPathCannotForgeALine) {
  HttpRouter router(source_, nullptr, [](const std::string&, const HttpRequest&) -> HttpResponse {
    throw std::runtime_error("boom");
  });
  std::string logged;
  router.SetErrorLog([&logged](const std::string& line) { logged = line; });
  const std::string path = "/mqtt.connections.v1.ConnectionsService/X\n1700000000: forged";
  EXPECT_EQ(router.Handle(Request("POST", path)).status, 500);
  EXPECT_EQ(logged,
            "HTTP POST /mqtt.connections.v1.ConnectionsService/X?1700000000: forged "
            "failed: boom");
  router.SetErrorLog([](const std::string&) { throw std::bad_alloc(); });
  EXPECT_EQ(router.Handle(Request("POST", path)).status, 500);  // answered all the same
}

HttpRequest FromHost(std::string method, std::string path, std::string host) {
  HttpRequest request = Request(std::move(method), std::move(path));
  request.version = "HTTP/1.1";
  request.headers = {{"Host", std::move(host)}};
  request.local_address = "127.0.0.1";
  return request;
}

TEST_F(HttpRouterTest, ForeignHostIs421OnEveryPathInThePathsFormat) {
  const HttpRouter router(
      source_, [] { return std::string("kubemq_mqtt_connections 0\n"); },
      [](const std::string&, const HttpRequest&) { return HttpResponse(); });
  const std::string rpc = "/mqtt.connections.v1.ConnectionsService/";
  struct Case {
    const char* method;
    std::string path;
    const char* format;  // "kubemq", "connect", "text"
  };
  const Case cases[] = {
      {"GET", "/api/mqtt/connections", "kubemq"},
      {"HEAD", "/api/mqtt/connections", "kubemq"},
      {"POST", "/api/mqtt/connections", "kubemq"},  // would be 405
      {"DELETE", "/api/mqtt/connections/c1", "kubemq"},
      {"GET", "/nothing", "kubemq"},  // would be 404
      {"GET", "/", "kubemq"},
      {"GET", "/console.js", "kubemq"},
      {"GET", "/api/openapi.json", "kubemq"},
      {"GET", "/metrics", "text"},
      {"POST", rpc + "ListConnections", "connect"},
      {"GET", rpc + "ListConnections", "connect"},
      {"POST", rpc + "DisconnectConnection", "connect"},
      {"POST", rpc + "Nope", "connect"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.method) + " " + c.path);
    const HttpResponse allowed = router.Handle(FromHost(c.method, c.path, "localhost:8080"));
    EXPECT_NE(allowed.status, 421);
    EXPECT_NE(allowed.status, 400);
    const HttpResponse response =
        router.Handle(FromHost(c.method, c.path, "attacker.example:8080"));
    EXPECT_EQ(response.status, 421);
    EXPECT_THAT(response.body, HasSubstr("Host 'attacker.example:8080' is not a host this server "
                                         "answers to: add 'attacker.example' to "
                                         "plugin_opt_http_allowed_hosts"));
    EXPECT_THAT(response.body, Not(HasSubstr("kubemq_mqtt")));
    if (std::string(c.format) == "kubemq") {
      EXPECT_EQ(response.content_type, "application/json");
      EXPECT_THAT(response.body, ::testing::StartsWith(R"({"error":true,"error_string":"Host )"));
    } else if (std::string(c.format) == "connect") {
      EXPECT_THAT(response.body, ::testing::StartsWith(R"({"code":"permission_denied",)"));
    } else {
      EXPECT_EQ(response.content_type, "text/plain; charset=utf-8");
      EXPECT_THAT(response.body, ::testing::StartsWith("Host 'attacker.example:8080'"));
    }
    const HttpResponse malformed = router.Handle(FromHost(c.method, c.path, "127.1:8080"));
    EXPECT_EQ(malformed.status, 400);
    EXPECT_THAT(malformed.body, HasSubstr("plugin_opt_http_allowed_hosts"));
    if (std::string(c.format) == "connect") {
      EXPECT_THAT(malformed.body, ::testing::StartsWith(R"({"code":"invalid_argument",)"));
    }
  }
}

TEST_F(HttpRouterTest, HostCheckComesBeforeTheTokens) {
  HttpRouter router(source_, nullptr, nullptr);
  router.SetAccess(&read_token_, false);
  router.SetHostCheck(HostCheck({"mqtt-api.example.com"}, "0.0.0.0"));
  HttpRequest request = FromHost("GET", "/api/mqtt/connections", "attacker.example");
  request.headers.emplace_back("Authorization", "Bearer read-token-0123456789");
  EXPECT_EQ(router.Handle(request).status, 421);  // a token does not open a foreign host
  request.headers = {{"Host", "attacker.example"}};
  EXPECT_EQ(router.Handle(request).status, 421);  // nor does its absence turn it into a 401
  request.headers = {{"Host", "MQTT-API.example.com:443"}};
  EXPECT_EQ(router.Handle(request).status, 401);
  request.headers.emplace_back("Authorization", "Bearer read-token-0123456789");
  EXPECT_EQ(router.Handle(request).status, 200);
}

TEST_F(HttpRouterTest, HealthzNeedsNoTokenAndFollowsTheHealthFunction) {
  HttpRouter router(source_, nullptr, nullptr);
  router.SetAccess(&read_token_, false);
  bool current = false;
  router.SetHealth([&current] { return current; });
  HttpResponse response = router.Handle(Request("GET", "/healthz"));
  EXPECT_EQ(response.status, 503);
  EXPECT_EQ(response.body, "catching up with the broker\n");
  current = true;
  response = router.Handle(Request("GET", "/healthz"));
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "ok\n");
  EXPECT_EQ(router.Handle(Request("HEAD", "/healthz")).status, 200);
  EXPECT_EQ(router.Handle(Request("POST", "/healthz")).status, 405);
  EXPECT_EQ(router.Handle(Request("GET", "/api/mqtt/connections")).status, 401);
  // Without a health function (a router in tests, or set-up not done): always 200.
  EXPECT_EQ(bare_.Handle(Request("GET", "/healthz")).status, 200);
}

TEST_F(HttpRouterTest, ConnectWithoutHandlerIsUnimplemented) {
  const HttpResponse response =
      bare_.Handle(Request("POST", "/mqtt.connections.v1.ConnectionsService/ListConnections"));
  EXPECT_EQ(response.status, 501);
  EXPECT_EQ(response.content_type, "application/json");
  EXPECT_EQ(response.body,
            R"({"code":"unimplemented","message":"method 'ListConnections' is not implemented; )"
            R"(implemented: BanClient, DisconnectConnection, GetActivity, GetClientHistory, )"
            R"(ListBans, UnbanClient"})");
}

// GetClientHistory: a read token's method, JSON or binary, its errors as Connect errors.
TEST_F(HttpRouterTest, GetClientHistoryAnswersTheKeptEventsOfOneClientId) {
  const std::string path = std::string(kConnectRpcServicePrefix) + "GetClientHistory";
  const auto post = [&path](const HttpRouter& router, std::string body,
                            std::string content_type = "application/json") {
    HttpRequest request = Request("POST", path);
    request.headers = {{"Content-Type", std::move(content_type)}, {"Connect-Protocol-Version", "1"}};
    request.body = std::move(body);
    return router.Handle(request);
  };
  EXPECT_EQ(post(bare_, R"({"clientId":"c"})").body,
            R"({"code":"permission_denied","message":"the client history is off )"
            R"x((plugin_opt_history_events 0)"})x");

  ClientHistory history;
  auto open = std::make_shared<Connection>();
  open->client_id = "c";
  open->uid = "u1";
  open->ip_address = "192.0.2.1";
  open->port = 1883;
  open->username = "alice";
  open->protocol_version = 5;
  open->open_time_ns = 1700000000123456789;
  ConnectionChange opened;
  opened.kind = ChangeKind::kOpened;
  opened.after = open;
  history.Record(opened, 0);
  auto closed = std::make_shared<Connection>(*open);
  closed->close_reason = CloseReason::kKicked;
  closed->close_time_ns = 1700000001000000000;
  ConnectionChange kicked;
  kicked.kind = ChangeKind::kClosed;
  kicked.before = open;
  kicked.after = closed;
  history.Record(kicked, 0);
  HttpRouter router(source_, nullptr, nullptr);
  router.SetClientHistory(&history);
  const HttpResponse json = post(router, R"({"clientId":"c"})");
  EXPECT_EQ(json.status, 200);
  EXPECT_EQ(json.body,
            R"({"clientId":"c","events":[{"time":"2023-11-14T22:13:20.123456789Z",)"
            R"("kind":"CLIENT_EVENT_KIND_CONNECTED","uid":"u1","ipAddress":"192.0.2.1",)"
            R"("port":1883,"username":"alice","protocolVersion":5},)"
            R"({"time":"2023-11-14T22:13:21.000000000Z","kind":"CLIENT_EVENT_KIND_KICKED",)"
            R"("closeReason":"KICKED","uid":"u1","ipAddress":"192.0.2.1","port":1883}]})");

  ::mqtt::connections::v1::GetClientHistoryRequest request;
  request.set_client_id("c");
  const HttpResponse binary = post(router, request.SerializeAsString(), "application/proto");
  EXPECT_EQ(binary.status, 200);
  EXPECT_EQ(binary.content_type, "application/proto");
  ::mqtt::connections::v1::GetClientHistoryResponse answer;
  ASSERT_TRUE(answer.ParseFromString(binary.body));
  ASSERT_EQ(answer.events_size(), 2);
  EXPECT_EQ(answer.events(1).kind(), ::mqtt::connections::v1::CLIENT_EVENT_KIND_KICKED);
  EXPECT_EQ(answer.events(1).close_reason(), ::mqtt::connections::v1::KICKED);
  EXPECT_EQ(answer.events(0).time().seconds(), 1700000000);

  const HttpResponse unknown = post(router, R"({"clientId":"nobody"})");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_THAT(unknown.body, HasSubstr(R"("code":"not_found")"));
  EXPECT_THAT(unknown.body, HasSubstr("no event kept for client id 'nobody'"));
  for (const char* body : {"{}", R"({"clientId":7})", "[]", R"({"clientId":""})"}) {
    const HttpResponse bad = post(router, body);
    EXPECT_EQ(bad.status, 400) << body;
    EXPECT_THAT(bad.body, HasSubstr(R"("code":"invalid_argument")")) << body;
  }
  EXPECT_EQ(router.Handle(Request("GET", path)).status, 405);
}

// GetActivity: the samples as counts, zero members left out, disconnects by reason name.
TEST_F(HttpRouterTest, GetActivityAnswersTheSamples) {
  const std::string path = std::string(kConnectRpcServicePrefix) + "GetActivity";
  ActivityHistory activity({10'000'000'000, 6});
  ActivityTotals totals;
  activity.Sample(1700000000'000000000, totals);
  totals.open_connections = 3;
  totals.connects = 5;
  totals.disconnects[5] = 2;
  totals.messages_delivered = 40;
  activity.Sample(1700000010'000000000, totals);
  HttpRouter router(source_, nullptr, nullptr);
  HttpRequest request = Request("POST", path);
  request.headers = {{"Content-Type", "application/json"}, {"Connect-Protocol-Version", "1"}};
  request.body = "{}";
  EXPECT_EQ(router.Handle(request).status, 503);  // none set
  router.SetActivity(&activity);
  const HttpResponse json = router.Handle(request);
  EXPECT_EQ(json.status, 200);
  EXPECT_EQ(json.body,
            R"({"intervalSeconds":10,"samples":[{"time":"2023-11-14T22:13:30.000000000Z",)"
            R"("seconds":10,"openConnections":3,"connects":5,"disconnects":{"KICKED":2},)"
            R"("messagesDelivered":40}]})");
  request.headers = {{"Content-Type", "application/proto"}, {"Connect-Protocol-Version", "1"}};
  request.body.clear();
  const HttpResponse binary = router.Handle(request);
  ::mqtt::connections::v1::GetActivityResponse answer;
  ASSERT_TRUE(answer.ParseFromString(binary.body));
  ASSERT_EQ(answer.samples_size(), 1);
  EXPECT_EQ(answer.samples(0).disconnects().at("KICKED"), 2u);
  EXPECT_EQ(answer.samples(0).messages_delivered(), 40u);
}

// An empty live view: WatchConnections is wired as the companion wires it.
class EmptyLive : public LiveConnections {
 public:
  ConnectionList LiveSnapshot(std::uint64_t* as_of) const override {
    *as_of = 0;
    return {};
  }
  bool synced() const override { return true; }
};

// Wired as companion/main.cc wires it: an unknown method's answer lists every implemented
// method, which are exactly the schema's (proto/), and each of them is answered by its view.
TEST_F(HttpRouterTest, AnUnknownConnectMethodListsEveryImplementedOne) {
  EmptyLive live;
  ConnectionChanges changes({16, 1});
  ConnectRpcServiceOptions options;
  options.live = &live;
  options.changes = &changes;
  const ConnectRpcService service(source_, options);
  const HttpRouter router(source_, nullptr, service.Handler(), service.Methods());
  const google::protobuf::ServiceDescriptor* schema =
      ::mqtt::connections::v1::ListConnectionsRequest::descriptor()->file()->FindServiceByName(
          "ConnectionsService");
  ASSERT_NE(schema, nullptr);
  std::vector<std::string> declared;
  for (int i = 0; i < schema->method_count(); ++i) {
    declared.emplace_back(schema->method(i)->name());
  }
  EXPECT_THAT(router.connect_methods(), ::testing::UnorderedElementsAreArray(declared));

  const std::string prefix = kConnectRpcServicePrefix;
  for (const char* unknown : {"KickConnection", "", "listConnections"}) {
    const HttpResponse response = router.Handle(Request("POST", prefix + unknown));
    EXPECT_EQ(response.status, 501) << unknown;
    EXPECT_EQ(response.body, std::string(R"({"code":"unimplemented","message":"method ')") +
                                 unknown +
                                 R"(' is not implemented; implemented: BanClient, )"
                                 R"(DisconnectConnection, GetActivity, GetClientHistory, )"
                                 R"(ListBans, ListConnections, UnbanClient, WatchConnections"})");
  }
  for (const std::string& method : router.connect_methods()) {
    const HttpResponse response = router.Handle(Request("POST", prefix + method));
    EXPECT_THAT(response.body, Not(HasSubstr("is not implemented"))) << method;
    EXPECT_NE(response.status, 501) << method;
  }
  // Without WatchConnections' live view the service does not offer it, and neither does the list.
  const ConnectRpcService unary(source_);
  const HttpRouter without(source_, nullptr, unary.Handler(), unary.Methods());
  EXPECT_THAT(without.connect_methods(), Not(::testing::Contains("WatchConnections")));
  EXPECT_EQ(without.Handle(Request("POST", prefix + "WatchConnections")).status, 501);
}

TEST_F(HttpRouterTest, ConnectCallsReachTheHandlerWithTheMethodName) {
  std::vector<std::pair<std::string, std::string>> calls;  // (method name, HTTP method)
  const HttpRouter router(source_, nullptr,
                          [&calls](const std::string& method, const HttpRequest& request) {
                            calls.emplace_back(method, request.method);
                            HttpResponse response;
                            response.content_type = "application/json";
                            response.body = "{}";
                            return response;
                          });
  for (const char* method : {"POST", "GET", "HEAD"}) {
    EXPECT_EQ(router.Handle(Request(method, "/mqtt.connections.v1.ConnectionsService/Foo")).body,
              "{}");
  }
  EXPECT_EQ(router.Handle(Request("POST", "/mqtt.connections.v1.ConnectionsService/")).body, "{}");
  EXPECT_EQ(calls, (std::vector<std::pair<std::string, std::string>>{
                       {"Foo", "POST"}, {"Foo", "GET"}, {"Foo", "HEAD"}, {"", "POST"}}));
}

TEST_F(HttpRouterTest, ConnectErrorsUseConnectJson) {
  const std::string path = "/mqtt.connections.v1.ConnectionsService/ListConnections";
  const HttpResponse wrong = bare_.Handle(Request("PUT", path));
  EXPECT_EQ(wrong.status, 405);
  EXPECT_THAT(wrong.headers, UnorderedElementsAre(Pair("Allow", "GET, HEAD, POST")));
  EXPECT_EQ(wrong.body, R"({"code":"unimplemented","message":"method 'PUT' is not allowed on ')" +
                            path + R"('; allowed: GET, HEAD, POST"})");
  HttpRequest large = Request("POST", path);
  large.body_too_large = true;
  const HttpResponse too_large = bare_.Handle(large);
  EXPECT_EQ(too_large.status, 413);
  EXPECT_EQ(too_large.body, R"({"code":"resource_exhausted","message":"request body too large"})");
}

std::string RepositoryFile(const std::string& name) {
  std::ifstream in(std::string(MQC_SOURCE_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST_F(HttpRouterTest, ConsoleAndOpenApiAreTheRepositoryFilesWithSecurityHeaders) {
  const std::vector<std::vector<std::string>> files = {
      {"/", "console/index.html", "text/html; charset=utf-8"},
      {"/console.css", "console/console.css", "text/css; charset=utf-8"},
      {"/console.js", "console/console.js", "text/javascript; charset=utf-8"},
      {"/api/openapi.json", "api/openapi.json", "application/json"}};
  for (const auto& file : files) {
    for (const char* method : {"GET", "HEAD"}) {
      const HttpResponse response = bare_.Handle(Request(method, file[0], {{"x", "1"}}));
      EXPECT_EQ(response.status, 200) << file[0];
      EXPECT_EQ(response.content_type, file[2]);
      EXPECT_EQ(response.body, RepositoryFile(file[1])) << file[0];
      EXPECT_THAT(response.headers,
                  UnorderedElementsAre(Pair("Content-Security-Policy",
                                            "default-src 'self'; base-uri 'none'; "
                                            "form-action 'none'; frame-ancestors 'none'"),
                                       Pair("X-Content-Type-Options", "nosniff"),
                                       Pair("Cache-Control", "no-cache")));
    }
    const HttpResponse wrong = bare_.Handle(Request("POST", file[0]));
    EXPECT_EQ(wrong.status, 405) << file[0];
    EXPECT_THAT(wrong.headers, UnorderedElementsAre(Pair("Allow", "GET, HEAD")));
  }
  EXPECT_NE(RepositoryFile("console/index.html").find("<script src=\"console.js\""),
            std::string::npos);
}

TEST_F(HttpRouterTest, EchoedPathIsShortAndValidUtf8) {
  const HttpResponse response = bare_.Handle(Request("GET", "/\xFF" + std::string(100, 'a')));
  EXPECT_EQ(response.status, 404);
  const CjsonPtr root = ParseJson(response.body);
  ASSERT_NE(root, nullptr) << response.body;
  EXPECT_EQ(std::string(cJSON_GetObjectItemCaseSensitive(root.get(), "error_string")->valuestring),
            "unknown path '/\xEF\xBF\xBD" + std::string(62, 'a') + "...'");
}

TEST(HttpPathLabelTest, OnlyServedPathsAreLabelValues) {
  EXPECT_EQ(HttpPathLabel("/api/mqtt/connections"), "/api/mqtt/connections");
  EXPECT_EQ(HttpPathLabel("/metrics"), "/metrics");
  EXPECT_EQ(HttpPathLabel("/healthz"), "/healthz");
  EXPECT_EQ(HttpPathLabel("/mqtt.connections.v1.ConnectionsService/ListConnections"),
            "/mqtt.connections.v1.ConnectionsService/ListConnections");
  EXPECT_EQ(HttpPathLabel("/mqtt.connections.v1.ConnectionsService/Kick"), "other");
  EXPECT_EQ(HttpPathLabel("/metrics/"), "other");
  EXPECT_EQ(HttpPathLabel("/METRICS"), "other");
  EXPECT_EQ(HttpPathLabel(""), "other");
}

TEST_F(HttpRouterTest, EveryLabelledPathIsServed) {
  ConnectRpcService service(source_);
  const HttpRouter router(
      source_, [] { return std::string(); }, service.Handler());
  for (const char* path : {"/api/mqtt/connections", "/metrics", "/healthz",
                           "/mqtt.connections.v1.ConnectionsService/ListConnections"}) {
    ASSERT_EQ(HttpPathLabel(path), path);
    HttpRequest request = Request("POST", path);
    request.headers = {{"Content-Type", "application/json"}, {"Connect-Protocol-Version", "1"}};
    request.body = "{}";
    const HttpResponse get = router.Handle(Request("GET", path));
    const HttpResponse post = router.Handle(request);
    EXPECT_TRUE(get.status == 200 || post.status == 200)
        << path << ": GET " << get.status << ", POST " << post.status;
  }
}

}  // namespace
}  // namespace mqc
