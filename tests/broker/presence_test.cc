// SPDX-License-Identifier: BSD-3-Clause
#include "broker/presence.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "../support/client_facts_builder.h"
#include "../support/null_sink.h"
#include "../support/session_table_fixture.h"
#include "broker/connect_settlement.h"
#include "link/json_string.h"
#include "link/plugin_options.h"

namespace mqc {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Records every message as "<topic after the prefix> [retained] <payload>".
class RecordingPublisher : public PresencePublisher {
 public:
  bool Publish(const std::string& topic, const std::string& payload, bool retain) override {
    if (refuse) return false;
    topics.push_back(topic);
    const std::string prefix = "$SYS/brokers/node1/clients/";
    EXPECT_EQ(topic.compare(0, prefix.size(), prefix), 0) << topic;
    lines.push_back(topic.substr(prefix.size()) + (retain ? " retained " : " ") + payload);
    short_lines.push_back(topic.substr(prefix.size()) + (retain ? " retained" : ""));
    return true;
  }
  std::vector<std::string> topics;
  std::vector<std::string> lines;
  std::vector<std::string> short_lines;
  bool refuse = false;
};

std::int64_t FixedNow() { return 1700000000123456789; }

// The field names of EMQX's "Client Online and Offline Events"
// (https://docs.emqx.com/en/emqx/latest/observability/mqtt-system-topics.html), in its order
// of listing there; every one must be in the payload, and no other.
const std::set<std::string> kEmqxConnected = {
    "username",     "ts",        "sockport",  "proto_ver",
    "proto_name",   "keepalive", "ipaddress", "expiry_interval",
    "connected_at", "connack",   "clientid",  "clean_start"};
const std::set<std::string> kEmqxDisconnected = {
    "username",   "ts",        "sockport",        "reason",  "proto_ver",
    "proto_name", "ipaddress", "disconnected_at", "clientid"};

// The keys of a flat JSON object (the payloads have no nesting and no ':' in keys).
std::set<std::string> Keys(const std::string& json) {
  std::set<std::string> keys;
  bool in_string = false;
  bool escaped = false;
  std::string current;
  bool after_value_start = true;  // at '{' or ',': the next string is a key
  bool reading_key = false;
  for (const char c : json) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
        if (reading_key) keys.insert(current);
        reading_key = false;
        continue;
      }
      if (reading_key) current.push_back(c);
      continue;
    }
    if (c == '"') {
      in_string = true;
      reading_key = after_value_start;
      after_value_start = false;
      current.clear();
    } else if (c == '{' || c == ',') {
      after_value_start = true;
    }
  }
  return keys;
}

// The session table's test fixture with presence observing the table.
class PresenceTest : public SessionTableTest {
 protected:
  PresenceTest() {
    PresenceOptions options;
    options.events = true;
    options.retained = true;
    options.node = "node1";
    presence_ = std::make_unique<Presence>(options, &publisher_, FixedNow);
    table_.SetObserver(presence_.get());
  }
  RecordingPublisher publisher_;
  std::unique_ptr<Presence> presence_;
};

TEST(PresencePayloadTest, ConnectedHasEmqxsFieldsAndValues) {
  ObservedConnection c;
  c.client_id = "sensor-\"1\"";
  c.username = "alice";
  c.ip_address = "::1";
  c.local_port = 1884;
  c.protocol_version = 5;
  c.keep_alive = 30;
  c.clean_session = false;
  c.open_time_ns = 1700000000999000000;
  std::string out;
  BuildConnectedPayload(c, 3600, FixedNow(), &out);
  EXPECT_EQ(out,
            "{\"clientid\":\"sensor-\\\"1\\\"\",\"username\":\"alice\",\"ipaddress\":\"::1\","
            "\"sockport\":1884,\"proto_name\":\"MQTT\",\"proto_ver\":5,\"keepalive\":30,"
            "\"clean_start\":false,\"expiry_interval\":3600,\"connack\":0,"
            "\"connected_at\":1700000000999,\"ts\":1700000000123}");
  EXPECT_EQ(Keys(out), kEmqxConnected);
}

TEST(PresencePayloadTest, DisconnectedHasEmqxsFieldsAndOmitsAMissingUsername) {
  ObservedConnection c;
  c.client_id = "a\nb";
  c.ip_address = "127.0.0.1";
  c.local_port = 1883;
  c.protocol_version = 3;
  std::string out;
  BuildDisconnectedPayload(c, CloseReason::kKicked, 1700000000500000000, FixedNow(), &out);
  EXPECT_EQ(out,
            "{\"clientid\":\"a\\nb\",\"ipaddress\":\"127.0.0.1\",\"sockport\":1883,"
            "\"proto_name\":\"MQIsdp\",\"proto_ver\":3,\"reason\":\"kicked\","
            "\"disconnected_at\":1700000000500,\"ts\":1700000000123}");
  std::set<std::string> expected = kEmqxDisconnected;
  expected.erase("username");
  EXPECT_EQ(Keys(out), expected);
  c.username = "bob";
  BuildDisconnectedPayload(c, CloseReason::kKicked, 0, 0, &out);
  EXPECT_NE(out.find("\"username\":\"bob\""), std::string::npos);
  EXPECT_EQ(Keys(out), kEmqxDisconnected);
}

