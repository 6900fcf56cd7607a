// SPDX-License-Identifier: BSD-3-Clause
// The companion's model of one MQTT connection, open or recently closed: what the HTTP views
// (KubeMQ endpoint, Connect ListConnections) show and what filters and orderings look at.
// Plain values; the ConnectionRegistry owns them and hands out shared immutable ones or copies.
// The facts the broker side sends (close reason, authentication, traffic) are in
// link/connection.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "companion/flapping_tracker.h"
#include "companion/shared_text.h"
#include "link/boxed.h"
#include "link/connection.h"
#include "link/topic_mapping.h"

namespace mqc {

// Enum numbers are the protobuf enum numbers of the rich API (orderBy sorts by them).
// kOffline: a persistent session the broker keeps without a connection (no socket, no traffic).
enum class ConnectionState : std::uint8_t {
  kUnspecified = 0,
  kOpen = 1,
  kClosed = 2,
  kOffline = 3,
};

struct Subscription {
  std::string filter;  // as the client sent it, "$share/<group>/" included
  int qos = 0;         // granted QoS
  TopicMapping mapping;
  // Why KubeMQ's MQTT side would refuse it (KubemqSubscribeRefusal); empty when it accepts it.
  // One of a dozen texts: shared, not copied (SharedText::Pooled).
  SharedText kubemq_error;
};

struct TlsInfo {
  bool enabled = false;
  std::string tls_version;  // empty when unknown
  std::string cipher;
  std::string peer_certificate_subject;
};

struct AuthenticationInfo {
  AuthMechanism mechanism = AuthMechanism::kUnspecified;
  AuthState state = AuthState::kUnspecified;
  std::string user_principal;
  Boxed<std::string> method;  // MQTT 5 enhanced authentication method; rare, so out of line
};

// What the kernel says about an open connection's TCP socket (tcp_info, read by the companion
// through sock_diag). Absent for closed connections, offline sessions and sockets the kernel
// did not report (a Unix socket listener, a connection closed since the last read).
struct NetworkInfo {
  bool known = false;
  std::uint32_t rtt_us = 0;                 // smoothed round-trip time
  std::uint32_t rtt_variance_us = 0;        // its mean deviation
  std::uint32_t retransmits = 0;            // segments retransmitted over the connection's life
  std::uint32_t send_queue_bytes = 0;       // written by the broker, not yet acknowledged
  std::uint32_t receive_queue_bytes = 0;    // received, not yet read by the broker
  std::int64_t since_last_receive_ns = -1;  // -1 when unknown
  std::int64_t since_last_send_ns = -1;
  // The socket is a load balancer's (the connection came through a PROXY protocol listener):
  // the figures are of the balancer's connection to the broker, not of the client's own.
  bool proxy_socket = false;
};

// Members in an order that leaves no padding between them, and the details that a stored
// connection never holds and the texts most never have kept out of line (Boxed): 384 bytes, not
// 816 (856 with padding). A stored connection is one of these per connection;
// connection_memory_test.cc holds the size.
struct Connection {
  std::uint64_t seq = 0;  // broker-side sequence number: unique for the broker's lifetime
  std::string uid;        // UUID4, "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx"
  std::uint32_t node_id = 0;
  ConnectionState state = ConnectionState::kUnspecified;
  CloseReason close_reason = CloseReason::kUnspecified;
  bool clean_session = true;
  // Whether the client sent a will at CONNECT (kUnknown where the broker's layout is not
  // verified, and for offline sessions).
  WillState will = WillState::kUnknown;
  std::int64_t open_time_ns = 0;   // Unix time, nanoseconds; offline: since when
  std::int64_t close_time_ns = 0;  // 0 while open
  // Offline sessions: when the session expires by its own expiry interval; 0 unknown or never.
  std::int64_t session_expiry_time_ns = 0;
  std::string client_id;
  std::string username;      // empty when the client sent none
  int protocol_version = 0;  // 3, 4 or 5
  int keep_alive = 0;        // seconds
  std::string ip_address;
  std::string listener_name;  // "mqtt:1883"; empty when unknown
  // Behind a load balancer (a PROXY protocol listener, Mosquitto 2.1): the socket's peer, the
  // balancer (ip_address and port are the client's, from the PROXY header); empty and 0
  // otherwise.
  Boxed<std::string> proxy_address;
  int port = 0;        // 0 when the broker could not tell the remote port
  int local_port = 0;  // the listener's port the client reached; 0 when unknown
  int proxy_port = 0;
  // Which end of a Mosquitto bridge this connection is; kUnknown where the broker could not
  // tell (its client layout not verified) and for offline sessions (docs/how-it-works.md,
  // "Bridges").
  BridgeRole bridge = BridgeRole::kUnknown;
  // Fleet answers only (companion/fleet/): the client id is open on another broker of the fleet
  // too. Never set by the registry.
  bool duplicate_client_id = false;
  Boxed<TlsInfo> tls;
  AuthenticationInfo authentication;
  std::vector<Subscription> subscriptions;
  // Time since the client last sent anything; -1 when unknown. Open connections: the socket's
  // tcp_info (network.since_last_receive_ns); closed ones: as the broker read it at close.
  std::int64_t idle_ns = -1;
  Boxed<NetworkInfo> network;  // open TCP connections only
  Boxed<RequestStatistics> total_statistics;
  Boxed<RequestStatistics> recent_statistics;  // the previous complete one-minute window
  // The broker's own bridges: the name of its `connection` whose local_clientid this is (from
  // the broker's configuration); empty otherwise.
  Boxed<std::string> bridge_name;
  // What the broker holds for an open connection (a detail, like total_statistics): unknown
  // for closed connections and offline sessions, and wherever the client layout is not
  // verified.
  Boxed<MessageCounts> messages;
  // Messages the broker dropped for an open connection, by cause (a detail, like `messages`):
  // unknown where this broker hides them (link/connection.h: MessageDrops), for closed
  // connections and offline sessions.
  Boxed<MessageDrops> drops;
  // Connects and takeovers of its client id in the last minute and hour, and the id's two
  // latest addresses (a detail: they change with time; flapping_tracker.h).
  Boxed<FlappingCounts> flapping;
  // ACL denials of its PUBLISHes and SUBSCRIBE filters (a detail, read from its statistics
  // slot like total_statistics; link/connection.h). Not shown where the broker hides them.
  Boxed<Denials> denials;
};

}  // namespace mqc

