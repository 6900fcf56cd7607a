// SPDX-License-Identifier: BSD-3-Clause
// The filter of ListConnections (and of whatever else selects connections by filter text):
// AIP-160 (docs/query-language.md, "filter") parsed once into a tree, then matched against each
// connection. Grammar:
//
//   filter  := ws* [ or ] ws*            at most 1024 characters outside IN lists (see below)
//   or      := and ( "OR" and )*
//   and     := unary ( "AND" unary )*
//   unary   := "NOT" unary | "-" unary | primary        ("-" with nothing between it and what
//                                                         it negates; NOT then a token boundary)
//   primary := "(" or ")" | clause                     nested at most 64 deep (parentheses and
//                                                         negations together)
//   clause  := field ws* op ws* value | field ws+ "IN" ws* "(" value ( "," value )* ")"
//   field   := segment ( "." segment )*      snake_case or lowerCamelCase, see FindField
//   op      := "=" | "!=" | "<" | "<=" | ">" | ">="
//   value   := string | word
//   string  := '"' ( char | escape )* '"'   JSON escapes plus \*; a trailing bare '*' = prefix
//   word    := unquoted run of bytes other than whitespace, '"', '=', '!', '<', '>', '(', ')',
//              ',': an integer, true / false, an enum name, a duration or an RFC 3339 timestamp
//
// NOT binds tightest, then AND, then OR. Keywords (AND, OR, NOT, IN) are upper case; a lower or
// mixed case one is refused naming the upper case form. ("ws+" around keywords stands for "a
// token boundary": `client_id = "a"AND ...` reads the same.)
// Semantics beyond the spec, decided here:
// - Strings compare bytewise. `"abc*"` with = / != / IN is a prefix test; other ops refuse it.
// - Unset values (close_time while open, unknown idle_duration) satisfy only `!=`, so that
//   `f != v` is always exactly NOT `f = v`; IN holds only for set values (it is an OR of =).
// - subscriptions.* clauses hold when ANY subscription satisfies them; `!=` holds when NO
//   subscription equals the value (again NOT `=`), so it also holds without subscriptions.
// - `f IN (a, b)` is `f = a OR f = b`, on any field, with values written as `=` takes them; an
//   empty list is refused, at most kMaxInValues values. The values of IN lists do not count
//   against the 1024 characters (a list of many client ids is what IN is for); the whole text
//   is at most kMaxFilterTextBytes.
// Immutable after Parse; safe to share between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "companion/connection.h"
#include "companion/query/connection_fields.h"
#include "link/status.h"

namespace mqc {

inline constexpr std::size_t kMaxFilterLength = 1024;        // characters (UTF-8 code points)
inline constexpr std::size_t kMaxInValues = 10000;           // values in one IN list
inline constexpr std::size_t kMaxFilterTextBytes = 1 << 20;  // the whole text, IN lists included

enum class CompareOp : std::uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kIn };

// The values of `field IN (...)`, in the slots the field's kind uses (see SlotOf). Any order:
// ConnectionFilter sorts them for a binary search.
struct InValues {
  std::vector<std::string> texts;     // exact strings
  std::vector<std::string> prefixes;  // strings that ended in a bare '*', without it
  std::vector<std::int64_t> numbers;
  std::vector<std::uint64_t> unsigned_numbers;
};

struct FilterClause {
  const FieldDef* field = nullptr;
  CompareOp op = CompareOp::kEq;
  // The value, in the slot the field's kind uses (see SlotOf); for kIn, `in` instead.
  std::int64_t number = 0;
  std::uint64_t unsigned_number = 0;
  std::string text;
  bool prefix = false;  // text is a prefix (the literal ended in a bare '*')
  InValues in;
};

namespace detail {
struct FilterNode;  // the parsed tree, in connection_filter.cc
}

// The interface other selections rely on (ListConnections, the KubeMQ endpoint, a stream of
// changes): parse once with Parse (or build from clauses), then call Matches per connection from
// any number of threads. Copies share the immutable tree.
class ConnectionFilter {
 public:
  ConnectionFilter() = default;  // matches every connection
  // A filter of clauses made in code, all of which must hold: no text is written and parsed
  // again, so a value of any length and with any bytes works. Each clause's field must be set.
  explicit ConnectionFilter(std::vector<FilterClause> clauses);

  // Parses `text`; blank text matches every connection. On error kInvalidArgument with a
  // message ending in " at position N" (N 1-based, in characters).
  static Status Parse(std::string_view text, ConnectionFilter* filter);

  bool Matches(const Connection& connection) const;

  // Every clause, in the order written, whatever joins them.
  void ForEachClause(const std::function<void(const FilterClause&)>& visit) const;

  // Whether a clause names a detail field (FieldDef::detail).
  bool NamesDetail() const;

  // When every connection the filter matches has one of a finite set of exact client ids (it
  // requires `client_id = "x"` or `client_id IN (...)` without prefixes, through AND, OR and
  // parentheses but not NOT): true, with that set sorted, each id once, viewing into this filter.
  // Candidates for a client id index; Matches must still be asked of each.
  bool ClientIdCandidates(std::vector<std::string_view>* client_ids) const;

  // Whether every connection the filter matches has the bool field `field` true: a clause
  // `field = true` (or `field != false`) required through AND, every operand of an OR and
  // parentheses, not under NOT. A fleet query uses it to find its candidates first.
  bool RequiresTrue(const FieldDef* field) const;
  // Whether a clause names `field`.
  bool Names(const FieldDef* field) const;

 private:
  std::shared_ptr<const detail::FilterNode> root_;  // null: no condition
};

}  // namespace mqc
