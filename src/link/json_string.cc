// SPDX-License-Identifier: BSD-3-Clause
// Where the spec is silent: invalid UTF-8 is replaced byte by byte with U+FFFD rather than
// refused: the views must always answer valid JSON, and the broker already validates client ids,
// usernames and topics, so only odd inputs (query values in error messages, fuzzing) ever meet
// this.
#include "link/json_string.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mqc {
namespace {

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD

// Bytes a JSON string carries as they are: printable ASCII but the quote and the backslash.
constexpr std::array<bool, 256> kPlainJsonByte = [] {
  std::array<bool, 256> plain{};
  for (int c = 0x20; c < 0x80; ++c) plain[static_cast<std::size_t>(c)] = c != '"' && c != '\\';
  return plain;
}();

// Length of the valid UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, at most
// U+10FFFF) at the start of `s`, or 0 when it does not start with one.
std::size_t ValidSequenceLength(std::string_view s) {
  const auto byte = [&s](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(0);
  if (lead >= 0x01 && lead <= 0x7F) return 1;
  std::size_t length = 0;
  unsigned char min_second = 0x80;
  unsigned char max_second = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) min_second = 0xA0;  // overlong
    if (lead == 0xED) max_second = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) min_second = 0x90;  // overlong
    if (lead == 0xF4) max_second = 0x8F;  // beyond U+10FFFF
  } else {
    return 0;  // NUL, a continuation byte, or a lead byte that is never valid
  }
  if (s.size() < length) return 0;
  if (byte(1) < min_second || byte(1) > max_second) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return length;
}

// Whether any of the eight bytes of `word` is not plain: below 0x20, 0x80 or above, '"' or
// '\\' (the exact "has a byte less than n" and "has a zero byte" tests of Sean Eron Anderson's
// Bit Twiddling Hacks).
bool AnyNotPlain(std::uint64_t word) {
  constexpr std::uint64_t kOnes = 0x0101010101010101;
  constexpr std::uint64_t kHighBits = 0x8080808080808080;
  const auto has_zero_byte = [](std::uint64_t v) { return (v - kOnes) & ~v & kHighBits; };
  const std::uint64_t below_space = (word - kOnes * 0x20) & ~word & kHighBits;
  return ((word & kHighBits) | below_space | has_zero_byte(word ^ (kOnes * '"')) |
          has_zero_byte(word ^ (kOnes * '\\'))) != 0;
}

}  // namespace

std::string ToValidUtf8(std::string_view value) {
  std::string result;
  result.reserve(value.size());
  while (!value.empty()) {
    const std::size_t length = ValidSequenceLength(value);
    if (length == 0) {
      result += kReplacementCharacter;
      value.remove_prefix(1);
    } else {
      result += value.substr(0, length);
      value.remove_prefix(length);
    }
  }
  return result;
}

void AppendJsonString(std::string_view value, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  while (!value.empty()) {
    // The common case, a run of printable ASCII, in one append.
    std::size_t plain = 0;
    while (plain < value.size() && kPlainJsonByte[static_cast<unsigned char>(value[plain])]) {
      ++plain;
    }
    out->append(value.substr(0, plain));
    value.remove_prefix(plain);
    if (value.empty()) break;
    const auto byte = static_cast<unsigned char>(value.front());
    if (byte >= 0x80 || byte == 0) {
      // Multi-byte sequences are copied whole when valid; anything else becomes U+FFFD.
      const std::size_t length = ValidSequenceLength(value);
      if (length == 0) {
        out->append(kReplacementCharacter);
        value.remove_prefix(1);
      } else {
        out->append(value.substr(0, length));
        value.remove_prefix(length);
      }
      continue;
    }
    value.remove_prefix(1);
    // The bytes JSON has a two-character escape for, and those escapes' letters; any other
    // control character as \u00XX.
    static constexpr std::string_view kEscaped("\"\\\b\f\n\r\t");
    static constexpr std::string_view kEscapeLetters("\"\\bfnrt");
    const std::size_t short_escape = kEscaped.find(static_cast<char>(byte));
    if (short_escape != std::string_view::npos) {
      const char escape[] = {'\\', kEscapeLetters[short_escape]};
      out->append(escape, sizeof(escape));
    } else {
      const char escape[] = {'\\', 'u', '0', '0', kHex[byte >> 4], kHex[byte & 0xF]};
      out->append(escape, sizeof(escape));
    }
  }
  out->push_back('"');
}

namespace {

// WriteJsonChars past the first `plain` bytes, which it has written: rare (the broker checks
// what clients send), so apart, keeping the common path a small leaf. The one escaper, through
// a string of its own; it starts at a plain byte, so the rest escapes as the whole would.
__attribute__((noinline)) char* WriteEscapedJsonChars(std::string_view value, std::size_t plain,
                                                      char* out) {
  std::string escaped;
  AppendJsonString(value.substr(plain), &escaped);
  const std::size_t length = escaped.size() - 2;  // without the quotes
  std::memcpy(out + plain, escaped.data() + 1, length);
  return out + plain + length;
}

}  // namespace

char* WriteJsonChars(std::string_view value, char* out) {
  const char* const in = value.data();
  const std::size_t size = value.size();
  // Whole words, each stored as soon as it is found plain (the room is at least the size), then
  // the last eight bytes as one word, overlapping what went before; bytes one at a time only in
  // strings shorter than a word or after a byte that is not plain.
  std::size_t plain = 0;
  std::uint64_t word;
  for (; plain + sizeof(word) <= size; plain += sizeof(word)) {
    std::memcpy(&word, in + plain, sizeof(word));
    if (AnyNotPlain(word)) break;
    std::memcpy(out + plain, &word, sizeof(word));
  }
  if (plain + sizeof(word) > size && size >= sizeof(word)) {
    std::memcpy(&word, in + size - sizeof(word), sizeof(word));
    if (!AnyNotPlain(word)) {
      std::memcpy(out + size - sizeof(word), &word, sizeof(word));
      return out + size;
    }
  }
  for (; plain < size && kPlainJsonByte[static_cast<unsigned char>(in[plain])]; ++plain) {
    out[plain] = in[plain];
  }
  if (plain == size) return out + size;
  return WriteEscapedJsonChars(value, plain, out);
}

}  // namespace mqc
