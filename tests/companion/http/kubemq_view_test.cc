// SPDX-License-Identifier: BSD-3-Clause
// KubeMqView: the GET /api/mqtt/connections body, byte for byte, and every query parameter and
// refusal. Also the json_util helpers it is built on.
#include "companion/http/kubemq_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "../../support/cjson_builders.h"
#include "../../support/connection_builder.h"
#include "companion/connection.h"
#include "companion/json_util.h"
#include "link/topic_mapping.h"

namespace mqc {
namespace {

using ::testing::ElementsAre;

constexpr std::int64_t kSecond = 1'000'000'000;
constexpr std::int64_t kJune12 = 1781260200 * kSecond;  // 2026-06-12T10:30:00Z

Connection MakeConnection(std::string client_id, std::int64_t open_time_ns) {
  Connection connection = TestConnection(0);
  connection.client_id = std::move(client_id);
  connection.open_time_ns = open_time_ns;
  connection.ip_address = "10.0.0.1";
  return connection;
}

// The KubeMQ page's live example, as the registry would hold it.
Connection PageExample() {
  Connection connection = MakeConnection("go-example-01", kJune12 + 123456789);
  connection.protocol_version = 5;
  connection.ip_address = "127.0.0.1";
  connection.port = 55412;
  connection.clean_session = true;
  connection.subscriptions.push_back(MappedSubscription("events/site1/#", 1));
  // The page shows the filter without its "$share/workers/" envelope; the mapping is the same.
  Subscription queue;
  queue.filter = "queues/jobs/email";
  queue.qos = 1;
  queue.mapping.pattern = Pattern::kQueues;
  queue.mapping.channel = "jobs.email";
  queue.mapping.shared_group = "workers";
  connection.subscriptions.push_back(queue);
  return connection;
}

HttpResponse List(std::vector<Connection> snapshot, QueryParams params = {}) {
  return KubeMqView().ListConnections(std::move(snapshot), params);
}

// The client ids listed, in order; fails the test on anything but a 200 with a valid envelope.
std::vector<std::string> ListedIds(std::vector<Connection> snapshot, QueryParams params) {
  const HttpResponse response = List(std::move(snapshot), std::move(params));
  EXPECT_EQ(response.status, 200) << response.body;
  std::vector<std::string> ids;
  const CjsonPtr root = ParseJson(response.body);
  if (root == nullptr) {
    ADD_FAILURE() << "not JSON: " << response.body;
    return ids;
  }
  const cJSON* data = cJSON_GetObjectItemCaseSensitive(root.get(), "data");
  const cJSON* connections = cJSON_GetObjectItemCaseSensitive(data, "connections");
  const cJSON* total = cJSON_GetObjectItemCaseSensitive(data, "total");
  const cJSON* item = nullptr;
  cJSON_ArrayForEach(item, connections) {
    ids.emplace_back(cJSON_GetObjectItemCaseSensitive(item, "client_id")->valuestring);
  }
  EXPECT_TRUE(cJSON_IsNumber(total));
  EXPECT_EQ(cJSON_GetNumberValue(total), static_cast<double>(ids.size()));
  return ids;
}

// The error_string of a 400, after checking the rest of the envelope.
std::string Refusal(QueryParams params) {
  const HttpResponse response = List({MakeConnection("a", kJune12)}, std::move(params));
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(response.content_type, "application/json");
  const CjsonPtr root = ParseJson(response.body);
  if (root == nullptr) return "not JSON: " + response.body;
  EXPECT_TRUE(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root.get(), "error")));
  EXPECT_TRUE(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root.get(), "data")));
  const cJSON* message = cJSON_GetObjectItemCaseSensitive(root.get(), "error_string");
  return cJSON_IsString(message) ? message->valuestring : "no error_string";
}

// --- the body, exactly ---------------------------------------------------------------------

TEST(KubeMqViewTest, EmptyListIsThePagesEmptyExample) {
  const HttpResponse response = List({});
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.content_type, "application/json");
  EXPECT_EQ(response.body,
            R"({"error":false,"error_string":"","data":{"connections":[],"total":0}})");
}

