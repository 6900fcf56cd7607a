// SPDX-License-Identifier: BSD-3-Clause
// The page token codec of connection_page_token.h. Decoding is strict (canonical base64, every
// byte accounted for) so that a token has exactly one spelling.
#include "companion/query/connection_page_token.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "companion/query/connection_fields.h"
#include "companion/query/connection_order.h"
#include "link/text_util.h"

namespace mqc {
namespace {

constexpr std::uint8_t kTokenVersion = 1;
constexpr char kMalformed[] = "malformed page_token";
constexpr char kForeign[] = "page_token does not belong to this filter and order_by";
// --- fields ------------------------------------------------------------------------------

void PutU64(std::uint64_t value, std::string* out) {
  for (int shift = 56; shift >= 0; shift -= 8) {
    out->push_back(static_cast<char>((value >> shift) & 0xFF));
  }
}

void PutLength(std::size_t length, std::string* out) {
  std::uint64_t value = length;
  do {
    const auto low = static_cast<std::uint8_t>(value & 0x7F);
    value >>= 7;
    out->push_back(static_cast<char>(value != 0 ? (low | 0x80) : low));
  } while (value != 0);
}

// Reads the decoded token front to back; every Read fails once the bytes run out.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}

  bool ReadU8(std::uint8_t* value) {
    if (pos_ >= bytes_.size()) return false;
    *value = static_cast<std::uint8_t>(bytes_[pos_++]);
    return true;
  }

  bool ReadU64(std::uint64_t* value) {
    if (bytes_.size() - pos_ < 8) return false;
    *value = 0;
    for (int i = 0; i < 8; ++i) *value = (*value << 8) | static_cast<unsigned char>(bytes_[pos_++]);
    return true;
  }

  // Shortest-form LEB128 only, no longer than what is left.
  bool ReadString(std::string* value) {
    std::uint64_t length = 0;
    for (int shift = 0;; shift += 7) {
      std::uint8_t byte = 0;
      if (shift > 56 || !ReadU8(&byte)) return false;
      length |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) {
        if (byte == 0 && shift > 0) return false;
        break;
      }
    }
    if (length > bytes_.size() - pos_) return false;
    value->assign(bytes_.substr(pos_, static_cast<std::size_t>(length)));
    pos_ += static_cast<std::size_t>(length);
    return true;
  }

  bool AtEnd() const { return pos_ == bytes_.size(); }

 private:
  std::string_view bytes_;
  std::size_t pos_ = 0;
};

void PutValue(FieldKind kind, const OrderCursor::Value& value, std::string* out) {
  out->push_back(value.is_set ? 1 : 0);
  if (!value.is_set) return;
  switch (SlotOf(kind)) {
    case ValueSlot::kText:
      PutLength(value.text.size(), out);
      out->append(value.text);
      return;
    case ValueSlot::kUnsigned:
      PutU64(value.unsigned_number, out);
      return;
    case ValueSlot::kSigned:
      PutU64(static_cast<std::uint64_t>(value.number), out);
      return;
  }
}

bool ReadValue(FieldKind kind, Reader* reader, OrderCursor::Value* value) {
  std::uint8_t set = 0;
  if (!reader->ReadU8(&set) || set > 1) return false;
  value->is_set = set == 1;
  if (!value->is_set) return true;
  std::uint64_t bits = 0;
  switch (SlotOf(kind)) {
    case ValueSlot::kText:
      return reader->ReadString(&value->text);
    case ValueSlot::kUnsigned:
      return reader->ReadU64(&value->unsigned_number);
    case ValueSlot::kSigned:
      break;
  }
  if (!reader->ReadU64(&bits)) return false;
  value->number = static_cast<std::int64_t>(bits);
  return true;
}

}  // namespace

std::uint64_t QueryFingerprint(std::string_view filter, std::string_view order_by) {
  std::string length;
  PutU64(filter.size(), &length);
  return Fnv1a64(order_by, Fnv1a64(filter, Fnv1a64(length)));
}

std::string EncodePageToken(std::uint64_t fingerprint, const ConnectionOrder& order,
                            const OrderCursor& cursor) {
  std::string bytes;
  bytes.push_back(static_cast<char>(kTokenVersion));
  PutU64(fingerprint, &bytes);
  const std::vector<OrderKey>& keys = order.keys();
  for (std::size_t i = 0; i < keys.size() && i < cursor.values.size(); ++i) {
    PutValue(keys[i].field->kind, cursor.values[i], &bytes);
  }
  PutU64(cursor.seq, &bytes);
  return EncodeBase64Url(bytes);
}

Status DecodePageToken(std::string_view token, std::uint64_t fingerprint,
                       const ConnectionOrder& order, OrderCursor* cursor) {
  std::string bytes;
  if (!DecodeBase64Url(token, &bytes, /*canonical=*/true)) {
    return InvalidArgument(kMalformed);
  }
  Reader reader(bytes);
  std::uint8_t version = 0;
  std::uint64_t token_fingerprint = 0;
  if (!reader.ReadU8(&version) || version != kTokenVersion || !reader.ReadU64(&token_fingerprint)) {
    return InvalidArgument(kMalformed);
  }
  if (token_fingerprint != fingerprint) {
    return InvalidArgument(kForeign);
  }
  OrderCursor decoded;
  for (const OrderKey& key : order.keys()) {
    decoded.values.emplace_back();
    if (!ReadValue(key.field->kind, &reader, &decoded.values.back())) {
      return InvalidArgument(kMalformed);
    }
  }
  if (!reader.ReadU64(&decoded.seq) || !reader.AtEnd()) {
    return InvalidArgument(kMalformed);
  }
  *cursor = std::move(decoded);
  return Status();
}

}  // namespace mqc
