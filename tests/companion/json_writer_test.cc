// SPDX-License-Identifier: BSD-3-Clause
// JsonWriter writes what cJSON prints for the same values, byte for byte: odd strings (control
// characters, quotes, invalid UTF-8, NUL), numbers, nesting; and the KubeMQ list written with
// it equals the one the view used to build as a cJSON tree.
#include "companion/json_writer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "../support/cjson_builders.h"
#include "companion/connection.h"
#include "companion/http/kubemq_view.h"
#include "companion/json_util.h"
#include "link/text_util.h"
#include "link/topic_mapping.h"

namespace mqc {
namespace {

using namespace std::string_literals;

// Strings that take every path of the escaper.
std::vector<std::string> OddStrings() {
  std::vector<std::string> strings = {
      ""s,
      "plain"s,
      "quote \" backslash \\ slash /"s,
      "\b\f\n\r\t"s,
      "\x01\x1f\x7f"s,
      "nul \0 inside"s,
      "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"s,             // valid 2, 3 and 4 byte sequences
      "bad \xC3 \xFF \xED\xA0\x80 \xF4\x90\x80\x80 \xC0\xAF"s,  // truncated, invalid, surrogate
      "tail \xE2\x82"s,
  };
  std::string every_byte;
  for (int c = 0; c < 256; ++c) every_byte.push_back(static_cast<char>(c));
  strings.push_back(every_byte);
  return strings;
}

TEST(JsonWriterTest, StringsAreWhatCjsonPrints) {
  for (const std::string& value : OddStrings()) {
    SCOPED_TRACE(value);
    std::string written;
    JsonWriter(&written).String(value);
    EXPECT_EQ(written, PrintJson(*NewJsonString(value)));
  }
}

TEST(JsonWriterTest, NestedValuesAreWhatCjsonPrints) {
  CjsonPtr root = NewJsonObject();
  AddToJsonObject(root.get(), "a", NewJsonNumber(-12));
  AddToJsonObject(root.get(), "big", NewJsonNumber(2147483647));
  AddToJsonObject(root.get(), "t", NewJsonBool(true));
  AddToJsonObject(root.get(), "f", NewJsonBool(false));
  AddToJsonObject(root.get(), "n", NewJsonNull());
  CjsonPtr list = NewJsonArray();
  AddToJsonArray(list.get(), NewJsonObject());
  AddToJsonArray(list.get(), NewJsonArray());
  AddToJsonArray(list.get(), NewJsonString("x\ny"));
  AddToJsonObject(root.get(), "list", std::move(list));
  AddToJsonObject(root.get(), "key_2", NewJsonNumber(0));

  std::string written;
  JsonWriter json(&written);
  json.BeginObject();
  json.Key("a").Int(-12);
  json.Key("big").Int(2147483647);
  json.Key("t").Bool(true);
  json.Key("f").Bool(false);
  json.Key("n").Null();
  json.Key("list").BeginArray();
  json.BeginObject().EndObject();
  json.BeginArray().EndArray();
  json.String("x\ny");
  json.EndArray();
  json.Key("key_2").Int(0);
  json.EndObject();
  EXPECT_EQ(written, PrintJson(*root));
}

TEST(JsonWriterTest, NumbersAreShortestAndReadBackAndNonFiniteIsNull) {
  std::string out;
  JsonWriter(&out).BeginArray().Number(2.5).Number(0.1).Number(1234.567).Number(0).Number(
      std::numeric_limits<double>::infinity()).EndArray();
  EXPECT_EQ(out, "[2.5,0.1,1234.567,0,null]");
  const CjsonPtr parsed = ParseJson(out);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(cJSON_GetArrayItem(parsed.get(), 2)->valuedouble, 1234.567);
}

TEST(JsonWriterTest, AppendsToWhatIsThere) {
  std::string out = "prefix:";
  JsonWriter(&out).BeginArray().Int(1).Int(2).EndArray();
  EXPECT_EQ(out, "prefix:[1,2]");
}

// --- the KubeMQ list, as the view built it with cJSON before the writer ------------------

std::string RemoteAddress(const Connection& connection) {
  if (connection.ip_address.empty()) return "";
  if (connection.port == 0) return connection.ip_address;
  const bool v6 = connection.ip_address.find(':') != std::string::npos;
  return (v6 ? "[" + connection.ip_address + "]" : connection.ip_address) + ":" +
         std::to_string(connection.port);
}

CjsonPtr CjsonConnection(const Connection& connection) {
  CjsonPtr object = NewJsonObject();
  AddToJsonObject(object.get(), "client_id", NewJsonString(connection.client_id));
  AddToJsonObject(object.get(), "protocol_version", NewJsonNumber(connection.protocol_version));
  AddToJsonObject(object.get(), "remote_addr", NewJsonString(RemoteAddress(connection)));
  AddToJsonObject(object.get(), "connected_at",
                  NewJsonString(FormatRfc3339Seconds(connection.open_time_ns)));
  AddToJsonObject(object.get(), "clean_session", NewJsonBool(connection.clean_session));
  if (!connection.username.empty()) {
    AddToJsonObject(object.get(), "username", NewJsonString(connection.username));
  }
  CjsonPtr subscriptions = NewJsonArray();
  for (const Subscription& subscription : connection.subscriptions) {
    CjsonPtr item = NewJsonObject();
    AddToJsonObject(item.get(), "filter", NewJsonString(subscription.filter));
    AddToJsonObject(item.get(), "qos", NewJsonNumber(subscription.qos));
    AddToJsonObject(item.get(), "pattern",
                    NewJsonString(PatternName(subscription.mapping.pattern)));
    AddToJsonObject(item.get(), "channel", NewJsonString(subscription.mapping.channel));
    AddToJsonObject(item.get(), "shared_group", NewJsonString(*subscription.mapping.shared_group));
    AddToJsonArray(subscriptions.get(), std::move(item));
  }
  AddToJsonObject(object.get(), "subscriptions", std::move(subscriptions));
  return object;
}

std::string CjsonList(const std::vector<Connection>& in_order) {
  CjsonPtr connections = NewJsonArray();
  for (const Connection& c : in_order) AddToJsonArray(connections.get(), CjsonConnection(c));
  CjsonPtr data = NewJsonObject();
  AddToJsonObject(data.get(), "connections", std::move(connections));
  AddToJsonObject(data.get(), "total", NewJsonNumber(static_cast<double>(in_order.size())));
  CjsonPtr envelope = NewJsonObject();
  AddToJsonObject(envelope.get(), "error", NewJsonBool(false));
  AddToJsonObject(envelope.get(), "error_string", NewJsonString(""));
  AddToJsonObject(envelope.get(), "data", std::move(data));
  return PrintJson(*envelope);
}

TEST(JsonWriterTest, TheKubeMqListIsWhatTheCjsonTreePrinted) {
  constexpr std::int64_t kSecond = 1'000'000'000;
  std::vector<Connection> connections;  // in the order the view lists them
  const std::vector<std::string> odd = OddStrings();
  for (std::size_t i = 0; i < odd.size(); ++i) {
    Connection c;
    c.seq = i + 1;
    c.state = ConnectionState::kOpen;
    c.client_id = "client-" + std::to_string(i) + odd[i];
    c.username = odd[(i + 3) % odd.size()];
    c.open_time_ns = (1781260200 + static_cast<std::int64_t>(i)) * kSecond + 999;
    c.protocol_version = 3 + static_cast<int>(i % 3);
    c.clean_session = i % 2 == 0;
    c.ip_address = i % 3 == 0 ? "::1" : (i % 3 == 1 ? "10.0.0.7" : "");
    c.port = i % 4 == 0 ? 0 : 40000 + static_cast<int>(i);
    for (std::size_t s = 0; s < i % 3; ++s) {
      Subscription subscription;
      subscription.filter = "$share/g" + odd[(i + s) % odd.size()] + "/events/" + odd[s];
      subscription.qos = static_cast<int>(s);
      subscription.mapping = MapTopicFilter(subscription.filter, DefaultPattern::kEvents);
      c.subscriptions.push_back(subscription);
    }
    connections.push_back(c);
  }
  const HttpResponse response = KubeMqView().ListConnections(connections, {});
  ASSERT_EQ(response.status, 200);
  EXPECT_EQ(response.body, CjsonList(connections));
  EXPECT_NE(ParseJson(response.body), nullptr);
}

// A list of megabytes: its room is asked for huge pages, and it outgrows the view's reserve
// (400 bytes a connection) where client ids are long, so the room moves to a new block.
TEST(JsonWriterTest, ABigListIsWhatTheCjsonTreePrinted) {
  constexpr std::int64_t kSecond = 1'000'000'000;
  const std::vector<std::string> odd = OddStrings();
  std::vector<Connection> connections;
  for (std::size_t i = 0; i < 8000; ++i) {
    Connection c;
    c.seq = i + 1;
    c.state = ConnectionState::kOpen;
    c.client_id = "client-" + std::to_string(100000 + i) +
                  (i >= 6000 ? std::string(1000, 'x') : odd[i % odd.size()]);
    c.open_time_ns = (1781260200 + static_cast<std::int64_t>(i / 7)) * kSecond;
    c.protocol_version = 4;
    c.ip_address = "127.0.0.1";
    c.port = 10000 + static_cast<int>(i);
    Subscription subscription;
    subscription.filter = "events/bench/" + std::to_string(i);
    subscription.mapping = MapTopicFilter(subscription.filter, DefaultPattern::kEvents);
    c.subscriptions.push_back(subscription);
    connections.push_back(c);
  }
  const HttpResponse response = KubeMqView().ListConnections(connections, {});
  ASSERT_EQ(response.status, 200);
  EXPECT_GT(response.body.size(), std::size_t{4} << 20);
  EXPECT_TRUE(response.body == CjsonList(connections));  // not printed: megabytes
}

}  // namespace
}  // namespace mqc
