// SPDX-License-Identifier: BSD-3-Clause
#include "broker/offline_sessions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace mqc {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// A session told apart by its event's seq; `gone_by_ns` 0: never expires.
OfflineSession Session(std::uint64_t seq, std::int64_t gone_by_ns = 0) {
  OfflineSession session;
  session.event.seq = seq;
  session.gone_by_ns = gone_by_ns;
  return session;
}

// The ids TakeExpired hands over by `now_ns`, in its order.
std::vector<std::string> Expire(OfflineSessions* sessions, std::int64_t now_ns) {
  std::vector<std::string> ids;
  for (int bound = 0; bound < 1000; ++bound) {
    auto due = sessions->TakeExpired(now_ns);
    if (!due) break;
    ids.push_back(due->first);
  }
  return ids;
}

constexpr std::int64_t kNeverGone = 0;

// A session to add: its client id, its event's seq, and when it expires.
struct Entry {
  const char* id;
  std::uint64_t seq;
  std::int64_t gone_by_ns;
};

// A store of at most `max_sessions` that was given these sessions, in this order.
OfflineSessions Holding(std::size_t max_sessions, std::initializer_list<Entry> entries) {
  OfflineSessions sessions(max_sessions);
  for (const Entry& entry : entries) sessions.Add(entry.id, Session(entry.seq, entry.gone_by_ns));
  return sessions;
}

std::vector<std::string> Ids(const OfflineSessions& sessions) {
  std::vector<std::string> ids;
  sessions.ForEach([&](const std::string& id, const OfflineSession&) { ids.push_back(id); });
  return ids;
}

TEST(OfflineSessionsTest, AddFindAndTake) {
  OfflineSessions sessions(10);
  OfflineSession session = Session(7);
  session.subscriptions.Set("a/#", 1);
  const OfflineSessions::Added added = sessions.Add("x", std::move(session));
  EXPECT_FALSE(added.displaced);
  EXPECT_EQ(added.session.event.seq, 7u);
  EXPECT_EQ(sessions.size(), 1u);
  const OfflineSession* found = sessions.Find("x");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found, &added.session);
  EXPECT_EQ(found->subscriptions.size(), 1u);
  EXPECT_EQ(sessions.Find("y"), nullptr);
  EXPECT_FALSE(sessions.Take("y"));
  std::optional<OfflineSession> taken = sessions.Take("x");
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->event.seq, 7u);
  EXPECT_EQ(taken->subscriptions.size(), 1u);  // handed over whole
  EXPECT_EQ(sessions.size(), 0u);
  EXPECT_EQ(sessions.Find("x"), nullptr);
}

TEST(OfflineSessionsTest, WhenFullTheOldestIsForgottenFirst) {
  OfflineSessions sessions(3);
  EXPECT_FALSE(sessions.Add("a", Session(1)).displaced);
  EXPECT_FALSE(sessions.Add("b", Session(2)).displaced);
  EXPECT_FALSE(sessions.Add("c", Session(3)).displaced);
  const OfflineSessions::Added d = sessions.Add("d", Session(4));
  ASSERT_TRUE(d.displaced);
  EXPECT_EQ(d.displaced->event.seq, 1u);  // a
  const OfflineSessions::Added e = sessions.Add("e", Session(5));
  ASSERT_TRUE(e.displaced);
  EXPECT_EQ(e.displaced->event.seq, 2u);  // b
  EXPECT_EQ(sessions.size(), 3u);
  EXPECT_THAT(Ids(sessions), UnorderedElementsAre("c", "d", "e"));
}

