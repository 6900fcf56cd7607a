// SPDX-License-Identifier: BSD-3-Clause
// The fields of the schema's Connection message (proto/mqtt/connections/v1/connections.proto),
// each written once: its name, JSON name, number, label and type, where the model keeps it, when
// an answer carries it, how filters and order_by see it, and where a peer's answer puts it back.
// Both Connect encoders (connect_rpc_json.cc, connect_rpc_proto.cc), the binary decoder of a
// peer's answer (connect_rpc_proto.cc) and the filter and order keys (query/connection_fields.cc)
// are expanded from this list; connection_field_table_test.cc holds it to the .proto as protoc
// compiled it. docs/architecture.md, "One table of fields".
//
// An X-macro rather than an array of descriptors: the binary encoder needs protobuf's generated
// setter of each field (set_keep_alive), a name only the preprocessor can make, and expanded
// code keeps each field a plain inline read (no call through a pointer per field and
// connection: bench/connect_codec_bench.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

#include "companion/connection.h"
#include "link/text_util.h"

// X(name, jsonName, number, label, proto_type, kind, value, present, known, query, decode)
//   name        the proto field's name; also its path in filters and order_by.
//   jsonName    its name in protobuf's JSON mapping.
//   number      its field number.
//   label       `optional`, `repeated`, or `singular` (proto3's implicit presence).
//   proto_type  its type as the .proto spells it.
//   kind        how the encoders write it: Int (int32, uint32), Uint64 (a decimal string in
//               JSON), Bool, String, Enum (its names: EnumNamesOf), Timestamp, Duration, Message
//               (a sub-message, written by the encoder's writer for the value's type), Repeated.
//   value       the value, read from the model `c`; a std::optional one (the message counts:
//               MessageQueue's rule) is carried, and seen as set, only when it holds a value.
//   present     whether an answer carries it (JSON writes the key, binary sets the field). For
//               `singular` scalars an unset field and its zero are the same bytes, so present
//               says only when JSON leaves the zero out. The rules that are more than a zero
//               are the functions below the list.
//   known       whether filters and order_by see it as set (FieldValue::is_set).
//   query       how filters and order_by name it: Stored(kind), Detail(kind) (a value outside the
//               stored connection: ConnectionSource::AddDetails), Nested (its own fields are,
//               query/connection_fields.cc) or NotQueried.
//   decode      where the decoder of a peer's binary answer puts the field back: Same (into
//               `value`, a member of `c`), Into(place) (a value the model keeps under a rule or
//               in two members: a place below the list, which undoes `value`), or Derived
//               (nothing: the value follows from other fields). It reads the field when binary
//               protobuf has it (a has-bit for `optional` fields, sub-messages, times and
//               durations; always for other singular scalars and repeated fields, whose unset
//               is the model's zero), so that encode, decode and encode again give the same bytes
//               (connection_round_trip_test.cc).
//
// The list is in the order the JSON answer writes the fields (kept from before the table, so the
// text is unchanged); binary protobuf writes by field number whatever the order.
#define MQC_CONNECTION_FIELDS(X)                                                                   \
  X(node_id, nodeId, 1, singular, uint32, Int, c.node_id, true, true, Stored(kInt), Same)          \
  X(uid, uid, 2, singular, string, String, c.uid, true, true, Stored(kString), Same)               \
  X(state, state, 3, singular, MqttConnectionState, Enum, c.state, true, true, Stored(kEnum),      \
    Same)                                                                                          \
  X(open_time, openTime, 4, singular, google.protobuf.Timestamp, Timestamp, c.open_time_ns, true,  \
    true, Stored(kTimestamp), Same)                                                                \
  X(close_time, closeTime, 5, singular, google.protobuf.Timestamp, Timestamp, c.close_time_ns,     \
    HasCloseTime(c), c.close_time_ns != 0, Stored(kTimestamp), Same)                               \
  X(session_expiry_time, sessionExpiryTime, 7, singular, google.protobuf.Timestamp, Timestamp,     \
    c.session_expiry_time_ns, HasSessionExpiryTime(c), c.session_expiry_time_ns != 0,              \
    Stored(kTimestamp), Same)                                                                      \
  X(close_reason, closeReason, 6, singular, CloseReason, Enum, c.close_reason, HasCloseReason(c),  \
    true, Stored(kEnum), Same)                                                                     \
  X(client_id, clientId, 8, singular, string, String, c.client_id, true, true, Stored(kString),    \
    Same)                                                                                          \
  X(username, username, 9, singular, string, String, c.username, !c.username.empty(), true,        \
    Stored(kString), Same)                                                                         \
  X(protocol_version, protocolVersion, 10, singular, int32, Int, c.protocol_version, true, true,   \
    Stored(kInt), Same)                                                                            \
  X(clean_session, cleanSession, 11, singular, bool, Bool, c.clean_session, true, true,            \
    Stored(kBool), Same)                                                                           \
  X(keep_alive, keepAlive, 12, singular, int32, Int, c.keep_alive, true, true, Stored(kInt), Same) \
  X(source, source, 13, singular, Source, Message, (SourceOf{c.ip_address, c.port}), true, true,   \
    Nested, Into(SourceAt{c.ip_address, c.port}))                                                  \
  X(proxy, proxy, 42, singular, Source, Message, (SourceOf{*c.proxy_address, c.proxy_port}),       \
    HasProxy(c), true, Nested, Into(SourceAt{*c.proxy_address, c.proxy_port}))                     \
  X(listener_name, listenerName, 14, singular, string, String, c.listener_name,                    \
    !c.listener_name.empty(), true, Stored(kString), Same)                                         \
  X(tls_info, tlsInfo, 15, singular, TlsInfo, Message, c.tls, true, true, Nested, Same)            \
  X(authentication_info, authenticationInfo, 16, singular, AuthenticationInfo, Message,            \
    c.authentication, true, true, Nested, Same)                                                    \
  X(subscriptions, subscriptions, 17, repeated, Subscription, Repeated, c.subscriptions, true,     \
    true, Nested, Same)                                                                            \
  X(idle_duration, idleDuration, 18, singular, google.protobuf.Duration, Duration, c.idle_ns,      \
    HasIdleDuration(c), c.idle_ns >= 0, Detail(kDuration), Same)                                   \
  X(network_info, networkInfo, 21, singular, NetworkInfo, Message, c.network, HasNetworkInfo(c),   \
    true, Nested, Same)                                                                            \
  X(total_request_statistics, totalRequestStatistics, 19, singular, RequestStatistics, Message,    \
    c.total_statistics, true, true, Nested, Same)                                                  \
  X(recent_request_statistics, recentRequestStatistics, 20, singular, RequestStatistics, Message,  \
    c.recent_statistics, true, true, Nested, Same)                                                 \
  X(bridge_role, bridgeRole, 40, singular, BridgeRole, Enum, c.bridge, HasBridgeRole(c), true,     \
    Stored(kEnum), Same)                                                                           \
  X(bridge_name, bridgeName, 41, singular, string, String, *c.bridge_name,                      \
    !c.bridge_name->empty(), true, Stored(kString), Same)                                          \
  X(has_will, hasWill, 55, optional, bool, Bool, c.will == WillState::kSet, HasWillKnown(c),       \
    HasWillKnown(c), Stored(kBool), Into(WillAt{c.will}))                                          \
  X(messages_queued, messagesQueued, 22, optional, uint32, Int, c.messages->out.Queued(), true,    \
    true, Detail(kUint), Into(QueuedAt{c.messages->out}))                                          \
  X(messages_in_flight, messagesInFlight, 23, optional, uint32, Int, c.messages->out.InFlight(),   \
    true, true, Detail(kUint), Into(InFlightAt{c.messages->out}))                                  \
  X(messages_pending, messagesPending, 24, optional, uint32, Int, c.messages->out.Pending(), true, \
    true, Detail(kUint), Into(PendingAt{c.messages->out}))                                         \
  X(incoming_messages_queued, incomingMessagesQueued, 25, optional, uint32, Int,                   \
    c.messages->in.Queued(), true, true, Detail(kUint), Into(QueuedAt{c.messages->in}))            \
  X(incoming_messages_in_flight, incomingMessagesInFlight, 26, optional, uint32, Int,              \
    c.messages->in.InFlight(), true, true, Detail(kUint), Into(InFlightAt{c.messages->in}))        \
  X(incoming_messages_pending, incomingMessagesPending, 27, optional, uint32, Int,                 \
    c.messages->in.Pending(), true, true, Detail(kUint), Into(PendingAt{c.messages->in}))          \
  X(messages_dropped, messagesDropped, 65, optional, uint64, Uint64, c.drops->Total(), true, true, \
    Detail(kUint), Derived)                                                                        \
  X(messages_dropped_queue_full, messagesDroppedQueueFull, 66, optional, uint64, Uint64,           \
    c.drops->QueueFull(), true, true, Detail(kUint), Into(DropsAt{*c.drops}))                      \
  X(sequence, sequence, 43, singular, uint64, Uint64, c.seq, true, true, NotQueried, Same)         \
  X(duplicate_client_id, duplicateClientId, 44, singular, bool, Bool, c.duplicate_client_id,       \
    c.duplicate_client_id, true, Stored(kBool), Same)                                              \
  X(reconnects_last_minute, reconnectsLastMinute, 50, singular, uint32, Int,                       \
    c.flapping->connects_last_minute, c.flapping->connects_last_minute != 0, true, Detail(kUint),  \
    Same)                                                                                          \
  X(reconnects_last_hour, reconnectsLastHour, 51, singular, uint32, Int,                           \
    c.flapping->connects_last_hour, c.flapping->connects_last_hour != 0, true, Detail(kUint),      \
    Same)                                                                                          \
  X(takeovers_last_minute, takeoversLastMinute, 52, singular, uint32, Int,                         \
    c.flapping->takeovers_last_minute, c.flapping->takeovers_last_minute != 0, true,               \
    Detail(kUint), Same)                                                                           \
  X(takeovers_last_hour, takeoversLastHour, 53, singular, uint32, Int,                             \
    c.flapping->takeovers_last_hour, c.flapping->takeovers_last_hour != 0, true, Detail(kUint),    \
    Same)                                                                                          \
  X(takeover_addresses, takeoverAddresses, 54, repeated, string, Repeated, c.flapping->addresses,  \
    c.flapping->ping_pong(), true, NotQueried, Same)                                               \
  X(denied_publish_count, deniedPublishCount, 60, optional, uint64, Uint64, c.denials->publish,    \
    HasDenials(c), HasDenials(c), Detail(kUint),                                                   \
    Into(DenialCountAt{*c.denials, c.denials->publish}))                                           \
  X(denied_subscribe_count, deniedSubscribeCount, 61, optional, uint64, Uint64,                    \
    c.denials->subscribe, HasDenials(c), HasDenials(c), Detail(kUint),                             \
    Into(DenialCountAt{*c.denials, c.denials->subscribe}))                                         \
  X(last_denied_topic, lastDeniedTopic, 62, singular, string, String, c.denials->last_topic,       \
    HasLastDenial(c), true, Detail(kString), Same)                                                 \
  X(last_denied_time, lastDeniedTime, 63, singular, google.protobuf.Timestamp, Timestamp,          \
    c.denials->last_ns, HasLastDenial(c), c.denials->last_ns != 0, Detail(kTimestamp), Same)

