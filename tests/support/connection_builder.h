// SPDX-License-Identifier: BSD-3-Clause
// Connections as the companion's tests need them: the model the registry lists (Connection), a
// subscription of it, and the record the broker writes at CONNECT (ConnectionEvent). An open
// connection is a plain MQTT 3.1.1 client from 127.0.0.1:40000, an offline session only what
// persistence tells; a test sets only what it looks at, ConnectionBuilder a group of fields a
// line; a test of exact answers starts from SensorConnection (every CONNECT fact set), a test of
// the whole wire from EveryFieldConnection (every field). Shared by the companion-side unit
// tests (the broker side has client_facts_builder.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "companion/connection.h"
#include "link/event_records.h"
#include "link/topic_mapping.h"

namespace mqc {

inline constexpr std::int64_t kTestMilli = 1'000'000;
inline constexpr std::int64_t kTestSecond = 1'000'000'000;
inline constexpr std::int64_t kTestTime0 = 1767225600 * kTestSecond;  // 2026-01-01T00:00:00Z

inline constexpr char kTestListener[] = "mqtt:1883";

// An open connection: seq `seq`, uid "uid-<seq>", client id "client-<seq>", opened at kTestTime0
// on the listener kTestListener, anonymous and authenticated.
inline Connection TestConnection(std::uint64_t seq) {
  Connection c;
  c.seq = seq;
  c.uid = "uid-" + std::to_string(seq);
  c.state = ConnectionState::kOpen;
  c.open_time_ns = kTestTime0;
  c.client_id = "client-" + std::to_string(seq);
  c.protocol_version = 4;
  c.ip_address = "127.0.0.1";
  c.port = 40000;
  c.listener_name = kTestListener;
  c.authentication.mechanism = AuthMechanism::kAnonymous;
  c.authentication.state = AuthState::kSuccess;
  return c;
}

// A TestConnection changed a group of fields at a time (who, what CONNECT said, where from, how
// it closed), so that a test that needs many fields set states only the values, in a few lines:
//   Connection c = ConnectionBuilder(9).Client("cid", "user").Mqtt(5, false, 11);
class ConnectionBuilder {
 public:
  explicit ConnectionBuilder(std::uint64_t seq) : connection_(TestConnection(seq)) {}
  explicit ConnectionBuilder(Connection base) : connection_(std::move(base)) {}

  ConnectionBuilder& Identity(std::string uid, std::uint32_t node_id) {
    connection_.uid = std::move(uid);
    connection_.node_id = node_id;
    return *this;
  }
  // The client id and the username (empty: the client sent none).
  ConnectionBuilder& Client(std::string client_id, std::string username) {
    connection_.client_id = std::move(client_id);
    connection_.username = std::move(username);
    return *this;
  }
  // The rest of CONNECT: MQTT version (3, 4 or 5), clean session (clean start), keep alive in s.
  ConnectionBuilder& Mqtt(int protocol_version, bool clean_session, int keep_alive) {
    connection_.protocol_version = protocol_version;
    connection_.clean_session = clean_session;
    connection_.keep_alive = keep_alive;
    return *this;
  }
  // The client's address and port, and the listener it reached.
  ConnectionBuilder& From(std::string ip_address, int port,
                          std::string listener_name = kTestListener) {
    connection_.ip_address = std::move(ip_address);
    connection_.port = port;
    connection_.listener_name = std::move(listener_name);
    return *this;
  }
  // Behind a load balancer: the balancer's address and port.
  ConnectionBuilder& Proxy(std::string proxy_address, int proxy_port) {
    connection_.proxy_address = std::move(proxy_address);
    connection_.proxy_port = proxy_port;
    return *this;
  }
  ConnectionBuilder& Closed(std::int64_t close_time_ns, CloseReason reason) {
    connection_.state = ConnectionState::kClosed;
    connection_.close_time_ns = close_time_ns;
    connection_.close_reason = reason;
    return *this;
  }

  // Implicit, so that `Connection c = ConnectionBuilder(1).Client(...);` needs no last call.
  operator Connection() const { return connection_; }  // NOLINT(google-explicit-constructor)

