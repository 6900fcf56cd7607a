// SPDX-License-Identifier: BSD-3-Clause
// ConnectSettlement over a real SessionTable: when a CONNECT is announced, refused, a takeover
// or a resume; a kick's held re-checks; a reload's re-checks and revocations.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../support/client_facts_builder.h"
#include "../support/session_table_fixture.h"

namespace mqc {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class ConnectSettlementTest : public SessionTableTest {};

TEST_F(ConnectSettlementTest, AConnectIsAnnouncedOnlyOnceTheNextCallbackShowsItWasAccepted) {
  ClientFacts facts = Facts("sensor-1");
  facts.username = "alice";
  facts.mechanism = AuthMechanism::kPassword;
  connects_.BeginConnect(a_, facts, 1000);
  EXPECT_THAT(sink_.lines, IsEmpty());
  connects_.Settle();
  EXPECT_THAT(sink_.lines, ElementsAre("open 1 sensor-1"));
  const ConnectionEvent& e = sink_.connections.at(0);
  EXPECT_EQ(e.open_time_ns, 1000);
  EXPECT_EQ(e.close_time_ns, 0);
  EXPECT_EQ(e.username, "alice");
  EXPECT_EQ(e.port, 50000);
  EXPECT_EQ(e.local_port, 1883);
  EXPECT_EQ(e.protocol_version, 4);
  EXPECT_EQ(e.keep_alive, 60);
  EXPECT_EQ(e.auth_mechanism, AuthMechanism::kPassword);
  EXPECT_EQ(e.auth_state, AuthState::kSuccess);
  EXPECT_TRUE(table_.IsOpen(a_));
}

// Mosquitto 2.1 confirms each CONNECT it accepts (its CONNECT event), and a client refused in
// enhanced authentication has its id freed before its DISCONNECT would fire, so none does.
TEST_F(ConnectSettlementTest, WithConfirmedConnectsAnUnconfirmedEnhancedConnectWasRefused) {
  connects_.SetConnectsConfirmed(true);
  ClientFacts enhanced = Facts("scram");
  enhanced.mechanism = AuthMechanism::kEnhanced;
  enhanced.auth_method = "SCRAM-SHA-1";
  connects_.BeginConnect(a_, enhanced, 5);
  connects_.Settle();  // another client's event: no CONNECT came
  EXPECT_FALSE(table_.IsOpen(a_));
  ASSERT_THAT(sink_.lines, ElementsAre("refused 1 scram"));
  EXPECT_EQ(sink_.connections.at(0).auth_state, AuthState::kFailure);
  EXPECT_EQ(sink_.connections.at(0).close_reason, CloseReason::kAuthenticationFailed);

  // Confirmed: accepted, whatever the mechanism.
  connects_.BeginConnect(b_, enhanced, 6);
  connects_.Confirm(b_);
  connects_.BeginConnect(c_, Facts("plain"), 7);
  connects_.Confirm(c_);
  EXPECT_TRUE(table_.IsOpen(b_));
  EXPECT_TRUE(table_.IsOpen(c_));
  // A password CONNECT is still settled as accepted by the next event: a refused one gets its
  // DISCONNECT first on 2.1 too.
  Open(a_, Facts("late"), 8);
  EXPECT_TRUE(table_.IsOpen(a_));
}

TEST_F(ConnectSettlementTest, ARefusedConnectIsAClosedConnectionThatNeverOpened) {
  connects_.BeginConnect(a_, Facts("intruder"), 1000);
  connects_.Disconnect(a_, /*has_client_id=*/false, CloseReason::kUnspecified, 2000);
  EXPECT_THAT(sink_.lines, ElementsAre("refused 1 intruder"));
  const ConnectionEvent& e = sink_.connections.at(0);
  EXPECT_EQ(e.auth_state, AuthState::kFailure);
  EXPECT_EQ(e.close_reason, CloseReason::kAuthenticationFailed);
  EXPECT_EQ(e.close_time_ns, 2000);
  EXPECT_EQ(table_.open_count(), 0u);
  connects_.Settle();
  EXPECT_EQ(sink_.lines.size(), 1u);
}

TEST_F(ConnectSettlementTest, AcceptedAndGoneBeforeAnyOtherCallbackOpensThenCloses) {
  connects_.BeginConnect(a_, Facts("quick"), 1000);
  connects_.Disconnect(a_, /*has_client_id=*/true, CloseReason::kConnectionLost, 1500);
  EXPECT_THAT(sink_.lines, ElementsAre("open 1 quick", "close 1 reason 2"));
  EXPECT_EQ(table_.open_count(), 0u);
}

TEST_F(ConnectSettlementTest, TwoConnectsInOneLoopSettleTheFirstAtTheSecond) {
  connects_.BeginConnect(a_, Facts("one"), 1);
  connects_.BeginConnect(b_, Facts("two"), 2);
  connects_.Settle();
  EXPECT_THAT(sink_.lines, ElementsAre("open 1 one", "open 2 two"));
}

TEST_F(ConnectSettlementTest, ATakeoverClosesTheOldConnectionBeforeAnnouncingTheNew) {
  Open(a_, Facts("dup"), 1);
  connects_.BeginConnect(b_, Facts("dup"), 2);
  // Inside the new CONNECT the broker disconnects the old client: the old one is closed before
  // the new one is announced, so no reader ever sees two with one client id.
  connects_.Disconnect(a_, true, CloseReason::kUnspecified, 3);
  EXPECT_EQ(table_.open_count(), 0u);  // the new one is still inside its CONNECT
  EXPECT_TRUE(connects_.IsPending(b_));
  connects_.Settle();
  EXPECT_THAT(sink_.lines, ElementsAre("open 1 dup", "close 1 reason 3", "open 2 dup"));
  EXPECT_TRUE(table_.IsOpen(b_));
  EXPECT_FALSE(table_.IsOpen(a_));
}

// Mosquitto 2.0.12+ (and Debian's 2.0.11) re-checks every subscription of a persistent client
// it kicks as a SUBSCRIBE with QoS 0, right before the client's DISCONNECT, and drops the ones
// denied. Those checks are no SUBSCRIBE: the session keeps its QoS.
struct KickCase {
  const char* name;
  std::vector<std::pair<const char*, int>> subscriptions;
  std::vector<Recheck> rechecks;
  std::vector<std::string> lines;
};

class KickRecheckTest : public SessionTableTest, public ::testing::WithParamInterface<KickCase> {};

TEST_P(KickRecheckTest, AKicksRecheckKeepsTheQosAndDropsWhatIsDenied) {
  const KickCase& c = GetParam();
  Open(a_, Facts("p", /*clean=*/false), 1, c.subscriptions);
  Kick(a_, c.rechecks, 2);
  EXPECT_EQ(sink_.lines, c.lines);
}

INSTANTIATE_TEST_SUITE_P(
    ConnectSettlement, KickRecheckTest,
    ::testing::Values(
        KickCase{"QosZeroRecheckKeepsTheSubscriptionsQos",
                 {{"events/x", 1}, {"events/y", 2}},
                 {{"events/x", /*allowed=*/true}, {"events/y", true}},
                 {"open 1 p", "sub 1 events/x 1", "sub 1 events/y 2", "close 1 reason 5",
                  "offline 2 p", "sub 2 events/x 1", "sub 2 events/y 2"}},
        KickCase{"DeniedRecheckRemovesTheSubscription",
                 {{"events/x", 1}, {"events/y", 1}},
                 {{"events/x", /*allowed=*/false}, {"events/y", true}},
                 {"open 1 p", "sub 1 events/x 1", "sub 1 events/y 1", "unsub 1 events/x 1",
                  "close 1 reason 5", "offline 2 p", "sub 2 events/y 1"}}),
    [](const ::testing::TestParamInfo<KickCase>& param_info) {
      return std::string(param_info.param.name);
    });

// A client that really downgrades a subscription to QoS 0 (or is refused a new QoS) is not
// disconnected next: the next event of any other kind applies the downgrade.
TEST_F(ConnectSettlementTest, ARealDowngradeIsAppliedByTheNextEvent) {
  Open(a_, Facts("p", /*clean=*/false), 1, {{"events/x", 1}, {"events/y", 1}});
  connects_.SettleExceptHeldOf(a_);
  connects_.Subscribe(a_, "events/x", 0);
  connects_.SettleExceptHeldOf(a_);
  connects_.SubscribeDenied(a_, "events/y", 1);
  EXPECT_TRUE(connects_.has_unsettled());
  connects_.Settle();
  EXPECT_FALSE(connects_.has_unsettled());
  connects_.Disconnect(a_, true, CloseReason::kClientDisconnect, 2);
  EXPECT_THAT(sink_.lines, ElementsAre("open 1 p", "sub 1 events/x 1", "sub 1 events/y 1",
                                       "sub 1 events/x 0", "close 1 reason 1", "offline 2 p",
                                       "sub 2 events/x 0", "sub 2 events/y 1"));
}

// 2.1 reports a SUBSCRIBE only after the broker made it (no re-checks reach the plugin).
TEST_F(ConnectSettlementTest, AReportedSubscribeIsNeverHeld) {
  Open(a_, Facts("p", /*clean=*/false), 1, {{"events/x", 1}});
  connects_.Subscribe(a_, "events/x", 0, /*may_be_recheck=*/false);
  EXPECT_FALSE(connects_.has_unsettled());
  EXPECT_THAT(sink_.lines, ElementsAre("open 1 p", "sub 1 events/x 1", "sub 1 events/x 0"));
}

TEST_F(ConnectSettlementTest, AResumedPersistentSessionKeepsItsSubscriptions) {
  Open(a_, Facts("p", /*clean=*/false), 1, {{"events/x", 1}});
  connects_.Disconnect(a_, true, CloseReason::kConnectionLost, 2);
  EXPECT_EQ(table_.offline_count(), 1u);
  connects_.BeginConnect(b_, Facts("p", false), 3);
  connects_.Disconnect(a_, true, CloseReason::kUnspecified,
                       3);  // the broker ends the offline client
  connects_.Settle();
  // Offline in between (listed), gone before the connection that resumes it is announced.
  EXPECT_THAT(sink_.lines,
              ElementsAre("open 1 p", "sub 1 events/x 1", "close 1 reason 2", "offline 2 p",
                          "sub 2 events/x 1", "offline-end 2", "open 3 p", "sub 3 events/x 1"));
  EXPECT_EQ(table_.offline_count(), 0u);
}

TEST_F(ConnectSettlementTest, WithoutTheBrokerResumingTheSessionNothingIsHandedOver) {
  // MQTT 5 with session expiry 0: the broker dropped the session at disconnect.
  Open(a_, Facts("p5", false, 5), 1, {{"events/x", 1}});
  connects_.Disconnect(a_, true, CloseReason::kConnectionLost, 2);
  Open(b_, Facts("p5", false, 5), 3);
  EXPECT_THAT(sink_.lines,
              ElementsAre("open 1 p5", "sub 1 events/x 1", "close 1 reason 2", "offline 2 p5",
                          "sub 2 events/x 1", "offline-end 2", "open 3 p5"));
  EXPECT_EQ(table_.offline_count(), 0u);
}

TEST_F(ConnectSettlementTest, ATakeoverOfAPersistentSessionCarriesItsSubscriptions) {
  Open(a_, Facts("p", false), 1, {{"store/orders/#", 2}});
  connects_.BeginConnect(b_, Facts("p", false), 2);
  connects_.Disconnect(a_, true, CloseReason::kUnspecified, 2);
  connects_.Settle();
  EXPECT_THAT(sink_.lines, ElementsAre("open 1 p", "sub 1 store/orders/# 2", "close 1 reason 3",
                                       "open 2 p", "sub 2 store/orders/# 2"));
}

TEST_F(ConnectSettlementTest, AReloadRecheckingAnOfflineSessionIsNoConnect) {
  table_.RestoreOffline(Restored(), 500);
  Open(a_, Facts("p", /*clean=*/false), 1, {{"events/x", 1}});
  connects_.Disconnect(a_, true, CloseReason::kConnectionLost, 2);
  sink_.lines.clear();
  // At SIGHUP the broker checks every client it holds again, those without a socket too.
  for (const char* id : {"p", "db-v4"}) {
    ClientFacts facts = Facts(id, false);
    facts.has_socket = false;
    connects_.BeginConnect(id == std::string("p") ? a_ : c_, facts, 3);
  }
  connects_.Settle();
  EXPECT_THAT(sink_.lines, IsEmpty());
  EXPECT_EQ(table_.offline_count(), 3u);
  EXPECT_EQ(table_.open_count(), 0u);
}

// A takeover's old client has its interval zeroed by the broker for the hand-over
// (src/handle_connect.c): its subscriptions still pass to the new connection.
TEST_F(ConnectSettlementTest, ATakeoverHandsTheSessionOverWhateverTheIntervalReads) {
  Open(a_, Facts("t", /*clean=*/false, 5), 1, {{"events/x", 1}});
  connects_.BeginConnect(b_, Facts("t", false, 5), 2);
  connects_.Disconnect(a_, true, CloseReason::kUnspecified, 2, -1, SessionExpiry::Interval(0));
  connects_.Settle();
  EXPECT_THAT(sink_.lines, ElementsAre("open 1 t", "sub 1 events/x 1", "close 1 reason 3",
                                       "open 2 t", "sub 2 events/x 1"));
}

// A reload (SIGHUP) re-runs BASIC_AUTH for every client the broker holds (docs/reload.md).
TEST_F(ConnectSettlementTest, AReloadRecheckOfAnOpenClientIsNotAConnect) {
  Open(a_, Facts("x"), 1, {{"events/x", 1}});
  connects_.BeginReload();
  EXPECT_TRUE(connects_.reloading());
  EXPECT_TRUE(connects_.IsRecheck(a_, /*has_socket=*/true));
  connects_.EndReload();
  EXPECT_FALSE(connects_.reloading());
  // Outside a reload too: an open client is never connecting again.
  EXPECT_TRUE(connects_.IsRecheck(a_, true));
  EXPECT_THAT(sink_.lines, ElementsAre("open 1 x", "sub 1 events/x 1"));
  EXPECT_EQ(table_.open_count(), 1u);
  connects_.Disconnect(a_, true, CloseReason::kClientDisconnect, 5);
  EXPECT_THAT(sink_.lines, ElementsAre("open 1 x", "sub 1 events/x 1", "close 1 reason 1"));
}

TEST_F(ConnectSettlementTest, AReloadRecheckOfAnOfflineSessionOpensNothing) {
  Open(a_, Facts("p", /*clean=*/false), 1, {{"events/x", 1}});
  connects_.Disconnect(a_, true, CloseReason::kConnectionLost, 2);
  connects_.BeginReload();
  EXPECT_TRUE(connects_.IsRecheck(a_, /*has_socket=*/false));
  // The broker disconnects an offline session the reload no longer allows: nothing is open,
  // and the session (which the broker keeps) stays listed as offline, announced once.
  connects_.Disconnect(a_, true, CloseReason::kClientDisconnect, 3);
  connects_.EndReload();
  EXPECT_THAT(sink_.lines, ElementsAre("open 1 p", "sub 1 events/x 1", "close 1 reason 2",
                                       "offline 2 p", "sub 2 events/x 1"));
  EXPECT_EQ(table_.open_count(), 0u);
}

TEST_F(ConnectSettlementTest, ANewClientWithASocketIsAConnectEvenDuringAReload) {
  connects_.BeginReload();
  EXPECT_FALSE(connects_.IsRecheck(a_, /*has_socket=*/true));
  connects_.EndReload();
}

TEST_F(ConnectSettlementTest, ARecheckSettlesAPendingConnect) {
  Open(a_, Facts("x"), 1);
  connects_.BeginConnect(b_, Facts("y"), 2);
  EXPECT_TRUE(connects_.IsRecheck(a_, true));
  EXPECT_THAT(sink_.lines, ElementsAre("open 1 x", "open 2 y"));
}

// An MQTT 5 re-authentication (AUTH 0x19) is EXT_AUTH_START again for a client the broker holds:
// open, or with its CONNECT still pending. Neither is a new connection.
TEST_F(ConnectSettlementTest, AReauthenticationIsARecheckOpenOrPending) {
  connects_.BeginConnect(a_, Facts("x"), 1);
  EXPECT_TRUE(connects_.IsRecheck(a_, /*has_socket=*/true));
  EXPECT_TRUE(connects_.IsPending(a_));  // still its own CONNECT, not settled by it
  connects_.Settle();
  EXPECT_TRUE(connects_.IsRecheck(a_, true));
  EXPECT_THAT(sink_.lines, ElementsAre("open 1 x"));
  EXPECT_EQ(table_.open_count(), 1u);
}

TEST_F(ConnectSettlementTest, AClientClosedDuringAReloadIsRevokedAndOnlyThen) {
  connects_.BeginConnect(a_, Facts("x"), 1);
  connects_.BeginConnect(b_, Facts("y"), 1);
  connects_.BeginConnect(c_, Facts("z"), 1);
  connects_.BeginReload();  // settles y
  EXPECT_TRUE(connects_.IsRecheck(a_, true));
  connects_.Disconnect(a_, true, CloseReason::kClientDisconnect, 2);  // what the broker state says
  connects_.EndReload();
  connects_.Disconnect(b_, true, CloseReason::kClientDisconnect, 3);
  connects_.Disconnect(c_, true, CloseReason::kConnectionLost, 3);
  EXPECT_THAT(sink_.lines, ElementsAre("open 1 x", "open 2 y", "open 3 z", "close 1 reason 7",
                                       "close 2 reason 1", "close 3 reason 2"));
}

TEST(ConnectSettlementRevokeTest, ARevokedConnectionIsCountedUnderItsOwnReason) {
  RecordingSink sink;
  BrokerCounters counters;
  SessionTable table(&sink, 1, StatsSlots{}, &counters);
  ConnectSettlement connects(&table);
  int a = 0;
  connects.BeginConnect(&a, Facts("a"), 1);
  connects.BeginReload();
  EXPECT_TRUE(connects.IsRecheck(&a, true));
  connects.Disconnect(&a, true, CloseReason::kClientDisconnect, 2);
  connects.EndReload();
  EXPECT_EQ(counters.connects.load(), 1u);
  EXPECT_EQ(counters.disconnects[static_cast<int>(CloseReason::kAccessRevoked)].load(), 1u);
  EXPECT_EQ(counters.disconnects[static_cast<int>(CloseReason::kClientDisconnect)].load(), 0u);
  EXPECT_EQ(table.open_count(), 0u);
}

}  // namespace
}  // namespace mqc
