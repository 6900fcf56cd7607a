// SPDX-License-Identifier: BSD-3-Clause
#include "broker/subscription_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mqc {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<std::pair<std::string, int>> Listed(const SubscriptionList& list) {
  std::vector<std::pair<std::string, int>> listed;
  list.ForEach([&](const SubscriptionList::Entry& entry) {
    listed.emplace_back(std::string(entry.filter), entry.qos);
  });
  return listed;
}

TEST(SubscriptionListTest, AnEmptyListHoldsNothing) {
  const SubscriptionList list;
  std::uint8_t qos = 7;
  EXPECT_TRUE(list.empty());
  EXPECT_EQ(list.size(), 0u);
  EXPECT_FALSE(list.Get("a", &qos));
  EXPECT_FALSE(list.MaxMatchingQos("a", &qos));
  EXPECT_EQ(qos, 0);
  EXPECT_THAT(Listed(list), IsEmpty());
}

TEST(SubscriptionListTest, SetAddsInOrderAndChangesTheQosInPlace) {
  SubscriptionList list;
  EXPECT_TRUE(list.Set("a/b", 1));
  EXPECT_TRUE(list.Set("c/#", 2));
  EXPECT_TRUE(list.Set("d", 0));
  EXPECT_FALSE(list.Set("c/#", 2));  // there already with that QoS
  EXPECT_TRUE(list.Set("c/#", 0));   // a new QoS, same place
  EXPECT_THAT(Listed(list), ElementsAre(std::make_pair("a/b", 1), std::make_pair("c/#", 0),
                                        std::make_pair("d", 0)));
  EXPECT_EQ(list.size(), 3u);
  std::uint8_t qos = 9;
  ASSERT_TRUE(list.Get("a/b", &qos));
  EXPECT_EQ(qos, 1);
  EXPECT_FALSE(list.Get("a", &qos));  // a prefix is another filter
  EXPECT_FALSE(list.Get("a/b/", &qos));
}

TEST(SubscriptionListTest, RemoveTellsTheQosItHadAndKeepsTheOthersIntact) {
  SubscriptionList list;
  list.Set("first", 0);
  list.Set("second/+", 1);
  list.Set("third", 2);
  std::uint8_t qos = 9;
  EXPECT_FALSE(list.Remove("absent", &qos));
  EXPECT_EQ(qos, 9);  // untouched when absent
  ASSERT_TRUE(list.Remove("second/+", &qos));
  EXPECT_EQ(qos, 1);
  EXPECT_THAT(Listed(list), ElementsAre(std::make_pair("first", 0), std::make_pair("third", 2)));
  ASSERT_TRUE(list.Remove("third", &qos));
  ASSERT_TRUE(list.Remove("first", &qos));
  EXPECT_EQ(qos, 0);
  EXPECT_TRUE(list.empty());
  EXPECT_FALSE(list.Remove("first", &qos));
  // Usable again once empty.
  EXPECT_TRUE(list.Set("again", 2));
  EXPECT_THAT(Listed(list), ElementsAre(std::make_pair("again", 2)));
}

TEST(SubscriptionListTest, AppendDoesNotLookButReadsBackLikeSet) {
  SubscriptionList list;
  list.Append("x/y", 2);
  list.Append("z", 1);
  list.ShrinkToFit();
  EXPECT_EQ(list.size(), 2u);
  std::uint8_t qos = 0;
  ASSERT_TRUE(list.Get("z", &qos));
  EXPECT_EQ(qos, 1);
  EXPECT_FALSE(list.Set("x/y", 2));
  EXPECT_TRUE(list.Set("x/y", 0));
  EXPECT_THAT(Listed(list), ElementsAre(std::make_pair("x/y", 0), std::make_pair("z", 1)));
}

// The MQTT bounds of a filter's length: the empty string (which a broker refuses as a filter,
// but the list keeps it as any other) and 65,535 bytes, whose length fills both length bytes.
TEST(SubscriptionListTest, FiltersOfZeroAndOfTheMostBytesAreKeptWhole) {
  const std::string longest(65535, 'f');
  const std::string next_to_it = std::string(255, 'g') + "/" + std::string(300, 'h');
  SubscriptionList list;
  EXPECT_TRUE(list.Set("", 1));
  EXPECT_TRUE(list.Set(longest, 2));
  EXPECT_TRUE(list.Set(next_to_it, 0));  // a length with both bytes non-zero
  EXPECT_TRUE(list.Set("after", 1));     // found past the long ones
  EXPECT_EQ(list.size(), 4u);
  std::uint8_t qos = 9;
  ASSERT_TRUE(list.Get("", &qos));
  EXPECT_EQ(qos, 1);
  ASSERT_TRUE(list.Get(longest, &qos));
  EXPECT_EQ(qos, 2);
  ASSERT_TRUE(list.Get("after", &qos));
  EXPECT_EQ(qos, 1);
  EXPECT_FALSE(list.Get(longest.substr(1), &qos));
  std::vector<std::size_t> lengths;
  list.ForEach(
      [&](const SubscriptionList::Entry& entry) { lengths.push_back(entry.filter.size()); });
  EXPECT_THAT(lengths, ElementsAre(0u, 65535u, next_to_it.size(), 5u));
  ASSERT_TRUE(list.Remove(longest, &qos));
  EXPECT_EQ(qos, 2);
  ASSERT_TRUE(list.Remove("", &qos));
  EXPECT_THAT(Listed(list), ElementsAre(std::make_pair(next_to_it, 0), std::make_pair("after", 1)));
}

