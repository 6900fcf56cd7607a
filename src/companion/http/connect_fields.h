// SPDX-License-Identifier: BSD-3-Clause
// Which of a Connection's optional fields the Connect messages carry: the one place both
// encoders ask (connect_rpc_json.cc leaves an absent field out, connect_rpc_proto.cc leaves it
// unset), so that JSON and binary protobuf carry the same values. Each of these is a field whose
// zero would be a real value (a time, a duration, a message) and whose absence therefore says
// "none" or "unknown". The message counts have their own rule, MessageQueue's (link/connection.h).
//
// Not here: strings left out of JSON when empty and `source.port` when 0. In binary protobuf an
// unset scalar and its zero are the same bytes, so only the JSON side has those rules.
//
// Inline, and plain reads of the model: called for every connection of a page.
#pragma once

#include "companion/connection.h"

namespace mqc {

inline bool HasCloseReason(const Connection& connection) {
  return connection.state == ConnectionState::kClosed;
}

// Closed, and the time is known.
inline bool HasCloseTime(const Connection& connection) {
  return connection.state == ConnectionState::kClosed && connection.close_time_ns != 0;
}

// Offline sessions that expire by their own expiry interval.
inline bool HasSessionExpiryTime(const Connection& connection) {
  return connection.state == ConnectionState::kOffline && connection.session_expiry_time_ns != 0;
}

inline bool HasIdleDuration(const Connection& connection) { return connection.idle_ns >= 0; }

// The kernel reported the connection's socket (not for closed connections, offline sessions, a
// Unix socket listener or an unknown remote port).
inline bool HasNetworkInfo(const Connection& connection) { return connection.network.known; }

// The connection came through a load balancer (a PROXY protocol listener): `proxy` is set.
inline bool HasProxy(const Connection& connection) { return !connection.proxy_address.empty(); }

inline bool HasSinceLastReceive(const NetworkInfo& network) {
  return network.since_last_receive_ns >= 0;
}

inline bool HasSinceLastSend(const NetworkInfo& network) { return network.since_last_send_ns >= 0; }

// Whether the broker could tell which end of a bridge the connection is (BRIDGE_ROLE_UNSPECIFIED
// is the enum's zero, so binary protobuf's unset is the same).
inline bool HasBridgeRole(const Connection& connection) {
  return connection.bridge != BridgeRole::kUnknown;
}

// Whether the broker told if the client has a will (its client layout is verified): then
// hasWill is written, true or false; else left out (unknown).
inline bool HasWillKnown(const Connection& connection) {
  return connection.will != WillState::kUnknown;
}

// Whether the connection's ACL denials are shown (docs/api.md, "Denials"): then both counts are
// written, 0 included, and lastDeniedTopic and lastDeniedTime once there was a denial; else all
// four are left out (the broker hides denials, or they are unknown).
inline bool HasDenials(const Connection& connection) { return connection.denials.shown; }
inline bool HasLastDenial(const Connection& connection) {
  return connection.denials.shown && connection.denials.last_ns != 0;
}

}  // namespace mqc