TEST(KubeMqViewTest, PagesLiveExampleByteForByte) {
  const HttpResponse response = List({PageExample()});
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(
      response.body,
      R"({"error":false,"error_string":"","data":{"connections":[{"client_id":"go-example-01",)"
      R"("protocol_version":5,"remote_addr":"127.0.0.1:55412",)"
      R"("connected_at":"2026-06-12T10:30:00Z","clean_session":true,"subscriptions":[)"
      R"({"filter":"events/site1/#","qos":1,"pattern":"events","channel":"site1.>",)"
      R"("shared_group":""},{"filter":"queues/jobs/email","qos":1,"pattern":"queues",)"
      R"("channel":"jobs.email","shared_group":"workers"}]}],"total":1}})");
}

TEST(KubeMqViewTest, Ipv6UsernameLocalTopicAndNoSubscriptions) {
  Connection v6 = MakeConnection("v6-client", kJune12 + 2 * kSecond);
  v6.ip_address = "2001:db8::1";
  v6.port = 1883;
  v6.username = "alice";
  v6.clean_session = false;
  v6.protocol_version = 3;
  v6.subscriptions.push_back(MappedSubscription("$reply/abc", 0));
  v6.subscriptions.push_back(MappedSubscription("$share/g1/queues/q", 2));
  Connection bare = MakeConnection("bare", kJune12 + kSecond);
  EXPECT_EQ(List({v6, bare}).body,
            R"({"error":false,"error_string":"","data":{"connections":[)"
            R"({"client_id":"bare","protocol_version":4,"remote_addr":"10.0.0.1:40000",)"
            R"("connected_at":"2026-06-12T10:30:01Z","clean_session":true,"subscriptions":[]},)"
            R"({"client_id":"v6-client","protocol_version":3,"remote_addr":"[2001:db8::1]:1883",)"
            R"("connected_at":"2026-06-12T10:30:02Z","clean_session":false,"username":"alice",)"
            R"("subscriptions":[{"filter":"$reply/abc","qos":0,"pattern":"","channel":"",)"
            R"("shared_group":""},{"filter":"$share/g1/queues/q","qos":2,"pattern":"queues",)"
            R"("channel":"q","shared_group":"g1"}]}],"total":2}})");
}

TEST(KubeMqViewTest, ParsedFieldsHaveTheDocumentedTypes) {
  Connection connection = PageExample();
  connection.username = "bob";
  const CjsonPtr root = ParseJson(List({connection}).body);
  ASSERT_NE(root, nullptr);
  EXPECT_TRUE(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(root.get(), "error")));
  const cJSON* data = cJSON_GetObjectItemCaseSensitive(root.get(), "data");
  const cJSON* first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(data, "connections"), 0);
  ASSERT_NE(first, nullptr);
  std::vector<std::string> keys;
  const cJSON* field = nullptr;
  cJSON_ArrayForEach(field, first) { keys.emplace_back(field->string); }
  EXPECT_THAT(keys, ElementsAre("client_id", "protocol_version", "remote_addr", "connected_at",
                                "clean_session", "username", "subscriptions"));
  EXPECT_TRUE(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(first, "protocol_version")));
  EXPECT_TRUE(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(first, "clean_session")));
  EXPECT_STREQ(cJSON_GetObjectItemCaseSensitive(first, "username")->valuestring, "bob");
  const cJSON* subscription =
      cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(first, "subscriptions"), 1);
  keys.clear();
  cJSON_ArrayForEach(field, subscription) { keys.emplace_back(field->string); }
  EXPECT_THAT(keys, ElementsAre("filter", "qos", "pattern", "channel", "shared_group"));
  EXPECT_TRUE(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(subscription, "qos")));
}

TEST(KubeMqViewTest, RemoteAddressWithoutPortOrAddress) {
  Connection v4 = MakeConnection("v4", kJune12);
  v4.port = 0;
  Connection v6 = MakeConnection("v6", kJune12 + 1 * kSecond);
  v6.ip_address = "::1";
  v6.port = 0;
  Connection unknown = MakeConnection("unknown", kJune12 + 2 * kSecond);
  unknown.ip_address.clear();
  const CjsonPtr root = ParseJson(List({v4, v6, unknown}).body);
  ASSERT_NE(root, nullptr);
  const cJSON* connections = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(root.get(), "data"), "connections");
  std::vector<std::string> addresses;
  const cJSON* item = nullptr;
  cJSON_ArrayForEach(item, connections) {
    addresses.emplace_back(cJSON_GetObjectItemCaseSensitive(item, "remote_addr")->valuestring);
  }
  EXPECT_THAT(addresses, ElementsAre("10.0.0.1", "::1", ""));
}