// MQTT strings end at 65,535 bytes; Append cuts a longer one there rather than write a wrong
// length.
TEST(SubscriptionListTest, AppendCutsAFilterLongerThanAnMqttString) {
  SubscriptionList list;
  list.Append(std::string(65536, 'x'), 1);
  list.Append("next", 2);
  std::uint8_t qos = 0;
  ASSERT_TRUE(list.Get(std::string(65535, 'x'), &qos));
  EXPECT_EQ(qos, 1);
  ASSERT_TRUE(list.Get("next", &qos));
  EXPECT_EQ(qos, 2);
}

// A list of these filters with their QoS, set in this order.
SubscriptionList Holding(std::initializer_list<std::pair<const char*, int>> filters) {
  SubscriptionList list;
  for (const auto& [filter, qos] : filters) list.Set(filter, static_cast<std::uint8_t>(qos));
  return list;
}

// What MaxMatchingQos answers for `topic`: the highest QoS of the filters that match it, none
// when none does (and then it sets the QoS to 0).
std::optional<int> MaxQos(const SubscriptionList& list, const std::string& topic) {
  std::uint8_t qos = 9;
  if (list.MaxMatchingQos(topic, &qos)) return qos;
  EXPECT_EQ(qos, 0) << topic;
  return std::nullopt;
}

TEST(SubscriptionListTest, MaxMatchingQosIsTheHighestOfTheMatchingFilters) {
  const SubscriptionList list =
      Holding({{"sensors/+/temp", 0}, {"sensors/#", 1}, {"sensors/kitchen/temp", 2}, {"other", 2}});
  EXPECT_EQ(MaxQos(list, "sensors/kitchen/temp"), 2);
  EXPECT_EQ(MaxQos(list, "sensors/hall/temp"), 1);  // '+' at 0, '#' at 1
  EXPECT_EQ(MaxQos(list, "sensors"), 1);            // '#' also matches its parent level
  EXPECT_EQ(MaxQos(list, "sensor"), std::nullopt);
  EXPECT_EQ(MaxQos(list, "sensors/hall/temp/x"), 1);  // '#' alone
}

TEST(SubscriptionListTest, OneLevelWildcardMatchesExactlyOneLevel) {
  const SubscriptionList list = Holding({{"a/+/c", 1}});
  EXPECT_EQ(MaxQos(list, "a/b/c"), 1);
  EXPECT_EQ(MaxQos(list, "a//c"), 1);  // an empty level is a level
  EXPECT_EQ(MaxQos(list, "a/c"), std::nullopt);
  EXPECT_EQ(MaxQos(list, "a/b/x/c"), std::nullopt);
}

// Topics starting with '$' are not matched by a wildcard in the first level (MQTT 3.1.1
// 4.7.2); a filter that names the '$' level does match them.
TEST(SubscriptionListTest, DollarTopicsAreNotMatchedByAFirstLevelWildcard) {
  SubscriptionList list = Holding({{"#", 2}, {"+/info", 2}});
  EXPECT_EQ(MaxQos(list, "$SYS/info"), std::nullopt);
  EXPECT_EQ(MaxQos(list, "$SYS"), std::nullopt);
  EXPECT_EQ(MaxQos(list, "plain/info"), 2);
  list.Set("$SYS/#", 1);
  EXPECT_EQ(MaxQos(list, "$SYS/info"), 1);
}

TEST(SubscriptionListTest, ASharedSubscriptionMatchesWithoutItsSharePrefix) {
  const SubscriptionList list = Holding({{"$share/workers/jobs/+", 1}});
  EXPECT_EQ(MaxQos(list, "jobs/42"), 1);
  EXPECT_EQ(MaxQos(list, "$share/workers/jobs/42"), std::nullopt);
  // Held under its full text.
  std::uint8_t qos = 0;
  EXPECT_TRUE(list.Get("$share/workers/jobs/+", &qos));
  EXPECT_FALSE(list.Get("jobs/+", &qos));
}

TEST(SubscriptionListTest, ACopyIsIndependent) {
  SubscriptionList list;
  list.Set("a", 1);
  SubscriptionList copy = list;
  copy.Set("b", 2);
  std::uint8_t qos = 0;
  list.Remove("a", &qos);
  EXPECT_TRUE(list.empty());
  EXPECT_THAT(Listed(copy), ElementsAre(std::make_pair("a", 1), std::make_pair("b", 2)));
}

}  // namespace
}  // namespace mqc
