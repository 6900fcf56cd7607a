// SPDX-License-Identifier: BSD-3-Clause
#include "link/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

namespace mqc {
namespace {

StatusOr<int> Half(int n) {
  if (n % 2 != 0) return Status(StatusCode::kInvalidArgument, std::to_string(n) + " is odd");
  return n / 2;
}

TEST(StatusTest, DefaultIsOk) {
  const Status status;
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kOk);
  EXPECT_EQ(status.message(), "");
}

TEST(StatusOrTest, AValueIsOkWithAnOkStatus) {
  const StatusOr<int> half = Half(8);
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(half.value(), 4);
  EXPECT_EQ(*half, 4);
  EXPECT_TRUE(half.status().ok());
}

TEST(StatusOrTest, AFailureCarriesItsStatus) {
  const StatusOr<int> half = Half(7);
  EXPECT_FALSE(half.ok());
  EXPECT_EQ(half.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(half.status().message(), "7 is odd");
}

TEST(StatusOrTest, AnOkStatusWithoutAValueIsAnInternalError) {
  const StatusOr<std::string> none = Status();
  EXPECT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kInternal);
}

TEST(StatusOrTest, AMoveOnlyValueMovesOut) {
  StatusOr<std::unique_ptr<int>> owned = std::make_unique<int>(5);
  ASSERT_TRUE(owned.ok());
  EXPECT_EQ(**owned, 5);
  const std::unique_ptr<int> taken = std::move(owned).value();
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(*taken, 5);
}

TEST(StatusOrTest, MembersAreReachedThroughTheArrow) {
  StatusOr<std::string> text = std::string("abc");
  EXPECT_EQ(text->size(), 3u);
  text->push_back('d');
  EXPECT_EQ(text.value(), "abcd");
}

}  // namespace
}  // namespace mqc
