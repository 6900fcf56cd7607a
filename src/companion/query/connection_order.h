// SPDX-License-Identifier: BSD-3-Clause
// The order_by of ListConnections (docs/query-language.md, "order_by"):
//
//   order_by  := ws* [ key ( ws* "," ws* key )* ] ws*        (at most 1024 bytes)
//   key       := field [ ws+ ( "asc" | "desc" ) ]             direction in any case
//
// over the scalar fields of connection_fields.h (not subscriptions.*), each at most once.
// Blank order_by means `open_time, uid`. Enums sort by number; unset values (close_time while
// open, unknown idle_duration) sort as the smallest, so first when ascending and last when
// descending; strings bytewise. Every ordering ends with `seq` ascending, so it is total.
// Immutable after Parse; safe to share between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "companion/connection.h"
#include "companion/query/connection_fields.h"
#include "link/status.h"

namespace mqc {

inline constexpr std::size_t kMaxOrderByLength = 1024;  // bytes (a valid order_by is ASCII)

struct OrderKey {
  const FieldDef* field = nullptr;
  bool descending = false;
};

// A position in an ordering without the connection itself (what a page token carries). The
// values own their text, so a cursor outlives the snapshot it came from.
struct OrderCursor {
  struct Value {
    bool is_set = true;
    std::int64_t number = 0;
    std::uint64_t unsigned_number = 0;
    std::string text;
  };
  std::vector<Value> values;  // one per OrderKey
  std::uint64_t seq = 0;
};

class ConnectionOrder {
 public:
  ConnectionOrder() = default;
  // An order made in code; each key's field must be set and not repeated().
  explicit ConnectionOrder(std::vector<OrderKey> keys) : keys_(std::move(keys)) {}

  // Parses `text`. On error kInvalidArgument with a message naming the field or direction and
  // ending in " at position N" (1-based, in characters).
  static Status Parse(std::string_view text, ConnectionOrder* order);

  // Three-way comparisons in this order: negative when `a` comes first.
  int Compare(const Connection& a, const Connection& b) const;
  int Compare(const Connection& a, const OrderCursor& b) const;

  // Where `connection` stands in this order.
  OrderCursor CursorOf(const Connection& connection) const;

  const std::vector<OrderKey>& keys() const { return keys_; }

 private:
  std::vector<OrderKey> keys_;
};

}  // namespace mqc
