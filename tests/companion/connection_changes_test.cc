// SPDX-License-Identifier: BSD-3-Clause
#include "companion/connection_changes.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
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

// What a change showed when it was published, to compare with what a reader reads later.
struct Seen {
  std::uint64_t sequence = 0;
  ChangeKind kind = ChangeKind::kUnspecified;
  std::string filter;
  bool has_before = false;
  bool has_after = false;
  // Client id, uid, state, seq, bridge role, then each subscription with its QoS and channel.
  std::vector<std::string> before;
  std::vector<std::string> after;
};

std::vector<std::string> Describe(const ConnectionPtr& connection) {
  if (!connection) return {};
  std::vector<std::string> out{connection->client_id, connection->uid,
                               std::to_string(static_cast<int>(connection->state)),
                               std::to_string(connection->seq),
                               std::to_string(static_cast<int>(connection->bridge))};
  for (const Subscription& s : connection->subscriptions) {
    out.push_back(s.filter + " " + std::to_string(s.qos) + " " + s.mapping.channel);
  }
  return out;
}

Seen SeenOf(const ConnectionChange& change) {
  return {change.sequence,         change.kind,           change.subscription.filter,
          change.before != nullptr, change.after != nullptr, Describe(change.before),
          Describe(change.after)};
}

// The registry's changes as above, and what each showed when it was published.
class KeptVersionsTest : public RegistryChangesTest {
 protected:
  KeptVersionsTest() {
    changes_.SetListener([this](const ConnectionChange& change) {
      published_.push_back(SeenOf(change));
      for (const ConnectionPtr& version : {change.before, change.after}) {
        if (version) versions_.push_back(version);
      }
    });
  }
  void Open(std::uint64_t seq) {
    ConnectionEvent open;
    open.seq = seq;
    open.client_id = "c" + std::to_string(seq);
    open.uid[0] = static_cast<std::uint8_t>(seq);
    Apply(EventType::kConnection, open);
  }
  // Every version some change was published with that is still alive.
  std::size_t AliveVersions() const {
    std::size_t alive = 0;
    for (const auto& version : versions_) alive += version.expired() ? 0 : 1;
    return alive;
  }
  // Reads every kept change, `max` at a time, and compares it with what was published.
  void ExpectEveryChangeAsPublished(std::size_t max) {
    std::vector<ConnectionChangePtr> out;
    std::uint64_t after = published_.front().sequence - 1;
    std::size_t index = 0;
    while (changes_.ReadAfter(after, max, &out) == ConnectionChanges::Read::kChanges) {
      for (const ConnectionChangePtr& change : out) {
        ASSERT_LT(index, published_.size());
        const Seen& seen = published_[index++];
        const Seen read = SeenOf(*change);
        EXPECT_EQ(read.sequence, seen.sequence);
        EXPECT_EQ(read.kind, seen.kind) << seen.sequence;
        EXPECT_EQ(read.filter, seen.filter) << seen.sequence;
        EXPECT_EQ(read.has_before, seen.has_before) << seen.sequence;
        EXPECT_EQ(read.has_after, seen.has_after) << seen.sequence;
        EXPECT_EQ(read.before, seen.before) << seen.sequence;
        EXPECT_EQ(read.after, seen.after) << seen.sequence;
      }
      after = out.back()->sequence;
    }
    EXPECT_EQ(index, published_.size());
  }

  std::vector<Seen> published_;
  std::vector<std::weak_ptr<const Connection>> versions_;
};

// A connection that opens and subscribes twice leaves three versions; the history keeps only
// the current one, and a reader still reads each change as it was published.
TEST_F(KeptVersionsTest, ARunOfSubscriptionsKeepsOnlyItsNewestVersion) {
  for (std::uint64_t seq = 1; seq <= 30; ++seq) {
    Open(seq);
    Apply(EventType::kSubscribe, SubscriptionEvent{seq, 0, "events/" + std::to_string(seq)});
    Apply(EventType::kSubscribe, SubscriptionEvent{seq, 1, "queues/q" + std::to_string(seq)});
  }
  EXPECT_EQ(published_.size(), 90u);
  EXPECT_EQ(AliveVersions(), 30u);  // was 90: every version the history had
  ExpectEveryChangeAsPublished(1);
  ExpectEveryChangeAsPublished(7);
  ExpectEveryChangeAsPublished(1000);
}

// Runs longer than the steps a read may take, interleaved connections, a QoS changed, an
// unsubscription, a bridge role and a close between them: each change reads as published.
TEST_F(KeptVersionsTest, EveryOtherChangeReadsAsPublished) {
  Open(1);
  Open(2);
  for (int i = 0; i < 30; ++i) {
    Apply(EventType::kSubscribe, SubscriptionEvent{1, 0, "a/" + std::to_string(i)});
    if (i % 3 == 0) Apply(EventType::kSubscribe, SubscriptionEvent{2, 0, "b/" + std::to_string(i)});
    if (i == 10) Apply(EventType::kSubscribe, SubscriptionEvent{1, 2, "a/3"});  // its QoS
    if (i == 12) Apply(EventType::kUnsubscribe, SubscriptionEvent{1, 0, "a/5"});
    if (i == 20) Apply(EventType::kBridge, BridgeEvent{2, BridgeRole::kIncoming});
  }
  Apply(EventType::kClose, CloseEvent{2, 20, CloseReason::kClientDisconnect, {}});
  Open(3);
  Apply(EventType::kSubscribe, SubscriptionEvent{3, 0, "c"});
  EXPECT_LT(AliveVersions(), published_.size() / 3);  // each change's own, without the cut
  ExpectEveryChangeAsPublished(1);
  ExpectEveryChangeAsPublished(5);
  ExpectEveryChangeAsPublished(1000);
}

// The oldest changes go while the newer ones of the same run stay: those read as published.
TEST(ConnectionChangesTest, ARunCutByTheHistoryBoundReadsAsPublished) {
  ConnectionChanges changes({4, 1000});
  std::vector<Seen> published;
  changes.SetListener([&published](const ConnectionChange& change) {
    published.push_back(SeenOf(change));
  });
  ConnectionRegistryOptions options;
  options.changes = &changes;
  ConnectionRegistry registry(options);
  std::string bytes;
  ConnectionEvent open;
  open.seq = 1;
  open.client_id = "c";
  Encode(open, &bytes);
  ASSERT_TRUE(ApplyEventRecord(&registry, EventType::kConnection, bytes, 10));
  for (int i = 0; i < 10; ++i) {
    Encode(SubscriptionEvent{1, 0, "t/" + std::to_string(i)}, &bytes);
    ASSERT_TRUE(ApplyEventRecord(&registry, EventType::kSubscribe, bytes, 10));
  }
  std::vector<ConnectionChangePtr> out;
  ASSERT_EQ(changes.ReadAfter(1007, 10, &out), ConnectionChanges::Read::kChanges);
  ASSERT_EQ(out.size(), 4u);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const Seen read = SeenOf(*out[i]);
    const Seen& seen = published[7 + i];
    EXPECT_EQ(read.sequence, seen.sequence);
    EXPECT_EQ(read.before, seen.before);
    EXPECT_EQ(read.after, seen.after);
  }
}

}  // namespace
}  // namespace mqc
