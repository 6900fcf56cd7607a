// SPDX-License-Identifier: BSD-3-Clause
// The fields filters and order_by name (connection_fields.h): the Connection's own made from the
// field table (connection_field_table.h), those of its sub-messages listed here.
#include "companion/query/connection_fields.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "companion/connection.h"
#include "companion/connection_field_table.h"
#include "link/text_util.h"
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

template <Boxed<RequestStatistics> Connection::*kWindow, std::uint64_t RequestStatistics::*kMember>
FieldValue Statistic(const Connection& c) {
  return Unsigned((*(c.*kWindow)).*kMember);
}

FieldValue SignedIf(bool is_set, std::int64_t number) {
  FieldValue value = Signed(number);
  value.is_set = is_set;
  return value;
}

// networkInfo's numbers: unset unless the kernel reported the connection's socket.
template <std::uint32_t NetworkInfo::*kMember>
FieldValue NetworkNumber(const Connection& c) {
  return SignedIf(c.network->known, (*c.network).*kMember);
}

template <std::int64_t NetworkInfo::*kMember>
FieldValue NetworkDuration(const Connection& c) {
  return SignedIf(c.network->known && (*c.network).*kMember >= 0, (*c.network).*kMember);
}

FieldDef Scalar(std::string_view path, FieldKind kind, FieldValue (*get)(const Connection&)) {
  FieldDef field;
  field.path = path;
  field.kind = kind;
  field.get = get;
  return field;
}

// A field of the table's value, as filters and order_by read it: text, or a number in the slot
// of `kKind` (ValueSlot); `known` false leaves it unset. Sub-messages have no value of their own
// (their fields are listed below).
template <FieldKind kKind, typename T>
FieldValue ValueOf(const T& value, bool known);

// A count the broker may not tell: unset when it does not.
template <FieldKind kKind, typename T>
FieldValue ValueOf(const std::optional<T>& value, bool known) {
  return ValueOf<kKind>(value.value_or(0), known && value.has_value());
}

template <FieldKind kKind, typename T>
FieldValue ValueOf(const T& value, bool known) {
  FieldValue field_value;
  field_value.is_set = known;
  if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    field_value.text = value;
  } else if constexpr (std::is_enum_v<T>) {
    field_value.number = static_cast<std::int64_t>(value);
  } else if constexpr (std::is_arithmetic_v<T>) {
    if constexpr (kKind == FieldKind::kUint) {
      field_value.unsigned_number = value;
    } else {
      field_value.number = static_cast<std::int64_t>(value);
    }
  }
  return field_value;
}

// The enum names of a field whose value `Read` reads is of an enum type (Read is never called).
template <typename Read>
FieldDef WithEnumNames(FieldDef field, Read /*unused*/) {
  using Enum = std::decay_t<std::invoke_result_t<Read, const Connection&>>;
  if constexpr (std::is_enum_v<Enum>) {
    const EnumNames names = EnumNamesOf(Enum{});
    field.enum_names = names.names;
    field.enum_count = names.count;
    field.short_prefix = names.short_prefix;
  }
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

// The query column of the field table (connection_field_table.h): Stored(kind), Detail(kind),
// Nested or NotQueried.
#define MQC_QUERY_ON_Stored(kind) true
#define MQC_QUERY_ON_Detail(kind) true
#define MQC_QUERY_ON_Nested false
#define MQC_QUERY_ON_NotQueried false
#define MQC_QUERY_KIND_Stored(kind) FieldKind::kind
#define MQC_QUERY_KIND_Detail(kind) FieldKind::kind
#define MQC_QUERY_KIND_Nested FieldKind::kString
#define MQC_QUERY_KIND_NotQueried FieldKind::kString
#define MQC_QUERY_DETAIL_Stored(kind) false
#define MQC_QUERY_DETAIL_Detail(kind) true
#define MQC_QUERY_DETAIL_Nested false
#define MQC_QUERY_DETAIL_NotQueried false
#define MQC_QUERY_FIELD(name, json_name, number, label, proto_type, kind, value, present, known, \
                        query, decode)                                                           \
  if (MQC_QUERY_ON_##query) {                                                                    \
    FieldDef field = Scalar(#name, MQC_QUERY_KIND_##query, [](const Connection& c) {             \
      return ValueOf<MQC_QUERY_KIND_##query>(value, known);                                      \
    });                                                                                          \
    field.detail = MQC_QUERY_DETAIL_##query;                                                     \
    fields.push_back(WithEnumNames(field, [](const Connection& c) { return value; }));           \
  }

