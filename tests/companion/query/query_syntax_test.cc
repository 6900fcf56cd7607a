// SPDX-License-Identifier: BSD-3-Clause
// Tests for the literal syntaxes of filters (query_syntax.h): durations, RFC 3339 timestamps,
// string literals with their escapes and prefix stars, quoting a value back, integers, and
// positions that count characters.
#include "companion/query/query_syntax.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "../../support/connection_builder.h"
#include "../../support/query_fleet.h"
#include "../../support/quote_filter_string.h"
#include "companion/connection.h"

namespace mqc {
namespace {

constexpr std::int64_t kMaxI64 = std::numeric_limits<std::int64_t>::max();

// Each text of `rows` parses to its value.
template <typename Parse, typename Rows>
void ExpectValues(Parse parse, const Rows& rows) {
  for (const auto& [text, nanos] : rows) {
    SCOPED_TRACE(text);
    const StatusOr<std::int64_t> parsed = parse(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    EXPECT_EQ(*parsed, nanos);
  }
}

// Each text of `rows` is refused as an invalid argument, with its reason.
template <typename Parse, typename Rows>
void ExpectRefusals(Parse parse, const Rows& rows) {
  for (const auto& [text, expected_why] : rows) {
    SCOPED_TRACE(text);
    const StatusOr<std::int64_t> parsed = parse(text);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(parsed.status().message(), expected_why);
  }
}

TEST(QuerySyntaxTest, Durations) {
  const std::pair<const char*, std::int64_t> good[] = {
      {"0", 0},
      {"0s", 0},
      {"30s", 30 * kTestSecond},
      {"100ms", 100 * kTestMilli},
      {"1.5s", 1500 * kTestMilli},
      {"1.500s", 1500 * kTestMilli},
      {"2m", 120 * kTestSecond},
      {"1h", 3600 * kTestSecond},
      {"500us", 500000},
      {"500\xC2\xB5s", 500000},
      {"500\xCE\xBCs", 500000},
      {"10ns", 10},
      {"1h30m", 5400 * kTestSecond},
      {"1m0.5s", 60500 * kTestMilli},
      {"1.000000001s", kTestSecond + 1},
      {"1.0000000019s", kTestSecond + 1},  // finer than a nanosecond: cut off
      {"0.5ns", 0},
      {"0.25h", 900 * kTestSecond},
      {"2562047h", 2562047LL * 3600 * kTestSecond},
      {"9223372036854775807ns", kMaxI64},
  };
  ExpectValues(ParseDuration, good);
  const std::pair<const char*, const char*> bad[] = {
      {"", "empty"},
      {"s", "expected a number at 's'"},
      {"1", "missing unit (ns, us, ms, s, m or h)"},
      {"1x", "unknown unit at 'x'"},
      {"1S", "unknown unit at 'S'"},
      {"1.s", "expected digits after '.'"},
      {".5s", "expected a number at '.5s'"},
      {"-1s", "expected a number at '-1s'"},
      {"1s ", "expected a number at ' '"},
      {"1s2", "missing unit (ns, us, ms, s, m or h)"},
      {"2562048h", "out of range"},
      {"9223372036854775808ns", "out of range"},
      {"99999999999999999999s", "out of range"},
      {"2562047h2562047h", "out of range"},
  };
  ExpectRefusals(ParseDuration, bad);
}

TEST(QuerySyntaxTest, Timestamps) {
  const std::pair<const char*, std::int64_t> good[] = {
      {"1970-01-01T00:00:00Z", 0},
      {"2026-01-01T00:00:00Z", kTestTime0},
      {"2026-01-01t00:00:00z", kTestTime0},
      {"2026-01-01T00:00:00.5Z", kTestTime0 + 500 * kTestMilli},
      {"2026-01-01T00:00:00.123456789Z", kTestTime0 + 123456789},
      {"2026-01-01T00:00:00.1234567891Z", kTestTime0 + 123456789},
      {"2026-01-01T01:30:00+01:30", kTestTime0},
      {"2025-12-31T22:00:00-02:00", kTestTime0},
      {"2026-01-01T00:00:00-00:00", kTestTime0},
      {"2000-02-29T12:30:15Z", 951827415 * kTestSecond},
      {"1969-12-31T23:59:59Z", -kTestSecond},
      {"1969-12-31T23:59:59.5Z", -500 * kTestMilli},
      {"2262-04-11T23:47:16.854775807Z", kMaxI64},
      {"1677-09-22T00:00:00Z", -9223286400LL * kTestSecond},
      {"1677-09-21T00:12:44Z", -9223372036LL * kTestSecond},
  };
  ExpectValues(ParseTimestamp, good);
  const std::string format = "expected YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)";
  const std::pair<const char*, std::string> bad[] = {
      {"", format},
      {"2026-1-01T00:00:00Z", format},
      {"2026-01-01 00:00:00Z", format},
      {"2026-01-01T00:00:00", format},
      {"2026-01-01T00:00Z", format},
      {"+2026-01-01T00:00:00Z", format},
      {"2026-00-01T00:00:00Z", "month out of range"},
      {"2026-01-32T00:00:00Z", "day out of range"},
      {"2026-04-31T00:00:00Z", "day out of range"},
      {"2100-02-29T00:00:00Z", "day out of range"},
      {"2026-01-01T00:60:00Z", "time of day out of range"},
      {"2026-01-01T00:00:60Z", "time of day out of range"},
      {"2026-01-01T00:00:00+24:00", "zone offset out of range"},
      {"2026-01-01T00:00:00+01:60", "zone offset out of range"},
      {"2026-01-01T00:00:00+01", "expected a zone offset like +02:00"},
      {"2026-01-01T00:00:00.Z", "expected digits after '.'"},
      {"2026-01-01T00:00:00.5", "expected 'Z' or a zone offset like +02:00"},
      {"2026-01-01T00:00:00Zx", "unexpected 'x' after the zone"},
      {"2262-04-11T23:47:16.854775808Z",
       "out of the supported range (1677-09-21T00:12:44Z to 2262-04-11T23:47:16.854775807Z)"},
      {"1677-09-21T00:12:43.999999999Z",
       "out of the supported range (1677-09-21T00:12:44Z to 2262-04-11T23:47:16.854775807Z)"},
      {"0001-01-01T00:00:00Z",
       "out of the supported range (1677-09-21T00:12:44Z to 2262-04-11T23:47:16.854775807Z)"},
  };
  ExpectRefusals(ParseTimestamp, bad);
}

TEST(QuerySyntaxTest, StringLiterals) {
  struct Row {
    std::string literal;
    std::string value;
    bool prefix;
  };
  const Row rows[] = {
      {R"("abc")", "abc", false},
      {R"("")", "", false},
      {R"("a\"b")", "a\"b", false},
      {R"("\\")", "\\", false},
      {R"("\/")", "/", false},
      {R"("\b\f\n\r\t")", "\b\f\n\r\t", false},
      {R"("\u00e9\u00C9")", "\xC3\xA9\xC3\x89", false},
      {R"("\u20ac")", "\xE2\x82\xAC", false},
      {R"("\uD83D\uDE00")", "\xF0\x9F\x98\x80", false},
      {R"("\u0000")", std::string(1, '\0'), false},
      {R"("\u007f")", "\x7f", false},
      {R"("a*")", "a", true},
      {R"("*")", "", true},
      {R"("a**")", "a*", true},
      {R"("a\*")", "a*", false},
      {R"("a*\*")", "a**", false},
      {R"("*a")", "*a", false},
      {"\"\xC3\xA9\xFF\x01\"", "\xC3\xA9\xFF\x01", false},  // raw bytes are taken as they are
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.literal);
    StringLiteral literal;
    SyntaxError error;
    ASSERT_TRUE(ReadStringLiteral(row.literal + " rest", 0, &literal, &error)) << error.message;
    EXPECT_EQ(literal.value, row.value);
    EXPECT_EQ(literal.prefix, row.prefix);
    EXPECT_EQ(literal.end, row.literal.size());
  }
}

TEST(QuerySyntaxTest, QuoteFilterString) {
  const std::pair<std::string, std::string> rows[] = {
      {"sensor-1", R"("sensor-1")"},
      {"", R"("")"},
      {"a\"b\\c", R"("a\"b\\c")"},
      {"sensor-*", R"("sensor-\*")"},
      {"*a*", R"("\*a\*")"},
      {"\n\r\t\x01\x7f", R"("\n\r\t\u0001\u007f")"},
      {std::string(1, '\0'), R"("\u0000")"},
      {"\xC3\xA9", "\"\xC3\xA9\""},
      {"/", R"("/")"},
  };
  for (const auto& [value, quoted] : rows) {
    SCOPED_TRACE(quoted);
    EXPECT_EQ(QuoteFilterString(value), quoted);
  }
}

// Whatever the bytes, a quoted value matches exactly the connection that has it.
TEST(QuerySyntaxTest, QuotedValuesRoundTrip) {
  std::mt19937 rng(7);
  std::vector<std::string> values = {"", "*", "a*", "\\*", "\"", "\\", "\x80\xFF", "\xF0\x9F\x98"};
  for (int i = 0; i < 300; ++i) {
    std::string value(rng() % 24, '\0');
    for (char& c : value) c = static_cast<char>(rng() % 256);
    values.push_back(value);
  }
  std::vector<Connection> snapshot;
  for (std::size_t i = 0; i < values.size(); ++i) {
    snapshot.push_back(TestConnection(i + 1));
    snapshot.back().client_id = values[i];
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::string quoted = QuoteFilterString(values[i]);
    StringLiteral literal;
    SyntaxError error;
    ASSERT_TRUE(ReadStringLiteral(quoted, 0, &literal, &error)) << error.message;
    EXPECT_EQ(literal.value, values[i]);
    EXPECT_FALSE(literal.prefix);
    EXPECT_EQ(literal.end, quoted.size());
    const Outcome outcome = RunQuery(snapshot, MakeQuery("client_id = " + quoted));
    ASSERT_TRUE(outcome.ok) << outcome.error;
    for (const std::uint64_t seq : outcome.seqs) EXPECT_EQ(values[seq - 1], values[i]);
    EXPECT_EQ(std::count(outcome.seqs.begin(), outcome.seqs.end(), i + 1), 1);
  }
}

TEST(QuerySyntaxTest, ColumnsCountCharacters) {
  const std::string text = "a\xC3\xA9\xE2\x82\xAC b";
  EXPECT_EQ(TextColumn(text, 0), 1u);
  EXPECT_EQ(TextColumn(text, 1), 2u);
  EXPECT_EQ(TextColumn(text, 3), 3u);
  EXPECT_EQ(TextColumn(text, 6), 4u);
  EXPECT_EQ(TextColumn(text, 7), 5u);
  EXPECT_EQ(TextColumn(text, 100), 6u);
  EXPECT_EQ(AtPosition(text, 7), " at position 5");
  EXPECT_EQ(Excerpt(std::string(64, 'x')), std::string(64, 'x'));
  EXPECT_EQ(Excerpt(std::string(65, 'x')), std::string(64, 'x') + "...");
  EXPECT_EQ(Excerpt(std::string(63, 'x') + "\xC3\xA9zz"), std::string(63, 'x') + "...");
}

TEST(QuerySyntaxTest, Integers) {
  std::int64_t value = 0;
  EXPECT_EQ(ParseInt64("-9223372036854775808", &value), NumberStatus::kOk);
  EXPECT_EQ(value, std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(ParseInt64("9223372036854775807", &value), NumberStatus::kOk);
  EXPECT_EQ(value, kMaxI64);
  EXPECT_EQ(ParseInt64("9223372036854775808", &value), NumberStatus::kOutOfRange);
  EXPECT_EQ(ParseInt64("-9223372036854775809", &value), NumberStatus::kOutOfRange);
  EXPECT_EQ(ParseInt64("-", &value), NumberStatus::kNotANumber);
  EXPECT_EQ(ParseInt64("+1", &value), NumberStatus::kNotANumber);
  EXPECT_EQ(ParseInt64("", &value), NumberStatus::kNotANumber);
  std::uint64_t unsigned_value = 0;
  EXPECT_EQ(ParseUint64("18446744073709551615", &unsigned_value), NumberStatus::kOk);
  EXPECT_EQ(unsigned_value, kTestMaxU64);
  EXPECT_EQ(ParseUint64("18446744073709551616", &unsigned_value), NumberStatus::kOutOfRange);
  EXPECT_EQ(ParseUint64("184467440737095516160x", &unsigned_value), NumberStatus::kNotANumber);
}

}  // namespace
}  // namespace mqc
