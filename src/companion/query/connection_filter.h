// SPDX-License-Identifier: BSD-3-Clause
// The filter of ListConnections: an AIP-160 subset (docs/query-language.md, "Filter")
// parsed once into clauses, then matched against each connection. Grammar:
//
//   filter  := ws* [ clause ( ws+ "AND" ws+ clause )* ] ws*     (at most 1024 characters)
//   clause  := field ws* op ws* value
//   field   := segment ( "." segment )*      snake_case or lowerCamelCase, see FindField
//   op      := "=" | "!=" | "<" | "<=" | ">" | ">="
//   value   := string | word
//   string  := '"' ( char | escape )* '"'   JSON escapes plus \*; a trailing bare '*' = prefix
//   word    := unquoted run of bytes other than whitespace, '"', '=', '!', '<', '>', '(', ')':
//              an integer, true / false, an enum name, a duration or an RFC 3339 timestamp
//
// ("ws+" around AND stands for "a token boundary": `client_id = "a"AND ...` reads the same.)
// Semantics beyond the spec, decided here:
// - Strings compare bytewise. `"abc*"` with = / != is a prefix test; other ops refuse it.
// - Unset values (close_time while open, unknown idle_duration) satisfy only `!=`, so that
//   `f != v` is always exactly NOT `f = v`.
// - subscriptions.* clauses hold when ANY subscription satisfies them; `!=` holds when NO
//   subscription equals the value (again NOT `=`), so it also holds without subscriptions.
// Immutable after Parse; safe to share between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "companion/query/connection_fields.h"
#include "link/connection.h"
#include "link/status.h"

namespace mqc {

inline constexpr std::size_t kMaxFilterLength = 1024;  // characters (UTF-8 code points)

enum class CompareOp : std::uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };

struct FilterClause {
  const FieldDef* field = nullptr;
  CompareOp op = CompareOp::kEq;
  // The value, in the slot the field's kind uses (see SlotOf).
  std::int64_t number = 0;
  std::uint64_t unsigned_number = 0;
  std::string text;
  bool prefix = false;  // text is a prefix (the literal ended in a bare '*')
};

class ConnectionFilter {
 public:
  ConnectionFilter() = default;
  // A filter of clauses made in code, all of which must hold: no text is written and parsed
  // again, so a value of any length and with any bytes works. Each clause's field must be set.
  explicit ConnectionFilter(std::vector<FilterClause> clauses) : clauses_(std::move(clauses)) {}

  // Parses `text`; blank text matches every connection. On error kInvalidArgument with a
  // message ending in " at position N" (N 1-based, in characters).
  static Status Parse(std::string_view text, ConnectionFilter* filter);

  bool Matches(const Connection& connection) const;

  const std::vector<FilterClause>& clauses() const { return clauses_; }

 private:
  std::vector<FilterClause> clauses_;
};

}  // namespace mqc