std::vector<FieldDef> BuildFields() {
  std::vector<FieldDef> fields;
  MQC_CONNECTION_FIELDS(MQC_QUERY_FIELD)
  // The fields of the sub-messages the table marks Nested.
  using K = FieldKind;
  using C = const Connection&;
  using R = RequestStatistics;
  using N = NetworkInfo;
  const std::vector<FieldDef> nested = {
      Scalar("source.ip_address", K::kString, [](C c) { return Text(c.ip_address); }),
      Scalar("source.port", K::kInt, [](C c) { return Signed(c.port); }),
      Scalar("proxy.ip_address", K::kString, [](C c) { return Text(*c.proxy_address); }),
      Scalar("proxy.port", K::kInt, [](C c) { return Signed(c.proxy_port); }),
      Scalar("tls_info.enabled", K::kBool, [](C c) { return Signed(c.tls->enabled ? 1 : 0); }),
      Scalar("tls_info.tls_version", K::kString, [](C c) { return Text(c.tls->tls_version); }),
      Scalar("tls_info.cipher", K::kString, [](C c) { return Text(c.tls->cipher); }),
      Scalar("tls_info.peer_certificate_subject", K::kString,
             [](C c) { return Text(c.tls->peer_certificate_subject); }),
      WithEnumNames(
          Scalar("authentication_info.mechanism", K::kEnum,
                 [](C c) { return Signed(static_cast<std::int64_t>(c.authentication.mechanism)); }),
          [](C c) { return c.authentication.mechanism; }),
      WithEnumNames(
          Scalar("authentication_info.state", K::kEnum,
                 [](C c) { return Signed(static_cast<std::int64_t>(c.authentication.state)); }),
          [](C c) { return c.authentication.state; }),
      Scalar("authentication_info.user_principal", K::kString,
             [](C c) { return Text(c.authentication.user_principal); }),
      Scalar("authentication_info.method", K::kString,
             [](C c) { return Text(*c.authentication.method); }),
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
      OfSubscription("subscriptions.filter", K::kString,
                     [](const Subscription& s) { return Text(s.filter); }),
      OfSubscription("subscriptions.pattern", K::kString,
                     [](const Subscription& s) { return Text(PatternName(s.mapping.pattern)); }),
      OfSubscription("subscriptions.channel", K::kString,
                     [](const Subscription& s) { return Text(s.mapping.channel); }),
      OfSubscription("subscriptions.shared_group", K::kString,
                     [](const Subscription& s) { return Text(*s.mapping.shared_group); }),
      OfSubscription("subscriptions.qos", K::kInt,
                     [](const Subscription& s) { return Signed(s.qos); }),
  };
  fields.insert(fields.end(), nested.begin(), nested.end());
#define MQC_STATISTIC_FIELD(name, json_name)                                             \
  fields.push_back(Detail(Scalar("total_request_statistics." #name, K::kUint,            \
                                 &Statistic<&Connection::total_statistics, &R::name>))); \
  fields.push_back(Detail(Scalar("recent_request_statistics." #name, K::kUint,           \
                                 &Statistic<&Connection::recent_statistics, &R::name>)));
  MQC_REQUEST_STATISTICS_FIELDS(MQC_STATISTIC_FIELD)
#undef MQC_STATISTIC_FIELD
  return fields;
}

#undef MQC_QUERY_FIELD

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
        !field.short_prefix.empty() && StartsWith(entry.name, field.short_prefix) &&
        entry.name.substr(field.short_prefix.size()) == name;
    if (entry.name == name || short_match) {
      *number = entry.number;
      return true;
    }
  }
  return false;
}

std::string_view ResponseEnumName(const FieldDef& field, std::int64_t number) {
  return EnumNames{field.enum_names, field.enum_count, field.short_prefix}.ResponseName(number);
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
