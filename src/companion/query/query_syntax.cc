// SPDX-License-Identifier: BSD-3-Clause
// Lexical pieces of the filter and order_by grammars; see query_syntax.h.
#include "companion/query/query_syntax.h"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace mqc {
namespace {

constexpr std::int64_t kMaxInt64 = std::numeric_limits<std::int64_t>::max();
constexpr std::uint64_t kMaxUint64 = std::numeric_limits<std::uint64_t>::max();
constexpr std::int64_t kNanosPerSecond = 1000000000;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// value = value * 10 + digit, unless that overflows.
bool AppendDigit(char digit, std::uint64_t* value) {
  const auto d = static_cast<std::uint64_t>(digit - '0');
  if (*value > (kMaxUint64 - d) / 10) return false;
  *value = *value * 10 + d;
  return true;
}

bool AddNanos(std::int64_t add, std::int64_t* total) {
  if (*total > kMaxInt64 - add) return false;
  *total += add;
  return true;
}

// --- durations ---------------------------------------------------------------------------

struct DurationUnit {
  std::string_view name;
  std::int64_t nanos;
};

// Two-letter units before the one-letter ones, so that "ms" is not read as "m" then "s".
constexpr DurationUnit kDurationUnits[] = {
    {"ns", 1},
    {"us", 1000},
    {"\xC2\xB5s", 1000},  // U+00B5 MICRO SIGN, as Go accepts it
    {"\xCE\xBCs", 1000},  // U+03BC GREEK SMALL LETTER MU
    {"ms", 1000000},
    {"s", kNanosPerSecond},
    {"m", 60 * kNanosPerSecond},
    {"h", 3600 * kNanosPerSecond},
};

const DurationUnit* ReadDurationUnit(std::string_view text, std::size_t* pos) {
  for (const DurationUnit& unit : kDurationUnits) {
    if (text.substr(*pos, unit.name.size()) == unit.name) {
      *pos += unit.name.size();
      return &unit;
    }
  }
  return nullptr;
}

// One `<digits>[.<digits>]<unit>` term of a duration, added to *total.
Status ReadDurationTerm(std::string_view text, std::size_t* pos, std::int64_t* total) {
  std::uint64_t whole = 0;
  const std::size_t start = *pos;
  for (; *pos < text.size() && IsDigit(text[*pos]); ++*pos) {
    if (!AppendDigit(text[*pos], &whole)) {
      return InvalidArgument("out of range");
    }
  }
  if (*pos == start) {
    return InvalidArgument("expected a number at '" + Excerpt(text.substr(start)) + "'");
  }
  std::string_view fraction;
  if (*pos < text.size() && text[*pos] == '.') {
    const std::size_t fraction_start = ++*pos;
    while (*pos < text.size() && IsDigit(text[*pos])) ++*pos;
    fraction = text.substr(fraction_start, *pos - fraction_start);
    if (fraction.empty()) {
      return InvalidArgument("expected digits after '.'");
    }
  }
  const std::size_t unit_start = *pos;
  const DurationUnit* unit = ReadDurationUnit(text, pos);
  if (unit == nullptr) {
    return InvalidArgument(unit_start == text.size()
                               ? std::string("missing unit (ns, us, ms, s, m or h)")
                               : "unknown unit at '" + Excerpt(text.substr(unit_start)) + "'");
  }
  if (whole > static_cast<std::uint64_t>(kMaxInt64 / unit->nanos)) {
    return InvalidArgument("out of range");
  }
  std::int64_t nanos = static_cast<std::int64_t>(whole) * unit->nanos;
  std::int64_t scale = unit->nanos;
  for (const char digit : fraction) {
    scale /= 10;
    nanos += (digit - '0') * scale;  // stays below whole * unit + unit: no overflow
  }
  if (!AddNanos(nanos, total)) return InvalidArgument("out of range");
  return Status();
}

// --- string literals ---------------------------------------------------------------------

void AppendUtf8(std::uint32_t code_point, std::string* out) {
  const auto byte = [](std::uint32_t bits) { return static_cast<char>(bits); };
  if (code_point < 0x80) {
    out->push_back(byte(code_point));
  } else if (code_point < 0x800) {
    out->push_back(byte(0xC0 | (code_point >> 6)));
    out->push_back(byte(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    out->push_back(byte(0xE0 | (code_point >> 12)));
    out->push_back(byte(0x80 | ((code_point >> 6) & 0x3F)));
    out->push_back(byte(0x80 | (code_point & 0x3F)));
  } else {
    out->push_back(byte(0xF0 | (code_point >> 18)));
    out->push_back(byte(0x80 | ((code_point >> 12) & 0x3F)));
    out->push_back(byte(0x80 | ((code_point >> 6) & 0x3F)));
    out->push_back(byte(0x80 | (code_point & 0x3F)));
  }
}

// Four hex digits at text[pos].
bool ReadHex4(std::string_view text, std::size_t pos, std::uint32_t* value) {
  if (pos + 4 > text.size()) return false;
  *value = 0;
  for (std::size_t i = pos; i < pos + 4; ++i) {
    const char c = text[i];
    std::uint32_t digit = 0;
    if (IsDigit(c)) {
      digit = static_cast<std::uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<std::uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<std::uint32_t>(c - 'A' + 10);
    } else {
      return false;
    }
    *value = *value * 16 + digit;
  }
  return true;
}

bool IsHighSurrogate(std::uint32_t unit) { return unit >= 0xD800 && unit <= 0xDBFF; }
bool IsLowSurrogate(std::uint32_t unit) { return unit >= 0xDC00 && unit <= 0xDFFF; }

// The \uXXXX escape whose backslash is text[*pos], with its low surrogate if it needs one.
bool ReadUnicodeEscape(std::string_view text, std::size_t* pos, std::string* out,
                       SyntaxError* error) {
  const std::size_t start = *pos;
  std::uint32_t unit = 0;
  if (!ReadHex4(text, start + 2, &unit)) {
    *error = {start, "Invalid \\u escape in string literal: expected four hex digits"};
    return false;
  }
  *pos = start + 6;
  if (IsLowSurrogate(unit)) {
    *error = {start, "Invalid \\u escape in string literal: unpaired low surrogate"};
    return false;
  }
  if (IsHighSurrogate(unit)) {
    std::uint32_t low = 0;
    if (text.substr(*pos, 2) != "\\u" || !ReadHex4(text, *pos + 2, &low) || !IsLowSurrogate(low)) {
      *error = {start, "Invalid \\u escape in string literal: unpaired high surrogate"};
      return false;
    }
    *pos += 6;
    unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
  }
  AppendUtf8(unit, out);
  return true;
}

// The escape whose backslash is text[*pos]; advances past it.
bool ReadEscape(std::string_view text, std::size_t* pos, std::string* out, SyntaxError* error) {
  const std::size_t start = *pos;
  if (start + 1 >= text.size()) {
    *error = {start, "Unterminated escape in string literal"};
    return false;
  }
  const char kind = text[start + 1];
  char decoded = 0;
  switch (kind) {
    case '"':
    case '\\':
    case '/':
    case '*':
      decoded = kind;
      break;
    case 'b':
      decoded = '\b';
      break;
    case 'f':
      decoded = '\f';
      break;
    case 'n':
      decoded = '\n';
      break;
    case 'r':
      decoded = '\r';
      break;
    case 't':
      decoded = '\t';
      break;
    case 'u':
      return ReadUnicodeEscape(text, pos, out, error);
    default:
      *error = {start, "Invalid escape '\\" + Excerpt(text.substr(start + 1, 1)) +
                           "' in string literal (allowed: \\\" \\\\ \\/ \\b \\f \\n \\r \\t "
                           "\\uXXXX \\*)"};
      return false;
  }
  out->push_back(decoded);
  *pos = start + 2;
  return true;
}

}  // namespace

std::size_t TextColumn(std::string_view text, std::size_t offset) {
  std::size_t column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (!IsContinuationByte(text[i])) ++column;
  }
  return column;
}

std::string AtPosition(std::string_view text, std::size_t offset) {
  return " at position " + std::to_string(TextColumn(text, offset));
}

NumberStatus ParseUint64(std::string_view text, std::uint64_t* value) {
  if (text.empty()) return NumberStatus::kNotANumber;
  std::uint64_t result = 0;
  bool overflow = false;
  for (const char c : text) {
    if (!IsDigit(c)) return NumberStatus::kNotANumber;
    if (!overflow && !AppendDigit(c, &result)) overflow = true;
  }
  if (overflow) return NumberStatus::kOutOfRange;
  *value = result;
  return NumberStatus::kOk;
}

NumberStatus ParseInt64(std::string_view text, std::int64_t* value) {
  const bool negative = !text.empty() && text.front() == '-';
  std::uint64_t magnitude = 0;
  const NumberStatus status = ParseUint64(negative ? text.substr(1) : text, &magnitude);
  if (status != NumberStatus::kOk) return status;
  const auto max_magnitude = static_cast<std::uint64_t>(kMaxInt64) + (negative ? 1 : 0);
  if (magnitude > max_magnitude) return NumberStatus::kOutOfRange;
  if (!negative) {
    *value = static_cast<std::int64_t>(magnitude);
  } else if (magnitude == max_magnitude) {
    *value = std::numeric_limits<std::int64_t>::min();
  } else {
    *value = -static_cast<std::int64_t>(magnitude);
  }
  return NumberStatus::kOk;
}

StatusOr<std::int64_t> ParseDuration(std::string_view text) {
  if (text == "0") return std::int64_t{0};
  if (text.empty()) return InvalidArgument("empty");
  std::int64_t total = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const Status term = ReadDurationTerm(text, &pos, &total);
    if (!term.ok()) return term;
  }
  return total;
}

