// SPDX-License-Identifier: BSD-3-Clause
// The exact text of the Connect service's JSON answers (connect_rpc_json.h, watch_stream.h):
// pages and watch messages for connections that use every field and every rule (each state and
// close reason, numbers the schema does not name, unknown and known-zero counts, durations of
// every precision, times before 1970, odd and invalid strings, the largest values), written
// now and compared byte for byte with tests/data/connect_json_answers.txt. That file was printed
// by the cJSON tree encoder the service had before JsonWriter, so this is what keeps the text
// clients see the same. Protobuf's own JSON parser checks the meaning (connect_codec_test.cc);
// this checks the bytes: field order, number forms, escapes.
#include "companion/http/connect_rpc_json.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "../../support/connection_builder.h"
#include "companion/connection.h"
#include "companion/http/connect_protocol.h"
#include "companion/http/view_util.h"
#include "companion/http/watch_stream.h"
#include "companion/query/connection_query.h"
#include "link/status.h"
#include "link/topic_mapping.h"

namespace mqc {
namespace {

constexpr std::int64_t kSecond = 1'000'000'000;
constexpr std::int64_t kJune12 = 1781260200 * kSecond;  // 2026-06-12T10:30:00Z
constexpr std::uint32_t kMaxUint32 = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint64_t kMaxUint64 = std::numeric_limits<std::uint64_t>::max();
constexpr std::int64_t kMaxInt64 = std::numeric_limits<std::int64_t>::max();

// Quotes, backslashes, every escape cJSON writes short, other control characters, DEL, a NUL,
// valid multi-byte characters, and bytes that are not UTF-8 (a lone continuation byte, a
// truncated sequence, an overlong form, a surrogate).
const std::string kOdd = std::string("q\"b\\s/\b\f\n\r\t\x01\x1f\x7f") + '\0' +
                         "z\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\x80\xE2\x82\xC0\x80\xED\xA0\x80<"
                         "/script>";

Connection Rich() {
  Connection c = SensorConnection(1);
  c.open_time_ns = kJune12 + 123456789;
  c.authentication.mechanism = AuthMechanism::kMtls;
  c.subscriptions = {MappedSubscription("events/site1/#", 1),
                     MappedSubscription("$share/workers/queues/jobs", 2),
                     RefusedSubscription("a/+b", "not a valid topic filter"),
                     MappedSubscription("commands/door/+", 0)};
  c.idle_ns = 1'500'000'000;
  c.network = {true, 250, 0, 2, 0, 17, 1'000'000, 0};
  c.total_statistics = {3, 15, 2, 10, 5};
  c.recent_statistics = {1, 5, 0, 0, 1};
  c.bridge = BridgeRole::kNone;
  c.messages->out = {MessageQueue::Known::kSplit, 12, 0, 12};
  c.messages->in = {MessageQueue::Known::kSplit, 0, 1, 1};
  return c;
}

std::string Text(const ConnectionPage& page) { return ListConnectionsResponseJson(page); }
std::string Text(const WatchMessage& message) { return WatchConnectionsResponseJson(message); }

std::vector<Connection> Connections() {
  std::vector<Connection> all = {Rich()};
  // Closed: each reason the schema names, the zero, and numbers it does not name.
  for (const int reason : {0, 1, 2, 3, 4, 5, 6, 7, 8, 200}) {
    Connection c = Rich();
    c.uid = "uid-closed-" + std::to_string(reason);
    c.state = ConnectionState::kClosed;
    c.close_time_ns = reason == 3 ? 0 : kJune12 + 10 * kSecond + reason;
    c.close_reason = static_cast<CloseReason>(reason);
    c.network = NetworkInfo();
    c.messages = MessageCounts();
    all.push_back(c);
  }
  // Offline, with and without an expiry time; an offline session of an unknown state's number.
  Connection offline =
      TestOfflineSession("uid-offline", "sleeper", kJune12 - 5 * kSecond, kJune12 + 3600 * kSecond);
  all.push_back(offline);
  offline.uid = "uid-offline-forever";
  offline.session_expiry_time_ns = 0;
  all.push_back(offline);
  Connection unnamed = offline;
  unnamed.uid = "uid-unnamed-numbers";
  unnamed.state = static_cast<ConnectionState>(7);
  unnamed.authentication.mechanism = static_cast<AuthMechanism>(9);
  unnamed.authentication.state = static_cast<AuthState>(250);
  unnamed.bridge = static_cast<BridgeRole>(4);
  all.push_back(unnamed);
  Connection unspecified;  // every default
  all.push_back(unspecified);
  // Anonymous on a Unix socket: no port, no idle time, sums only out, nothing known in.
  Connection anonymous = TestConnection(2);
  anonymous.ip_address.clear();
  anonymous.port = 0;
  anonymous.listener_name.clear();
  anonymous.authentication = AuthenticationInfo();
  anonymous.idle_ns = -1;
  anonymous.messages->out = {MessageQueue::Known::kTotal, 0, 0, 4};
  all.push_back(anonymous);
  // Bridges of each role; and before 1970, on the epoch, and far ahead.
  Connection own_bridge = Rich();
  own_bridge.uid = "uid-own-bridge";
  own_bridge.client_id = "local.edge.to-cloud";
  own_bridge.bridge = BridgeRole::kOutgoing;
  own_bridge.bridge_name = "to-cloud";
  own_bridge.open_time_ns = -1;
  all.push_back(own_bridge);
  Connection incoming_bridge = Rich();
  incoming_bridge.uid = "uid-incoming-bridge";
  incoming_bridge.bridge = BridgeRole::kIncoming;
  incoming_bridge.open_time_ns = 0;
  incoming_bridge.network->since_last_receive_ns = -1;
  incoming_bridge.network->since_last_send_ns = 2'000'000'001;
  incoming_bridge.idle_ns = 0;
  all.push_back(incoming_bridge);
  Connection unknown_bridge = Rich();
  unknown_bridge.uid = "uid-unknown-bridge";
  unknown_bridge.bridge = BridgeRole::kUnknown;
  unknown_bridge.open_time_ns = -kSecond * 86400 * 365 - 1;
  unknown_bridge.idle_ns = 1'000;  // microsecond precision
  unknown_bridge.network->since_last_receive_ns = 1;
  unknown_bridge.network->since_last_send_ns = 60 * kSecond;
  all.push_back(unknown_bridge);
  // A will, and a takeover ping-pong's counts and addresses; no will, and counts with no
  // takeover (no addresses shown).
  Connection ping_pong = Rich();
  ping_pong.uid = "uid-ping-pong";
  ping_pong.will = WillState::kSet;
  ping_pong.flapping = {6, 60, 5, 59, {"::1", "127.0.0.1"}};
  all.push_back(ping_pong);
  Connection no_will = Rich();
  no_will.uid = "uid-no-will";
  no_will.will = WillState::kNone;
  no_will.flapping = {1, 1, 0, 0, {"10.0.0.1", "10.0.0.2"}};
  all.push_back(no_will);
  // The largest values each field holds.
  Connection large = Rich();
  large.uid = "uid-large";
  large.node_id = kMaxUint32;
  large.open_time_ns = kMaxInt64;
  large.keep_alive = 65535;
  large.port = 65535;
  large.protocol_version = 255;
  large.idle_ns = kMaxInt64;
  large.network = {true,       kMaxUint32, kMaxUint32, kMaxUint32,
                   kMaxUint32, kMaxUint32, kMaxInt64,  999'999'999};
  large.total_statistics = {kMaxUint64, kMaxUint64, kMaxUint64, kMaxUint64, kMaxUint64};
  large.recent_statistics = {1ull << 53, (1ull << 53) + 1, 1'000'000'000'000'000ull,
                             9'999'999'999'999'999ull, 0};
  large.messages->out = {MessageQueue::Known::kSplit, kMaxUint32, kMaxUint32, kMaxUint32};
  large.messages->in = {MessageQueue::Known::kTotal, 0, 0, kMaxUint32};
  all.push_back(large);
  // Odd text in every string field.
  Connection odd = Rich();
  odd.uid = kOdd;
  odd.client_id = kOdd;
  odd.username = kOdd;
  odd.ip_address = "::ffff:10.0.0.1";
  odd.listener_name = kOdd;
  odd.tls = {true, kOdd, kOdd, kOdd};
  odd.authentication = {AuthMechanism::kMtls, AuthState::kSuccess, kOdd, kOdd};
  odd.bridge_name = kOdd;
  Subscription odd_subscription = TestSubscription(kOdd, 1, Pattern::kQueries, kOdd, kOdd);
  odd_subscription.mapping.error = kOdd;
  odd_subscription.kubemq_error = kOdd;
  odd.subscriptions = {odd_subscription, TestSubscription("", 0, Pattern::kNone, "")};
  all.push_back(odd);
  return all;
}

// Every answer, one a line (none holds a raw newline: JSON escapes it).
std::string Answers() {
  std::string text;
  const std::vector<Connection> all = Connections();
  const auto line = [&text](const std::string& answer) {
    EXPECT_EQ(answer.find('\n'), std::string::npos);
    text += answer;
    text += '\n';
  };
  // Pages: everything; a first page with a token; the last; empty.
  ConnectionPage page;
  page.connections = all;
  page.total_size = static_cast<std::int64_t>(all.size());
  line(Text(page));
  ConnectionPage first;
  first.connections = {all.front()};
  first.total_size = 1234567;
  first.next_page_token = "eyJ2IjoxfQ";
  line(Text(first));
  ConnectionPage last;
  last.connections = {all.front()};
  last.total_size = 1;
  line(Text(last));
  line(Text(ConnectionPage()));
  ConnectionPage odd_token;
  odd_token.total_size = std::numeric_limits<std::int64_t>::max();
  odd_token.next_page_token = kOdd;
  line(Text(odd_token));

  // Watch messages: each kind (and a number out of range), with and without a connection or a
  // subscription (the page above has every connection, so two do here), the first and the
  // largest sequence.
  for (int kind = 0; kind <= 12; ++kind) {
    WatchMessage message;
    message.sequence = static_cast<std::uint64_t>(kind);
    message.kind = static_cast<ChangeKind>(kind);
    line(Text(message));
  }
  for (const Connection& connection : {all.front(), all.back()}) {
    WatchMessage message;
    message.sequence = kMaxUint64;
    message.kind = ChangeKind::kOpened;
    message.connection = &connection;
    line(Text(message));
    for (const Subscription& subscription : connection.subscriptions) {
      message.kind = ChangeKind::kSubscribed;
      message.subscription = &subscription;
      line(Text(message));
    }
  }
  WatchMessage subscription_only;
  subscription_only.sequence = 42;
  subscription_only.kind = ChangeKind::kUnsubscribed;
  const Subscription unsubscribed = MappedSubscription("store/x", 2);
  subscription_only.subscription = &unsubscribed;
  line(Text(subscription_only));
  // A fleet stream's messages: the broker's node id, the resume token, a lost peer.
  WatchMessage tagged;
  tagged.sequence = 7;
  tagged.kind = ChangeKind::kOpened;
  tagged.connection = &all.front();
  tagged.node_id = 4294967295u;
  tagged.resume_token = "VwEBBw";
  line(Text(tagged));
  const PeerFailure failure{"http://127.0.0.1:8081", "unavailable", kOdd};
  WatchMessage lost;
  lost.kind = ChangeKind::kPeerLost;
  lost.node_id = 3;
  lost.resume_token = "Vw";
  lost.peer_error = &failure;
  line(Text(lost));

  // The end of a stream: ok, and errors with plain and odd messages.
  for (const Status& status :
       {Status(), Status(StatusCode::kResourceExhausted, "the reader fell behind"),
        Status(StatusCode::kInvalidArgument, kOdd), Status(StatusCode::kUnavailable, "")}) {
    std::string envelope;
    AppendEndOfStream(status, &envelope);
    line(envelope.substr(5));  // the JSON after the 5-byte envelope header
  }
  // A unary call's Connect error.
  line(ConnectRpcErrorResponse(Status(StatusCode::kNotFound, "no connection 'x'")).body);
  line(ConnectRpcErrorResponse(Status(StatusCode::kInvalidArgument, kOdd)).body);
  return text;
}

TEST(ConnectRpcJsonTest, AnswersAreByteForByteWhatTheyWere) {
  const std::string expected_path = std::string(MQC_TEST_DATA_DIR) + "/connect_json_answers.txt";
  std::ifstream file(expected_path, std::ios::binary);
  EXPECT_TRUE(file.good()) << "cannot read " << expected_path;
  std::stringstream expected;
  if (file.good()) expected << file.rdbuf();
  const std::string actual = Answers();
  if (actual == expected.str()) return;
  // Name the first line that differs, and leave the whole text beside the binary to diff.
  std::istringstream actual_lines(actual);
  std::istringstream expected_lines(expected.str());
  std::string a;
  std::string e;
  int number = 1;
  for (;; ++number) {
    const bool has_e = static_cast<bool>(std::getline(expected_lines, e));
    const bool has_a = static_cast<bool>(std::getline(actual_lines, a));
    if (!has_e) e = "(no line)";
    if (!has_a) a = "(no line)";
    if (a != e || (!has_e && !has_a)) break;
  }
  std::ofstream("connect_json_answers.actual", std::ios::binary) << actual;
  ADD_FAILURE() << "line " << number << " differs (all of it: connect_json_answers.actual in "
                << "the working directory)\nexpected: " << e << "\nactual:   " << a;
}

}  // namespace
}  // namespace mqc
