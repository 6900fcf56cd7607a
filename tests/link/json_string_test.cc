// SPDX-License-Identifier: BSD-3-Clause
#include "link/json_string.h"

#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace mqc