// Escaped as the companion escapes its answers (link/json_string.h): one escaper for both.
TEST(PresencePayloadTest, StringsAreEscapedAsJsonNeeds) {
  ObservedConnection c;
  c.client_id = std::string_view(
      "a\"b\\c\x01"
      "d\x7f\xc3\xa9\xff\t",
      12);
  c.username = "u";
  std::string out;
  BuildDisconnectedPayload(c, CloseReason::kClientDisconnect, 0, 0, &out);
  std::string expected = "{\"clientid\":";
  AppendJsonString(c.client_id, &expected);
  EXPECT_EQ(expected,
            "{\"clientid\":\"a\\\"b\\\\c\\u0001d\x7f\xc3\xa9\xef\xbf\xbd\\t\"");
  expected += ",\"username\":\"u\"";
  EXPECT_EQ(out.substr(0, expected.size()), expected);
}

TEST(PresencePayloadTest, ReasonsUseEmqxsWordsWhereTheyMatch) {
  EXPECT_STREQ(PresenceReason(CloseReason::kClientDisconnect), "normal");
  EXPECT_STREQ(PresenceReason(CloseReason::kConnectionLost), "tcp_closed");
  EXPECT_STREQ(PresenceReason(CloseReason::kSessionTakenOver), "takenover");
  EXPECT_STREQ(PresenceReason(CloseReason::kKicked), "kicked");
  EXPECT_STREQ(PresenceReason(CloseReason::kAccessRevoked), "access_revoked");
  EXPECT_STREQ(PresenceReason(CloseReason::kBrokerShutdown), "shutdown");
  EXPECT_STREQ(PresenceReason(CloseReason::kAuthenticationFailed), "not_authorized");
  EXPECT_STREQ(PresenceReason(CloseReason::kUnspecified), "unknown");
  EXPECT_STREQ(PresenceReason(static_cast<CloseReason>(200)), "unknown");
}

TEST(PresencePayloadTest, NodesAndClientIdsMustBeOneTopicLevel) {
  // The default is a node the option itself would accept (its rule: plugin_options_test).
  const StatusOr<PluginOptions> parsed =
      ParsePluginOptions({{"presence_node", DefaultPresenceNode()}});
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(DefaultPresenceNode().rfind("mosquitto@", 0), 0U);
  EXPECT_TRUE(IsPresenceClientId("plant/line-1"));
  EXPECT_FALSE(IsPresenceClientId(""));
  EXPECT_FALSE(IsPresenceClientId("a+b"));
  EXPECT_FALSE(IsPresenceClientId("a#"));
}

TEST_F(PresenceTest, AnAcceptedConnectPublishesConnectedThenOnlineAndItsCloseDisconnected) {
  connects_.BeginConnect(a_, Facts("s1"), 1000000000);
  EXPECT_THAT(publisher_.lines, IsEmpty());  // not yet accepted
  connects_.Settle();
  connects_.Disconnect(a_, true, CloseReason::kClientDisconnect, 2000000000);
  EXPECT_THAT(publisher_.short_lines, ElementsAre("s1/connected", "s1/state retained",
                                                  "s1/disconnected", "s1/state retained"));
  EXPECT_EQ(publisher_.lines[1], "s1/state retained online");
  EXPECT_EQ(publisher_.lines[3], "s1/state retained ");  // a clean session ends: cleared
  EXPECT_NE(publisher_.lines[2].find("\"reason\":\"normal\",\"disconnected_at\":2000,"),
            std::string::npos);
  EXPECT_NE(publisher_.lines[0].find("\"connected_at\":1000,"), std::string::npos);
  EXPECT_EQ(presence_->published(), 4U);
}

TEST_F(PresenceTest, ARefusedConnectPublishesNothing) {
  connects_.BeginConnect(a_, Facts("s1"), 1);
  connects_.Disconnect(a_, /*has_client_id=*/false, CloseReason::kUnspecified, 2);
  connects_.Settle();
  EXPECT_THAT(publisher_.lines, IsEmpty());
}

TEST_F(PresenceTest, ATakeoverClosesTheOldConnectionBeforeTheNewOneOpens) {
  connects_.BeginConnect(a_, Facts("s1"), 1);
  connects_.Settle();
  publisher_.short_lines.clear();
  connects_.BeginConnect(b_, Facts("s1"), 2);
  connects_.Disconnect(a_, true, CloseReason::kConnectionLost, 3);  // inside the new CONNECT
  connects_.Settle();
  EXPECT_THAT(publisher_.short_lines,
              ElementsAre("s1/disconnected", "s1/connected", "s1/state retained"));
  EXPECT_NE(publisher_.lines[2].find("\"reason\":\"takenover\""), std::string::npos);
}