// The fields of the schema's RequestStatistics (the model's members have the same names), each
// a uint64: X(name, jsonName).
#define MQC_REQUEST_STATISTICS_FIELDS(X) \
  X(publish_count, publishCount)         \
  X(publish_bytes, publishBytes)         \
  X(deliver_count, deliverCount)         \
  X(deliver_bytes, deliverBytes)         \
  X(request_count, requestCount)

namespace mqc {

// --- when an answer carries a field (the `present` column) -------------------------------
// Each is a field whose zero would be a real value (a time, a duration, a message), so its
// absence says "none" or "unknown"; the message counts follow MessageQueue's rule
// (link/connection.h). Inline plain reads: called for every connection of a page.

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
inline bool HasNetworkInfo(const Connection& connection) { return connection.network->known; }

// The connection came through a load balancer (a PROXY protocol listener).
inline bool HasProxy(const Connection& connection) { return !connection.proxy_address->empty(); }

inline bool HasSinceLastReceive(const NetworkInfo& network) {
  return network.since_last_receive_ns >= 0;
}

inline bool HasSinceLastSend(const NetworkInfo& network) { return network.since_last_send_ns >= 0; }

// BRIDGE_ROLE_UNSPECIFIED is the enum's zero, so binary protobuf's unset is the same.
inline bool HasBridgeRole(const Connection& connection) {
  return connection.bridge != BridgeRole::kUnknown;
}

// The broker told whether the client has a will (its client layout is verified).
inline bool HasWillKnown(const Connection& connection) {
  return connection.will != WillState::kUnknown;
}

// ACL denials shown (docs/api.md, "Denials"): both counts, 0 included, and the last denied
// topic and time once there was one; else all four are left out.
inline bool HasDenials(const Connection& connection) { return connection.denials->shown; }
inline bool HasLastDenial(const Connection& connection) {
  return connection.denials->shown && connection.denials->last_ns != 0;
}

// --- where a peer's answer puts a field back (the `decode` column's places) ----------------
// Each undoes its row's `value`; Store(place, value) is called only for a field the answer has
// (the decoder in connect_rpc_proto.cc stores the plain members and sub-messages itself).

// `source` and `proxy` (SourceOf the other way).
struct SourceAt {
  std::string& ip_address;
  int& port;
};

// `has_will`: present only where the broker told.
struct WillAt {
  WillState& will;
};
inline void Store(WillAt place, bool has_will) {
  place.will = has_will ? WillState::kSet : WillState::kNone;
}

// The message counts, MessageQueue's rule undone: queued or in flight told means both are
// (kSplit), pending alone is the sum (kTotal).
struct QueuedAt {
  MessageQueue& queue;
};
struct InFlightAt {
  MessageQueue& queue;
};
struct PendingAt {
  MessageQueue& queue;
};
inline void Store(QueuedAt place, std::uint32_t queued) {
  place.queue.known = MessageQueue::Known::kSplit;
  place.queue.queued = queued;
}
inline void Store(InFlightAt place, std::uint32_t in_flight) {
  place.queue.known = MessageQueue::Known::kSplit;
  place.queue.in_flight = in_flight;
}
inline void Store(PendingAt place, std::uint32_t pending) {
  if (place.queue.known == MessageQueue::Known::kUnknown) {
    place.queue.known = MessageQueue::Known::kTotal;
  }
  place.queue.total = pending;
}

// `messages_dropped_queue_full`: told where the broker shows drops (`messages_dropped`, their
// sum, is Derived).
struct DropsAt {
  MessageDrops& drops;
};
inline void Store(DropsAt place, std::uint64_t queue_full) {
  place.drops.known = true;
  place.drops.queue_full = queue_full;
}

// Either denial count told: the broker shows denials (HasDenials).
struct DenialCountAt {
  Denials& denials;
  std::uint64_t& count;
};
inline void Store(DenialCountAt place, std::uint64_t count) {
  place.denials.shown = true;
  place.count = count;
}

// A value of the table as told: a std::optional one (a count the broker may not tell) only when
// it holds one. Plain values are always told; the compiler folds the check away.
template <typename T>
constexpr bool IsTold(const T& /*unused*/) {
  return true;
}
template <typename T>
constexpr bool IsTold(const std::optional<T>& value) {
  return value.has_value();
}
template <typename T>
constexpr const T& ToldValue(const T& value) {
  return value;
}
template <typename T>
constexpr const T& ToldValue(const std::optional<T>& value) {
  return *value;
}

// The value of `source` and `proxy`: the model keeps their two fields flat in Connection.
struct SourceOf {
  std::string_view ip_address;
  int port = 0;
};

// An enum's names in the schema, and the prefix responses leave out (close reasons:
// `CLIENT_DISCONNECT`, but for the zero).
struct EnumName {
  std::string_view name;
  std::int64_t number;
};

struct EnumNames {
  const EnumName* names = nullptr;
  std::size_t count = 0;
  std::string_view short_prefix;