namespace mqc {

// A connection as the registry stores it: immutable once shared, so that a snapshot is a vector
// of pointers and copies no strings or subscriptions.
using ConnectionPtr = std::shared_ptr<const Connection>;
// A whole snapshot, itself shared and immutable: readers of an unchanged registry share one.
using ConnectionList = std::shared_ptr<const std::vector<ConnectionPtr>>;

// Where the HTTP views get their data, taken under the registry's lock. Called on HTTP threads.
//
// Snapshot() copies every connection with its details (traffic totals, recent statistics, idle
// time: values that change all the time and live outside the stored connections). The other
// three are the fast path: SharedSnapshot() and FindByClientId() hand out the stored
// connections without their details, and AddDetails() fills those in for the few connections a
// caller returns. The defaults serve any source from Snapshot() alone.
class ConnectionSource {
 public:
  virtual ~ConnectionSource() = default;
  // Every connection the registry knows (open, offline and recently closed), as copies.
  virtual std::vector<Connection> Snapshot() const = 0;
  // The same set, consistent as one view, as shared immutable values.
  virtual ConnectionList SharedSnapshot() const {
    auto shared = std::make_shared<std::vector<ConnectionPtr>>();
    for (Connection& connection : Snapshot()) {
      shared->push_back(std::make_shared<const Connection>(std::move(connection)));
    }
    return shared;
  }
  // Those of SharedSnapshot() whose client id is exactly `client_id` (an index lookup where the
  // source has an index).
  virtual std::vector<ConnectionPtr> FindByClientId(std::string_view client_id) const {
    std::vector<ConnectionPtr> found;
    const ConnectionList all = SharedSnapshot();  // kept alive while the loop reads it
    for (const ConnectionPtr& connection : *all) {
      if (connection->client_id == client_id) found.push_back(connection);
    }
    return found;
  }
  // Fills the details of copies of connections from SharedSnapshot() or FindByClientId().
  virtual void AddDetails(std::vector<Connection>* /*connections*/) const {}
};

}  // namespace mqc
