// SPDX-License-Identifier: BSD-3-Clause
// The ban views over a fake BanAdmin: a request's fields checked with the field named, the
// answers' shapes in both forms, both Connect codecs read into the same checks.
#include "companion/http/ban_view.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "companion/http/connect_codec.h"
#include "companion/json_util.h"
#include "mqtt/connections/v1/connections.pb.h"

namespace mqc {
namespace {

constexpr std::int64_t kSecond = 1000000000;
constexpr std::int64_t kNow = 1780000000 * kSecond;

class BanViewTest : public ::testing::Test {
 protected:
  BanViewTest() {
    admin_.list = [this] { return bans_; };
    admin_.add = [this](Ban ban, const Caller& caller) {
      BanOutcome outcome;
      if (ban.by.empty()) ban.by = caller.token_line;
      bans_.push_back(ban);
      outcome.ban = ban;
      outcome.kicked = 2;
      return outcome;
    };
    admin_.remove = [this](const Ban& target, const Caller&) {
      BanOutcome outcome;
      for (auto it = bans_.begin(); it != bans_.end(); ++it) {
        if (SameTarget(*it, target)) {
          outcome.ban = *it;
          bans_.erase(it);
          return outcome;
        }
      }
      outcome.status = Status(StatusCode::kNotFound, "no ban on " + target.Describe());
      return outcome;
    };
    admin_.refused_total = [] { return std::uint64_t{7}; };
    admin_.now_ns = [] { return kNow; };
    caller_.address = "127.0.0.1:5000";
    caller_.token_line = "admin token file line 2";
  }

  std::string Refusal(const std::string& body) {
    Ban ban;
    const Status status = ReadBanRequest(body, kNow, false, &ban);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << body;
    return status.message();
  }

  HttpRequest Connect(const std::string& body, const char* type = "application/json") {
    HttpRequest request;
    request.method = "POST";
    request.body = body;
    request.headers = {{"Content-Type", type}, {"Connect-Protocol-Version", "1"}};
    return request;
  }