bool ReadStringLiteral(std::string_view text, std::size_t start, StringLiteral* literal,
                       SyntaxError* error) {
  literal->value.clear();
  literal->prefix = false;
  bool ends_in_bare_star = false;
  std::size_t pos = start + 1;
  while (pos < text.size()) {
    const char c = text[pos];
    if (c == '"') {
      literal->end = pos + 1;
      if (ends_in_bare_star) {
        literal->value.pop_back();
        literal->prefix = true;
      }
      return true;
    }
    if (c == '\\') {
      if (!ReadEscape(text, &pos, &literal->value, error)) return false;
      ends_in_bare_star = false;
    } else {
      literal->value.push_back(c);
      ends_in_bare_star = c == '*';
      ++pos;
    }
  }
  *error = {start, "Unterminated string literal"};
  return false;
}

std::string QuoteFilterString(std::string_view value) {
  try {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out = "\"";
    for (const char c : value) {
      const auto byte = static_cast<unsigned char>(c);
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '*':  // every star, so that a trailing one cannot turn into a prefix match
          out += "\\*";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (byte < 0x20 || byte == 0x7F) {
            out += "\\u00";
            out += kHex[byte >> 4];
            out += kHex[byte & 0xF];
          } else {
            out += c;
          }
      }
    }
    out += '"';
    return out;
  } catch (...) {
    // Only std::bad_alloc can get here. An empty result is not a literal, so a filter built
    // from it fails to parse instead of matching something else.
    return std::string();
  }
}

}  // namespace mqc
