// SPDX-License-Identifier: BSD-3-Clause
// Tests for the disconnect views (disconnect_view.h), with a recording Disconnector: what each
// form hands the Disconnector, the answer in each format (KubeMQ envelope, Connect JSON, binary
// protobuf), every refusal before the Disconnector is asked (client id bounds, exactly one of
// clientId and uid, fields of the wrong type, bodies that are no JSON object, the Connect
// headers), and the HTTP status of each outcome the Disconnector reports.
#include "companion/http/disconnect_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "companion/http/http_server.h"
#include "link/status.h"

namespace mqc {
namespace {

using ::testing::HasSubstr;

class DisconnectViewTest : public ::testing::Test {
 protected:
  DisconnectViewTest() {
    caller_.address = "127.0.0.1:41234";
    caller_.token_line = "admin token file line 3";
    disconnector_ = [this](const DisconnectTarget& target, const Caller& caller) {
      targets_.push_back(target);
      callers_.push_back(caller);
      if (fail_.code() != StatusCode::kOk) return DisconnectOutcome{fail_, "", ""};
      return DisconnectOutcome{Status(),
                               target.client_id.empty() ? "found-by-uid" : target.client_id,
                               target.uid.empty() ? "uid-7" : target.uid};
    };
  }
  static HttpRequest Post(std::string body, std::string content_type = "application/json") {
    HttpRequest request;
    request.method = "POST";
    request.path = "/mqtt.connections.v1.ConnectionsService/DisconnectConnection";
    request.headers.emplace_back("Content-Type", std::move(content_type));
    request.headers.emplace_back("Connect-Protocol-Version", "1");
    request.body = std::move(body);
    return request;
  }
  HttpResponse Rpc(std::string body, std::string content_type = "application/json") {
    return ConnectRpcDisconnect(disconnector_, Post(std::move(body), std::move(content_type)),
                                caller_);
  }

  Caller caller_;
  Disconnector disconnector_;
  Status fail_;
  std::vector<DisconnectTarget> targets_;
  std::vector<Caller> callers_;
};

TEST_F(DisconnectViewTest, KubeMqFormDisconnectsByClientIdAndAnswersInTheEnvelope) {
  const HttpResponse response = KubeMqDisconnect(disconnector_, "sensor-1", caller_);
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.content_type, "application/json");
  EXPECT_EQ(
      response.body,
      R"({"error":false,"error_string":"","data":{"client_id":"sensor-1","disconnected":true}})");
  ASSERT_EQ(targets_.size(), 1u);
  EXPECT_EQ(targets_[0].client_id, "sensor-1");
  EXPECT_EQ(targets_[0].uid, "");
  EXPECT_EQ(callers_[0].address, "127.0.0.1:41234");
  EXPECT_EQ(callers_[0].token_line, "admin token file line 3");
}

// MQTT's limit: 1 to 65535 bytes, and no NUL (the broker looks the id up as a C string).
TEST_F(DisconnectViewTest, KubeMqFormRefusesAClientIdOutOfBoundsWithoutAskingTheBroker) {
  for (const std::string& id : {std::string(), std::string("a\0b", 3), std::string(65536, 'x')}) {
    SCOPED_TRACE(id.size());
    const HttpResponse response = KubeMqDisconnect(disconnector_, id, caller_);
    EXPECT_EQ(response.status, 400);
    EXPECT_THAT(
        response.body,
        HasSubstr(
            R"({"error":true,"error_string":"client id must be 1 to 65535 bytes without NUL)"));
    EXPECT_THAT(response.body, HasSubstr(R"("data":null})"));
  }
  EXPECT_TRUE(targets_.empty());
  EXPECT_EQ(KubeMqDisconnect(disconnector_, std::string(65535, 'x'), caller_).status, 200);
  EXPECT_EQ(targets_.size(), 1u);
}

TEST_F(DisconnectViewTest, EachOutcomeHasItsHttpStatusInBothForms) {
  const std::pair<StatusCode, int> rows[] = {
      {StatusCode::kNotFound, 404},
      {StatusCode::kDeadlineExceeded, 504},
      {StatusCode::kResourceExhausted, 429},
      {StatusCode::kInvalidArgument, 400},
  };
  for (const auto& [code, http] : rows) {
    SCOPED_TRACE(http);
    fail_ = Status(code, "what the broker side said");
    const HttpResponse kubemq = KubeMqDisconnect(disconnector_, "c", caller_);
    EXPECT_EQ(kubemq.status, http);
    EXPECT_EQ(kubemq.body,
              R"({"error":true,"error_string":"what the broker side said","data":null})");
    const HttpResponse rpc = Rpc(R"({"clientId":"c"})");
    EXPECT_EQ(rpc.status, http);
    EXPECT_THAT(rpc.body, HasSubstr(R"("message":"what the broker side said")"));
  }
}

TEST_F(DisconnectViewTest, ConnectFormDisconnectsByClientIdOrByUid) {
  HttpResponse response = Rpc(R"({"clientId":"sensor-1"})");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, R"({"clientId":"sensor-1","uid":"uid-7","disconnected":true})");
  response = Rpc(R"({"uid":"0b0e6c1e-5c2a-4d7e-9f3a-1b2c3d4e5f60","unknownField":[1,2]})");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body,
            R"({"clientId":"found-by-uid","uid":"0b0e6c1e-5c2a-4d7e-9f3a-1b2c3d4e5f60",)"
            R"("disconnected":true})");
  // null is as good as absent.
  EXPECT_EQ(Rpc(R"({"clientId":null,"uid":"u"})").status, 200);
  ASSERT_EQ(targets_.size(), 3u);
  EXPECT_EQ(targets_[0].client_id, "sensor-1");
  EXPECT_EQ(targets_[0].uid, "");
  EXPECT_EQ(targets_[1].client_id, "");
  EXPECT_EQ(targets_[1].uid, "0b0e6c1e-5c2a-4d7e-9f3a-1b2c3d4e5f60");
  EXPECT_EQ(targets_[2].uid, "u");
  EXPECT_EQ(callers_[1].token_line, "admin token file line 3");
  for (const DisconnectTarget& target : targets_) EXPECT_FALSE(target.prevent_will);
}