// A replaced session is the youngest again: its old age must be gone from the age order, or a
// later eviction would forget the new one (or look for an id no longer there).
TEST(OfflineSessionsTest, ReplacingMakesTheSessionTheYoungestAndDoesNotGrow) {
  OfflineSessions sessions =
      Holding(3, {{"a", 1, kNeverGone}, {"b", 2, kNeverGone}, {"c", 3, kNeverGone}});
  OfflineSessions::Added added = sessions.Add("a", Session(4));
  ASSERT_TRUE(added.displaced);
  EXPECT_EQ(added.displaced->event.seq, 1u);  // the old session of "a", not an eviction
  EXPECT_EQ(sessions.size(), 3u);
  EXPECT_EQ(sessions.Find("a")->event.seq, 4u);
  // Oldest now: b, then c, then the new a.
  EXPECT_EQ(sessions.Add("d", Session(5)).displaced->event.seq, 2u);
  EXPECT_EQ(sessions.Add("e", Session(6)).displaced->event.seq, 3u);
  EXPECT_EQ(sessions.Add("f", Session(7)).displaced->event.seq, 4u);
  EXPECT_THAT(Ids(sessions), UnorderedElementsAre("d", "e", "f"));
}

TEST(OfflineSessionsTest, ReplacingMovesTheSessionInTheExpiryOrder) {
  OfflineSessions sessions = Holding(10, {{"a", 1, 100}, {"b", 2, 200}});
  sessions.Add("a", Session(3, 300));  // now expires after b
  sessions.Add("b", Session(4));       // now never expires
  EXPECT_THAT(Expire(&sessions, 250), IsEmpty());
  EXPECT_THAT(Expire(&sessions, 300), ElementsAre("a"));
  EXPECT_THAT(Expire(&sessions, 1000000), IsEmpty());
  EXPECT_EQ(sessions.Find("b")->event.seq, 4u);
}

TEST(OfflineSessionsTest, ExpiryIsInTimeOrderAndEqualTimesInTheOrderAdded) {
  OfflineSessions sessions = Holding(10, {{"late", 1, 300},
                                          {"never", 2, kNeverGone},
                                          {"tie-1", 3, 200},
                                          {"early", 4, 100},
                                          {"tie-2", 5, 200},
                                          {"tie-3", 6, 200}});
  EXPECT_THAT(Expire(&sessions, 99), IsEmpty());              // nothing due yet
  EXPECT_THAT(Expire(&sessions, 100), ElementsAre("early"));  // due at its time exactly
  auto due = sessions.TakeExpired(250);
  ASSERT_TRUE(due);
  EXPECT_EQ(due->first, "tie-1");
  EXPECT_EQ(due->second.event.seq, 3u);
  EXPECT_THAT(Expire(&sessions, 250), ElementsAre("tie-2", "tie-3"));
  EXPECT_THAT(Expire(&sessions, 1000), ElementsAre("late"));
  EXPECT_THAT(Ids(sessions), ElementsAre("never"));
}

// Taking a session out leaves no trace in either order: it neither expires nor is evicted
// later, and a new session of its id starts afresh.
TEST(OfflineSessionsTest, TakeRemovesTheSessionFromAllThreeIndexes) {
  OfflineSessions sessions = Holding(3, {{"a", 1, 100}, {"b", 2, 100}, {"c", 3, 100}});
  ASSERT_TRUE(sessions.Take("a"));
  EXPECT_EQ(sessions.size(), 2u);
  EXPECT_FALSE(sessions.Add("d", Session(4)).displaced);              // room again: nothing evicted
  EXPECT_EQ(sessions.Add("e", Session(5)).displaced->event.seq, 2u);  // b, not the gone a
  EXPECT_THAT(Expire(&sessions, 100), ElementsAre("c"));
  sessions.Add("a", Session(6));  // the id again, without an expiry this time
  EXPECT_THAT(Expire(&sessions, 1000), IsEmpty());
  EXPECT_EQ(sessions.Find("a")->event.seq, 6u);
}

// An expired session leaves the age order too: it is not evicted a second time.
TEST(OfflineSessionsTest, AnExpiredSessionLeavesTheAgeOrder) {
  OfflineSessions sessions = Holding(2, {{"a", 1, 100}, {"b", 2, kNeverGone}});
  EXPECT_THAT(Expire(&sessions, 100), ElementsAre("a"));
  EXPECT_FALSE(sessions.Add("c", Session(3)).displaced);
  EXPECT_EQ(sessions.Add("d", Session(4)).displaced->event.seq, 2u);
}

