// SPDX-License-Identifier: BSD-3-Clause
#include "link/json_string.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace mqc {
namespace {

std::string Json(std::string_view value) {
  std::string out;
  AppendJsonString(value, &out);
  return out;
}

TEST(JsonStringTest, EscapesAsCjsonPrintsStrings) {
  EXPECT_EQ(Json("plain"), "\"plain\"");
  EXPECT_EQ(Json("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(Json("\b\f\n\r\t"), "\"\\b\\f\\n\\r\\t\"");
  EXPECT_EQ(Json(std::string_view("\x01\x1f", 2)), "\"\\u0001\\u001f\"");
  EXPECT_EQ(Json("\x7f"), "\"\x7f\"");  // DEL is valid in a JSON string
}

TEST(JsonStringTest, CopiesValidUtf8AndRepairsTheRest) {
  EXPECT_EQ(Json("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
  // A lone continuation byte, an overlong form, a surrogate, a cut sequence, a NUL.
  EXPECT_EQ(Json("\x80"), "\"\xef\xbf\xbd\"");
  EXPECT_EQ(Json("\xc0\xaf"), "\"\xef\xbf\xbd\xef\xbf\xbd\"");
  EXPECT_EQ(Json("\xed\xa0\x80"), "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
  EXPECT_EQ(Json("a\xe2\x82"), "\"a\xef\xbf\xbd\xef\xbf\xbd\"");
  EXPECT_EQ(Json(std::string_view("a\0b", 3)), "\"a\xef\xbf\xbd" "b\"");
  EXPECT_EQ(ToValidUtf8("ok\xff"), "ok\xef\xbf\xbd");
}

// WriteJsonChars finds plain text 8 bytes at a time: each byte that is not plain, at each
// place of a word and of the tail, in strings around the word size.
TEST(JsonStringTest, WriteJsonCharsWritesWhatAppendJsonStringAppendsWithoutQuotes) {
  const std::string not_plain[] = {"\"", "\\", "\n", std::string(1, '\0'), "\x1f",
                                   "\x80",  "\xff", "\xc3\xa9", "\xe2\x82"};
  for (std::size_t length = 0; length <= 25; ++length) {
    const std::string plain(length, 'a');
    for (const std::string& odd : not_plain) {
      for (std::size_t at = 0; at <= length; ++at) {
        const std::string value = plain.substr(0, at) + odd + plain.substr(at);
        SCOPED_TRACE(testing::PrintToString(value));
        std::string written(MaxJsonCharsBytes(value.size()), '\0');
        written.resize(WriteJsonChars(value, written.data()) - written.data());
        EXPECT_EQ("\"" + written + "\"", Json(value));
      }
    }
    std::string room(MaxJsonCharsBytes(length), '\0');
    room.resize(WriteJsonChars(plain, room.data()) - room.data());
    EXPECT_EQ(room, plain);
  }
  // Every byte value, alone and after a plain word.
  for (int c = 0; c < 256; ++c) {
    for (const std::string& value : {std::string(1, static_cast<char>(c)),
                                     "12345678" + std::string(1, static_cast<char>(c))}) {
      std::string written(MaxJsonCharsBytes(value.size()), '\0');
      written.resize(WriteJsonChars(value, written.data()) - written.data());
      EXPECT_EQ("\"" + written + "\"", Json(value)) << c;
    }
  }
}

}  // namespace
}  // namespace mqc
