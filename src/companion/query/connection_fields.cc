// SPDX-License-Identifier: BSD-3-Clause
// The field table of connection_fields.h. Enum names follow the protobuf style of the rich API
// (`MQTT_CONNECTION_STATE_OPEN`); their numbers are those of connection.h.
#include "companion/query/connection_fields.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "companion/connection.h"
#include "link/topic_mapping.h"

namespace mqc {
namespace {

FieldValue Signed(std::int64_t number) {
  FieldValue value;
  value.number = number;
  return value;
}

FieldValue Unsigned(std::uint64_t number) {
  FieldValue value;
  value.unsigned_number = number;
  return value;
}

FieldValue Text(std::string_view text) {
  FieldValue value;
  value.text = text;
  return value;
}

FieldValue SignedIf(bool is_set, std::int64_t number) {
  FieldValue value = Signed(number);
  value.is_set = is_set;
  return value;
}

template <typename Enum>
FieldValue EnumNumber(Enum value) {
  return Signed(static_cast<std::int64_t>(value));
}

// networkInfo's numbers: unset unless the kernel reported the connection's socket.
template <std::uint32_t NetworkInfo::*kMember>
FieldValue NetworkNumber(const Connection& c) {
  return SignedIf(c.network.known, c.network.*kMember);
}

template <std::int64_t NetworkInfo::*kMember>
FieldValue NetworkDuration(const Connection& c) {
  return SignedIf(c.network.known && c.network.*kMember >= 0, c.network.*kMember);
}

// A message count (MessageQueue): unset where the broker does not tell it.
template <MessageQueue MessageCounts::*kDirection,
          std::optional<std::uint32_t> (MessageQueue::*kCount)() const>
FieldValue MessageCount(const Connection& c) {
  const std::optional<std::uint32_t> count = ((c.messages.*kDirection).*kCount)();
  FieldValue value = Unsigned(count.value_or(0));
  value.is_set = count.has_value();
  return value;
}

// A drop count (MessageDrops): unset where the broker hides it.
template <std::optional<std::uint64_t> (MessageDrops::*kCount)() const>
FieldValue DropCount(const Connection& c) {
  const std::optional<std::uint64_t> count = (c.drops.*kCount)();
  FieldValue value = Unsigned(count.value_or(0));
  value.is_set = count.has_value();
  return value;
}

template <std::uint32_t FlappingCounts::*kMember>
FieldValue FlappingCount(const Connection& c) {
  return Unsigned(c.flapping.*kMember);
}

// An ACL denial count: unset where the broker hides denials (Denials::shown).
template <std::uint64_t Denials::*kMember>
FieldValue DenialCount(const Connection& c) {
  FieldValue value = Unsigned(c.denials.*kMember);
  value.is_set = c.denials.shown;
  return value;
}

template <std::uint64_t RequestStatistics::*kMember>
FieldValue TotalStatistic(const Connection& c) {
  return Unsigned(c.total_statistics.*kMember);
}

template <std::uint64_t RequestStatistics::*kMember>
FieldValue RecentStatistic(const Connection& c) {
  return Unsigned(c.recent_statistics.*kMember);
}

constexpr EnumName kStateNames[] = {
    {"MQTT_CONNECTION_STATE_UNSPECIFIED", 0},
    {"MQTT_CONNECTION_STATE_OPEN", 1},
    {"MQTT_CONNECTION_STATE_CLOSED", 2},
    {"MQTT_CONNECTION_STATE_OFFLINE", 3},
};

constexpr EnumName kCloseReasonNames[] = {
    {"CLOSE_REASON_UNSPECIFIED", 0},           {"CLOSE_REASON_CLIENT_DISCONNECT", 1},
    {"CLOSE_REASON_CONNECTION_LOST", 2},       {"CLOSE_REASON_SESSION_TAKEN_OVER", 3},
    {"CLOSE_REASON_AUTHENTICATION_FAILED", 4}, {"CLOSE_REASON_KICKED", 5},
    {"CLOSE_REASON_BROKER_SHUTDOWN", 6},       {"CLOSE_REASON_ACCESS_REVOKED", 7},
};

constexpr EnumName kMechanismNames[] = {
    {"AUTHENTICATION_MECHANISM_UNSPECIFIED", 0}, {"AUTHENTICATION_MECHANISM_ANONYMOUS", 1},
    {"AUTHENTICATION_MECHANISM_PASSWORD", 2},    {"AUTHENTICATION_MECHANISM_MTLS", 3},
    {"AUTHENTICATION_MECHANISM_PSK", 4},         {"AUTHENTICATION_MECHANISM_ENHANCED", 5},
};

constexpr EnumName kAuthStateNames[] = {
    {"AUTHENTICATION_STATE_UNSPECIFIED", 0},
    {"AUTHENTICATION_STATE_UNAUTHENTICATED", 1},
    {"AUTHENTICATION_STATE_SUCCESS", 2},
    {"AUTHENTICATION_STATE_FAILURE", 3},
};

constexpr EnumName kBridgeRoleNames[] = {
    {"BRIDGE_ROLE_UNSPECIFIED", 0},
    {"BRIDGE_ROLE_NONE", 1},
    {"BRIDGE_ROLE_OUTGOING", 2},
    {"BRIDGE_ROLE_INCOMING", 3},
};

FieldDef Scalar(std::string_view path, FieldKind kind, FieldValue (*get)(const Connection&)) {
  FieldDef field;
  field.path = path;
  field.kind = kind;
  field.get = get;
  return field;
}

template <std::size_t kCount>
FieldDef EnumField(std::string_view path, const EnumName (&names)[kCount],
                   std::string_view short_prefix, FieldValue (*get)(const Connection&)) {
  FieldDef field = Scalar(path, FieldKind::kEnum, get);
  field.enum_names = names;
  field.enum_count = kCount;
  field.short_prefix = short_prefix;
  return field;
}

FieldDef Detail(FieldDef field) {
  field.detail = true;
  return field;
}

FieldDef OfSubscription(std::string_view path, FieldKind kind,
                        FieldValue (*get)(const Subscription&)) {
  FieldDef field;
  field.path = path;
  field.kind = kind;
  field.get_from_subscription = get;
  return field;
}

std::vector<FieldDef> BuildFields() {
  using K = FieldKind;
  using C = const Connection&;
  using R = RequestStatistics;
  using N = NetworkInfo;
  using M = MessageCounts;
  using Q = MessageQueue;
  using F = FlappingCounts;
  return {
      Scalar("node_id", K::kInt, [](C c) { return Signed(c.node_id); }),
      Scalar("uid", K::kString, [](C c) { return Text(c.uid); }),
      EnumField("state", kStateNames, "", [](C c) { return EnumNumber(c.state); }),
      Scalar("open_time", K::kTimestamp, [](C c) { return Signed(c.open_time_ns); }),
      Scalar("close_time", K::kTimestamp,
             [](C c) { return SignedIf(c.close_time_ns != 0, c.close_time_ns); }),
      Scalar("session_expiry_time", K::kTimestamp,
             [](C c) { return SignedIf(c.session_expiry_time_ns != 0, c.session_expiry_time_ns); }),
      EnumField("close_reason", kCloseReasonNames, "CLOSE_REASON_",
                [](C c) { return EnumNumber(c.close_reason); }),
      Scalar("client_id", K::kString, [](C c) { return Text(c.client_id); }),
      Scalar("username", K::kString, [](C c) { return Text(c.username); }),
      Scalar("protocol_version", K::kInt, [](C c) { return Signed(c.protocol_version); }),
      Scalar("clean_session", K::kBool, [](C c) { return Signed(c.clean_session ? 1 : 0); }),
      Scalar("keep_alive", K::kInt, [](C c) { return Signed(c.keep_alive); }),
      Scalar("source.ip_address", K::kString, [](C c) { return Text(c.ip_address); }),
      Scalar("source.port", K::kInt, [](C c) { return Signed(c.port); }),
      Scalar("proxy.ip_address", K::kString, [](C c) { return Text(c.proxy_address); }),
      Scalar("proxy.port", K::kInt, [](C c) { return Signed(c.proxy_port); }),
      Scalar("listener_name", K::kString, [](C c) { return Text(c.listener_name); }),
      Scalar("tls_info.enabled", K::kBool, [](C c) { return Signed(c.tls.enabled ? 1 : 0); }),
      Scalar("tls_info.tls_version", K::kString, [](C c) { return Text(c.tls.tls_version); }),
      Scalar("tls_info.cipher", K::kString, [](C c) { return Text(c.tls.cipher); }),
      Scalar("tls_info.peer_certificate_subject", K::kString,
             [](C c) { return Text(c.tls.peer_certificate_subject); }),
      EnumField("authentication_info.mechanism", kMechanismNames, "",
                [](C c) { return EnumNumber(c.authentication.mechanism); }),
      EnumField("authentication_info.state", kAuthStateNames, "",
                [](C c) { return EnumNumber(c.authentication.state); }),
      Scalar("authentication_info.user_principal", K::kString,
             [](C c) { return Text(c.authentication.user_principal); }),
      Scalar("authentication_info.method", K::kString,
             [](C c) { return Text(c.authentication.method); }),
      EnumField("bridge_role", kBridgeRoleNames, "", [](C c) { return EnumNumber(c.bridge); }),
      Scalar("bridge_name", K::kString, [](C c) { return Text(c.bridge_name); }),
      Scalar("has_will", K::kBool,
             [](C c) {
               return SignedIf(c.will != WillState::kUnknown, c.will == WillState::kSet ? 1 : 0);
             }),
      // Only a fleet answer can see another broker's connections: node queries find it false
      // (docs/fleet.md, "Duplicate client ids").
      Scalar("duplicate_client_id", K::kBool,
             [](C c) { return Signed(c.duplicate_client_id ? 1 : 0); }),
      Detail(Scalar("idle_duration", K::kDuration,
                    [](C c) { return SignedIf(c.idle_ns >= 0, c.idle_ns); })),
      Detail(Scalar("network_info.rtt_micros", K::kInt, &NetworkNumber<&N::rtt_us>)),
      Detail(
          Scalar("network_info.rtt_variance_micros", K::kInt, &NetworkNumber<&N::rtt_variance_us>)),
      Detail(Scalar("network_info.retransmits", K::kInt, &NetworkNumber<&N::retransmits>)),
      Detail(
          Scalar("network_info.send_queue_bytes", K::kInt, &NetworkNumber<&N::send_queue_bytes>)),
      Detail(Scalar("network_info.receive_queue_bytes", K::kInt,
                    &NetworkNumber<&N::receive_queue_bytes>)),
      Detail(Scalar("network_info.since_last_receive", K::kDuration,
                    &NetworkDuration<&N::since_last_receive_ns>)),
      Detail(Scalar("network_info.since_last_send", K::kDuration,
                    &NetworkDuration<&N::since_last_send_ns>)),
      Detail(Scalar("total_request_statistics.publish_count", K::kUint,
                    &TotalStatistic<&R::publish_count>)),
      Detail(Scalar("total_request_statistics.publish_bytes", K::kUint,
                    &TotalStatistic<&R::publish_bytes>)),
      Detail(Scalar("total_request_statistics.deliver_count", K::kUint,
                    &TotalStatistic<&R::deliver_count>)),
      Detail(Scalar("total_request_statistics.deliver_bytes", K::kUint,
                    &TotalStatistic<&R::deliver_bytes>)),
      Detail(Scalar("total_request_statistics.request_count", K::kUint,
                    &TotalStatistic<&R::request_count>)),
      Detail(Scalar("recent_request_statistics.publish_count", K::kUint,
                    &RecentStatistic<&R::publish_count>)),
      Detail(Scalar("recent_request_statistics.publish_bytes", K::kUint,
                    &RecentStatistic<&R::publish_bytes>)),
      Detail(Scalar("recent_request_statistics.deliver_count", K::kUint,
                    &RecentStatistic<&R::deliver_count>)),
      Detail(Scalar("recent_request_statistics.deliver_bytes", K::kUint,
                    &RecentStatistic<&R::deliver_bytes>)),
      Detail(Scalar("recent_request_statistics.request_count", K::kUint,
                    &RecentStatistic<&R::request_count>)),
      Detail(Scalar("messages_queued", K::kUint, &MessageCount<&M::out, &Q::Queued>)),
      Detail(Scalar("messages_in_flight", K::kUint, &MessageCount<&M::out, &Q::InFlight>)),
      Detail(Scalar("messages_pending", K::kUint, &MessageCount<&M::out, &Q::Pending>)),
      Detail(Scalar("incoming_messages_queued", K::kUint, &MessageCount<&M::in, &Q::Queued>)),
      Detail(Scalar("incoming_messages_in_flight", K::kUint, &MessageCount<&M::in, &Q::InFlight>)),
      Detail(Scalar("incoming_messages_pending", K::kUint, &MessageCount<&M::in, &Q::Pending>)),
      Detail(Scalar("messages_dropped", K::kUint, &DropCount<&MessageDrops::Total>)),
      Detail(Scalar("messages_dropped_queue_full", K::kUint, &DropCount<&MessageDrops::QueueFull>)),
      Detail(Scalar("reconnects_last_minute", K::kUint, &FlappingCount<&F::connects_last_minute>)),
      Detail(Scalar("reconnects_last_hour", K::kUint, &FlappingCount<&F::connects_last_hour>)),
      Detail(Scalar("takeovers_last_minute", K::kUint, &FlappingCount<&F::takeovers_last_minute>)),
      Detail(Scalar("takeovers_last_hour", K::kUint, &FlappingCount<&F::takeovers_last_hour>)),
      Detail(Scalar("denied_publish_count", K::kUint, &DenialCount<&Denials::publish>)),
      Detail(Scalar("denied_subscribe_count", K::kUint, &DenialCount<&Denials::subscribe>)),
      Detail(Scalar("last_denied_topic", K::kString, [](C c) { return Text(c.denials.last_topic); })),
      Detail(Scalar("last_denied_time", K::kTimestamp,
                    [](C c) { return SignedIf(c.denials.last_ns != 0, c.denials.last_ns); })),
      OfSubscription("subscriptions.filter", K::kString,
                     [](const Subscription& s) { return Text(s.filter); }),
      OfSubscription("subscriptions.pattern", K::kString,
                     [](const Subscription& s) { return Text(PatternName(s.mapping.pattern)); }),
      OfSubscription("subscriptions.channel", K::kString,
                     [](const Subscription& s) { return Text(s.mapping.channel); }),
      OfSubscription("subscriptions.shared_group", K::kString,
                     [](const Subscription& s) { return Text(s.mapping.shared_group); }),
      OfSubscription("subscriptions.qos", K::kInt,
                     [](const Subscription& s) { return Signed(s.qos); }),
  };
}

// lowerCamelCase -> snake_case, segment by segment: `ipAddress` -> `ip_address`. Anything that
// was not one of the two spellings turns into a path that is in no table (`Ip` -> `_ip`).
std::string SnakeCase(std::string_view path) {
  std::string out;
  out.reserve(path.size() + 8);
  for (const char c : path) {
    if (c >= 'A' && c <= 'Z') {
      out += '_';
      out += static_cast<char>(c - 'A' + 'a');
    } else {
      out += c;
    }
  }
  return out;
}

int Sign(int value) { return (value > 0) - (value < 0); }

template <typename T>
int ThreeWay(T a, T b) {
  return (a > b) - (a < b);
}

}  // namespace

ValueSlot SlotOf(FieldKind kind) {
  switch (kind) {
    case FieldKind::kString:
      return ValueSlot::kText;
    case FieldKind::kUint:
      return ValueSlot::kUnsigned;
    case FieldKind::kInt:
    case FieldKind::kBool:
    case FieldKind::kEnum:
    case FieldKind::kTimestamp:
    case FieldKind::kDuration:
      break;
  }
  return ValueSlot::kSigned;
}

const std::vector<FieldDef>& ConnectionFields() {
  static const std::vector<FieldDef> fields = BuildFields();
  return fields;
}

const FieldDef* FindField(std::string_view path) {
  const std::string snake = SnakeCase(path);
  for (const FieldDef& field : ConnectionFields()) {
    if (field.path == snake) return &field;
  }
  return nullptr;
}

bool FindEnumNumber(const FieldDef& field, std::string_view name, std::int64_t* number) {
  for (std::size_t i = 0; i < field.enum_count; ++i) {
    const EnumName& entry = field.enum_names[i];
    const bool short_match =
        !field.short_prefix.empty() &&
        entry.name.substr(0, field.short_prefix.size()) == field.short_prefix &&
        entry.name.substr(field.short_prefix.size()) == name;
    if (entry.name == name || short_match) {
      *number = entry.number;
      return true;
    }
  }
  return false;
}

std::string_view ResponseEnumName(const FieldDef& field, std::int64_t number) {
  for (std::size_t i = 0; i < field.enum_count; ++i) {
    const EnumName& entry = field.enum_names[i];
    if (entry.number != number) continue;
    std::string_view name = entry.name;
    if (number != 0 && !field.short_prefix.empty() &&
        name.substr(0, field.short_prefix.size()) == field.short_prefix) {
      name.remove_prefix(field.short_prefix.size());
    }
    return name;
  }
  return std::string_view();
}

std::string EnumNameList(const FieldDef& field) {
  std::string list;
  for (std::size_t i = 0; i < field.enum_count; ++i) {
    if (i > 0) list += ", ";
    list += field.enum_names[i].name;
  }
  return list;
}

int CompareFieldValues(FieldKind kind, const FieldValue& a, const FieldValue& b) {
  if (!a.is_set || !b.is_set) return ThreeWay(a.is_set, b.is_set);
  switch (SlotOf(kind)) {
    case ValueSlot::kText:
      return Sign(a.text.compare(b.text));
    case ValueSlot::kUnsigned:
      return ThreeWay(a.unsigned_number, b.unsigned_number);
    case ValueSlot::kSigned:
      break;
  }
  return ThreeWay(a.number, b.number);
}

}  // namespace mqc