TEST(KubeMqViewTest, StringsAreEscapedAndKeptValidUtf8) {
  Connection connection = MakeConnection("quote\"back\\slash\ttab/slash", kJune12);
  connection.username = "caf\xC3\xA9 \xFF";  // é, then a byte that is never UTF-8
  const std::string body = List({connection}).body;
  EXPECT_NE(body.find(R"("client_id":"quote\"back\\slash\ttab/slash")"), std::string::npos) << body;
  EXPECT_NE(body.find("\"username\":\"caf\xC3\xA9 \xEF\xBF\xBD\""), std::string::npos) << body;
}

// --- selection and order -------------------------------------------------------------------

TEST(KubeMqViewTest, OnlyOpenConnectionsOrderedByConnectTimeThenClientId) {
  Connection closed = MakeConnection("closed", kJune12);
  closed.state = ConnectionState::kClosed;
  closed.close_time_ns = kJune12 + kSecond;
  EXPECT_THAT(ListedIds({MakeConnection("late", kJune12 + 5), MakeConnection("b", kJune12), closed,
                         MakeConnection("a", kJune12), MakeConnection("early", 7)},
                        {}),
              ElementsAre("early", "a", "b", "late"));
}

// The contract: the broker's internal bridge clients are not listed. Its own bridge (outgoing)
// is left out, with or without other parameters; a remote broker's bridge connected here is
// a network client of this broker and is listed, as are connections of unknown role.
TEST(KubeMqViewTest, TheBrokersOwnBridgeIsNotListed) {
  Connection own = MakeConnection("local.edge.to-cloud", kJune12);
  own.bridge = BridgeRole::kOutgoing;
  Connection incoming = MakeConnection("cloud.to-edge", kJune12 + 1);
  incoming.bridge = BridgeRole::kIncoming;
  Connection unknown = MakeConnection("unknown", kJune12 + 2);
  Connection plain = MakeConnection("plain", kJune12 + 3);
  plain.bridge = BridgeRole::kNone;
  const std::vector<Connection> all = {own, incoming, unknown, plain};
  // One shown second: client_id order.
  EXPECT_THAT(ListedIds(all, {}), ElementsAre("cloud.to-edge", "plain", "unknown"));
  EXPECT_THAT(ListedIds(all, {{"client_id", "local.edge.to-cloud"}}), ElementsAre());
  EXPECT_THAT(ListedIds(all, {{"client_id", "local.*"}, {"client_id", "cloud.*"}}),
              ElementsAre("cloud.to-edge"));
  const std::string body = List(all).body;
  EXPECT_NE(body.find("\"total\":3"), std::string::npos) << body;
}

TEST(KubeMqViewTest, WithinOneShownSecondClientIdDecides) {
  // connected_at shows whole seconds: "zed" came first within the second, yet "amy" is listed
  // first, as the page's order (connected_at, then client_id) says.
  EXPECT_THAT(ListedIds({MakeConnection("zed", kJune12 + 1), MakeConnection("amy", kJune12 + 900),
                         MakeConnection("next", kJune12 + kSecond)},
                        {}),
              ElementsAre("amy", "zed", "next"));
}

std::vector<Connection> SampleConnections() {
  Connection alpha = MakeConnection("sensor-1", kJune12 + 1 * kSecond);
  alpha.username = "alice";
  alpha.protocol_version = 5;
  alpha.subscriptions.push_back(MappedSubscription("queues/jobs", 1));
  Connection beta = MakeConnection("sensor-2", kJune12 + 2 * kSecond);
  beta.username = "bob";
  beta.protocol_version = 4;
  beta.subscriptions.push_back(MappedSubscription("events/x/#", 0));
  beta.subscriptions.push_back(MappedSubscription("$share/g/queues/jobs", 1));
  Connection gamma = MakeConnection("actuator", kJune12 + 3 * kSecond);
  gamma.username = "alice-admin";
  gamma.protocol_version = 3;
  gamma.subscriptions.push_back(MappedSubscription("commands/door", 1));
  Connection star = MakeConnection("sensor-*", kJune12 + 4 * kSecond);
  star.protocol_version = 5;
  return {alpha, beta, gamma, star};
}

TEST(KubeMqViewTest, ClientIdExactAndPrefix) {
  EXPECT_THAT(ListedIds(SampleConnections(), {{"client_id", "sensor-2"}}), ElementsAre("sensor-2"));
  EXPECT_THAT(ListedIds(SampleConnections(), {{"client_id", "sensor-"}}), ElementsAre());
  EXPECT_THAT(ListedIds(SampleConnections(), {{"client_id", "sensor-*"}}),
              ElementsAre("sensor-1", "sensor-2", "sensor-*"));
  EXPECT_THAT(ListedIds(SampleConnections(), {{"client_id", "act*"}}), ElementsAre("actuator"));
  EXPECT_THAT(ListedIds(SampleConnections(), {{"client_id", "nobody"}}), ElementsAre());
}

TEST(KubeMqViewTest, RepeatedClientIdListsAnyOfThem) {
  EXPECT_THAT(
      ListedIds(SampleConnections(), {{"client_id", "actuator"}, {"client_id", "sensor-2"}}),
      ElementsAre("sensor-2", "actuator"));
  // The same value twice, a value nobody has, a prefix among exact ids.
  EXPECT_THAT(
      ListedIds(SampleConnections(),
                {{"client_id", "sensor-1"}, {"client_id", "nobody"}, {"client_id", "sensor-1"}}),
      ElementsAre("sensor-1"));
  EXPECT_THAT(ListedIds(SampleConnections(), {{"client_id", "act*"}, {"client_id", "sensor-1"}}),
              ElementsAre("sensor-1", "actuator"));
  // With the other parameters, which still hold for each.
  EXPECT_THAT(
      ListedIds(SampleConnections(),
                {{"client_id", "sensor-1"}, {"protocol_version", "5"}, {"client_id", "sensor-*"}}),
      ElementsAre("sensor-1", "sensor-*"));
  // Up to 10000 values; one more is refused, and so is an empty one among them.
  std::vector<Connection> snapshot;
  QueryParams params;
  for (int i = 0; i < 10000; ++i) {
    snapshot.push_back(MakeConnection("c" + std::to_string(i), i * kSecond));
    if (i % 2 == 0) params.emplace_back("client_id", "c" + std::to_string(i));
  }
  for (int i = 0; i < 5000; ++i) params.emplace_back("client_id", "none" + std::to_string(i));
  EXPECT_EQ(ListedIds(snapshot, params).size(), 5000u);
  params.emplace_back("client_id", "c1");
  EXPECT_EQ(Refusal(params), "query parameter 'client_id' is given more than 10000 times");
  EXPECT_EQ(Refusal({{"client_id", "a"}, {"client_id", ""}}),
            "query parameter 'client_id' is empty; expected a client id, or a prefix ending in *");
}

TEST(KubeMqViewTest, ClientIdWithSpecialCharactersMatchesExactly) {
  std::vector<Connection> snapshot = {MakeConnection("a\"b\\c*d", 1),
                                      MakeConnection("a\"b\\cXd", 2)};
  EXPECT_THAT(ListedIds(snapshot, {{"client_id", "a\"b\\c*d"}}), ElementsAre("a\"b\\c*d"));
  EXPECT_THAT(ListedIds(snapshot, {{"client_id", "a\"b\\c*"}}),
              ElementsAre("a\"b\\c*d", "a\"b\\cXd"));
}

// The parameters reach the engine as typed clauses, not as filter text: a client id far past
// the filter's 1,024 characters selects exactly itself, and so does one with every character
// the filter grammar would have to quote or escape.
TEST(KubeMqViewTest, ClientIdOfAnyLengthMatchesExactly) {
  const std::string long_id(5000, 'k');
  std::vector<Connection> snapshot = {MakeConnection(long_id, 1), MakeConnection(long_id + "x", 2),
                                      MakeConnection(long_id.substr(1), 3)};
  EXPECT_THAT(ListedIds(snapshot, {{"client_id", long_id}}), ElementsAre(long_id));
  EXPECT_THAT(ListedIds(snapshot, {{"client_id", long_id + "*"}}),
              ElementsAre(long_id, long_id + "x"));
}

TEST(KubeMqViewTest, ClientIdWithFilterSyntaxMatchesExactly) {
  const std::string tricky = "a b\t\"q\" AND username = \"x\" OR (c) != <d> \\u0041 \\*";
  std::vector<Connection> snapshot = {MakeConnection(tricky, 1), MakeConnection("a b", 2),
                                      MakeConnection("x", 3)};
  snapshot[2].username = "x";
  EXPECT_THAT(ListedIds(snapshot, {{"client_id", tricky}}), ElementsAre(tricky));
  EXPECT_THAT(ListedIds(snapshot, {{"username", "x\" OR \"1\" = \"1"}}), ElementsAre());
}

TEST(KubeMqViewTest, UsernameExactAndPrefix) {
  EXPECT_THAT(ListedIds(SampleConnections(), {{"username", "alice"}}), ElementsAre("sensor-1"));
  EXPECT_THAT(ListedIds(SampleConnections(), {{"username", "alice*"}}),
              ElementsAre("sensor-1", "actuator"));
}

TEST(KubeMqViewTest, PatternSelectsConnectionsWithSuchASubscription) {
  EXPECT_THAT(ListedIds(SampleConnections(), {{"pattern", "queues"}}),
              ElementsAre("sensor-1", "sensor-2"));
  EXPECT_THAT(ListedIds(SampleConnections(), {{"pattern", "events"}}), ElementsAre("sensor-2"));
  EXPECT_THAT(ListedIds(SampleConnections(), {{"pattern", "commands"}}), ElementsAre("actuator"));
  EXPECT_THAT(ListedIds(SampleConnections(), {{"pattern", "store"}}), ElementsAre());
  EXPECT_THAT(ListedIds(SampleConnections(), {{"pattern", "queries"}}), ElementsAre());
}

TEST(KubeMqViewTest, ProtocolVersion) {
  EXPECT_THAT(ListedIds(SampleConnections(), {{"protocol_version", "5"}}),
              ElementsAre("sensor-1", "sensor-*"));
  EXPECT_THAT(ListedIds(SampleConnections(), {{"protocol_version", "4"}}), ElementsAre("sensor-2"));
  EXPECT_THAT(ListedIds(SampleConnections(), {{"protocol_version", "3"}}), ElementsAre("actuator"));
}

TEST(KubeMqViewTest, LimitAndOffsetPageAndTotalCountsThePage) {
  EXPECT_THAT(ListedIds(SampleConnections(), {{"limit", "2"}}),
              ElementsAre("sensor-1", "sensor-2"));
  EXPECT_THAT(ListedIds(SampleConnections(), {{"limit", "2"}, {"offset", "2"}}),
              ElementsAre("actuator", "sensor-*"));
  EXPECT_THAT(ListedIds(SampleConnections(), {{"offset", "3"}}), ElementsAre("sensor-*"));
  EXPECT_THAT(ListedIds(SampleConnections(), {{"offset", "4"}}), ElementsAre());
  EXPECT_THAT(ListedIds(SampleConnections(), {{"offset", "9223372036854775807"}}), ElementsAre());
  EXPECT_THAT(ListedIds(SampleConnections(), {{"limit", "10000"}, {"offset", "0"}}),
              ElementsAre("sensor-1", "sensor-2", "actuator", "sensor-*"));
  EXPECT_THAT(ListedIds(SampleConnections(), {{"limit", "007"}}),
              ElementsAre("sensor-1", "sensor-2", "actuator", "sensor-*"));
}

TEST(KubeMqViewTest, ParametersCombine) {
  EXPECT_THAT(
      ListedIds(
          SampleConnections(),
          {{"client_id", "sensor-*"}, {"protocol_version", "5"}, {"offset", "1"}, {"limit", "1"}}),
      ElementsAre("sensor-*"));
  EXPECT_THAT(ListedIds(SampleConnections(),
                        {{"username", "bob"}, {"pattern", "queues"}, {"client_id", "sensor-2"}}),
              ElementsAre("sensor-2"));
  EXPECT_THAT(ListedIds(SampleConnections(), {{"username", "bob"}, {"pattern", "commands"}}),
              ElementsAre());
}

TEST(KubeMqViewTest, WithoutLimitEveryConnectionIsListed) {
  std::vector<Connection> snapshot;
  for (int i = 0; i < 10001; ++i) {
    snapshot.push_back(MakeConnection("c" + std::to_string(i), i * kSecond));
  }
  const std::vector<std::string> ids = ListedIds(snapshot, {});
  ASSERT_EQ(ids.size(), 10001u);
  EXPECT_EQ(ids.front(), "c0");
  EXPECT_EQ(ids.back(), "c10000");
  EXPECT_EQ(ListedIds(snapshot, {{"offset", "10000"}}), std::vector<std::string>{"c10000"});
  EXPECT_EQ(ListedIds(snapshot, {{"limit", "10000"}}).size(), 10000u);
}

// --- refusals ------------------------------------------------------------------------------

TEST(KubeMqViewTest, UnknownParameterIsRefused) {
  EXPECT_EQ(Refusal({{"clientid", "a"}}),
            "unknown query parameter 'clientid'; accepted: client_id, username, pattern, "
            "protocol_version, limit, offset");
  EXPECT_EQ(Refusal({{"limit", "1"}, {"", ""}}),
            "unknown query parameter ''; accepted: client_id, username, pattern, "
            "protocol_version, limit, offset");
}

TEST(KubeMqViewTest, RepeatedParameterIsRefused) {
  EXPECT_EQ(Refusal({{"limit", "1"}, {"client_id", "a"}, {"limit", "2"}}),
            "query parameter 'limit' is given more than once ('1', then '2'); expected it once");
  EXPECT_EQ(Refusal({{"pattern", "events"}, {"pattern", "events"}}),
            "query parameter 'pattern' is given more than once ('events', then 'events'); "
            "expected it once");
}

TEST(KubeMqViewTest, EmptyValuesAreRefused) {
  EXPECT_EQ(Refusal({{"client_id", ""}}),
            "query parameter 'client_id' is empty; expected a client id, or a prefix ending in *");
  EXPECT_EQ(Refusal({{"username", ""}}),
            "query parameter 'username' is empty; expected a username, or a prefix ending in *");
  EXPECT_EQ(Refusal({{"pattern", ""}}),
            "query parameter 'pattern' is empty; expected one of events, store, queues, "
            "commands, queries");
  EXPECT_EQ(Refusal({{"protocol_version", ""}}),
            "query parameter 'protocol_version' is empty; expected 3, 4 or 5");
  EXPECT_EQ(Refusal({{"limit", ""}}),
            "query parameter 'limit' is empty; expected an integer from 1 to 10000");
  EXPECT_EQ(Refusal({{"offset", ""}}),
            "query parameter 'offset' is empty; expected an integer from 0");
}

TEST(KubeMqViewTest, BadValuesAreRefused) {
  EXPECT_EQ(Refusal({{"pattern", "Events"}}),
            "query parameter 'pattern' is 'Events'; expected one of events, store, queues, "
            "commands, queries");
  for (const char* bad : {"6", "2", "0", "4.0", "+4", " 4", "four"}) {
    EXPECT_EQ(
        Refusal({{"protocol_version", bad}}),
        std::string("query parameter 'protocol_version' is '") + bad + "'; expected 3, 4 or 5");
  }
  for (const char* bad : {"0", "10001", "-1", "1e3", "abc", "99999999999999999999"}) {
    EXPECT_EQ(Refusal({{"limit", bad}}), std::string("query parameter 'limit' is '") + bad +
                                             "'; expected an integer from 1 to 10000");
  }
  for (const char* bad : {"-1", "x", "9223372036854775808", "1 "}) {
    EXPECT_EQ(Refusal({{"offset", bad}}),
              std::string("query parameter 'offset' is '") + bad + "'; expected an integer from 0");
  }
}

TEST(KubeMqViewTest, EchoedValuesAreShortAndValidUtf8) {
  EXPECT_EQ(Refusal({{"pattern", std::string(100, 'x')}}),
            "query parameter 'pattern' is '" + std::string(64, 'x') +
                "...'; expected one of events, store, queues, commands, queries");
  EXPECT_EQ(Refusal({{"pattern", std::string("a\0b\xFF", 4)}}),
            "query parameter 'pattern' is 'a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD'; expected one of "
            "events, store, queues, commands, queries");
}

TEST(KubeMqViewTest, ErrorEnvelopeByteForByte) {
  const HttpResponse response = KubeMqView::Error(404, "unknown path '/x'");
  EXPECT_EQ(response.status, 404);
  EXPECT_EQ(response.content_type, "application/json");
  EXPECT_EQ(response.body, R"({"error":true,"error_string":"unknown path '/x'","data":null})");
}

// --- json_util -----------------------------------------------------------------------------

TEST(JsonUtilTest, Rfc3339Seconds) {
  EXPECT_EQ(FormatRfc3339Seconds(kJune12), "2026-06-12T10:30:00Z");
  EXPECT_EQ(FormatRfc3339Seconds(kJune12 + kSecond - 1), "2026-06-12T10:30:00Z");
  EXPECT_EQ(FormatRfc3339Seconds(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339Seconds(-1), "1969-12-31T23:59:59Z");  // rounded towards the past
  EXPECT_EQ(FormatRfc3339Seconds(INT64_MAX), "2262-04-11T23:47:16Z");
  EXPECT_EQ(FormatRfc3339Seconds(INT64_MIN), "1677-09-21T00:12:43Z");
}

TEST(JsonUtilTest, Rfc3339SecondsAgreesWithGmtime) {
  // Days across leap years, centuries and both sides of 1970, every hour of some.
  for (std::int64_t seconds = -9'000'000'000; seconds < 9'000'000'000;
       seconds += 86400 * 97 + 3599) {
    const std::time_t time = static_cast<std::time_t>(seconds);
    std::tm utc{};
    ASSERT_NE(gmtime_r(&time, &utc), nullptr);
    char expected[32];
    ASSERT_GT(std::strftime(expected, sizeof(expected), "%Y-%m-%dT%H:%M:%SZ", &utc), 0u);
    EXPECT_EQ(FormatRfc3339Seconds(seconds * kSecond), expected);
  }
  EXPECT_EQ(FormatRfc3339Seconds((951782400 - 1) * kSecond), "2000-02-28T23:59:59Z");
  EXPECT_EQ(FormatRfc3339Seconds(951782400 * kSecond + 86399 * kSecond), "2000-02-29T23:59:59Z");
}

TEST(JsonUtilTest, Rfc3339Nanos) {
  EXPECT_EQ(FormatRfc3339Nanos(kJune12 + 123456789), "2026-06-12T10:30:00.123456789Z");
  EXPECT_EQ(FormatRfc3339Nanos(kJune12), "2026-06-12T10:30:00.000000000Z");
  EXPECT_EQ(FormatRfc3339Nanos(kJune12 + 1), "2026-06-12T10:30:00.000000001Z");
  EXPECT_EQ(FormatRfc3339Nanos(-1), "1969-12-31T23:59:59.999999999Z");
  EXPECT_EQ(FormatRfc3339Nanos(INT64_MAX), "2262-04-11T23:47:16.854775807Z");
  EXPECT_EQ(FormatRfc3339Nanos(INT64_MIN), "1677-09-21T00:12:43.145224192Z");
}

TEST(JsonUtilTest, ToValidUtf8) {
  EXPECT_EQ(ToValidUtf8("plain ascii"), "plain ascii");
  EXPECT_EQ(ToValidUtf8("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"),
            "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(ToValidUtf8(std::string("a\0b", 3)), "a" + fffd + "b");
  EXPECT_EQ(ToValidUtf8("\xC0\xAF"), fffd + fffd);                        // overlong '/'
  EXPECT_EQ(ToValidUtf8("\xED\xA0\x80"), fffd + fffd + fffd);             // a surrogate
  EXPECT_EQ(ToValidUtf8("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);  // beyond U+10FFFF
  EXPECT_EQ(ToValidUtf8("\xE2\x82"), fffd + fffd);                        // cut short
  EXPECT_EQ(ToValidUtf8("\x80x"), fffd + "x");
}

TEST(JsonUtilTest, QuoteForMessageCutsAtACharacterBoundary) {
  EXPECT_EQ(QuoteForMessage("abc"), "'abc'");
  EXPECT_EQ(QuoteForMessage(""), "''");
  const std::string e_acute = "\xC3\xA9";
  std::string value(63, 'x');
  value += e_acute + "tail";  // the 64-byte cut would split é
  EXPECT_EQ(QuoteForMessage(value), "'" + std::string(63, 'x') + "...'");
}

TEST(JsonUtilTest, BuildPrintAndParse) {
  CjsonPtr object = NewJsonObject();
  AddToJsonObject(object.get(), "n", NewJsonNumber(42));
  AddToJsonObject(object.get(), "s", NewJsonString("x"));
  CjsonPtr array = NewJsonArray();
  AddToJsonArray(array.get(), NewJsonNull());
  AddToJsonArray(array.get(), NewJsonBool(true));
  AddToJsonObject(object.get(), "a", std::move(array));
  EXPECT_EQ(PrintJson(*object), R"({"n":42,"s":"x","a":[null,true]})");
  const std::string text = R"({"k":[1,2]}trailing)";
  EXPECT_NE(ParseJson(std::string_view(text).substr(0, 11)), nullptr);
  EXPECT_EQ(ParseJson(text), nullptr);
  EXPECT_EQ(ParseJson("{"), nullptr);
}

}  // namespace
}  // namespace mqc
