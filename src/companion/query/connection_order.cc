// SPDX-License-Identifier: BSD-3-Clause
// The order_by grammar and comparisons of connection_order.h.
#include "companion/query/connection_order.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "companion/connection.h"
#include "companion/query/connection_fields.h"
#include "companion/query/query_syntax.h"
#include "link/text_util.h"

namespace mqc {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::size_t SkipSpace(std::string_view text, std::size_t pos) {
  while (pos < text.size() && IsSpace(text[pos])) ++pos;
  return pos;
}

// A run of bytes other than whitespace and ','.
std::string_view ReadWord(std::string_view text, std::size_t* pos) {
  const std::size_t start = *pos;
  while (*pos < text.size() && !IsSpace(text[*pos]) && text[*pos] != ',') ++*pos;
  return text.substr(start, *pos - start);
}

std::string Quoted(std::string_view word) { return "'" + Excerpt(word) + "'"; }

class OrderParser {
 public:
  OrderParser(std::string_view text, std::string* error) : text_(text), error_(error) {}

  bool Parse(std::vector<OrderKey>* keys);

 private:
  bool Fail(std::size_t offset, const std::string& message) {
    *error_ = message + AtPosition(text_, offset);
    return false;
  }
  bool ParseKey(std::vector<OrderKey>* keys);
  bool ParseDirection(std::string_view field, OrderKey* key);

  std::string_view text_;
  std::size_t pos_ = 0;
  std::string* error_;
};

bool OrderParser::Parse(std::vector<OrderKey>* keys) {
  if (text_.size() > kMaxOrderByLength) {
    return Fail(kMaxOrderByLength,
                "order_by is longer than " + std::to_string(kMaxOrderByLength) + " characters");
  }
  pos_ = SkipSpace(text_, 0);
  if (pos_ == text_.size()) {
    keys->push_back({FindField("open_time"), false});
    keys->push_back({FindField("uid"), false});
    return true;
  }
  while (true) {
    if (!ParseKey(keys)) return false;
    if (pos_ == text_.size()) return true;
    if (text_[pos_] != ',') {
      std::size_t end = pos_;
      return Fail(pos_, "Expected ',' or end of order_by, got " + Quoted(ReadWord(text_, &end)));
    }
    pos_ = SkipSpace(text_, pos_ + 1);
  }
}

// One `field [direction]`, and the whitespace after it.
bool OrderParser::ParseKey(std::vector<OrderKey>* keys) {
  const std::size_t start = pos_;
  const std::string_view word = ReadWord(text_, &pos_);
  if (word.empty()) {
    return Fail(start, std::string("Expected a field name in order_by, got ") +
                           (start == text_.size() ? "end of order_by" : "','"));
  }
  OrderKey key;
  key.field = FindField(word);
  if (key.field == nullptr) return Fail(start, "Unknown order_by field " + Quoted(word));
  if (key.field->repeated()) {
    return Fail(start, "order_by cannot use the repeated field " + Quoted(word));
  }
  for (const OrderKey& previous : *keys) {
    if (previous.field == key.field) {
      return Fail(start, "order_by names the field " + Quoted(word) + " more than once");
    }
  }
  pos_ = SkipSpace(text_, pos_);
  if (!ParseDirection(word, &key)) return false;
  keys->push_back(key);
  return true;
}

// The optional direction after a field, and the whitespace after it.
bool OrderParser::ParseDirection(std::string_view field, OrderKey* key) {
  if (pos_ == text_.size() || text_[pos_] == ',') return true;
  const std::size_t start = pos_;
  const std::string_view word = ReadWord(text_, &pos_);
  if (EqualsIgnoreAsciiCase(word, "desc")) {
    key->descending = true;
  } else if (!EqualsIgnoreAsciiCase(word, "asc")) {
    return Fail(start, "Unknown order_by direction " + Quoted(word) + " for field " +
                           Quoted(field) + " (expected asc or desc)");
  }
  pos_ = SkipSpace(text_, pos_);
  return true;
}

FieldValue ViewOf(const OrderCursor::Value& value) {
  FieldValue view;
  view.is_set = value.is_set;
  view.number = value.number;
  view.unsigned_number = value.unsigned_number;
  view.text = value.text;
  return view;
}

int CompareSeq(std::uint64_t a, std::uint64_t b) { return (a > b) - (a < b); }

}  // namespace

Status ConnectionOrder::Parse(std::string_view text, ConnectionOrder* order) {
  order->keys_.clear();
  std::string error;
  std::vector<OrderKey> keys;
  if (!OrderParser(text, &error).Parse(&keys)) {
    return Status(StatusCode::kInvalidArgument, std::move(error));
  }
  order->keys_ = std::move(keys);
  return Status();
}

int ConnectionOrder::Compare(const Connection& a, const Connection& b) const {
  for (const OrderKey& key : keys_) {
    const int result = CompareFieldValues(key.field->kind, key.field->get(a), key.field->get(b));
    if (result != 0) return key.descending ? -result : result;
  }
  return CompareSeq(a.seq, b.seq);
}

int ConnectionOrder::Compare(const Connection& a, const OrderCursor& b) const {
  for (std::size_t i = 0; i < keys_.size() && i < b.values.size(); ++i) {
    const OrderKey& key = keys_[i];
    const int result = CompareFieldValues(key.field->kind, key.field->get(a), ViewOf(b.values[i]));
    if (result != 0) return key.descending ? -result : result;
  }
  return CompareSeq(a.seq, b.seq);
}

OrderCursor ConnectionOrder::CursorOf(const Connection& connection) const {
  OrderCursor cursor;
  cursor.seq = connection.seq;
  for (const OrderKey& key : keys_) {
    const FieldValue value = key.field->get(connection);
    if (!value.is_set) {
      cursor.values.push_back({false, 0, 0, std::string()});  // as a token restores it
    } else {
      cursor.values.push_back({true, value.number, value.unsigned_number, std::string(value.text)});
    }
  }
  return cursor;
}

}  // namespace mqc