  BanAdmin admin_;
  Caller caller_;
  std::vector<Ban> bans_;
};

TEST_F(BanViewTest, RequestFieldsAreCheckedAndNamed) {
  EXPECT_EQ(Refusal("[]"), "request body is not a JSON object");
  EXPECT_EQ(Refusal("{\"who\":\"x\"}").rfind("as: required", 0), 0u);
  EXPECT_EQ(Refusal("{\"as\":1,\"who\":\"x\"}"), "as: must be a string");
  EXPECT_EQ(Refusal("{\"as\":\"clientid\"}"), "who: required");
  EXPECT_EQ(Refusal("{\"as\":\"clientid\",\"who\":\"x\",\"until\":\"2001-01-01T00:00:00Z\"}"),
            "until: must be in the future");
  EXPECT_EQ(Refusal("{\"as\":\"clientid\",\"who\":\"x\",\"until\":\"x\"}").rfind("until: 'x'", 0),
            0u);
  EXPECT_EQ(Refusal("{\"as\":\"clientid\",\"who\":\"x\",\"duration_s\":1.5}")
                .rfind("duration_s: a whole number", 0),
            0u);
  EXPECT_EQ(Refusal("{\"as\":\"clientid\",\"who\":\"x\",\"duration_s\":0}").rfind("duration_s:", 0),
            0u);
  EXPECT_EQ(Refusal("{\"as\":\"clientid\",\"who\":\"x\",\"duration_s\":5,"
                    "\"until\":\"2100-01-01T00:00:00Z\"}"),
            "until, duration_s: give at most one of them");
  EXPECT_EQ(
      Refusal("{\"as\":\"clientid\",\"who\":\"x\",\"reason\":\"" + std::string(257, 'r') + "\"}"),
      "reason: at most 256 bytes");
  Ban ban;
  ASSERT_TRUE(
      ReadBanRequest("{\"as\":\"clientid\",\"who\":\"x\",\"duration_s\":60}", kNow, false, &ban)
          .ok());
  EXPECT_EQ(ban.until_ns, kNow + 60 * kSecond);
  EXPECT_EQ(ban.at_ns, kNow);
  ASSERT_TRUE(
      ReadBanRequest("{\"as\":\"clientid\",\"who\":\"x\",\"durationS\":\"60\"}", kNow, true, &ban)
          .ok());
  EXPECT_EQ(ban.until_ns, kNow + 60 * kSecond);
}

TEST_F(BanViewTest, KubeMqAnswers) {
  HttpRequest post;
  post.method = "POST";
  post.body = "{\"as\":\"peerhost_net\",\"who\":\"10.1.2.3/8\",\"reason\":\"r\"}";
  HttpResponse response = KubeMqAddBan(admin_, post, caller_);
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(response.body,
            "{\"error\":false,\"error_string\":\"\",\"data\":{\"as\":\"peerhost_net\",\"who\":"
            "\"10.0.0.0/8\",\"by\":\"admin token file line 2\",\"reason\":\"r\",\"at\":"
            "\"2026-05-28T20:26:40Z\",\"until\":null,\"kicked\":2}}");
  response = KubeMqListBans(admin_);
  EXPECT_NE(response.body.find("\"count\":1,\"refused_total\":7"), std::string::npos);
  post.body = "{\"as\":\"nope\",\"who\":\"x\"}";
  response = KubeMqAddBan(admin_, post, caller_);
  EXPECT_EQ(response.status, 400);
  EXPECT_NE(response.body.find("\"error_string\":\"as: must be one of"), std::string::npos);
  EXPECT_EQ(KubeMqRemoveBan(admin_, "peerhost_net", caller_).status, 400);
  EXPECT_EQ(KubeMqRemoveBan(admin_, "clientid/x", caller_).status, 404);
  response = KubeMqRemoveBan(admin_, "peerhost_net/10.0.0.0/8", caller_);
  EXPECT_EQ(response.status, 200);
  EXPECT_NE(response.body.find("\"removed\":true"), std::string::npos);
  EXPECT_TRUE(bans_.empty());
}

TEST_F(BanViewTest, ConnectBothCodecs) {
  HttpResponse response =
      ConnectRpcBans(admin_, kBanClientMethod,
                     Connect("{\"as\":\"username\",\"who\":\"u\",\"durationS\":\"30\"}"), caller_);
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_NE(response.body.find("\"kicked\":2"), std::string::npos);
  mqtt::connections::v1::BanClientRequest request;
  request.set_as("clientid");
  request.set_who("c");
  request.set_duration_s(10);
  request.mutable_until()->set_seconds(kNow / kSecond + 100);
  response = ConnectRpcBans(admin_, kBanClientMethod,
                            Connect(request.SerializeAsString(), kProtoContentType), caller_);
  EXPECT_EQ(response.status, 400);  // both until and duration
  EXPECT_NE(response.body.find("until, durationS: give at most one"), std::string::npos);
  request.clear_until();
  response = ConnectRpcBans(admin_, kBanClientMethod,
                            Connect(request.SerializeAsString(), kProtoContentType), caller_);
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(response.content_type, kProtoContentType);
  mqtt::connections::v1::BanClientResponse answer;
  ASSERT_TRUE(answer.ParseFromString(response.body));
  EXPECT_EQ(answer.ban().who(), "c");
  EXPECT_EQ(answer.ban().until().seconds(), kNow / kSecond + 10);
  EXPECT_EQ(answer.kicked(), 2);
  response = ConnectRpcBans(admin_, kListBansMethod, Connect("", kProtoContentType), caller_);
  mqtt::connections::v1::ListBansResponse list;
  ASSERT_TRUE(list.ParseFromString(response.body));
  EXPECT_EQ(list.bans_size(), 2);
  EXPECT_EQ(list.refused_total(), 7);
  EXPECT_FALSE(list.bans(0).has_until() && list.bans(0).until().seconds() == 0);
  mqtt::connections::v1::UnbanClientRequest unban;
  unban.set_as("clientid");
  unban.set_who("c");
  response = ConnectRpcBans(admin_, kUnbanClientMethod,
                            Connect(unban.SerializeAsString(), kProtoContentType), caller_);
  EXPECT_EQ(response.status, 200);
  response = ConnectRpcBans(admin_, kUnbanClientMethod,
                            Connect("{\"as\":\"clientid\",\"who\":\"c\"}"), caller_);
  EXPECT_EQ(response.status, 404);
  EXPECT_NE(response.body.find("\"code\":\"not_found\""), std::string::npos);
}

// Every JSON answer of both forms, byte for byte: written with JsonWriter, they are what the
// cJSON trees the views had printed (field order, escapes, invalid UTF-8, a null until, numbers),
// and the Connect answers name the broker of each ban (nodeId).
TEST_F(BanViewTest, JsonAnswersAreByteForByteWhatTheyWere) {
  const std::string e_acute = "\xC3\xA9";
  const std::string replacement = "\xEF\xBF\xBD";  // U+FFFD
  const std::string grin = "\xF0\x9F\x98\x80";
  Ban odd;
  ASSERT_TRUE(ParseBanTarget("username", "q\"b\\" + e_acute + "\x01", &odd).ok());
  odd.by = "line\n\t\xFF\xC0\x80";  // bytes that are never UTF-8
  odd.reason = "</script>" + grin;
  odd.at_ns = -1;
  odd.until_ns = kNow + 1;
  bans_ = {odd};
  std::vector<std::string> answers;
  answers.push_back(KubeMqListBans(admin_).body);
  answers.push_back(ConnectRpcBans(admin_, kListBansMethod, Connect("{}"), caller_).body);
  HttpRequest post;
  post.method = "POST";
  post.body = R"({"as":"clientid","who":"c\u00e9","duration_s":60})";
  answers.push_back(KubeMqAddBan(admin_, post, caller_).body);
  answers.push_back(ConnectRpcBans(admin_, kBanClientMethod,
                                   Connect(R"({"as":"peerhost","who":"::1","reason":""})"), caller_)
                        .body);
  answers.push_back(KubeMqListBans(admin_).body);
  answers.push_back(KubeMqRemoveBan(admin_, "clientid/c" + e_acute, caller_).body);
  answers.push_back(ConnectRpcBans(admin_, kUnbanClientMethod,
                                   Connect(R"({"as":"peerhost","who":"::1"})"), caller_)
                        .body);
  bans_.clear();
  answers.push_back(KubeMqListBans(admin_).body);
  answers.push_back(ConnectRpcBans(admin_, kListBansMethod, Connect(""), caller_).body);

  const std::string odd_json = R"({"as":"username","who":"q\"b\\)" + e_acute +
                               R"(\u0001","by":"line\n\t)" + replacement + replacement +
                               replacement + R"(","reason":"</script>)" + grin +
                               R"(","at":"1969-12-31T23:59:59Z","until":"2026-05-28T20:26:40Z"})";
  const std::string fields_by =
      R"("by":"admin token file line 2","reason":"","at":"2026-05-28T20:26:40Z")";
  const std::string client_json = R"({"as":"clientid","who":"c)" + e_acute + R"(",)" + fields_by +
                                  R"(,"until":"2026-05-28T20:27:40Z")";
  const std::string address_json =
      R"({"as":"peerhost","who":"::1",)" + fields_by + R"(,"until":null)";
  const std::string envelope = R"({"error":false,"error_string":"","data":)";
  const std::vector<std::string> expected = {
      envelope + R"({"bans":[)" + odd_json + R"(],"count":1,"refused_total":7}})",
      R"({"bans":[)" + odd_json.substr(0, odd_json.size() - 1) +
          R"(,"nodeId":0}],"refusedTotal":"7","nodeId":0})",
      envelope + client_json + R"(,"kicked":2}})",
      R"({"ban":)" + address_json + R"(,"nodeId":0},"kicked":2})",
      envelope + R"({"bans":[)" + odd_json + "," + client_json + "}," + address_json +
          R"(}],"count":3,"refused_total":7}})",
      envelope + client_json + R"(,"removed":true}})",
      R"({"ban":)" + address_json + R"(,"nodeId":0},"removed":true})",
      envelope + R"({"bans":[],"count":0,"refused_total":7}})",
      R"({"bans":[],"refusedTotal":"7","nodeId":0})",
  };
  ASSERT_EQ(answers.size(), expected.size());
  for (std::size_t i = 0; i < answers.size(); ++i) EXPECT_EQ(answers[i], expected[i]) << i;
}

