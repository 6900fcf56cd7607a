// SPDX-License-Identifier: BSD-3-Clause
#include "companion/connection_changes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "companion/companion_link.h"
#include "companion/connection_registry.h"

namespace mqc {
namespace {

ConnectionChange Change(ChangeKind kind) {
  ConnectionChange change;
  change.kind = kind;
  return change;
}

TEST(ConnectionChangesTest, NumbersChangesFromTheStartSequence) {
  ConnectionChanges changes({4, 100});
  EXPECT_EQ(changes.last_sequence(), 100u);
  std::vector<ConnectionChangePtr> out;
  EXPECT_EQ(changes.ReadAfter(100, 10, &out), ConnectionChanges::Read::kNothing);
  changes.Publish(Change(ChangeKind::kOpened));
  changes.Publish(Change(ChangeKind::kClosed));
  ASSERT_EQ(changes.ReadAfter(100, 10, &out), ConnectionChanges::Read::kChanges);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]->sequence, 101u);
  EXPECT_EQ(out[1]->sequence, 102u);
  EXPECT_EQ(out[1]->kind, ChangeKind::kClosed);
  ASSERT_EQ(changes.ReadAfter(101, 10, &out), ConnectionChanges::Read::kChanges);
  EXPECT_EQ(out.size(), 1u);
  ASSERT_EQ(changes.ReadAfter(100, 1, &out), ConnectionChanges::Read::kChanges);
  EXPECT_EQ(out.size(), 1u);
}

TEST(ConnectionChangesTest, TooOldOrFutureSequencesAreGaps) {
  ConnectionChanges changes({3, 100});
  for (int i = 0; i < 5; ++i) changes.Publish(Change(ChangeKind::kOpened));  // 101..105
  std::vector<ConnectionChangePtr> out;
  EXPECT_EQ(changes.ReadAfter(101, 10, &out), ConnectionChanges::Read::kGap);  // 102 dropped
  ASSERT_EQ(changes.ReadAfter(102, 10, &out), ConnectionChanges::Read::kChanges);
  EXPECT_EQ(out.front()->sequence, 103u);
  EXPECT_EQ(changes.ReadAfter(106, 10, &out), ConnectionChanges::Read::kGap);
  EXPECT_EQ(changes.ReadAfter(7, 10, &out), ConnectionChanges::Read::kGap);  // another companion
}

TEST(ConnectionChangesTest, AResetEndsWhatCanBeReadAcrossIt) {
  ConnectionChanges changes({10, 100});
  changes.Publish(Change(ChangeKind::kOpened));  // 101
  changes.Publish(Change(ChangeKind::kReset));   // 102
  changes.Publish(Change(ChangeKind::kOpened));  // 103
  std::vector<ConnectionChangePtr> out;
  ASSERT_EQ(changes.ReadAfter(100, 10, &out), ConnectionChanges::Read::kChanges);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(changes.ReadAfter(101, 10, &out), ConnectionChanges::Read::kGap);
  ASSERT_EQ(changes.ReadAfter(102, 10, &out), ConnectionChanges::Read::kChanges);
  EXPECT_EQ(out.front()->sequence, 103u);
}

TEST(ConnectionChangesTest, WakesWaitersOnlyAfterNewChanges) {
  ConnectionChanges changes({10, 100});
  int woken = 0;
  const std::uint64_t id = changes.AddWaiter([&woken] { ++woken; });
  changes.WakeWaiters();
  EXPECT_EQ(woken, 0);
  changes.Publish(Change(ChangeKind::kOpened));
  changes.WakeWaiters();
  changes.WakeWaiters();
  EXPECT_EQ(woken, 1);
  changes.RemoveWaiter(id);
  changes.Publish(Change(ChangeKind::kOpened));
  changes.WakeWaiters();
  EXPECT_EQ(woken, 1);
}

