// HttpRouter: which view answers which path and method, and the error format of each path.
#include "companion/http/http_router.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "companion/http/json_util.h"
#include "link/connection.h"

namespace mqc {
namespace {

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
  FakeSource source_;
  HttpRouter bare_{source_, nullptr, nullptr};  // no metrics, no Connect
};

TEST_F(HttpRouterTest, ConnectionsEndpoint) {
  for (const char* method : {"GET", "HEAD"}) {
    const HttpResponse response = bare_.Handle(Request(method, "/api/mqtt/connections"));
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.content_type, "application/json");
    EXPECT_EQ(response.body, kEmptyList);  // MHD drops it for HEAD
  }
}

TEST_F(HttpRouterTest, ConnectionsEndpointReadsTheSourceAndTheQuery) {
  Connection connection;
  connection.state = ConnectionState::kOpen;
  connection.client_id = "c1";
  connection.protocol_version = 5;
  source_.connections = {connection};
  EXPECT_NE(bare_.Handle(Request("GET", "/api/mqtt/connections")).body.find("\"total\":1"),
            std::string::npos);
  EXPECT_EQ(bare_.Handle(Request("GET", "/api/mqtt/connections", {{"protocol_version", "4"}})).body,
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

TEST_F(HttpRouterTest, FailingViewIs500InThePathsFormat) {
  const HttpRouter router(
      source_, []() -> std::string { throw std::runtime_error("registry gone"); },
      [](const std::string&, const HttpRequest&) -> HttpResponse { throw 42; });
  const HttpResponse metrics = router.Handle(Request("GET", "/metrics"));
  EXPECT_EQ(metrics.status, 500);
  EXPECT_EQ(metrics.body,
            R"({"error":true,"error_string":"internal error: registry gone","data":null})");
  const HttpResponse connect =
      router.Handle(Request("POST", "/mqtt.connections.v1.ConnectionsService/ListConnections"));
  EXPECT_EQ(connect.status, 500);
  EXPECT_EQ(connect.body, R"({"code":"internal","message":"internal error: unknown exception"})");
}

TEST_F(HttpRouterTest, ConnectWithoutHandlerIsUnimplemented) {
  const HttpResponse response =
      bare_.Handle(Request("POST", "/mqtt.connections.v1.ConnectionsService/ListConnections"));
  EXPECT_EQ(response.status, 501);
  EXPECT_EQ(response.content_type, "application/json");
  EXPECT_EQ(response.body,
            R"({"code":"unimplemented","message":"method 'ListConnections' is not implemented"})");
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

}  // namespace
}  // namespace mqc
