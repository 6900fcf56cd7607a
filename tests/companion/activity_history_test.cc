// SPDX-License-Identifier: BSD-3-Clause
#include "companion/activity_history.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace mqc {
namespace {

using ::testing::ElementsAre;

constexpr std::int64_t kSecond = 1'000'000'000;

ActivityTotals Totals(std::uint64_t connects, std::uint64_t delivered, std::uint64_t open) {
  ActivityTotals totals;
  totals.connects = connects;
  totals.messages_delivered = delivered;
  totals.open_connections = open;
  totals.disconnects[5] = connects / 2;  // KICKED
  return totals;
}

// One figure of every sample kept, oldest first.
template <typename T>
std::vector<T> Column(const ActivityHistory& history, T ActivitySample::*figure) {
  std::vector<T> column;
  for (const ActivitySample& sample : history.Samples()) column.push_back(sample.*figure);
  return column;
}

// The ACL's refusals are differences like the other counts (strict mode's refused SUBSCRIBEs and
// the ACL's in one), whether they are shown follows the broker's word, and the flapping ids are a
// level at the sample's end.
TEST(ActivityHistoryTest, RefusalsAndFlappingClientsOfEachInterval) {
  BrokerCounters counters;
  ActivityHistory history({10 * kSecond, 4});
  history.Sample(1000 * kSecond, ReadActivityTotals(counters, 0, 0));
  counters.acl_denials[static_cast<int>(AclAccess::kPublish)].store(3);
  counters.acl_denials[static_cast<int>(AclAccess::kSubscribe)].store(2);
  counters.subscribes[static_cast<int>(SubscribeStatus::kError)].store(1);
  counters.acl_denials_shown.store(1);
  history.Sample(1010 * kSecond, ReadActivityTotals(counters, 5, 2));
  EXPECT_TRUE(history.acl_denials_shown());
  const std::vector<ActivitySample> samples = history.Samples();
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].publishes_refused, 3u);
  EXPECT_EQ(samples[0].subscribes_refused, 3u);
  EXPECT_EQ(samples[0].flapping_clients, 2u);
  counters.acl_denials_shown.store(0);
  history.Sample(1020 * kSecond, ReadActivityTotals(counters, 5, 0));
  EXPECT_FALSE(history.acl_denials_shown());
  EXPECT_EQ(history.Samples()[1].publishes_refused, 0u);
  EXPECT_EQ(history.Samples()[1].flapping_clients, 0u);
}

TEST(ActivityHistoryTest, OneSampleAtEachIntervalEndWithWhatChangedInIt) {
  ActivityHistory history({10 * kSecond, 4});
  EXPECT_EQ(history.DueInNs(1000 * kSecond), 0);
  history.Sample(1003 * kSecond, Totals(100, 1000, 7));  // the baseline
  EXPECT_TRUE(history.Samples().empty());
  EXPECT_EQ(history.DueInNs(1003 * kSecond), 7 * kSecond);
  history.Sample(1009 * kSecond, Totals(150, 1500, 9));  // not yet at 1010
  EXPECT_TRUE(history.Samples().empty());
  history.Sample(1010 * kSecond, Totals(160, 1600, 10));
  history.Sample(1020 * kSecond + 400'000'000, Totals(164, 1600, 4));
  const std::vector<ActivitySample> samples = history.Samples();
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].end_ns, 1010 * kSecond);
  EXPECT_EQ(samples[0].seconds, 7u);  // from the baseline at 1003
  EXPECT_EQ(samples[0].connects, 60u);
  EXPECT_EQ(samples[0].messages_delivered, 600u);
  EXPECT_EQ(samples[0].open_connections, 10u);
  EXPECT_EQ(samples[0].disconnects[5], 30u);
  EXPECT_EQ(samples[1].seconds, 10u);
  EXPECT_EQ(samples[1].connects, 4u);
  EXPECT_EQ(samples[1].messages_delivered, 0u);
  EXPECT_EQ(samples[1].open_connections, 4u);
}

TEST(ActivityHistoryTest, KeepsTheLastSamplesOldestFirst) {
  ActivityHistory history({kSecond, 3});
  for (int i = 0; i <= 6; ++i) history.Sample(i * kSecond, Totals(10 * i, 0, i));
  EXPECT_THAT(Column(history, &ActivitySample::open_connections), ElementsAre(4u, 5u, 6u));
  EXPECT_THAT(Column(history, &ActivitySample::connects), ElementsAre(10u, 10u, 10u));
}

TEST(ActivityHistoryTest, ASleptIntervalIsOneLongerSampleAndCountersThatWentBackStartAgain) {
  ActivityHistory history({10 * kSecond, 10});
  history.Sample(0, Totals(100, 0, 0));
  history.Sample(35 * kSecond, Totals(130, 0, 0));
  history.Sample(40 * kSecond, Totals(5, 0, 0));  // a new broker's counters
  EXPECT_THAT(Column(history, &ActivitySample::seconds), ElementsAre(35u, 5u));
  EXPECT_THAT(Column(history, &ActivitySample::connects), ElementsAre(30u, 5u));
}

TEST(ActivityHistoryTest, ReadsTheBrokersCounters) {
  BrokerCounters counters;
  counters.connects = 3;
  counters.connects_refused = 2;
  counters.disconnects[1] = 4;
  counters.received_messages = 11;
  counters.delivered_messages = 12;
  counters.subscribes[static_cast<std::size_t>(SubscribeStatus::kError)] = 6;
  const ActivityTotals totals = ReadActivityTotals(counters, 9);
  EXPECT_EQ(totals.open_connections, 9u);
  EXPECT_EQ(totals.connects, 3u);
  EXPECT_EQ(totals.connects_refused, 2u);
  EXPECT_EQ(totals.disconnects[1], 4u);
  EXPECT_EQ(totals.messages_received, 11u);
  EXPECT_EQ(totals.messages_delivered, 12u);
  EXPECT_EQ(totals.subscribes_refused, 6u);
  EXPECT_EQ(ActivityCount(0x1'0000'0000ull), 0xffffffffu);
}

}  // namespace
}  // namespace mqc