// The registry publishes what each event did to its current view, and nothing while a resync
// is staged (its end is one reset).
class RegistryChangesTest : public ::testing::Test {
 protected:
  template <typename Event>
  void Apply(EventType type, const Event& event) {
    std::string bytes;
    Encode(event, &bytes);
    ASSERT_TRUE(ApplyEventRecord(&registry_, type, bytes, 10));
  }
  std::vector<ChangeKind> Kinds(std::uint64_t after) {
    std::vector<ConnectionChangePtr> out;
    std::vector<ChangeKind> kinds;
    while (changes_.ReadAfter(after, 100, &out) == ConnectionChanges::Read::kChanges) {
      for (const auto& change : out) kinds.push_back(change->kind);
      after = out.back()->sequence;
    }
    if (after != changes_.last_sequence()) kinds.push_back(ChangeKind::kReset);
    return kinds;
  }

  ConnectionChanges changes_{{100, 1000}};
  ConnectionRegistryOptions options_ = [this] {
    ConnectionRegistryOptions options;
    options.changes = &changes_;
    return options;
  }();
  ConnectionRegistry registry_{options_};
};

TEST_F(RegistryChangesTest, EachKindOfEventIsOneChange) {
  ConnectionEvent open;
  open.seq = 1;
  open.client_id = "a";
  Apply(EventType::kConnection, open);
  Apply(EventType::kSubscribe, SubscriptionEvent{1, 1, "t/#"});
  Apply(EventType::kUnsubscribe, SubscriptionEvent{1, 0, "t/#"});
  Apply(EventType::kClose, CloseEvent{1, 20, CloseReason::kClientDisconnect, {}});
  OfflineSessionEvent offline;
  offline.seq = 2;
  offline.client_id = "a";
  Apply(EventType::kOfflineSession, offline);
  Apply(EventType::kOfflineSessionEnd, OfflineSessionEndEvent{2});
  EXPECT_EQ(Kinds(1000), (std::vector<ChangeKind>{ChangeKind::kOpened, ChangeKind::kSubscribed,
                                                  ChangeKind::kUnsubscribed, ChangeKind::kClosed,
                                                  ChangeKind::kWentOffline, ChangeKind::kExpired}));
  std::vector<ConnectionChangePtr> out;
  ASSERT_EQ(changes_.ReadAfter(1001, 1, &out), ConnectionChanges::Read::kChanges);
  EXPECT_EQ(out[0]->subscription.filter, "t/#");
  EXPECT_TRUE(out[0]->before->subscriptions.empty());
  EXPECT_EQ(out[0]->after->subscriptions.size(), 1u);
  ASSERT_EQ(changes_.ReadAfter(1003, 1, &out), ConnectionChanges::Read::kChanges);
  EXPECT_EQ(out[0]->after->state, ConnectionState::kClosed);
  EXPECT_EQ(out[0]->after->close_reason, CloseReason::kClientDisconnect);
  EXPECT_EQ(out[0]->before->state, ConnectionState::kOpen);
}

TEST_F(RegistryChangesTest, AResyncIsOneResetAndTheLiveSnapshotCarriesItsSequence) {
  Apply(EventType::kResyncBegin, ResyncEvent{1});
  ConnectionEvent open;
  open.seq = 5;
  open.client_id = "staged";
  Apply(EventType::kConnection, open);
  Apply(EventType::kResyncEnd, ResyncEvent{1});
  EXPECT_EQ(changes_.last_sequence(), 1001u);
  std::vector<ConnectionChangePtr> out;
  EXPECT_EQ(changes_.ReadAfter(1000, 10, &out), ConnectionChanges::Read::kGap);
  std::uint64_t as_of = 0;
  const ConnectionList live = registry_.LiveSnapshot(&as_of);
  EXPECT_EQ(as_of, 1001u);
  ASSERT_EQ(live->size(), 1u);
  EXPECT_EQ((*live)[0]->client_id, "staged");
}

}  // namespace
}  // namespace mqc
