// SPDX-License-Identifier: BSD-3-Clause
// AccessTokens and the router's use of them: token files, constant-time comparison, 401/403.
#include "companion/http/access_tokens.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "companion/http/http_router.h"

namespace mqc {
namespace {

using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr char kRead[] = "read-token-0123456789";
constexpr char kAdmin[] = "admin-token-0123456789";

class TempFile {
 public:
  explicit TempFile(const std::string& content) {
    char name[] = "/tmp/mqc-tokens-XXXXXX";
    const int fd = mkstemp(name);
    path_ = name;
    close(fd);
    std::ofstream(path_) << content;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(ConstantTimeEqualsTest, ComparesWholeValues) {
  EXPECT_TRUE(ConstantTimeEquals("abcdef", "abcdef"));
  EXPECT_FALSE(ConstantTimeEquals("abcdef", "abcdeg"));
  EXPECT_FALSE(ConstantTimeEquals("abcdef", "abcde"));
  EXPECT_FALSE(ConstantTimeEquals("abcde", "abcdef"));
  EXPECT_FALSE(ConstantTimeEquals("", "a"));
  EXPECT_FALSE(ConstantTimeEquals(std::string(600, 'a'), std::string(600, 'a')));  // too long
}

TEST(ReadTokenFileTest, SkipsCommentsAndBlankLinesAndNamesLines) {
  TempFile file(std::string("# comment\n\n  ") + kRead + "  \r\n");
  TokenSet set;
  std::string warning;
  ASSERT_TRUE(
      ReadTokenFile(file.path(), "http_token_file", AccessLevel::kRead, &set, &warning).ok());
  ASSERT_EQ(set.entries.size(), 1u);
  EXPECT_EQ(set.entries[0].token, kRead);
  EXPECT_EQ(set.entries[0].line, "token file line 3");
}

TEST(ReadTokenFileTest, RefusesBadFilesNamingOptionAndLineButNeverTheToken) {
  TokenSet set;
  std::string warning;
  Status status =
      ReadTokenFile("/nonexistent/x", "http_token_file", AccessLevel::kRead, &set, &warning);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("plugin_opt_http_token_file /nonexistent/x"));
  TempFile empty("# nothing\n\n");
  status =
      ReadTokenFile(empty.path(), "http_admin_token_file", AccessLevel::kAdmin, &set, &warning);
  EXPECT_THAT(status.message(), HasSubstr("plugin_opt_http_admin_token_file"));
  EXPECT_THAT(status.message(), HasSubstr("holds no token"));
  TempFile bad(std::string(kRead) + "\nshort-secret\n");
  status = ReadTokenFile(bad.path(), "http_token_file", AccessLevel::kRead, &set, &warning);
  EXPECT_THAT(status.message(), HasSubstr("line 2"));
  EXPECT_THAT(status.message(), ::testing::Not(HasSubstr("short-secret")));
  TempFile spaced("two words in a token line\n");
  EXPECT_FALSE(
      ReadTokenFile(spaced.path(), "http_token_file", AccessLevel::kRead, &set, &warning).ok());
}

TEST(AccessTokensTest, GrantsByTokenAndLevel) {
  AccessTokens tokens(true);
  TokenSet set;
  set.entries.push_back({kRead, AccessLevel::kRead, "token file line 1"});
  set.entries.push_back({kAdmin, AccessLevel::kAdmin, "admin token file line 4"});
  tokens.Replace(set);
  EXPECT_EQ(tokens.Check(nullptr).level, AccessLevel::kNone);
  const std::string read = std::string("Bearer ") + kRead;
  const std::string admin = std::string("bearer  ") + kAdmin;
  const std::string wrong = std::string("Bearer ") + kRead + "x";
  const std::string basic = std::string("Basic ") + kRead;
  EXPECT_EQ(tokens.Check(&read).level, AccessLevel::kRead);
  EXPECT_EQ(tokens.Check(&admin).level, AccessLevel::kAdmin);
  EXPECT_EQ(tokens.Check(&admin).token_line, "admin token file line 4");
  EXPECT_EQ(tokens.Check(&wrong).level, AccessLevel::kNone);
  EXPECT_TRUE(tokens.Check(&wrong).token_presented);
  EXPECT_EQ(tokens.Check(&basic).level, AccessLevel::kNone);
  AccessTokens open(false);
  EXPECT_EQ(open.Check(nullptr).level, AccessLevel::kRead);
  EXPECT_EQ(open.Check(&wrong).level, AccessLevel::kRead);
}

class EmptySource : public ConnectionSource {
 public:
  std::vector<Connection> Snapshot() const override { return {}; }
};

HttpRequest Request(const std::string& method, const std::string& path,
                    const std::string& token = "") {
  HttpRequest request;
  request.method = method;
  request.path = path;
  request.remote_address = "127.0.0.1:5000";
  if (!token.empty()) request.headers.emplace_back("authorization", "Bearer " + token);
  return request;
}

class RouterAccessTest : public ::testing::Test {
 protected:
  RouterAccessTest()
      : router_(
            source_, [] { return std::string("metrics\n"); }, nullptr) {
    TokenSet set;
    set.entries.push_back({kRead, AccessLevel::kRead, "token file line 1"});
    set.entries.push_back({kAdmin, AccessLevel::kAdmin, "admin token file line 2"});
    tokens_.Replace(set);
    router_.SetAccess(&tokens_, false);
    router_.SetDisconnector([this](const DisconnectTarget& target, const Caller& caller) {
      last_caller_ = caller;
      DisconnectOutcome outcome;
      if (target.client_id != "known") {
        outcome.status = Status(StatusCode::kNotFound, "no open connection");
        return outcome;
      }
      outcome.client_id = "known";
      outcome.uid = "u";
      return outcome;
    });
  }
  EmptySource source_;
  AccessTokens tokens_{true};
  HttpRouter router_;
  Caller last_caller_;
};

TEST_F(RouterAccessTest, MissingTokenIs401InEachFormat) {
  HttpResponse r = router_.Handle(Request("GET", "/api/mqtt/connections"));
  EXPECT_EQ(r.status, 401);
  EXPECT_THAT(r.headers, UnorderedElementsAre(
                             Pair("WWW-Authenticate", "Bearer realm=\"mosquitto-connections\"")));
  EXPECT_THAT(r.body, HasSubstr(R"("error":true)"));
  r = router_.Handle(Request("POST", "/mqtt.connections.v1.ConnectionsService/ListConnections"));
  EXPECT_EQ(r.status, 401);
  EXPECT_THAT(r.body, HasSubstr(R"("code":"unauthenticated")"));
  r = router_.Handle(Request("GET", "/metrics"));
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.content_type, "text/plain; charset=utf-8");
  EXPECT_EQ(router_.Handle(Request("GET", "/metrics", kRead)).status, 200);
  EXPECT_EQ(router_.Handle(Request("GET", "/nothing")).status, 404);  // paths are no secret
}

TEST_F(RouterAccessTest, MetricsPublicOpensMetricsOnly) {
  router_.SetAccess(&tokens_, true);
  EXPECT_EQ(router_.Handle(Request("GET", "/metrics")).status, 200);
  EXPECT_EQ(router_.Handle(Request("GET", "/api/mqtt/connections")).status, 401);
}

TEST_F(RouterAccessTest, DisconnectNeedsAnAdminToken) {
  HttpResponse r = router_.Handle(Request("DELETE", "/api/mqtt/connections/known", kRead));
  EXPECT_EQ(r.status, 403);
  r = router_.Handle(Request("DELETE", "/api/mqtt/connections/known", kAdmin));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(
      r.body,
      R"({"error":false,"error_string":"","data":{"client_id":"known","disconnected":true}})");
  EXPECT_EQ(last_caller_.address, "127.0.0.1:5000");
  EXPECT_EQ(last_caller_.token_line, "admin token file line 2");
  EXPECT_EQ(router_.Handle(Request("DELETE", "/api/mqtt/connections/other", kAdmin)).status, 404);
  HttpRequest rpc =
      Request("POST", "/mqtt.connections.v1.ConnectionsService/DisconnectConnection", kRead);
  rpc.headers.emplace_back("Content-Type", "application/json");
  rpc.headers.emplace_back("Connect-Protocol-Version", "1");
  rpc.body = R"({"clientId":"known"})";
  r = router_.Handle(rpc);
  EXPECT_EQ(r.status, 403);
  EXPECT_THAT(r.body, HasSubstr(R"("code":"permission_denied")"));
  rpc.headers[0].second = std::string("Bearer ") + kAdmin;
  r = router_.Handle(rpc);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"clientId":"known","uid":"u","disconnected":true})");
  // GET on a client's path: 405, Allow DELETE.
  r = router_.Handle(Request("GET", "/api/mqtt/connections/known", kAdmin));
  EXPECT_EQ(r.status, 405);
}

TEST(RouterAccessOffTest, WithoutAnAdminFileDisconnectIsOff) {
  EmptySource source;
  HttpRouter router(source, nullptr, nullptr);
  HttpRequest request;
  request.method = "DELETE";
  request.path = "/api/mqtt/connections/x";
  const HttpResponse r = router.Handle(request);
  EXPECT_EQ(r.status, 403);
  EXPECT_THAT(r.body, HasSubstr("http_admin_token_file"));
}

}  // namespace
}  // namespace mqc
