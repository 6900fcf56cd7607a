// SPDX-License-Identifier: BSD-3-Clause
// SessionTable's records: what opens and closes, which session is kept offline and for how
// long, restored sessions, statistics slots, bridge roles. Connections are opened through
// ConnectSettlement, as the broker's events do (connect_settlement_test.cc has its decisions).
#include "broker/session_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "../support/client_facts_builder.h"
#include "../support/session_table_fixture.h"
#include "../support/stats_slots.h"

namespace mqc {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// The roles learnt when the client layout is verified: each bridge among the open connections
// is announced, then one record says the rest are none; the CONNECT being handled gets its
// role in its own record; a resync carries every role.
TEST_F(SessionTableTest, BridgeRolesResolvedLaterAreAnnouncedAndKeptForAResync) {
  Open(a_, Facts("remote-bridge"), 1000);
  ClientFacts own = Facts("own-bridge");
  own.bridge = BridgeRole::kOutgoing;
  Open(b_, own, 1001);
  Open(d_, Facts("unreadable"), 1002);
  connects_.BeginConnect(c_, Facts("pending"), 1003);  // not settled yet
  sink_.lines.clear();
  std::vector<const void*> asked;
  connects_.ResolveBridges([&](const void* client) {
    asked.push_back(client);
    if (client == a_) return BridgeRole::kIncoming;
    return client == d_ || client == c_ ? BridgeRole::kUnknown : BridgeRole::kNone;
  });
  // The rest none first, then the exceptions (the table's order among them).
  ASSERT_EQ(sink_.lines.size(), 3u);
  EXPECT_EQ(sink_.lines[0], "bridge 0 1");
  EXPECT_THAT(std::vector<std::string>(sink_.lines.begin() + 1, sink_.lines.end()),
              ::testing::UnorderedElementsAre("bridge 1 3", "bridge 3 0"));
  // The outgoing one is known already: not asked.
  EXPECT_EQ(std::count(asked.begin(), asked.end(), b_), 0);
  connects_.Settle();
  ASSERT_EQ(sink_.connections.back().client_id, "pending");
  EXPECT_EQ(sink_.connections.back().bridge, BridgeRole::kUnknown);  // unreadable: unknown
  sink_.connections.clear();
  ASSERT_TRUE(resync_.Begin(5));
  ASSERT_TRUE(resync_.Continue());
  std::map<std::string, BridgeRole> roles;
  for (const ConnectionEvent& e : sink_.connections) roles[e.client_id] = e.bridge;
  EXPECT_EQ(roles["remote-bridge"], BridgeRole::kIncoming);
  EXPECT_EQ(roles["own-bridge"], BridgeRole::kOutgoing);
  EXPECT_EQ(roles["pending"], BridgeRole::kUnknown);
  EXPECT_EQ(roles["unreadable"], BridgeRole::kUnknown);
}

TEST_F(SessionTableTest, AnonymousAcceptedConnectionIsUnauthenticated) {
  Open(a_, Facts("anon"), 1);
  EXPECT_EQ(sink_.connections.at(0).auth_state, AuthState::kUnauthenticated);
}

TEST_F(SessionTableTest, AUsernameNothingChecksIsUnauthenticated) {
  ClientFacts facts = Facts("unchecked");
  facts.username = "bob";
  facts.mechanism = AuthMechanism::kPassword;
  facts.credentials_checked = false;  // no password_file, no auth plugin: allow_anonymous decided
  Open(a_, facts, 1);
  EXPECT_EQ(sink_.connections.at(0).auth_mechanism, AuthMechanism::kPassword);
  EXPECT_EQ(sink_.connections.at(0).auth_state, AuthState::kUnauthenticated);
}

TEST_F(SessionTableTest, DropKeepsTheReasonItWasGiven) {
  Open(a_, Facts("x"), 1);
  connects_.Disconnect(a_, true, CloseReason::kClientDisconnect, 5);
  EXPECT_THAT(sink_.lines, ElementsAre("open 1 x", "close 1 reason 1"));
}

TEST_F(SessionTableTest, DisconnectOfAnUnknownClientIsIgnored) {
  connects_.Disconnect(c_, true, CloseReason::kUnspecified, 5);
  connects_.Disconnect(c_, false, CloseReason::kUnspecified, 5);
  EXPECT_THAT(sink_.lines, IsEmpty());
}

TEST_F(SessionTableTest, AReusedClientPointerIsANewConnection) {
  Open(a_, Facts("first"), 1);
  connects_.Disconnect(a_, true, CloseReason::kUnspecified, 2);
  Open(a_, Facts("second"), 3);
  EXPECT_THAT(sink_.lines, ElementsAre("open 1 first", "close 1 reason 0", "open 2 second"));
  EXPECT_NE(sink_.connections[0].uid, sink_.connections[1].uid);
}

TEST_F(SessionTableTest, SubscribeUpdatesQosInsteadOfDuplicatingAndUnsubscribeRemoves) {
  Open(a_, Facts("s"), 1, {{"events/a", 0}, {"events/b", 1}});
  connects_.Subscribe(a_, "events/a", 2);
  connects_.Subscribe(a_, "events/a", 2);  // no change, no event
  table_.Unsubscribe(a_, "never/subscribed");
  table_.Unsubscribe(a_, "events/b");
  connects_.Subscribe(c_, "unknown/client", 0);
  EXPECT_THAT(sink_.lines, ElementsAre("open 1 s", "sub 1 events/a 0", "sub 1 events/b 1",
                                       "sub 1 events/a 2", "unsub 1 events/b 1"));
}

TEST_F(SessionTableTest, ACleanReconnectForgetsTheOfflineSession) {
  Open(a_, Facts("p", false), 1, {{"events/x", 1}});
  connects_.Disconnect(a_, true, CloseReason::kConnectionLost, 2);
  connects_.BeginConnect(b_, Facts("p", /*clean=*/true), 3);
  connects_.Disconnect(a_, true, CloseReason::kUnspecified, 3);
  connects_.Settle();
  EXPECT_THAT(sink_.lines,
              ElementsAre("open 1 p", "sub 1 events/x 1", "close 1 reason 2", "offline 2 p",
                          "sub 2 events/x 1", "offline-end 2", "open 3 p"));
  EXPECT_EQ(table_.offline_count(), 0u);
}

TEST_F(SessionTableTest, ACleanMqtt311SessionIsNotKeptOffline) {
  Open(a_, Facts("c", true, 4), 1, {{"events/x", 1}});
  connects_.Disconnect(a_, true, CloseReason::kClientDisconnect, 2);
  EXPECT_EQ(table_.offline_count(), 0u);
}

TEST_F(SessionTableTest, OfflineSessionsAreBoundedOldestFirst) {
  for (std::size_t i = 0; i < SessionTable::kMaxOfflineSessions + 5; ++i) {
    Open(a_, Facts("id-" + std::to_string(i), false), 1, {{"t", 0}});
    connects_.Disconnect(a_, true, CloseReason::kConnectionLost, 2);
  }
  EXPECT_EQ(table_.offline_count(), SessionTable::kMaxOfflineSessions);
  sink_.lines.clear();
  // id-0 was evicted: no subscription handed over even though the broker resumes it.
  connects_.BeginConnect(b_, Facts("id-0", false), 3);
  connects_.Disconnect(a_, true, CloseReason::kUnspecified, 3);
  connects_.Settle();
  ASSERT_EQ(sink_.lines.size(), 1u);
  EXPECT_THAT(sink_.lines[0], ::testing::StartsWith("open "));
}

TEST_F(SessionTableTest, RestoredSessionsAreListedAsOfflineWithTheirExpiry) {
  table_.RestoreOffline(Restored(), 500);
  EXPECT_THAT(sink_.lines, IsEmpty());  // before the companion: its first resync carries them
  ASSERT_TRUE(resync_.Begin(1));
  ASSERT_TRUE(resync_.Continue());
  std::set<std::string> middle(sink_.lines.begin() + 1, sink_.lines.end() - 1);
  EXPECT_EQ(middle,
            (std::set<std::string>{"offline 1 db-v4", "sub 1 events/a/# 1", "sub 1 queues/jobs 2",
                                   "offline 2 db-v5", "sub 2 commands/door 0"}));
  ASSERT_EQ(sink_.offline.size(), 2u);
  if (sink_.offline[0].client_id != "db-v4") std::swap(sink_.offline[0], sink_.offline[1]);
  EXPECT_EQ(sink_.offline[0].username, "alice");
  EXPECT_EQ(sink_.offline[0].expiry_time_ns, 0);  // never expires
  EXPECT_EQ(sink_.offline[0].since_ns, 500);
  EXPECT_EQ(sink_.offline[0].protocol_version, 0);  // the file does not say
  EXPECT_EQ(sink_.offline[1].expiry_time_ns, std::int64_t{1796093116} * 1000000000);
  EXPECT_EQ(table_.offline_count(), 2u);
}

TEST_F(SessionTableTest, ARestoredSessionIsHandedToTheConnectionThatResumesIt) {
  table_.RestoreOffline(Restored(), 500);
  sink_.lines.clear();
  // The broker's object of the restored session (never seen before) is disconnected inside
  // the CONNECT that resumes it.
  connects_.BeginConnect(a_, Facts("db-v4", /*clean=*/false), 600);
  connects_.Disconnect(c_, true, CloseReason::kUnspecified, 600);
  connects_.Settle();
  EXPECT_THAT(sink_.lines, ElementsAre("offline-end 1", "open 3 db-v4", "sub 3 events/a/# 1",
                                       "sub 3 queues/jobs 2"));
  EXPECT_EQ(table_.offline_count(), 1u);
}

TEST_F(SessionTableTest, ARestoredSessionReconnectingCleanHasNoSubscriptions) {
  table_.RestoreOffline(Restored(), 500);
  sink_.lines.clear();
  connects_.BeginConnect(a_, Facts("db-v5", /*clean=*/true, 5), 600);
  connects_.Disconnect(c_, true, CloseReason::kUnspecified, 600);
  connects_.Settle();
  EXPECT_THAT(sink_.lines, ElementsAre("offline-end 2", "open 3 db-v5"));
}

TEST_F(SessionTableTest, OfflineDeliveriesToARestoredSessionUseItsSubscriptionQos) {
  table_.RestoreOffline(Restored(), 500);
  EXPECT_EQ(table_.OfflineQos(c_, "db-v4", "events/a/1"), 1);
  EXPECT_EQ(table_.OfflineQos(c_, "db-v5", "commands/door"), 0);  // the broker drops it
  EXPECT_EQ(table_.OfflineQos(c_, "unknown", "commands/door"), 2);
}

TEST_F(SessionTableTest, AnMqtt5CleanStartSessionIsKeptForAResumeButNotListed) {
  // Its session expiry interval is invisible: it may or may not outlive the connection.
  Open(a_, Facts("v5c", /*clean=*/true, 5), 1, {{"events/x", 1}});
  connects_.Disconnect(a_, true, CloseReason::kClientDisconnect, 2);
  EXPECT_THAT(sink_.lines, ElementsAre("open 1 v5c", "sub 1 events/x 1", "close 1 reason 1"));
  EXPECT_EQ(table_.offline_count(), 1u);
}

TEST_F(SessionTableTest, PersistentClientExpirationEndsOfflineSessionsWhenTheBrokerDoes) {
  constexpr std::int64_t kSecond = 1000000000;
  table_.SetPersistentClientExpiration(3600);
  table_.RestoreOffline(Restored(), 0);  // Mosquitto 2.0.11 never expires these
  Open(a_, Facts("v4", /*clean=*/false, 4), 0);
  connects_.Disconnect(a_, true, CloseReason::kConnectionLost, 100 * kSecond);
  Open(b_, Facts("v5", /*clean=*/false, 5), 0);
  connects_.Disconnect(b_, true, CloseReason::kConnectionLost, 200 * kSecond);
  Open(c_, Facts("back", /*clean=*/false, 4), 0);
  connects_.Disconnect(c_, true, CloseReason::kConnectionLost, 100 * kSecond);
  ASSERT_EQ(sink_.offline.size(), 3u);
  // An MQTT 3.1.1 session's expiry is exactly the broker's limit; an MQTT 5 one may be sooner.
  EXPECT_EQ(sink_.offline[0].expiry_time_ns, 3700 * kSecond);
  EXPECT_EQ(sink_.offline[1].expiry_time_ns, 0);
  // "back" resumes before its time: nothing of it is left to expire.
  connects_.BeginConnect(a_, Facts("back", false), 150 * kSecond);
  connects_.Disconnect(c_, true, CloseReason::kUnspecified, 150 * kSecond);
  connects_.Settle();
  sink_.lines.clear();
  // The broker drops a session in the first whole second past its expiry time.
  table_.ExpireOffline(3701 * kSecond - 1);
  EXPECT_THAT(sink_.lines, IsEmpty());
  table_.ExpireOffline(3701 * kSecond);
  EXPECT_THAT(sink_.lines, ElementsAre("offline-end 4"));
  table_.ExpireOffline(3801 * kSecond);
  EXPECT_THAT(sink_.lines, ElementsAre("offline-end 4", "offline-end 6"));
  table_.ExpireOffline(std::int64_t{1} << 62);
  EXPECT_EQ(sink_.lines.size(), 2u);
  EXPECT_EQ(table_.offline_count(), 2u);  // the two restored sessions
}

// ---- the session expiry interval the broker tells at the connection's end ----

// src/session_expiry.c: the loop's whole second plus the interval (or the broker's limit when
// shorter); dropped in the first second past it; 0xffffffff without a limit never.
TEST(SessionTableExpiryTest, TheBrokersExpiryTimeIsInWholeSeconds) {
  const auto times = SessionTable::BrokerExpiry(100 * kSecond + 999999999, 3, 0);
  ASSERT_TRUE(times.has_value());
  EXPECT_EQ(times->expiry_time_ns, 103 * kSecond);
  EXPECT_EQ(times->gone_by_ns, 104 * kSecond);
  EXPECT_EQ(SessionTable::BrokerExpiry(100 * kSecond, 3600, 60)->expiry_time_ns, 160 * kSecond);
  EXPECT_EQ(SessionTable::BrokerExpiry(100 * kSecond, 30, 60)->expiry_time_ns, 130 * kSecond);
  EXPECT_FALSE(SessionTable::BrokerExpiry(100 * kSecond, 0xffffffff, 0).has_value());
  EXPECT_EQ(SessionTable::BrokerExpiry(100 * kSecond, 0xffffffff, 60)->expiry_time_ns,
            160 * kSecond);
  // The largest interval, in nanoseconds, stays far from overflowing.
  EXPECT_EQ(SessionTable::BrokerExpiry(2000000000 * kSecond, 0xfffffffe, 0)->gone_by_ns,
            (std::int64_t{2000000000} + 0xfffffffe + 1) * kSecond);
}

// An MQTT 5 clean start false client without a Session Expiry Interval: the broker frees its
// session at the disconnect (src/context.c: context__disconnect), so nothing is listed or kept,
// and its next connection resumes nothing.
TEST_F(SessionTableTest, AnMqtt5SessionWhoseIntervalIsZeroEndsWithItsConnection) {
  Open(a_, Facts("z", /*clean=*/false, 5), 1, {{"events/x", 1}});
  connects_.Disconnect(a_, true, CloseReason::kClientDisconnect, 2, -1, SessionExpiry::Interval(0));
  EXPECT_EQ(table_.offline_count(), 0u);
  Open(b_, Facts("z", false, 5), 3);
  EXPECT_THAT(sink_.lines,
              ElementsAre("open 1 z", "sub 1 events/x 1", "close 1 reason 1", "open 2 z"));
  // 2.1's DISCONNECT event says as much without the layout: the same.
  SessionExpiry ends;
  ends.known = SessionExpiry::Known::kEnds;
  connects_.Subscribe(b_, "events/y", 0);
  connects_.Disconnect(b_, true, CloseReason::kConnectionLost, 4, -1, ends);
  EXPECT_EQ(table_.offline_count(), 0u);
}

// A finite interval: listed with the broker's session_expiry_time, and gone (with its
// subscriptions, which the gauges count) at the first TICK past it.
TEST_F(SessionTableTest, AFiniteIntervalIsListedWithItsTimeAndEndsWhenTheBrokerExpiresIt) {
  Open(a_, Facts("f", /*clean=*/false, 5), 1, {{"events/x", 1}});
  connects_.Disconnect(a_, true, CloseReason::kClientDisconnect, 100 * kSecond + 250000000, -1,
                       SessionExpiry::Interval(3));
  ASSERT_EQ(sink_.offline.size(), 1u);
  EXPECT_EQ(sink_.offline[0].expiry_time_ns, 103 * kSecond);
  EXPECT_EQ(table_.offline_count(), 1u);
  sink_.lines.clear();
  table_.ExpireOffline(104 * kSecond - 1);  // the broker still holds it
  EXPECT_THAT(sink_.lines, IsEmpty());
  table_.ExpireOffline(104 * kSecond);
  EXPECT_THAT(sink_.lines, ElementsAre("offline-end 2"));
  EXPECT_EQ(table_.offline_count(), 0u);
  // A session that resumes in time is not expired afterwards.
  connects_.BeginConnect(b_, Facts("g", false, 5), 200 * kSecond);
  connects_.Settle();
  connects_.Disconnect(b_, true, CloseReason::kClientDisconnect, 200 * kSecond, -1,
                       SessionExpiry::Interval(3));
  connects_.BeginConnect(c_, Facts("g", false, 5), 201 * kSecond);
  connects_.Disconnect(b_, true, CloseReason::kUnspecified, 201 * kSecond);  // the resume
  connects_.Settle();
  sink_.lines.clear();
  table_.ExpireOffline(300 * kSecond);
  EXPECT_THAT(sink_.lines, IsEmpty());
  EXPECT_EQ(table_.open_count(), 1u);
}

// The broker's persistent_client_expiration caps a known interval, and the time shown.
TEST_F(SessionTableTest, PersistentClientExpirationCapsAKnownInterval) {
  table_.SetPersistentClientExpiration(60);
  Open(a_, Facts("long", /*clean=*/false, 5), 1);
  connects_.Disconnect(a_, true, CloseReason::kClientDisconnect, 100 * kSecond, -1,
                       SessionExpiry::Interval(3600));
  Open(b_, Facts("short", false, 5), 1);
  connects_.Disconnect(b_, true, CloseReason::kClientDisconnect, 100 * kSecond, -1,
                       SessionExpiry::Interval(10));
  ASSERT_EQ(sink_.offline.size(), 2u);
  EXPECT_EQ(sink_.offline[0].expiry_time_ns, 160 * kSecond);
  EXPECT_EQ(sink_.offline[1].expiry_time_ns, 110 * kSecond);
  sink_.lines.clear();
  table_.ExpireOffline(111 * kSecond);
  EXPECT_THAT(sink_.lines, ElementsAre("offline-end 4"));
  table_.ExpireOffline(161 * kSecond);
  EXPECT_THAT(sink_.lines, ElementsAre("offline-end 4", "offline-end 2"));
}

// The one offline session `sink` was told of is listed with no expiry time, and no sweep of
// `table` ever ends it.
void ExpectListedWithNoTimeForGood(const RecordingSink& sink, SessionTable* table) {
  ASSERT_EQ(sink.offline.size(), 1u);
  EXPECT_EQ(sink.offline[0].expiry_time_ns, 0);
  table->ExpireOffline(std::int64_t{1} << 62);
  EXPECT_EQ(table->offline_count(), 1u);
}

// Never expiring (0xffffffff) without a limit: listed with no time, never swept.
TEST_F(SessionTableTest, AnIntervalThatNeverExpiresHasNoTime) {
  Open(a_, Facts("n", /*clean=*/false, 5), 1);
  connects_.Disconnect(a_, true, CloseReason::kClientDisconnect, 100 * kSecond, -1,
                       SessionExpiry::Interval(0xffffffff));
  ExpectListedWithNoTimeForGood(sink_, &table_);
}

// An MQTT 5 clean start client with an interval: kept for a resume (not listed), and forgotten
// when the broker expires it.
TEST_F(SessionTableTest, AnUnlistedMqtt5SessionIsForgottenWhenItExpires) {
  Open(a_, Facts("v5c", /*clean=*/true, 5), 1, {{"events/x", 1}});
  connects_.Disconnect(a_, true, CloseReason::kClientDisconnect, 100 * kSecond, -1,
                       SessionExpiry::Interval(5));
  EXPECT_TRUE(sink_.offline.empty());
  EXPECT_EQ(table_.offline_count(), 1u);
  table_.ExpireOffline(106 * kSecond);
  EXPECT_EQ(table_.offline_count(), 0u);
  EXPECT_THAT(sink_.lines, ElementsAre("open 1 v5c", "sub 1 events/x 1", "close 1 reason 1"));
}

// Without the broker's word (2.0 before the layout is verified), or with 2.1's CLIENT_OFFLINE
// alone (above 0, how far unknown): kept and listed as the client asked, with no time.
TEST_F(SessionTableTest, WithoutAKnownIntervalAnMqtt5SessionIsListedWithNoTime) {
  SessionExpiry outlives;
  outlives.known = SessionExpiry::Known::kOutlives;
  for (SessionExpiry expiry : {SessionExpiry{}, outlives}) {
    RecordingSink sink;
    SessionTable table(&sink, 1);
    ConnectSettlement connects(&table);
    connects.BeginConnect(a_, Facts("u", /*clean=*/false, 5), 1);
    connects.Settle();
    connects.Subscribe(a_, "events/x", 1);
    connects.Disconnect(a_, true, CloseReason::kClientDisconnect, 100 * kSecond, -1, expiry);
    ExpectListedWithNoTimeForGood(sink, &table);
  }
}

// ---- following a session of unknown expiry through the broker's client lookup (2.1) ----

// Where the broker can be asked, a session of unknown expiry stays while the broker holds its
// client object under its id, and ends, as an expired one does, once it holds none.
TEST_F(SessionTableTest, ASessionTheBrokerNoLongerHoldsEndsAsExpired) {
  table_.SetUnknownExpiryFollowed(true);
  Open(a_, Facts("u", /*clean=*/false, 5), 1, {{"events/x", 1}});
  connects_.Disconnect(a_, true, CloseReason::kClientDisconnect, 100 * kSecond, -1, Outlives());
  ASSERT_EQ(sink_.offline.size(), 1u);
  EXPECT_EQ(sink_.offline[0].expiry_time_ns, 0);
  EXPECT_EQ(table_.unknown_expiry_count(), 1u);
  std::vector<std::string> asked;
  const void* held = a_;
  const auto held_by = [&](const std::string& id) {
    asked.push_back(id);
    return held;
  };
  table_.EndGoneOffline(4, held_by);
  EXPECT_EQ(asked, std::vector<std::string>{"u"});  // one session: asked once
  EXPECT_EQ(table_.offline_count(), 1u);
  held = nullptr;  // the broker's session_expiry__check took it out of its table
  table_.EndGoneOffline(4, held_by);
  EXPECT_EQ(table_.offline_count(), 0u);
  EXPECT_EQ(table_.unknown_expiry_count(), 0u);
  EXPECT_THAT(sink_.lines, ElementsAre("open 1 u", "sub 1 events/x 1", "close 1 reason 1",
                                       "offline 2 u", "sub 2 events/x 1", "offline-end 2"));
  table_.EndGoneOffline(4, held_by);  // nothing left to ask
  EXPECT_EQ(asked.size(), 2u);
}

// The broker holding another object under the id is a new connection of it: its CONNECT
// resumes the session (Accept), which ends the offline session once, with its subscriptions
// handed over; the lookup leaves it alone.
TEST_F(SessionTableTest, ANewConnectionsObjectIsAResumeNotAnExpiry) {
  table_.SetUnknownExpiryFollowed(true);
  Open(a_, Facts("r", /*clean=*/false, 5), 1, {{"events/x", 1}});
  connects_.Disconnect(a_, true, CloseReason::kClientDisconnect, 100 * kSecond, -1, Outlives());
  connects_.BeginConnect(b_, Facts("r", false, 5), 101 * kSecond);
  table_.EndGoneOffline(4, [&](const std::string&) { return b_; });
  EXPECT_EQ(table_.offline_count(), 1u);
  // Inside the CONNECT the broker disconnects the offline object (2.1: DISCONNECT, taken over).
  connects_.Disconnect(a_, true, CloseReason::kSessionTakenOver, 101 * kSecond, -1,
                       SessionExpiry::Interval(0));
  connects_.Settle();
  table_.EndGoneOffline(4, [&](const std::string&) { return b_; });
  EXPECT_THAT(sink_.lines,
              ElementsAre("open 1 r", "sub 1 events/x 1", "close 1 reason 1", "offline 2 r",
                          "sub 2 events/x 1", "offline-end 2", "open 3 r", "sub 3 events/x 1"));
  EXPECT_EQ(table_.offline_count(), 0u);
}

// Only sessions whose expiry is unknown are followed, and only where the broker can be asked:
// a known interval has its time (ExpireOffline), MQTT 3.1.1's never expires unless
// persistent_client_expiration says, a takeover's session passes on at once.
TEST_F(SessionTableTest, OnlyASessionOfUnknownExpiryIsFollowed) {
  table_.SetUnknownExpiryFollowed(true);
  Open(a_, Facts("known", /*clean=*/false, 5), 1);
  connects_.Disconnect(a_, true, CloseReason::kClientDisconnect, 100 * kSecond, -1,
                       SessionExpiry::Interval(3));
  Open(b_, Facts("v311", /*clean=*/false, 4), 1);
  connects_.Disconnect(b_, true, CloseReason::kClientDisconnect, 100 * kSecond, -1, Outlives());
  EXPECT_EQ(table_.offline_count(), 2u);
  EXPECT_EQ(table_.unknown_expiry_count(), 0u);

  SessionTable unasked(&sink_, 1);  // 2.0: nothing to ask
  ConnectSettlement unasked_connects(&unasked);
  unasked_connects.BeginConnect(c_, Facts("v5", /*clean=*/false, 5), 1);
  unasked_connects.Settle();
  unasked_connects.Disconnect(c_, true, CloseReason::kClientDisconnect, 100 * kSecond, -1,
                              Outlives());
  EXPECT_EQ(unasked.offline_count(), 1u);
  EXPECT_EQ(unasked.unknown_expiry_count(), 0u);
}

TEST(SessionTableStatsTest, SlotsAreAssignedResetAndTheirTotalsTravelWithTheClose) {
  RecordingSink sink;
  TestStatsSlots slots(1);
  SessionTable table(&sink, 1, slots.view());
  ConnectSettlement connects(&table);
  int a = 0;
  int b = 0;
  connects.BeginConnect(&a, Facts("a"), 1);
  connects.Settle();
  ASSERT_EQ(sink.connections.at(0).stats_slot, 0u);
  ASSERT_EQ(table.View(&a).stats, &slots[0]);
  EXPECT_EQ(slots[0].seq.load(), sink.connections.at(0).seq);
  Bump(slots[0].publish_count, 3);
  Bump(slots[0].deliver_bytes, 40);
  // The only slot is taken: a second connection has none, and is still open.
  connects.BeginConnect(&b, Facts("b"), 2);
  connects.Settle();
  EXPECT_EQ(sink.connections.at(1).stats_slot, kNoStatsSlot);
  EXPECT_TRUE(table.View(&b).open);
  EXPECT_EQ(table.View(&b).stats, nullptr);
  // The callbacks' fast paths ask the same as one pointer: null only when not open.
  ASSERT_NE(table.OpenStats(&a), nullptr);
  EXPECT_EQ(*table.OpenStats(&a), &slots[0]);
  ASSERT_NE(table.OpenStats(&b), nullptr);
  EXPECT_EQ(*table.OpenStats(&b), nullptr);
  connects.Disconnect(&a, true, CloseReason::kClientDisconnect, 3);
  EXPECT_FALSE(table.View(&a).open);
  EXPECT_EQ(table.OpenStats(&a), nullptr);
  ASSERT_EQ(sink.closes.size(), 1u);
  EXPECT_EQ(sink.closes[0].totals.publish_count, 3u);
  EXPECT_EQ(sink.closes[0].totals.deliver_bytes, 40u);
  // The close carried the totals; the next connection gets the slot back, reset.
  connects.BeginConnect(&a, Facts("c"), 4);
  connects.Settle();
  EXPECT_EQ(sink.connections.at(2).stats_slot, 0u);
  EXPECT_EQ(slots[0].publish_count.load(), 0u);
  EXPECT_EQ(slots[0].deliver_bytes.load(), 0u);
  EXPECT_EQ(slots[0].seq.load(), sink.connections.at(2).seq);
}

TEST_F(SessionTableTest, UidsAreVersion4UuidsAndUnique) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    connects_.BeginConnect(a_, Facts("u"), i);
    connects_.Disconnect(a_, true, CloseReason::kUnspecified, i);
  }
  const std::regex uuid4("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  for (const auto& e : sink_.connections) {
    const std::string text = FormatUuid(e.uid);
    EXPECT_TRUE(std::regex_match(text, uuid4)) << text;
    seen.insert(text);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

}  // namespace
}  // namespace mqc
