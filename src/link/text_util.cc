// SPDX-License-Identifier: BSD-3-Clause
// Text helpers (see text_util.h).
#include "link/text_util.h"

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mqc {
namespace {

constexpr char kBase64UrlAlphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

constexpr std::size_t kMaxExcerptBytes = 64;

char ToLowerAscii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

int Base64UrlDigit(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

constexpr std::int64_t kNanosPerSecond = 1'000'000'000;
constexpr std::int64_t kMaxInt64 = std::numeric_limits<std::int64_t>::max();

// The date of a day counted from 1970-01-01, proleptic Gregorian (H. Hinnant's
// civil_from_days, the inverse of DaysFromCivil below).
void CivilFromDays(std::int64_t days, std::int64_t* year, int* month, int* day) {
  days += 719468;
  const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const std::int64_t day_of_era = days - era * 146097;
  const std::int64_t year_of_era =
      (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  const std::int64_t day_of_year =
      day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  const std::int64_t shifted_month = (5 * day_of_year + 2) / 153;  // March = 0
  *day = static_cast<int>(day_of_year - (153 * shifted_month + 2) / 5 + 1);
  *month = static_cast<int>(shifted_month < 10 ? shifted_month + 3 : shifted_month - 9);
  *year = year_of_era + era * 400 + (*month <= 2 ? 1 : 0);
}

// Writes `value` (0 <= value < 10^count) as `count` digits at *out.
void PutDigits(std::int64_t value, int count, char* out) {
  for (int i = count - 1; i >= 0; --i) {
    out[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
}

// Splits Unix nanoseconds into whole seconds (rounded towards the past) and the nanoseconds
// after them, and formats the seconds as "YYYY-MM-DDTHH:MM:SS". Arithmetic rather than
// gmtime_r and strftime: the views format one or two per connection listed.
std::string FormatWholeSeconds(std::int64_t unix_ns, std::int64_t* nanos) {
  std::int64_t seconds = unix_ns / kNanosPerSecond;
  *nanos = unix_ns % kNanosPerSecond;
  if (*nanos < 0) {
    *nanos += kNanosPerSecond;
    --seconds;
  }
  std::int64_t days = seconds / 86400;
  std::int64_t second_of_day = seconds % 86400;
  if (second_of_day < 0) {
    second_of_day += 86400;
    --days;
  }
  std::int64_t year = 0;
  int month = 0;
  int day = 0;
  CivilFromDays(days, &year, &month, &day);
  // An int64 of nanoseconds reaches the years 1677 to 2262: always four digits.
  char text[] = "YYYY-MM-DDTHH:MM:SS";
  PutDigits(year, 4, text);
  PutDigits(month, 2, text + 5);
  PutDigits(day, 2, text + 8);
  PutDigits(second_of_day / 3600, 2, text + 11);
  PutDigits(second_of_day / 60 % 60, 2, text + 14);
  PutDigits(second_of_day % 60, 2, text + 17);
  return std::string(text, sizeof(text) - 1);
}

// --- timestamps --------------------------------------------------------------------------

// Reads exactly `count` digits at text[pos].
bool ReadFixedDigits(std::string_view text, std::size_t pos, std::size_t count, int* value) {
  if (pos + count > text.size()) return false;
  *value = 0;
  for (std::size_t i = pos; i < pos + count; ++i) {
    if (!IsAsciiDigit(text[i])) return false;
    *value = *value * 10 + (text[i] - '0');
  }
  return true;
}

bool IsLeapYear(int year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

int DaysInMonth(int year, int month) {
  constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && IsLeapYear(year) ? 29 : kDays[month - 1];
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
std::int64_t DaysFromCivil(std::int64_t year, std::int64_t month, std::int64_t day) {
  year -= month <= 2 ? 1 : 0;
  const std::int64_t era = (year >= 0 ? year : year - 399) / 400;
  const std::int64_t year_of_era = year - era * 400;
  const std::int64_t day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const std::int64_t day_of_era =
      year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

struct DateTime {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  std::int64_t nanos = 0;
  int offset_seconds = 0;  // east of UTC
};

bool ReadDateAndTime(std::string_view text, DateTime* t) {
  return ReadFixedDigits(text, 0, 4, &t->year) && text[4] == '-' &&
         ReadFixedDigits(text, 5, 2, &t->month) && text[7] == '-' &&
         ReadFixedDigits(text, 8, 2, &t->day) && (text[10] == 'T' || text[10] == 't') &&
         ReadFixedDigits(text, 11, 2, &t->hour) && text[13] == ':' &&
         ReadFixedDigits(text, 14, 2, &t->minute) && text[16] == ':' &&
         ReadFixedDigits(text, 17, 2, &t->second);
}

// The optional fraction and the zone, from text[*pos] to the end.
Status ReadFractionAndZone(std::string_view text, std::size_t pos, DateTime* t) {
  if (pos < text.size() && text[pos] == '.') {
    const std::size_t start = ++pos;
    std::int64_t scale = kNanosPerSecond;
    for (; pos < text.size() && IsAsciiDigit(text[pos]); ++pos) {
      scale /= 10;
      t->nanos += (text[pos] - '0') * scale;
    }
    if (pos == start) {
      return InvalidArgument("expected digits after '.'");
    }
  }
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int hours = 0;
    int minutes = 0;
    if (!ReadFixedDigits(text, pos + 1, 2, &hours) || pos + 3 >= text.size() ||
        text[pos + 3] != ':' || !ReadFixedDigits(text, pos + 4, 2, &minutes)) {
      return InvalidArgument("expected a zone offset like +02:00");
    }
    if (hours > 23 || minutes > 59) {
      return InvalidArgument("zone offset out of range");
    }
    t->offset_seconds = (text[pos] == '-' ? -1 : 1) * (hours * 3600 + minutes * 60);
    pos += 6;
  } else {
    return InvalidArgument("expected 'Z' or a zone offset like +02:00");
  }
  if (pos != text.size()) {
    return InvalidArgument("unexpected '" + Excerpt(text.substr(pos)) + "' after the zone");
  }
  return Status();
}

Status CheckRanges(const DateTime& t) {
  if (t.month < 1 || t.month > 12) return InvalidArgument("month out of range");
  if (t.day < 1 || t.day > DaysInMonth(t.year, t.month)) return InvalidArgument("day out of range");
  if (t.hour > 23 || t.minute > 59 || t.second > 59) {
    return InvalidArgument("time of day out of range");
  }
  return Status();
}

}  // namespace

bool EqualsIgnoreAsciiCase(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ToLowerAscii(a[i]) != ToLowerAscii(b[i])) return false;
  }
  return true;
}

std::string Excerpt(std::string_view text) {
  if (text.size() <= kMaxExcerptBytes) return std::string(text);
  std::size_t cut = kMaxExcerptBytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "...";
}

std::string PrintableExcerpt(std::string_view text) {
  const bool cut = text.size() > kMaxExcerptBytes;
  std::string out(text.substr(0, cut ? kMaxExcerptBytes : text.size()));
  for (char& c : out) {
    if (c < 0x20 || c > 0x7E) c = '?';  // char may be signed: bytes >= 0x80 are negative
  }
  return cut ? out + "..." : out;
}

std::uint64_t Fnv1a64(std::string_view bytes, std::uint64_t hash) noexcept {
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3u;
  }
  return hash;
}

void PutVarint(std::uint64_t value, std::string* out) {
  do {
    auto byte = static_cast<std::uint8_t>(value & 0x7f);
    value >>= 7;
    if (value != 0) byte |= 0x80;
    out->push_back(static_cast<char>(byte));
  } while (value != 0);
}

bool GetVarint(std::string_view* bytes, std::uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (bytes->empty()) return false;
    const auto byte = static_cast<std::uint8_t>(bytes->front());
    bytes->remove_prefix(1);
    if (shift == 63 && byte > 1) return false;  // beyond 64 bits
    *value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

std::string EncodeBase64Url(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() * 4 + 2) / 3);
  std::uint32_t buffer = 0;
  int bits = 0;
  for (const char c : bytes) {
    buffer = ((buffer << 8) | static_cast<unsigned char>(c)) & 0xFFFF;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kBase64UrlAlphabet[(buffer >> bits) & 0x3F];
    }
  }
  if (bits > 0) out += kBase64UrlAlphabet[(buffer << (6 - bits)) & 0x3F];
  return out;
}

bool DecodeBase64Url(std::string_view text, std::string* bytes, bool canonical) {
  bytes->clear();
  if (text.size() % 4 == 1) return false;
  bytes->reserve(text.size() / 4 * 3 + 2);
  std::uint32_t buffer = 0;
  int bits = 0;
  for (const char c : text) {
    const int digit = Base64UrlDigit(c);
    if (digit < 0) return false;
    buffer = ((buffer << 6) | static_cast<std::uint32_t>(digit)) & 0xFFFF;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes->push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  return !canonical || (buffer & ((1u << bits) - 1)) == 0;
}

std::string FormatRfc3339Seconds(std::int64_t unix_ns) {
  std::int64_t nanos = 0;
  return FormatWholeSeconds(unix_ns, &nanos) + "Z";
}

std::string FormatRfc3339Nanos(std::int64_t unix_ns) {
  std::int64_t nanos = 0;
  std::string text = FormatWholeSeconds(unix_ns, &nanos);
  char fraction[16];
  const int length =
      std::snprintf(fraction, sizeof(fraction), ".%09lldZ", static_cast<long long>(nanos));
  if (length <= 0 || static_cast<std::size_t>(length) >= sizeof(fraction)) {
    throw std::runtime_error("snprintf failed");  // cannot happen: nanos < 10^9
  }
  return text + fraction;
}

StatusOr<std::int64_t> ParseTimestamp(std::string_view text) {
  DateTime t;
  if (text.size() < 20 || !ReadDateAndTime(text, &t)) {
    return InvalidArgument("expected YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)");
  }
  Status status = ReadFractionAndZone(text, 19, &t);
  if (status.ok()) status = CheckRanges(t);
  if (!status.ok()) return status;
  const std::int64_t seconds = DaysFromCivil(t.year, t.month, t.day) * 86400 +
                               std::int64_t{t.hour} * 3600 + std::int64_t{t.minute} * 60 +
                               t.second - t.offset_seconds;
  // Keep seconds * 1e9 + nanos inside int64 (the lowest 0.855 s of int64 are left out).
  constexpr std::int64_t kMaxSeconds = kMaxInt64 / kNanosPerSecond;
  constexpr std::int64_t kMaxNanosAtMax = kMaxInt64 % kNanosPerSecond;
  if (seconds < -kMaxSeconds || seconds > kMaxSeconds ||
      (seconds == kMaxSeconds && t.nanos > kMaxNanosAtMax)) {
    return InvalidArgument(
        "out of the supported range (1677-09-21T00:12:44Z to 2262-04-11T23:47:16.854775807Z)");
  }
  return seconds * kNanosPerSecond + t.nanos;
}

}  // namespace mqc