// nodeId and scope: read from both codecs, refused together or when unknown, and without peers
// the fleet is this broker alone and another node is not_found, naming both nodes.
TEST_F(BanViewTest, PlaceWithoutPeers) {
  admin_.node_id = 4;
  const char* kBan = R"({"as":"clientid","who":"c")";
  HttpResponse response = ConnectRpcBans(
      admin_, kBanClientMethod, Connect(std::string(kBan) + R"(,"nodeId":9})"), caller_);
  EXPECT_EQ(response.status, 404);
  EXPECT_NE(response.body.find("nodeId: node 9 is not this broker (node 4), which has no fleet "
                               "peers (plugin_opt_fleet_peers)"),
            std::string::npos)
      << response.body;
  EXPECT_TRUE(bans_.empty());
  response = ConnectRpcBans(
      admin_, kBanClientMethod,
      Connect(std::string(kBan) + R"(,"nodeId":9,"scope":"CONNECTION_SCOPE_FLEET"})"), caller_);
  EXPECT_EQ(response.status, 400);
  EXPECT_NE(response.body.find("give a node id or scope CONNECTION_SCOPE_FLEET, not both"),
            std::string::npos);
  response = ConnectRpcBans(admin_, kBanClientMethod,
                            Connect(std::string(kBan) + R"(,"scope":"FLEET"})"), caller_);
  EXPECT_EQ(response.status, 400);
  EXPECT_NE(response.body.find("field 'scope' is 'FLEET'"), std::string::npos) << response.body;
  response = ConnectRpcBans(admin_, kBanClientMethod,
                            Connect(std::string(kBan) + R"(,"nodeId":-1})"), caller_);
  EXPECT_NE(response.body.find("field 'nodeId' must be a uint32"), std::string::npos);
  EXPECT_TRUE(bans_.empty());

  // This broker's own node id: made here, answered as before.
  response = ConnectRpcBans(admin_, kBanClientMethod,
                            Connect(std::string(kBan) + R"(,"nodeId":4})"), caller_);
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(response.body.find("brokers"), std::string::npos);
  EXPECT_NE(response.body.find(R"("nodeId":4},"kicked":2})"), std::string::npos) << response.body;
  // The fleet without peers: this broker, named in `brokers`.
  mqtt::connections::v1::BanClientRequest request;
  request.set_as("username");
  request.set_who("u");
  request.set_scope(mqtt::connections::v1::CONNECTION_SCOPE_FLEET);
  response = ConnectRpcBans(admin_, kBanClientMethod,
                            Connect(request.SerializeAsString(), kProtoContentType), caller_);
  ASSERT_EQ(response.status, 200) << response.body;
  mqtt::connections::v1::BanClientResponse answer;
  ASSERT_TRUE(answer.ParseFromString(response.body));
  ASSERT_EQ(answer.brokers_size(), 1);
  EXPECT_EQ(answer.brokers(0).node_id(), 4u);
  EXPECT_EQ(answer.brokers(0).code(), "");
  EXPECT_EQ(answer.brokers(0).kicked(), 2);
  EXPECT_EQ(answer.peer_errors_size(), 0);
  EXPECT_EQ(answer.ban().node_id(), 4u);
  request.set_node_id(5);
  response = ConnectRpcBans(admin_, kBanClientMethod,
                            Connect(request.SerializeAsString(), kProtoContentType), caller_);
  EXPECT_EQ(response.status, 400);
  ASSERT_EQ(bans_.size(), 2u);

  // ListBans with FLEET and no peers: this broker's bans, each with its node.
  mqtt::connections::v1::ListBansRequest list_request;
  list_request.set_scope(mqtt::connections::v1::CONNECTION_SCOPE_FLEET);
  response = ConnectRpcBans(admin_, kListBansMethod,
                            Connect(list_request.SerializeAsString(), kProtoContentType), caller_);
  mqtt::connections::v1::ListBansResponse list;
  ASSERT_TRUE(list.ParseFromString(response.body));
  ASSERT_EQ(list.bans_size(), 2);
  EXPECT_EQ(list.bans(1).node_id(), 4u);
  EXPECT_EQ(list.node_id(), 4u);

  // The KubeMQ path acts here alone: a node id or a scope there is refused, not ignored.
  HttpRequest post;
  post.method = "POST";
  post.body = R"({"as":"clientid","who":"k","scope":"CONNECTION_SCOPE_FLEET"})";
  response = KubeMqAddBan(admin_, post, caller_);
  EXPECT_EQ(response.status, 400);
  EXPECT_NE(response.body.find("nodeId, scope: this path bans on this broker alone"),
            std::string::npos)
      << response.body;
  ASSERT_EQ(bans_.size(), 2u);

  // Unban on another node, in JSON.
  response = ConnectRpcBans(admin_, kUnbanClientMethod,
                            Connect(R"({"as":"clientid","who":"c","nodeId":2})"), caller_);
  EXPECT_EQ(response.status, 404);
  EXPECT_NE(response.body.find("node 2 is not this broker"), std::string::npos);
  EXPECT_EQ(bans_.size(), 2u);
}

