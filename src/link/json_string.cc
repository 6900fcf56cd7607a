// SPDX-License-Identifier: BSD-3-Clause
// Where the spec is silent: invalid UTF-8 is replaced byte by byte with U+FFFD rather than
// refused: the views must always answer valid JSON, and the broker already validates client ids,
// usernames and topics, so only odd inputs (query values in error messages, fuzzing) ever meet
// this.
#include "link/json_string.h"

#include <array>
#include <cstddef>

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

}  // namespace mqc
