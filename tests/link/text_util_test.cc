// SPDX-License-Identifier: BSD-3-Clause
// text_util: the one copy of each small helper both processes use.
#include "link/text_util.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace mqc {
namespace {

TEST(TextUtilTest, EqualsIgnoreAsciiCase) {
  EXPECT_TRUE(EqualsIgnoreAsciiCase("Application/JSON", "application/json"));
  EXPECT_TRUE(EqualsIgnoreAsciiCase("", ""));
  EXPECT_FALSE(EqualsIgnoreAsciiCase("desc", "desc "));
  EXPECT_FALSE(EqualsIgnoreAsciiCase("utf-8", "utf_8"));
  EXPECT_FALSE(EqualsIgnoreAsciiCase("\xC3\x84", "\xC3\xA4"));  // no Unicode folding
}

TEST(TextUtilTest, StartsWith) {
  EXPECT_TRUE(StartsWith("sensor-1", ""));
  EXPECT_TRUE(StartsWith("", ""));
  EXPECT_TRUE(StartsWith("sensor-1", "sensor-"));
  EXPECT_TRUE(StartsWith("sensor-1", "sensor-1"));
  EXPECT_FALSE(StartsWith("sensor-1", "sensor-12"));  // longer than the text
  EXPECT_FALSE(StartsWith("sensor-1", "sensor-2"));   // differs in its last byte
  EXPECT_FALSE(StartsWith("sensor-1", "Sensor"));     // case counts
  EXPECT_TRUE(StartsWith(std::string_view("a\0b", 3), std::string_view("a\0", 2)));
}

TEST(TextUtilTest, PrintableExcerptReplacesWhatCouldForgeALine) {
  EXPECT_EQ(PrintableExcerpt("plain text: 1 ~"), "plain text: 1 ~");
  EXPECT_EQ(PrintableExcerpt("a\nb\rc\td\x7f\x01"), "a?b?c?d??");
  EXPECT_EQ(PrintableExcerpt("caf\xC3\xA9"), "caf??");
  EXPECT_EQ(PrintableExcerpt(std::string(64, 'x')), std::string(64, 'x'));
  EXPECT_EQ(PrintableExcerpt(std::string(65, 'x')), std::string(64, 'x') + "...");
  EXPECT_EQ(PrintableExcerpt(""), "");
}

TEST(TextUtilTest, Fnv1a64KnownValuesAndContinuation) {
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325u);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cu);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8u);
  EXPECT_EQ(Fnv1a64("bar", Fnv1a64("foo")), Fnv1a64("foobar"));
}

TEST(TextUtilTest, VarintRoundTripsAndRefusesWhatIsCutOrTooLong) {
  for (const std::uint64_t value : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{127},
                                    std::uint64_t{128}, std::uint64_t{300}, UINT64_MAX}) {
    std::string bytes;
    PutVarint(value, &bytes);
    std::string_view rest = bytes;
    std::uint64_t read = 1;
    ASSERT_TRUE(GetVarint(&rest, &read)) << value;
    EXPECT_EQ(read, value);
    EXPECT_TRUE(rest.empty());
  }
  std::string three_hundred;
  PutVarint(300, &three_hundred);
  EXPECT_EQ(three_hundred, "\xac\x02");  // protobuf's own example
  std::uint64_t value = 0;
  std::string_view cut = std::string_view(three_hundred).substr(0, 1);
  EXPECT_FALSE(GetVarint(&cut, &value));
  std::string too_long(9, '\xff');
  too_long.push_back('\x02');  // bit 64
  std::string_view rest = too_long;
  EXPECT_FALSE(GetVarint(&rest, &value));
}

TEST(TextUtilTest, Base64UrlRoundTripsEveryLength) {
  std::string bytes;
  for (int length = 0; length < 40; ++length) {
    const std::string text = EncodeBase64Url(bytes);
    EXPECT_EQ(text.find('='), std::string::npos);
    std::string decoded = "stale";
    ASSERT_TRUE(DecodeBase64Url(text, &decoded, /*canonical=*/true)) << text;
    EXPECT_EQ(decoded, bytes);
    bytes.push_back(static_cast<char>(length * 37 + 250));
  }
  EXPECT_EQ(EncodeBase64Url("\xFB\xFF"), "-_8");
}

TEST(TextUtilTest, Base64UrlRefusals) {
  std::string bytes;
  EXPECT_FALSE(DecodeBase64Url("abcde", &bytes, false));  // 4n+1 characters
  EXPECT_FALSE(DecodeBase64Url("ab+/", &bytes, false));   // the standard alphabet
  EXPECT_FALSE(DecodeBase64Url("YQ==", &bytes, false));   // padding is the caller's
  // "YR" has a non-zero unused bit: accepted unless canonical.
  EXPECT_TRUE(DecodeBase64Url("YR", &bytes, false));
  EXPECT_EQ(bytes, "a");
  EXPECT_FALSE(DecodeBase64Url("YR", &bytes, true));
  EXPECT_TRUE(DecodeBase64Url("YQ", &bytes, true));
  EXPECT_EQ(bytes, "a");
}

int freed = 0;
void CountingFree(int* value) {
  ++freed;
  delete value;
}

TEST(TextUtilTest, CSmartPtrFreesOnceAndNeverNull) {
  freed = 0;
  {
    const CSmartPtr<int, CountingFree> owner(new int(7));
    const CSmartPtr<int, CountingFree> empty;
    EXPECT_EQ(*owner, 7);
  }
  EXPECT_EQ(freed, 1);
  CSmartPtr<int, CountingFree> moved(new int(1));
  CSmartPtr<int, CountingFree> target = std::move(moved);
  target.reset();
  EXPECT_EQ(freed, 2);
}

}  // namespace
}  // namespace mqc