  // The name responses give `number` (without short_prefix, but for the zero); empty when the
  // schema names no such number.
  std::string_view ResponseName(std::int64_t number) const {
    for (std::size_t i = 0; i < count; ++i) {
      if (names[i].number != number) continue;
      std::string_view name = names[i].name;
      if (number != 0 && StartsWith(name, short_prefix)) {
        name.remove_prefix(short_prefix.size());
      }
      return name;
    }
    return std::string_view();
  }
};

namespace field_table_detail {

inline constexpr EnumName kStateNames[] = {
    {"MQTT_CONNECTION_STATE_UNSPECIFIED", 0},
    {"MQTT_CONNECTION_STATE_OPEN", 1},
    {"MQTT_CONNECTION_STATE_CLOSED", 2},
    {"MQTT_CONNECTION_STATE_OFFLINE", 3},
};

inline constexpr EnumName kCloseReasonNames[] = {
    {"CLOSE_REASON_UNSPECIFIED", 0},           {"CLOSE_REASON_CLIENT_DISCONNECT", 1},
    {"CLOSE_REASON_CONNECTION_LOST", 2},       {"CLOSE_REASON_SESSION_TAKEN_OVER", 3},
    {"CLOSE_REASON_AUTHENTICATION_FAILED", 4}, {"CLOSE_REASON_KICKED", 5},
    {"CLOSE_REASON_BROKER_SHUTDOWN", 6},       {"CLOSE_REASON_ACCESS_REVOKED", 7},
};

inline constexpr EnumName kMechanismNames[] = {
    {"AUTHENTICATION_MECHANISM_UNSPECIFIED", 0}, {"AUTHENTICATION_MECHANISM_ANONYMOUS", 1},
    {"AUTHENTICATION_MECHANISM_PASSWORD", 2},    {"AUTHENTICATION_MECHANISM_MTLS", 3},
    {"AUTHENTICATION_MECHANISM_PSK", 4},         {"AUTHENTICATION_MECHANISM_ENHANCED", 5},
};

inline constexpr EnumName kAuthStateNames[] = {
    {"AUTHENTICATION_STATE_UNSPECIFIED", 0},
    {"AUTHENTICATION_STATE_UNAUTHENTICATED", 1},
    {"AUTHENTICATION_STATE_SUCCESS", 2},
    {"AUTHENTICATION_STATE_FAILURE", 3},
};

inline constexpr EnumName kBridgeRoleNames[] = {
    {"BRIDGE_ROLE_UNSPECIFIED", 0},
    {"BRIDGE_ROLE_NONE", 1},
    {"BRIDGE_ROLE_OUTGOING", 2},
    {"BRIDGE_ROLE_INCOMING", 3},
};

}  // namespace field_table_detail

// The names of each enum of the model; their numbers are the schema's (link/connection.h).
constexpr EnumNames EnumNamesOf(ConnectionState /*unused*/) {
  return {field_table_detail::kStateNames, std::size(field_table_detail::kStateNames), ""};
}
constexpr EnumNames EnumNamesOf(CloseReason /*unused*/) {
  return {field_table_detail::kCloseReasonNames, std::size(field_table_detail::kCloseReasonNames),
          "CLOSE_REASON_"};
}
constexpr EnumNames EnumNamesOf(AuthMechanism /*unused*/) {
  return {field_table_detail::kMechanismNames, std::size(field_table_detail::kMechanismNames), ""};
}
constexpr EnumNames EnumNamesOf(AuthState /*unused*/) {
  return {field_table_detail::kAuthStateNames, std::size(field_table_detail::kAuthStateNames), ""};
}
constexpr EnumNames EnumNamesOf(BridgeRole /*unused*/) {
  return {field_table_detail::kBridgeRoleNames, std::size(field_table_detail::kBridgeRoleNames),
          ""};
}

// One row of the table as data, for the check against the schema and for docs.
struct ConnectionFieldRow {
  std::string_view name;
  std::string_view json_name;
  int number;
  std::string_view label;  // "optional", "repeated" or "singular"
  std::string_view proto_type;
};

#define MQC_CONNECTION_FIELD_ROW(name, json, number, label, proto_type, ...) \
  ConnectionFieldRow{#name, #json, number, #label, #proto_type},
inline constexpr ConnectionFieldRow kConnectionFieldRows[] = {
    MQC_CONNECTION_FIELDS(MQC_CONNECTION_FIELD_ROW)};
#undef MQC_CONNECTION_FIELD_ROW

}  // namespace mqc