TEST_F(PresenceTest, AReloadsRecheckPublishesNothingButARevocationDoes) {
  connects_.BeginConnect(a_, Facts("s1"), 1);
  connects_.Settle();
  publisher_.lines.clear();
  connects_.BeginReload();
  EXPECT_TRUE(connects_.IsRecheck(a_, true));
  connects_.EndReload();
  EXPECT_THAT(publisher_.lines, IsEmpty());
  connects_.BeginReload();
  connects_.Disconnect(a_, true, CloseReason::kUnspecified, 5);
  connects_.EndReload();
  ASSERT_EQ(publisher_.lines.size(), 2U);
  EXPECT_NE(publisher_.lines[0].find("\"reason\":\"access_revoked\""), std::string::npos);
}

TEST_F(PresenceTest, AKicksHeldRecheckDoesNotDelayTheDisconnected) {
  connects_.BeginConnect(a_, Facts("s1", /*clean=*/false), 1);
  connects_.Settle();
  connects_.Subscribe(a_, "events/x", 1);
  connects_.Subscribe(a_, "events/x", 0);  // a kick's re-check: held
  connects_.Disconnect(a_, true, CloseReason::kKicked, 2);
  EXPECT_THAT(publisher_.short_lines, ElementsAre("s1/connected", "s1/state retained",
                                                  "s1/disconnected", "s1/state retained"));
  EXPECT_NE(publisher_.lines[2].find("\"reason\":\"kicked\""), std::string::npos);
  EXPECT_EQ(publisher_.lines[3], "s1/state retained offline");  // the session stays
}

TEST_F(PresenceTest, APersistentSessionGoesOfflineAndIsClearedWhenItExpires) {
  presence_->SetPersistentClientExpiration(60);
  table_.SetPersistentClientExpiration(60);
  connects_.BeginConnect(a_, Facts("s1", /*clean=*/false), 1);
  connects_.Settle();
  EXPECT_NE(publisher_.lines[0].find("\"clean_start\":false,\"expiry_interval\":60,"),
            std::string::npos);
  connects_.Disconnect(a_, true, CloseReason::kClientDisconnect, 1000000000);
  EXPECT_EQ(publisher_.lines.back(), "s1/state retained offline");
  table_.ExpireOffline(30000000000);
  EXPECT_EQ(publisher_.lines.size(), 4U);
  table_.ExpireOffline(62000000000);
  EXPECT_EQ(publisher_.lines.size(), 5U);
  EXPECT_EQ(publisher_.lines.back(), "s1/state retained ");
}

TEST_F(PresenceTest, ARestoredSessionPublishesNothingUntilItConnects) {
  table_.SetPersistentClientExpiration(60);
  PersistedSession restored;
  restored.client_id = "old";
  table_.RestoreOffline({restored}, 1);
  table_.ExpireOffline(1);
  EXPECT_THAT(publisher_.lines, IsEmpty());
  connects_.BeginConnect(a_, Facts("old", /*clean=*/false), 2);
  connects_.Settle();
  EXPECT_THAT(publisher_.short_lines, ElementsAre("old/connected", "old/state retained"));
}

TEST_F(PresenceTest, ClientIdsThatAreNoTopicLevelAreSkipped) {
  connects_.BeginConnect(a_, Facts("a+b"), 1);
  connects_.Settle();
  connects_.Disconnect(a_, true, CloseReason::kClientDisconnect, 2);
  EXPECT_THAT(publisher_.lines, IsEmpty());
  EXPECT_EQ(presence_->skipped(), 1U);
}

TEST_F(PresenceTest, PresenceTopicsAreRecognisedByTheirPrefix) {
  EXPECT_TRUE(presence_->IsPresenceTopic("$SYS/brokers/node1/clients/x/connected"));
  EXPECT_FALSE(presence_->IsPresenceTopic("$SYS/brokers/node2/clients/x/connected"));
  EXPECT_FALSE(presence_->IsPresenceTopic("$SYS/broker/clients/connected"));
  EXPECT_FALSE(presence_->IsPresenceTopic("events/a"));
}

TEST(PresenceOptionsTest, EventsAloneOrStateAloneCanBeOn) {
  RecordingPublisher publisher;
  NullSink sink;
  SessionTable table(&sink, 1);
  ConnectSettlement connects(&table);
  PresenceOptions options;
  options.node = "node1";
  options.retained = true;  // without events: only the state topic
  Presence presence(options, &publisher, FixedNow);
  table.SetObserver(&presence);
  int client = 0;
  connects.BeginConnect(&client, Facts("s1"), 1);
  connects.Settle();
  EXPECT_THAT(publisher.short_lines, ElementsAre("s1/state retained"));
  publisher.refuse = true;
  connects.Disconnect(&client, true, CloseReason::kClientDisconnect, 2);
  EXPECT_EQ(presence.refused(), 1U);
}

}  // namespace
}  // namespace mqc
