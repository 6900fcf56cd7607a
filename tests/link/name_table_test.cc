// SPDX-License-Identifier: BSD-3-Clause
#include "link/name_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace mqc {
namespace {

using namespace std::string_view_literals;

enum class Color : std::uint8_t { kUnset, kRed, kGreen, kBlue, kOther = 200 };

constexpr NamedValue<Color> kColorNames[] = {
    {Color::kRed, "red"}, {Color::kGreen, "green"}, {Color::kBlue, "blue"},
    {Color::kUnset, ""},  {Color::kRed, "crimson"},  // a second name: parsed, never printed
};

// Both lookups work at compile time, so a table can back a constexpr function.
static_assert(NameOf(kColorNames, Color::kGreen, "?") == "green");
static_assert(ValueNamed(kColorNames, "blue") == Color::kBlue);
static_assert(!ValueNamed(kColorNames, "purple").has_value());

TEST(NameTableTest, NameOfNamesEveryListedValue) {
  EXPECT_EQ(NameOf(kColorNames, Color::kRed, "?"), "red");
  EXPECT_EQ(NameOf(kColorNames, Color::kGreen, "?"), "green");
  EXPECT_EQ(NameOf(kColorNames, Color::kBlue, "?"), "blue");
  EXPECT_EQ(NameOf(kColorNames, Color::kUnset, "?"), "");
}

TEST(NameTableTest, NameOfFallsBackForUnlistedValues) {
  EXPECT_EQ(NameOf(kColorNames, Color::kOther, "unknown"), "unknown");
  EXPECT_EQ(NameOf(kColorNames, static_cast<Color>(99), "unknown"), "unknown");
  constexpr NamedValue<Color> kEmpty[1] = {{Color::kRed, "red"}};
  EXPECT_EQ(NameOf(kEmpty, Color::kBlue, "none"), "none");
}

// What PresenceReason and LayoutFieldName rely on to return const char*.
TEST(NameTableTest, NamesAndTheFallbackEndInNul) {
  for (const Color color : {Color::kRed, Color::kUnset, Color::kOther}) {
    const std::string_view name = NameOf(kColorNames, color, "unknown");
    EXPECT_EQ(name.data()[name.size()], '\0') << name;
  }
}

TEST(NameTableTest, TheFirstEntryOfAValueNamesIt) {
  EXPECT_EQ(NameOf(kColorNames, Color::kRed, "?"), "red");
  EXPECT_EQ(ValueNamed(kColorNames, "crimson"), Color::kRed);
}

TEST(NameTableTest, ValueNamedParsesEveryNameBack) {
  for (const NamedValue<Color>& entry : kColorNames) {
    const std::optional<Color> parsed = ValueNamed(kColorNames, entry.name);
    ASSERT_TRUE(parsed.has_value()) << entry.name;
    EXPECT_EQ(*parsed, entry.value) << entry.name;
  }
}

TEST(NameTableTest, ValueNamedMatchesWholeNamesExactly) {
  for (const std::string_view other :
       {"Red"sv, "RED"sv, "re"sv, "redd"sv, " red"sv, "red "sv, "red\0"sv, "\0"sv, "other"sv}) {
    EXPECT_FALSE(ValueNamed(kColorNames, other).has_value()) << other;
  }
  // The empty name is a name like any other when the table lists it.
  EXPECT_EQ(ValueNamed(kColorNames, ""), Color::kUnset);
}

}  // namespace
}  // namespace mqc