 private:
  Connection connection_;
};

// An open connection with every CONNECT fact set to a value other than TestConnection's: the MQTT
// 5 client "sensor-1" of user "alice" from 127.0.0.1:51234, over TLS on "mqtts:8883", with enhanced
// authentication, opened at kTestTime0 + 123456789 ns. The tests of exact answers start from it
// and set only what they add or change (the answers they compare with follow its values).
inline Connection SensorConnection(std::uint64_t seq) {
  Connection c = ConnectionBuilder(seq)
                     .Identity("0b9c1c4e-3f8a-4d2b-9c1e-5a6b7c8d9e0f", 3)
                     .Client("sensor-1", "alice")
                     .Mqtt(5, false, 45)
                     .From("127.0.0.1", 51234, "mqtts:8883");
  c.open_time_ns = kTestTime0 + 123456789;
  c.tls = {true, "TLSv1.3", "TLS_AES_256_GCM_SHA384", "CN=sensor,O=Example"};
  c.authentication = {AuthMechanism::kEnhanced, AuthState::kSuccess, "alice",
                      std::string("SCRAM-SHA-256")};
  return c;
}

// An offline session with only what the broker's persistence tells of it: uid, client id, when it
// opened and when it expires (0: never or unknown).
inline Connection TestOfflineSession(std::string uid, std::string client_id,
                                     std::int64_t open_time_ns,
                                     std::int64_t session_expiry_time_ns) {
  Connection c;
  c.uid = std::move(uid);
  c.client_id = std::move(client_id);
  c.state = ConnectionState::kOffline;
  c.open_time_ns = open_time_ns;
  c.session_expiry_time_ns = session_expiry_time_ns;
  return c;
}

// A subscription with its KubeMQ mapping given as it is (also mappings MapTopicFilter would not
// give, to test what reads them).
inline Subscription TestSubscription(std::string filter, int qos, Pattern pattern,
                                     std::string channel, std::string shared_group = "") {
  Subscription subscription;
  subscription.filter = std::move(filter);
  subscription.qos = qos;
  subscription.mapping.pattern = pattern;
  subscription.mapping.channel = std::move(channel);
  subscription.mapping.shared_group = std::move(shared_group);
  return subscription;
}

// A subscription whose filter the mapping refuses with `error`, as KubeMQ's side reports it.
inline Subscription RefusedSubscription(std::string filter, const std::string& error) {
  Subscription subscription;
  subscription.filter = std::move(filter);
  subscription.mapping.error = error;
  subscription.kubemq_error = "no KubeMQ channel: " + error;
  return subscription;
}

// A subscription mapped as the registry maps it.
inline Subscription MappedSubscription(std::string filter, int qos,
                                       DefaultPattern default_pattern = DefaultPattern::kEvents) {
  Subscription subscription;
  subscription.mapping = MapTopicFilter(filter, default_pattern);
  subscription.filter = std::move(filter);
  subscription.qos = qos;
  return subscription;
}

// A connection with every field of the schema set to a value other than its zero (but clean
// session, false as SensorConnection has it), in `state`: the close time and reason and the
// session expiry are set whatever the state, and each state's answer carries those it shows.
// The tests of the whole wire (connection_wire_golden_test.cc, connection_round_trip_test.cc)
// start from it.
inline Connection EveryFieldConnection(ConnectionState state) {
  Connection c = ConnectionBuilder(SensorConnection(7))
                     .From("10.1.2.3", 51234, "mqtts:8883")
                     .Proxy("192.0.2.1", 40001)
                     .Closed(kTestTime0 + 9 * kTestSecond, CloseReason::kAccessRevoked);
  c.state = state;  // after Closed, which sets the close time and reason for every state
  c.session_expiry_time_ns = kTestTime0 + 3600 * kTestSecond;
  c.client_id = "sensor-\xC3\xA9-\xFF";
  c.local_port = 8883;
  Subscription refused = MappedSubscription("a/+b", 0);
  refused.kubemq_error = "no KubeMQ channel";
  c.subscriptions = {MappedSubscription("$share/workers/events/site1/#", 2), refused};
  c.idle_ns = 1'500'000'001;
  c.network = {true, 250, 31, 2, 4096, 17, 1'000'000, 0, true};
  c.total_statistics = {100, 12345, 90, 9000, 101};
  c.recent_statistics = {2, 200, 1, 100, 2};
  c.bridge = BridgeRole::kIncoming;
  c.bridge_name = "edge";
  c.messages->out = {MessageQueue::Known::kSplit, 4, 5, 9};
  c.messages->in = {MessageQueue::Known::kTotal, 0, 0, 6};
  c.drops = {true, 77};
  c.will = WillState::kSet;
  c.flapping = {3, 12, 1, 2, {"10.1.2.3", "10.9.9.9"}};
  c.denials = {true, 5, 6, "secret/topic", kTestTime0 + 5 * kTestSecond};
  c.duplicate_client_id = true;
  return c;
}

// The broker's record of a connection at CONNECT: seq `seq` (also the uid's first byte), opened
// at 1 ns.
inline ConnectionEvent TestConnectionRecord(std::uint64_t seq, std::string client_id) {
  ConnectionEvent e;
  e.seq = seq;
  e.uid[0] = static_cast<std::uint8_t>(seq);
  e.open_time_ns = 1;
  e.client_id = std::move(client_id);
  e.ip_address = "127.0.0.1";
  e.port = 40000;
  e.protocol_version = 4;
  return e;
}

}  // namespace mqc
