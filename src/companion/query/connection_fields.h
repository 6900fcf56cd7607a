// SPDX-License-Identifier: BSD-3-Clause
// The fields of a Connection that filters and order_by can name: one table, so that the filter,
// the ordering and the page tokens agree on names, types, enum names and comparisons.
// Immutable after first use; safe on any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "companion/connection.h"
#include "companion/connection_field_table.h"

namespace mqc {

enum class FieldKind : std::uint8_t {
  kString,
  kInt,        // int64 values (node_id, port, qos, ...)
  kUint,       // uint64 values (request statistics)
  kBool,       // 0 or 1
  kEnum,       // the protobuf enum number
  kTimestamp,  // Unix nanoseconds
  kDuration,   // nanoseconds
};

// Which member of FieldValue a kind uses.
enum class ValueSlot : std::uint8_t { kText, kSigned, kUnsigned };
ValueSlot SlotOf(FieldKind kind);

// One field's value in one connection (or subscription). `text` points into the connection.
struct FieldValue {
  // False for values a proto message field would leave unset: close_time while open (0), an
  // unknown idle_duration (-1) and network_info.* without a known socket. Unset sorts before
  // every set value and satisfies only `!=`.
  bool is_set = true;
  std::int64_t number = 0;
  std::uint64_t unsigned_number = 0;
  std::string_view text;
};

struct FieldDef {
  std::string_view path;  // canonical: snake_case, dotted
  FieldKind kind = FieldKind::kString;
  // Exactly one of the two is set: subscriptions.* fields read one subscription at a time.
  FieldValue (*get)(const Connection&) = nullptr;
  FieldValue (*get_from_subscription)(const Subscription&) = nullptr;
  // kEnum only. Names are also accepted without `short_prefix` when it is not empty
  // (close reasons: `CLIENT_DISCONNECT` as the README writes them).
  const EnumName* enum_names = nullptr;
  std::size_t enum_count = 0;
  std::string_view short_prefix;
  // A detail: a value that changes all the time and is not kept in the stored connection (traffic
  // statistics, idle time; ConnectionSource::AddDetails fills it in). A query that filters or
  // orders on one must read every connection with its details, not the shared snapshot.
  bool detail = false;

  bool repeated() const { return get_from_subscription != nullptr; }
};

// Every field: the Connection's own in the field table's order, then its sub-messages'.
const std::vector<FieldDef>& ConnectionFields();

// Looks a field path up, in snake_case or lowerCamelCase per dotted segment
// (`source.ip_address`, `source.ipAddress`, `authenticationInfo.state`). Null when unknown.
const FieldDef* FindField(std::string_view path);

// The enum number of `name` for an enum field; false when the field has no such name.
bool FindEnumNumber(const FieldDef& field, std::string_view name, std::int64_t* number);

// The name responses give `number` of an enum field (without `short_prefix`, but for the zero);
// empty when the field has no such number.
std::string_view ResponseEnumName(const FieldDef& field, std::int64_t number);

// "A, B, C": the full names an enum field accepts, for error messages.
std::string EnumNameList(const FieldDef& field);

// Three-way comparison of two values of a field of `kind`: negative, 0 or positive. Unset values
// come before set ones; strings compare bytewise (UTF-8 code point order).
int CompareFieldValues(FieldKind kind, const FieldValue& a, const FieldValue& b);

}  // namespace mqc