// With peers the routed functions get the place; their per-broker outcomes are answered, a
// failed peer in peerErrors too.
TEST_F(BanViewTest, RoutedChangesAnswerEachBroker) {
  admin_.node_id = 1;
  BanPlace seen;
  std::string forwarded;
  admin_.add_at = [&seen, &forwarded](const Ban& ban, const BanPlace& place,
                                      const Caller& caller) {
    seen = place;
    forwarded = caller.authorization;
    FleetBanOutcome result;
    result.outcome.ban = ban;
    result.outcome.kicked = 3;
    result.node_id = 1;
    BrokerBanOutcome here;
    here.node_id = 1;
    here.kicked = 3;
    BrokerBanOutcome down;
    down.peer = "http://127.0.0.1:9";
    down.status = Status(StatusCode::kUnavailable, "connection refused");
    result.brokers = {here, down};
    return result;
  };
  HttpRequest request = Connect(R"({"as":"clientid","who":"c","scope":"CONNECTION_SCOPE_FLEET"})");
  request.headers.emplace_back("Authorization", "Bearer admin-0123456789");
  const HttpResponse response = ConnectRpcBans(admin_, kBanClientMethod, request, caller_);
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(forwarded, "Bearer admin-0123456789");  // the caller's own token goes to the peers
  EXPECT_TRUE(seen.fleet);
  EXPECT_FALSE(seen.node_id.has_value());
  EXPECT_NE(response.body.find(
                R"("kicked":3,"brokers":[{"nodeId":1,"kicked":3},{"nodeId":0,"peer":)"
                R"("http://127.0.0.1:9","code":"unavailable","message":"connection refused",)"
                R"("kicked":0}],"peerErrors":[{"peer":"http://127.0.0.1:9","code":"unavailable",)"
                R"("message":"connection refused"}]})"),
            std::string::npos)
      << response.body;
}

}  // namespace
}  // namespace mqc
