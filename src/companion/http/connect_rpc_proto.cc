// SPDX-License-Identifier: BSD-3-Clause
// The binary protobuf side of the Connect RPC service (see connect_rpc_proto.h).
//
// Where the schema is silent:
// - Enum numbers are the model's (link/connection.h keeps them equal to the schema's), passed
//   through unchanged: a number the schema does not name stays a number, as proto3 open enums
//   keep it.
// - What the JSON side leaves out (connect_rpc_json.cc) is left unset here, so both codecs carry
//   the same values: both are expanded from the field table (connection_field_table.h), whose
//   `present` column says when a field is carried. In binary protobuf an unset scalar and its zero
//   are the same bytes, so the remaining "left out when empty" rules of the JSON side need nothing
//   here.
// - Strings are made valid UTF-8 as the JSON side makes them (ToValidUtf8): proto3 strings must
//   be, and protobuf logs an error for each one that is not.
// - A peer's answer (ConnectionFromProto) is read back by the table's decode column, under the
//   has-bits the encoder's omissions leave, so that encode, decode, encode gives the same bytes.
// - Request: protobuf's own parser; it refuses truncated input, wrong wire types and strings
//   that are not UTF-8 (proto3), without saying where, so the message says what was expected.
//   Unknown fields are skipped, as the JSON side ignores unknown names.
#include "companion/http/connect_rpc_proto.h"

#include <google/protobuf/duration.pb.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/timestamp.pb.h>

#include <array>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "companion/connection_field_table.h"
#include "companion/http/view_util.h"
#include "companion/json_util.h"
#include "companion/query/connection_fields.h"
#include "link/topic_mapping.h"

