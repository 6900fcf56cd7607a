// SPDX-License-Identifier: BSD-3-Clause
#include "companion/http/http_message.h"

#include <gtest/gtest.h>

namespace mqc {
namespace {

TEST(HttpRequestTest, FindHeaderIgnoresAsciiCase) {
  HttpRequest request;
  request.headers = {{"Content-Type", "application/json"}, {"X-A", "1"}, {"x-a", "2"}};
  ASSERT_NE(request.FindHeader("content-type"), nullptr);
  EXPECT_EQ(*request.FindHeader("CONTENT-TYPE"), "application/json");
  EXPECT_EQ(*request.FindHeader("x-a"), "1");
  EXPECT_EQ(request.FindHeader("content-typ"), nullptr);
  EXPECT_EQ(request.FindHeader("Accept"), nullptr);
}

}  // namespace
}  // namespace mqc