// The will is published unless the request says preventWill true (null: as absent).
TEST_F(DisconnectViewTest, ConnectFormCarriesPreventWill) {
  EXPECT_EQ(Rpc(R"({"clientId":"a","preventWill":true})").status, 200);
  EXPECT_EQ(Rpc(R"({"clientId":"b","preventWill":false})").status, 200);
  EXPECT_EQ(Rpc(R"({"clientId":"c","preventWill":null})").status, 200);
  ASSERT_EQ(targets_.size(), 3u);
  EXPECT_TRUE(targets_[0].prevent_will);
  EXPECT_FALSE(targets_[1].prevent_will);
  EXPECT_FALSE(targets_[2].prevent_will);
  const HttpResponse response = Rpc(R"({"clientId":"d","preventWill":"yes"})");
  EXPECT_EQ(response.status, 400);
  EXPECT_THAT(response.body, HasSubstr("field 'preventWill' must be true or false"));
  EXPECT_EQ(targets_.size(), 3u);
  // Binary: field 3 prevent_will.
  const std::string binary(
      "\x0a\x01"
      "e"
      "\x18\x01",
      5);
  EXPECT_EQ(Rpc(binary, "application/proto").status, 200);
  ASSERT_EQ(targets_.size(), 4u);
  EXPECT_EQ(targets_[3].client_id, "e");
  EXPECT_TRUE(targets_[3].prevent_will);
}

TEST_F(DisconnectViewTest, ConnectFormRefusesARequestThatIsNotExactlyOneTarget) {
  const std::pair<const char*, const char*> rows[] = {
      {R"({"clientId":"c","uid":"u"})", "give exactly one of 'clientId' and 'uid'"},
      {R"({})", "give exactly one of 'clientId' and 'uid'"},
      {"", "give exactly one of 'clientId' and 'uid'"},  // an empty body is the empty message
      {R"({"clientId":"","uid":""})", "give exactly one of 'clientId' and 'uid'"},
      {R"({"clientId":7})", "field 'clientId' must be a string"},
      {R"({"uid":true})", "field 'uid' must be a string"},
      {R"([{"clientId":"c"}])", "request body is not a JSON object"},
      {R"("c")", "request body is not a JSON object"},
      {R"({"clientId":"c")", "request body is not a JSON object"},
  };
  for (const auto& [body, message] : rows) {
    SCOPED_TRACE(body);
    const HttpResponse response = Rpc(body);
    EXPECT_EQ(response.status, 400);
    EXPECT_THAT(response.body, HasSubstr(R"("code":"invalid_argument")"));
    EXPECT_THAT(response.body, HasSubstr(message));
  }
  const HttpResponse too_long = Rpc(R"({"clientId":")" + std::string(65536, 'x') + R"("})");
  EXPECT_EQ(too_long.status, 400);
  EXPECT_THAT(too_long.body, HasSubstr("client id must be 1 to 65535 bytes without NUL"));
  EXPECT_TRUE(targets_.empty());
}

TEST_F(DisconnectViewTest, ConnectFormChecksTheConnectHeadersFirst) {
  HttpResponse response = Rpc(R"({"clientId":"c"})", "text/plain");
  EXPECT_EQ(response.status, 415);
  HttpRequest request = Post(R"({"clientId":"c"})");
  request.headers.pop_back();  // no Connect-Protocol-Version
  response = ConnectRpcDisconnect(disconnector_, request, caller_);
  EXPECT_EQ(response.status, 400);
  EXPECT_THAT(response.body, HasSubstr("Connect-Protocol-Version"));
  EXPECT_TRUE(targets_.empty());
}

// The binary form carries the same message: field 1 client_id, 2 uid; the answer adds 3
// disconnected.
TEST_F(DisconnectViewTest, ConnectFormSpeaksBinaryProtobuf) {
  HttpResponse response = Rpc(std::string("\x0a\x02"
                                          "c1",
                                          4),
                              "application/proto");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.content_type, "application/proto");
  EXPECT_EQ(response.body, std::string("\x0a\x02"
                                       "c1"
                                       "\x12\x05"
                                       "uid-7"
                                       "\x18\x01",
                                       13));
  response = Rpc(std::string("\x12\x01u", 3), "application/proto");
  EXPECT_EQ(response.status, 200);
  ASSERT_EQ(targets_.size(), 2u);
  EXPECT_EQ(targets_[0].client_id, "c1");
  EXPECT_EQ(targets_[1].uid, "u");
  // Bytes that are no message, and an empty message, are refused before the broker is asked.
  response = Rpc(std::string("\x0a\x09short", 7), "application/proto");
  EXPECT_EQ(response.status, 400);
  response = Rpc("", "application/proto");
  EXPECT_EQ(response.status, 400);
  EXPECT_THAT(response.body, HasSubstr("give exactly one of 'clientId' and 'uid'"));
  EXPECT_EQ(targets_.size(), 2u);
}

}  // namespace
}  // namespace mqc