namespace mqc {
namespace {

constexpr std::int64_t kNanosPerSecond = 1'000'000'000;

// Floor division, so that times before 1970 keep nanos in [0, 1e9) as Timestamp requires.
void SetTimestamp(std::int64_t unix_ns, google::protobuf::Timestamp* timestamp) {
  std::int64_t seconds = unix_ns / kNanosPerSecond;
  std::int64_t nanos = unix_ns % kNanosPerSecond;
  if (nanos < 0) {
    nanos += kNanosPerSecond;
    --seconds;
  }
  timestamp->set_seconds(seconds);
  timestamp->set_nanos(static_cast<std::int32_t>(nanos));
}

// Duration: seconds and nanos carry the same sign.
void SetDuration(std::int64_t ns, google::protobuf::Duration* duration) {
  duration->set_seconds(ns / kNanosPerSecond);
  duration->set_nanos(static_cast<std::int32_t>(ns % kNanosPerSecond));
}

// --- the values of the sub-messages and repeated fields, by their model type ---------------

void SetValue(const SourceOf& source, connections_v1::Source* message) {
  message->set_ip_address(ToValidUtf8(source.ip_address));
  message->set_port(source.port);
}

void SetValue(const TlsInfo& tls, connections_v1::TlsInfo* message) {
  message->set_enabled(tls.enabled);
  message->set_tls_version(ToValidUtf8(tls.tls_version));
  message->set_cipher(ToValidUtf8(tls.cipher));
  message->set_peer_certificate_subject(ToValidUtf8(tls.peer_certificate_subject));
}

void SetValue(const AuthenticationInfo& authentication,
              connections_v1::AuthenticationInfo* message) {
  message->set_mechanism(
      static_cast<connections_v1::AuthenticationMechanism>(authentication.mechanism));
  message->set_state(static_cast<connections_v1::AuthenticationState>(authentication.state));
  message->set_user_principal(ToValidUtf8(authentication.user_principal));
  message->set_method(ToValidUtf8(*authentication.method));
}

void SetValue(const RequestStatistics& statistics, connections_v1::RequestStatistics* message) {
#define MQC_SET_STATISTIC(name, json_name) message->set_##name(statistics.name);
  MQC_REQUEST_STATISTICS_FIELDS(MQC_SET_STATISTIC)
#undef MQC_SET_STATISTIC
}

void SetValue(const NetworkInfo& network, connections_v1::NetworkInfo* message) {
  message->set_rtt_micros(network.rtt_us);
  message->set_rtt_variance_micros(network.rtt_variance_us);
  message->set_retransmits(network.retransmits);
  message->set_send_queue_bytes(network.send_queue_bytes);
  message->set_receive_queue_bytes(network.receive_queue_bytes);
  if (HasSinceLastReceive(network)) {
    SetDuration(network.since_last_receive_ns, message->mutable_since_last_receive());
  }
  if (HasSinceLastSend(network)) {
    SetDuration(network.since_last_send_ns, message->mutable_since_last_send());
  }
  message->set_proxy_socket(network.proxy_socket);
}

void SetValue(const Subscription& subscription, connections_v1::Subscription* out) {
  out->set_filter(ToValidUtf8(subscription.filter));
  out->set_qos(subscription.qos);
  out->set_pattern(std::string(PatternName(subscription.mapping.pattern)));
  out->set_channel(ToValidUtf8(subscription.mapping.channel));
  out->set_shared_group(ToValidUtf8(*subscription.mapping.shared_group));
  out->set_mapping_error(ToValidUtf8(*subscription.mapping.error));
  out->set_kubemq_valid(subscription.kubemq_error->empty());
  out->set_kubemq_error(ToValidUtf8(*subscription.kubemq_error));
}

void SetValue(const std::string& text, std::string* out) { *out = ToValidUtf8(text); }

template <typename Container, typename Element>
void SetRepeated(const Container& values, google::protobuf::RepeatedPtrField<Element>* out) {
  out->Reserve(static_cast<int>(std::size(values)));
  for (const auto& value : values) SetValue(value, out->Add());
}

// One field of the table (connection_field_table.h), by its kind: scalars through protobuf's
// setter, sub-messages through their mutable_ accessor.
#define MQC_SET_PROTO_Int(name, proto_type, value) message->set_##name(value);
#define MQC_SET_PROTO_Uint64(name, proto_type, value) message->set_##name(value);
#define MQC_SET_PROTO_Bool(name, proto_type, value) message->set_##name(value);
#define MQC_SET_PROTO_String(name, proto_type, value) message->set_##name(ToValidUtf8(value));
#define MQC_SET_PROTO_Enum(name, proto_type, value) \
  message->set_##name(static_cast<connections_v1::proto_type>(value));
#define MQC_SET_PROTO_Timestamp(name, proto_type, value) \
  SetTimestamp(value, message->mutable_##name());
#define MQC_SET_PROTO_Duration(name, proto_type, value) \
  SetDuration(value, message->mutable_##name());
#define MQC_SET_PROTO_Message(name, proto_type, value) SetValue(value, message->mutable_##name());
#define MQC_SET_PROTO_Repeated(name, proto_type, value) \
  SetRepeated(value, message->mutable_##name());
#define MQC_SET_PROTO_FIELD(name, json_name, number, label, proto_type, kind, value, present, \
                            known, query, decode)                                             \
  if ((present) && IsTold(value)) {                                                           \
    MQC_SET_PROTO_##kind(name, proto_type, ToldValue(value))                                  \
  }

}  // namespace

void ConnectionToProto(const Connection& c, connections_v1::Connection* message) {
  MQC_CONNECTION_FIELDS(MQC_SET_PROTO_FIELD)
}

#undef MQC_SET_PROTO_FIELD
#undef MQC_SET_PROTO_Repeated
#undef MQC_SET_PROTO_Message
#undef MQC_SET_PROTO_Duration
#undef MQC_SET_PROTO_Timestamp
#undef MQC_SET_PROTO_Enum
#undef MQC_SET_PROTO_String
#undef MQC_SET_PROTO_Bool
#undef MQC_SET_PROTO_Uint64
#undef MQC_SET_PROTO_Int

void ListConnectionsResponseToProto(const ConnectionPage& page,
                                    connections_v1::ListConnectionsResponse* message) {
  message->mutable_connections()->Reserve(static_cast<int>(page.connections.size()));
  for (const Connection& connection : page.connections) {
    ConnectionToProto(connection, message->add_connections());
  }
  message->set_total_size(static_cast<std::int64_t>(page.total_size));
  message->set_next_page_token(page.next_page_token);
  for (const PeerFailure& failure : page.peer_errors) {
    connections_v1::PeerError* error = message->add_peer_errors();
    error->set_peer(ToValidUtf8(failure.peer));
    error->set_code(ToValidUtf8(failure.code));
    error->set_message(ToValidUtf8(failure.message));
  }
  message->set_fleet_peers(page.fleet_peers);
  message->set_node_id(page.node_id);
  for (const NodeAnswer& answer : page.node_answers) {
    connections_v1::NodeAnswer* out = message->add_node_answers();
    out->set_peer(ToValidUtf8(answer.peer));
    out->set_node_id(answer.node_id);
    out->set_total_size(answer.total_size);
    out->set_answer_ms(answer.answer_ms);
  }
}

namespace {

// Parses `bytes` (empty: the default message) into `message`.
Status ParseBinary(std::string_view bytes, std::string_view where,
                   google::protobuf::MessageLite* message) {
  if (bytes.empty()) return Status();
  // protobuf logs a line for a string that is not UTF-8; the client gets the error instead, and
  // a client cannot fill the companion's log.
  const google::protobuf::LogSilencer quiet;
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
      !message->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Status(StatusCode::kInvalidArgument,
                  std::string(where) + " is not a valid binary " + message->GetTypeName() + " (" +
                      std::to_string(bytes.size()) +
                      " bytes: truncated, a wrong wire type, or a string that is not UTF-8)");
  }
  return Status();
}

}  // namespace

Status DecodeListConnectionsRequestProto(std::string_view bytes, std::string_view where,
                                         ListConnectionsRequest* request) {
  *request = ListConnectionsRequest();
  connections_v1::ListConnectionsRequest message;
  Status status = ParseBinary(bytes, where, &message);
  if (!status.ok()) return status;
  request->filter = message.filter();
  request->order_by = message.order_by();
  request->page_size = message.page_size();
  request->page_token = message.page_token();
  const int scope = static_cast<int>(message.scope());
  if (scope < 0 || scope > static_cast<int>(ConnectionScope::kFleet)) {
    return InvalidArgument(std::string(where) + ": field 'scope' is " + std::to_string(scope) +
                           "; expected CONNECTION_SCOPE_NODE (1) or CONNECTION_SCOPE_FLEET (2)");
  }
  request->scope = static_cast<ConnectionScope>(scope);
  return Status();
}

namespace {

// Unix ns of a Timestamp, saturated (a ban view refuses a time out of range as in the past or too
// far; a peer's connection keeps the bound).
std::int64_t UnixNs(const google::protobuf::Timestamp& t) {
  constexpr std::int64_t kMaxSeconds = 9223372035;  // 2262-04-11
  if (t.seconds() > kMaxSeconds) return std::numeric_limits<std::int64_t>::max();
  if (t.seconds() < -kMaxSeconds) return std::numeric_limits<std::int64_t>::min();
  return t.seconds() * 1000000000 + t.nanos();
}

std::int64_t Nanos(const google::protobuf::Duration& duration) {
  return duration.seconds() * kNanosPerSecond + duration.nanos();
}

Pattern PatternOfName(std::string_view name) {
  for (const Pattern pattern : {Pattern::kEvents, Pattern::kStore, Pattern::kQueues,
                                Pattern::kCommands, Pattern::kQueries}) {
    if (PatternName(pattern) == name) return pattern;
  }
  return Pattern::kNone;
}

// --- a peer's answer back into the model (SetValue undone), for the field table's decode column

// The wire's value as the model keeps it: a time in Unix ns, a duration in ns, an enum by its
// number (the model's numbers are the schema's); anything else as it is.
std::int64_t FromWire(const google::protobuf::Timestamp& timestamp) { return UnixNs(timestamp); }
std::int64_t FromWire(const google::protobuf::Duration& duration) { return Nanos(duration); }
struct EnumNumber {
  int number;
};
template <typename T>
decltype(auto) FromWire(const T& value) {
  if constexpr (std::is_enum_v<T>) {
    return EnumNumber{static_cast<int>(value)};
  } else {
    return (value);  // a reference: a string is copied once, into the model
  }
}

// A member the row's value reads (decode column Same).
template <typename Member, typename Value>
void Store(Member& member, const Value& value) {
  member = value;
}
template <typename Enum>
void Store(Enum& member, EnumNumber value) {
  member = static_cast<Enum>(value.number);
}

// decode column Derived: the model keeps nothing of it.
struct NotKept {};
template <typename Value>
void Store(NotKept /*unused*/, const Value& /*unused*/) {}

void Store(SourceAt place, const connections_v1::Source& message) {
  place.ip_address = message.ip_address();
  place.port = message.port();
}

void Store(TlsInfo& tls, const connections_v1::TlsInfo& message) {
  tls.enabled = message.enabled();
  tls.tls_version = message.tls_version();
  tls.cipher = message.cipher();
  tls.peer_certificate_subject = message.peer_certificate_subject();
}

void Store(AuthenticationInfo& authentication, const connections_v1::AuthenticationInfo& message) {
  authentication.mechanism = static_cast<AuthMechanism>(message.mechanism());
  authentication.state = static_cast<AuthState>(message.state());
  authentication.user_principal = message.user_principal();
  SetUnlessEmpty(&authentication.method, message.method());
}

void Store(RequestStatistics& statistics, const connections_v1::RequestStatistics& message) {
#define MQC_READ_STATISTIC(name, json_name) statistics.name = message.name();
  MQC_REQUEST_STATISTICS_FIELDS(MQC_READ_STATISTIC)
#undef MQC_READ_STATISTIC
}

// Carried only when the kernel reported the socket (HasNetworkInfo).
void Store(NetworkInfo& network, const connections_v1::NetworkInfo& message) {
  network.known = true;
  network.rtt_us = message.rtt_micros();
  network.rtt_variance_us = message.rtt_variance_micros();
  network.retransmits = message.retransmits();
  network.send_queue_bytes = message.send_queue_bytes();
  network.receive_queue_bytes = message.receive_queue_bytes();
  if (message.has_since_last_receive()) {
    network.since_last_receive_ns = Nanos(message.since_last_receive());
  }
  if (message.has_since_last_send()) network.since_last_send_ns = Nanos(message.since_last_send());
  network.proxy_socket = message.proxy_socket();
}

// kubemq_valid is not kept: it is kubemq_error->empty().
void Store(Subscription& subscription, const connections_v1::Subscription& message) {
  subscription.filter = message.filter();
  subscription.qos = message.qos();
  subscription.mapping.pattern = PatternOfName(message.pattern());
  subscription.mapping.channel = message.channel();
  SetUnlessEmpty(&subscription.mapping.shared_group, message.shared_group());
  SetUnlessEmpty(&subscription.mapping.error, message.mapping_error());
  SetUnlessEmpty(&subscription.kubemq_error, message.kubemq_error());
}

void Store(std::vector<Subscription>& subscriptions,
           const google::protobuf::RepeatedPtrField<connections_v1::Subscription>& message) {
  subscriptions.resize(static_cast<std::size_t>(message.size()));
  for (int i = 0; i < message.size(); ++i) {
    Store(subscriptions[static_cast<std::size_t>(i)], message.Get(i));
  }
}

// The takeover addresses: the model keeps the newest N.
template <std::size_t N>
void Store(std::array<std::string, N>& addresses,
           const google::protobuf::RepeatedPtrField<std::string>& message) {
  for (std::size_t i = 0; i < N && i < static_cast<std::size_t>(message.size()); ++i) {
    addresses[i] = message.Get(static_cast<int>(i));
  }
}

// A member kept out of line (Boxed): made when the answer has the field.
template <typename T, typename Value>
void Store(Boxed<T>& member, const Value& value) {
  Store(*member, value);
}

// Whether the answer has the field, by its label and kind: the has-bit where binary protobuf
// keeps one; else always (an unset scalar reads as its zero, an unset repeated field as empty).
#define MQC_HAS_PROTO_optional(name, kind) message.has_##name()
#define MQC_HAS_PROTO_repeated(name, kind) true
#define MQC_HAS_PROTO_singular(name, kind) MQC_HAS_PROTO_##kind(name)
#define MQC_HAS_PROTO_Int(name) true
#define MQC_HAS_PROTO_Uint64(name) true
#define MQC_HAS_PROTO_Bool(name) true
#define MQC_HAS_PROTO_String(name) true
#define MQC_HAS_PROTO_Enum(name) true
#define MQC_HAS_PROTO_Timestamp(name) message.has_##name()
#define MQC_HAS_PROTO_Duration(name) message.has_##name()
#define MQC_HAS_PROTO_Message(name) message.has_##name()
// The decode column: where Store puts the field. Into(place) drops the row's value after the
// place (a place may hold commas, hence the variadic macros).
#define MQC_PLACE_Same(value) value
#define MQC_PLACE_Into(...) __VA_ARGS__ MQC_PLACE_DROP
#define MQC_PLACE_DROP(...)
#define MQC_PLACE_Derived(value) NotKept()
#define MQC_READ_PROTO_FIELD(name, json_name, number, label, proto_type, kind, value, present, \
                             known, query, decode)                                             \
  if (MQC_HAS_PROTO_##label(name, kind)) Store(MQC_PLACE_##decode(value), FromWire(message.name()));

}  // namespace

Connection ConnectionFromProto(const connections_v1::Connection& message) {
  Connection c;
  MQC_CONNECTION_FIELDS(MQC_READ_PROTO_FIELD)
  return c;
}

#undef MQC_READ_PROTO_FIELD
#undef MQC_PLACE_Derived
#undef MQC_PLACE_DROP
#undef MQC_PLACE_Into
#undef MQC_PLACE_Same
#undef MQC_HAS_PROTO_Message
#undef MQC_HAS_PROTO_Duration
#undef MQC_HAS_PROTO_Timestamp
#undef MQC_HAS_PROTO_Enum
#undef MQC_HAS_PROTO_String
#undef MQC_HAS_PROTO_Bool
#undef MQC_HAS_PROTO_Uint64
#undef MQC_HAS_PROTO_Int
#undef MQC_HAS_PROTO_singular
#undef MQC_HAS_PROTO_repeated
#undef MQC_HAS_PROTO_optional

Status DecodeListConnectionsResponseProto(std::string_view bytes, std::string_view where,
                                          ConnectionPage* page) {
  *page = ConnectionPage();
  connections_v1::ListConnectionsResponse message;
  Status status = ParseBinary(bytes, where, &message);
  if (!status.ok()) return status;
  page->connections.reserve(static_cast<std::size_t>(message.connections_size()));
  for (const connections_v1::Connection& connection : message.connections()) {
    page->connections.push_back(ConnectionFromProto(connection));
  }
  page->total_size = message.total_size();
  page->next_page_token = message.next_page_token();
  for (const connections_v1::PeerError& error : message.peer_errors()) {
    page->peer_errors.push_back({error.peer(), error.code(), error.message()});
  }
  page->fleet_peers = message.fleet_peers();
  page->node_id = message.node_id();
  for (const connections_v1::NodeAnswer& answer : message.node_answers()) {
    page->node_answers.push_back(
        {answer.peer(), answer.node_id(), answer.total_size(), answer.answer_ms()});
  }
  return Status();
}

std::string EncodeListConnectionsResponseProto(const ConnectionPage& page) {
  connections_v1::ListConnectionsResponse message;
  ListConnectionsResponseToProto(page, &message);
  return message.SerializeAsString();
}

Status DecodeDisconnectConnectionRequestProto(std::string_view bytes, std::string_view where,
                                              std::string* client_id, std::string* uid,
                                              bool* prevent_will,
                                              std::optional<std::uint32_t>* node_id) {
  client_id->clear();
  uid->clear();
  *prevent_will = false;
  node_id->reset();
  connections_v1::DisconnectConnectionRequest message;
  Status status = ParseBinary(bytes, where, &message);
  if (!status.ok()) return status;
  *client_id = message.client_id();
  *uid = message.uid();
  *prevent_will = message.prevent_will();
  if (message.has_node_id()) *node_id = message.node_id();
  return Status();
}

std::string EncodeDisconnectConnectionResponseProto(std::string_view client_id,
                                                    std::string_view uid, bool disconnected) {
  connections_v1::DisconnectConnectionResponse message;
  message.set_client_id(ToValidUtf8(client_id));
  message.set_uid(ToValidUtf8(uid));
  message.set_disconnected(disconnected);
  return message.SerializeAsString();
}

namespace {

void SetBan(const Ban& ban, std::uint32_t node_id, connections_v1::Ban* message) {
  message->set_as(std::string(ban.as()));
  message->set_who(ToValidUtf8(ban.who));
  message->set_by(ToValidUtf8(ban.by));
  message->set_reason(ToValidUtf8(ban.reason));
  SetTimestamp(ban.at_ns, message->mutable_at());
  if (ban.until_ns != 0) SetTimestamp(ban.until_ns, message->mutable_until());
  message->set_node_id(node_id);
}

// A peer's ban back into the model: its target checked as a request's would be.
Status ReadBan(const connections_v1::Ban& message, std::string_view where, NodeBan* out) {
  Status status = ParseBanTarget(message.as(), message.who(), &out->ban);
  if (!status.ok()) return InvalidArgument(std::string(where) + ": " + status.message());
  out->ban.by = message.by();
  out->ban.reason = message.reason();
  out->ban.at_ns = UnixNs(message.at());
  out->ban.until_ns = message.has_until() ? UnixNs(message.until()) : 0;
  out->node_id = message.node_id();
  return Status();
}

Status ReadScopeNumber(int scope, std::string_view where, ConnectionScope* out) {
  if (scope < 0 || scope > static_cast<int>(ConnectionScope::kFleet)) {
    return InvalidArgument(std::string(where) + ": field 'scope' is " + std::to_string(scope) +
                           "; expected CONNECTION_SCOPE_NODE (1) or CONNECTION_SCOPE_FLEET (2)");
  }
  *out = static_cast<ConnectionScope>(scope);
  return Status();
}

template <typename Message>
void AddBrokerOutcomes(const std::vector<BrokerBanOutcome>& brokers, Message* message) {
  for (const BrokerBanOutcome& broker : brokers) {
    connections_v1::BrokerBanOutcome* out = message->add_brokers();
    out->set_node_id(broker.node_id);
    out->set_peer(ToValidUtf8(broker.peer));
    if (!broker.status.ok()) {
      out->set_code(std::string(ConnectRpcCodeName(broker.status.code())));
      out->set_message(ToValidUtf8(broker.status.message()));
    }
    out->set_kicked(static_cast<std::int32_t>(broker.kicked));
    if (!broker.status.ok() && !broker.peer.empty()) {
      connections_v1::PeerError* error = message->add_peer_errors();
      error->set_peer(ToValidUtf8(broker.peer));
      error->set_code(std::string(ConnectRpcCodeName(broker.status.code())));
      error->set_message(ToValidUtf8(broker.status.message()));
    }
  }
}

}  // namespace

Status DecodeListBansRequestProto(std::string_view bytes, std::string_view where,
                                  ConnectionScope* scope) {
  connections_v1::ListBansRequest message;
  Status status = ParseBinary(bytes, where, &message);
  if (!status.ok()) return status;
  return ReadScopeNumber(static_cast<int>(message.scope()), where, scope);
}

Status DecodeBanClientRequestProto(std::string_view bytes, std::string_view where,
                                   BanRequestFields* fields) {
  *fields = BanRequestFields();
  connections_v1::BanClientRequest message;
  Status status = ParseBinary(bytes, where, &message);
  if (!status.ok()) return status;
  fields->as = message.as();
  fields->who = message.who();
  fields->by = message.by();
  fields->reason = message.reason();
  fields->has_until = message.has_until();
  if (fields->has_until) fields->until_ns = UnixNs(message.until());
  fields->has_duration = message.duration_s() != 0;
  fields->duration_s = message.duration_s();
  if (message.has_node_id()) fields->node_id = message.node_id();
  return ReadScopeNumber(static_cast<int>(message.scope()), where, &fields->scope);
}

Status DecodeUnbanClientRequestProto(std::string_view bytes, std::string_view where,
                                     BanRequestFields* fields) {
  *fields = BanRequestFields();
  connections_v1::UnbanClientRequest message;
  Status status = ParseBinary(bytes, where, &message);
  if (!status.ok()) return status;
  fields->as = message.as();
  fields->who = message.who();
  if (message.has_node_id()) fields->node_id = message.node_id();
  return ReadScopeNumber(static_cast<int>(message.scope()), where, &fields->scope);
}

Status DecodeGetClientHistoryRequestProto(std::string_view bytes, std::string_view where,
                                          std::string* client_id) {
  connections_v1::GetClientHistoryRequest message;
  Status status = ParseBinary(bytes, where, &message);
  if (!status.ok()) return status;
  *client_id = message.client_id();
  return Status();
}

std::string EncodeGetClientHistoryResponseProto(std::string_view client_id,
                                                const std::vector<ClientEvent>& events,
                                                std::uint64_t dropped) {
  connections_v1::GetClientHistoryResponse message;
  message.set_client_id(std::string(client_id));
  for (const ClientEvent& event : events) {
    connections_v1::ClientEvent* out = message.add_events();
    SetTimestamp(event.time_ns, out->mutable_time());
    out->set_kind(static_cast<connections_v1::ClientEventKind>(event.kind));
    out->set_close_reason(static_cast<connections_v1::CloseReason>(event.close_reason));
    out->set_uid(event.uid);
    out->set_ip_address(event.ip_address);
    out->set_port(event.port);
    out->set_username(event.username);
    out->set_protocol_version(event.protocol_version);
    out->set_count(static_cast<std::int32_t>(event.count));
    out->set_filter(event.filter);
  }
  message.set_dropped_events(static_cast<std::int64_t>(dropped));
  return message.SerializeAsString();
}

Status DecodeGetActivityRequestProto(std::string_view bytes, std::string_view where) {
  connections_v1::GetActivityRequest message;
  return ParseBinary(bytes, where, &message);
}

std::string EncodeGetActivityResponseProto(std::uint32_t interval_seconds,
                                           const std::vector<ActivitySample>& samples,
                                           bool acl_denials_shown) {
  static const FieldDef* const kCloseReasonField = FindField("close_reason");
  connections_v1::GetActivityResponse message;
  message.set_interval_seconds(interval_seconds);
  for (const ActivitySample& sample : samples) {
    connections_v1::ActivitySample* out = message.add_samples();
    SetTimestamp(sample.end_ns, out->mutable_time());
    out->set_seconds(sample.seconds);
    out->set_open_connections(ActivityCount(sample.open_connections));
    out->set_connects(ActivityCount(sample.connects));
    out->set_connects_refused(ActivityCount(sample.connects_refused));
    for (std::size_t reason = 0; reason < 8; ++reason) {
      if (sample.disconnects[reason] == 0) continue;
      (*out->mutable_disconnects())[std::string(
          ResponseEnumName(*kCloseReasonField, static_cast<std::int64_t>(reason)))] =
          ActivityCount(sample.disconnects[reason]);
    }
    out->set_messages_received(ActivityCount(sample.messages_received));
    out->set_messages_delivered(ActivityCount(sample.messages_delivered));
    out->set_subscribes_refused(ActivityCount(sample.subscribes_refused));
    out->set_publishes_refused(ActivityCount(sample.publishes_refused));
    out->set_flapping_clients(ActivityCount(sample.flapping_clients));
  }
  message.set_acl_denials_shown(acl_denials_shown);
  return message.SerializeAsString();
}

std::string EncodeListBansResponseProto(const std::vector<NodeBan>& bans,
                                        std::uint64_t refused_total, std::uint32_t node_id,
                                        const std::vector<BrokerBanOutcome>& failed) {
  connections_v1::ListBansResponse message;
  for (const NodeBan& ban : bans) SetBan(ban.ban, ban.node_id, message.add_bans());
  message.set_refused_total(static_cast<std::int64_t>(refused_total));
  for (const BrokerBanOutcome& broker : failed) {
    connections_v1::PeerError* error = message.add_peer_errors();
    error->set_peer(ToValidUtf8(broker.peer));
    error->set_code(std::string(ConnectRpcCodeName(broker.status.code())));
    error->set_message(ToValidUtf8(broker.status.message()));
  }
  message.set_node_id(node_id);
  return message.SerializeAsString();
}

std::string EncodeBanClientResponseProto(const NodeBan& ban, std::size_t kicked,
                                         const std::vector<BrokerBanOutcome>& brokers) {
  connections_v1::BanClientResponse message;
  SetBan(ban.ban, ban.node_id, message.mutable_ban());
  message.set_kicked(static_cast<std::int32_t>(kicked));
  AddBrokerOutcomes(brokers, &message);
  return message.SerializeAsString();
}

std::string EncodeUnbanClientResponseProto(const NodeBan& ban,
                                           const std::vector<BrokerBanOutcome>& brokers) {
  connections_v1::UnbanClientResponse message;
  SetBan(ban.ban, ban.node_id, message.mutable_ban());
  AddBrokerOutcomes(brokers, &message);
  message.set_removed(true);
  return message.SerializeAsString();
}

Status DecodeWatchConnectionsRequestProto(std::string_view bytes, std::string_view where,
                                          WatchConnectionsRequest* request) {
  *request = WatchConnectionsRequest();
  connections_v1::WatchConnectionsRequest message;
  Status status = ParseBinary(bytes, where, &message);
  if (!status.ok()) return status;
  request->filter = message.filter();
  request->resume_after = message.resume_after();
  if (message.scope() > connections_v1::CONNECTION_SCOPE_FLEET || message.scope() < 0) {
    return InvalidArgument(std::string(where) + ": scope " + std::to_string(message.scope()) +
                           " is none of CONNECTION_SCOPE_UNSPECIFIED (0), _NODE (1), _FLEET (2)");
  }
  request->scope = static_cast<ConnectionScope>(message.scope());
  request->resume_token = message.resume_token();
  return Status();
}

Status DecodeWatchConnectionsResponseProto(std::string_view bytes, std::string_view where,
                                           DecodedWatchMessage* out) {
  *out = DecodedWatchMessage();
  connections_v1::WatchConnectionsResponse message;
  Status status = ParseBinary(bytes, where, &message);
  if (!status.ok()) return status;
  out->sequence = message.sequence();
  if (message.kind() < 0 || message.kind() > static_cast<int>(ChangeKind::kPeerLost)) {
    return InvalidArgument(std::string(where) + ": unknown kind " + std::to_string(message.kind()));
  }
  out->kind = static_cast<ChangeKind>(message.kind());
  out->node_id = message.node_id();
  out->has_connection = message.has_connection();
  if (out->has_connection) out->connection = ConnectionFromProto(message.connection());
  out->has_subscription = message.has_subscription();
  if (out->has_subscription) Store(out->subscription, message.subscription());
  return Status();
}

std::string EncodeWatchConnectionsResponseProto(const WatchMessage& watch) {
  connections_v1::WatchConnectionsResponse message;
  message.set_sequence(watch.sequence);
  message.set_kind(static_cast<connections_v1::ConnectionChangeKind>(watch.kind));
  if (watch.connection != nullptr)
    ConnectionToProto(*watch.connection, message.mutable_connection());
  if (watch.subscription != nullptr) {
    SetValue(*watch.subscription, message.mutable_subscription());
  }
  message.set_node_id(watch.node_id);
  if (!watch.resume_token.empty()) {
    message.set_resume_token(std::string(watch.resume_token));
  }
  if (watch.peer_error != nullptr) {
    connections_v1::PeerError* error = message.mutable_peer_error();
    error->set_peer(watch.peer_error->peer);
    error->set_code(watch.peer_error->code);
    error->set_message(watch.peer_error->message);
  }
  return message.SerializeAsString();
}

}  // namespace mqc

namespace mqc {

std::string EncodeBanClientRequestProto(const Ban& ban) {
  connections_v1::BanClientRequest message;
  message.set_as(std::string(ban.as()));
  message.set_who(ToValidUtf8(ban.who));
  message.set_by(ToValidUtf8(ban.by));
  message.set_reason(ToValidUtf8(ban.reason));
  if (ban.until_ns != 0) SetTimestamp(ban.until_ns, message.mutable_until());
  return message.SerializeAsString();
}

std::string EncodeUnbanClientRequestProto(const Ban& target) {
  connections_v1::UnbanClientRequest message;
  message.set_as(std::string(target.as()));
  message.set_who(ToValidUtf8(target.who));
  return message.SerializeAsString();
}

Status DecodeListBansResponseProto(std::string_view bytes, std::string_view where,
                                   std::vector<Ban>* bans, std::uint64_t* refused_total,
                                   std::uint32_t* node_id) {
  bans->clear();
  connections_v1::ListBansResponse message;
  Status status = ParseBinary(bytes, where, &message);
  if (!status.ok()) return status;
  if (message.bans_size() > static_cast<int>(kMaxBans) || message.refused_total() < 0) {
    return InvalidArgument(std::string(where) + ": " + std::to_string(message.bans_size()) +
                           " bans (at most " + std::to_string(kMaxBans) + "), refusedTotal " +
                           std::to_string(message.refused_total()));
  }
  for (const connections_v1::Ban& item : message.bans()) {
    NodeBan ban;
    status = ReadBan(item, where, &ban);
    if (!status.ok()) return status;
    bans->push_back(std::move(ban.ban));
  }
  *refused_total = static_cast<std::uint64_t>(message.refused_total());
  *node_id = message.node_id();
  return Status();
}

Status DecodeBanClientResponseProto(std::string_view bytes, std::string_view where, NodeBan* ban,
                                    std::size_t* kicked) {
  connections_v1::BanClientResponse message;
  Status status = ParseBinary(bytes, where, &message);
  if (!status.ok()) return status;
  if (message.kicked() < 0) {
    return InvalidArgument(std::string(where) + ": kicked is " + std::to_string(message.kicked()));
  }
  *kicked = static_cast<std::size_t>(message.kicked());
  return ReadBan(message.ban(), where, ban);
}

Status DecodeUnbanClientResponseProto(std::string_view bytes, std::string_view where,
                                      NodeBan* ban) {
  connections_v1::UnbanClientResponse message;
  Status status = ParseBinary(bytes, where, &message);
  if (!status.ok()) return status;
  return ReadBan(message.ban(), where, ban);
}

}  // namespace mqc