// A session whose expiry the broker did not tell.
OfflineSession Unknown(std::uint64_t seq) {
  OfflineSession session = Session(seq);
  session.expiry_unknown = true;
  return session;
}

// The ids one SweepUnknownExpiry call of `count` visits, in its order; none is gone.
std::vector<std::string> Visit(OfflineSessions* sessions, std::size_t count) {
  std::vector<std::string> visited;
  std::vector<std::string> gone;
  sessions->SweepUnknownExpiry(
      count,
      [&](const std::string& id, const OfflineSession&) {
        visited.push_back(id);
        return false;
      },
      &gone);
  EXPECT_THAT(gone, IsEmpty());
  return visited;
}

// Only the sessions of unknown expiry are visited, a bounded number a call, in the order they
// were added and round again, each at most once a call; a session leaving or one added does
// not make the walk skip or repeat the others.
TEST(OfflineSessionsTest, TheSweepOverUnknownExpiryGoesRoundInBoundedSteps) {
  OfflineSessions sessions(10);
  sessions.Add("a", Unknown(1));
  sessions.Add("known", Session(2, 50));
  sessions.Add("b", Unknown(3));
  sessions.Add("c", Unknown(4));
  EXPECT_EQ(sessions.unknown_expiry_count(), 3u);
  EXPECT_THAT(Visit(&sessions, 2), ElementsAre("a", "b"));
  EXPECT_THAT(Visit(&sessions, 2), ElementsAre("c", "a"));
  EXPECT_THAT(Visit(&sessions, 10), ElementsAre("b", "c", "a"));  // each once a call
  ASSERT_TRUE(sessions.Take("b"));
  sessions.Add("d", Unknown(5));
  EXPECT_EQ(sessions.unknown_expiry_count(), 3u);
  EXPECT_THAT(Visit(&sessions, 1), ElementsAre("c"));
  EXPECT_THAT(Visit(&sessions, 3), ElementsAre("d", "a", "c"));
  EXPECT_THAT(Visit(&sessions, 0), IsEmpty());
}

// What `gone` says is handed back by id, and nothing leaves during the walk; replacing,
// taking, expiring or evicting a session takes it out of the walk.
TEST(OfflineSessionsTest, TheSweepHandsBackTheGoneAndEveryWayOutLeavesIt) {
  OfflineSessions sessions(3);
  sessions.Add("a", Unknown(1));
  sessions.Add("b", Unknown(2));
  std::vector<std::string> gone;
  sessions.SweepUnknownExpiry(
      5,
      [](const std::string& id, const OfflineSession& session) {
        return id == "b" && session.event.seq == 2;
      },
      &gone);
  EXPECT_THAT(gone, ElementsAre("b"));
  EXPECT_EQ(sessions.size(), 2u);
  sessions.Add("b", Session(3));  // replaced by one of known expiry
  EXPECT_EQ(sessions.unknown_expiry_count(), 1u);
  OfflineSession expiring = Unknown(4);
  expiring.gone_by_ns = 10;
  sessions.Add("c", std::move(expiring));
  EXPECT_EQ(sessions.unknown_expiry_count(), 2u);
  EXPECT_THAT(Expire(&sessions, 10), ElementsAre("c"));
  EXPECT_EQ(sessions.unknown_expiry_count(), 1u);
  sessions.Add("d", Session(5));
  sessions.Add("e", Session(6));  // full: "a", the oldest, is forgotten
  EXPECT_EQ(sessions.Find("a"), nullptr);
  EXPECT_EQ(sessions.unknown_expiry_count(), 0u);
  EXPECT_THAT(Visit(&sessions, 5), IsEmpty());
}

TEST(OfflineSessionsTest, TheDefaultBoundIsTheSessionTables) {
  EXPECT_EQ(OfflineSessions().max_sessions(), OfflineSessions::kDefaultMaxSessions);
  EXPECT_EQ(OfflineSessions(0).max_sessions(), 1u);  // never a bound that keeps nothing
}

}  // namespace
}  // namespace mqc
