// SPDX-License-Identifier: BSD-3-Clause
// ResyncWriter over a real SessionTable: the full state, whole records, paged over calls.
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

class ResyncWriterTest : public SessionTableTest {};

TEST_F(ResyncWriterTest, FullStateListsOfflineSessionsWithTheirSubscriptions) {
  table_.RestoreOffline(Restored(), 500);
  Open(a_, Facts("p", /*clean=*/false), 1, {{"store/s", 1}});
  connects_.Disconnect(a_, true, CloseReason::kConnectionLost, 2);
  sink_.lines.clear();
  ASSERT_TRUE(resync_.Begin(9));
  ASSERT_TRUE(resync_.Continue());
  std::set<std::string> middle(sink_.lines.begin() + 1, sink_.lines.end() - 1);
  EXPECT_EQ(middle,
            (std::set<std::string>{"offline 1 db-v4", "sub 1 events/a/# 1", "sub 1 queues/jobs 2",
                                   "offline 2 db-v5", "sub 2 commands/door 0", "offline 4 p",
                                   "sub 4 store/s 1"}));
}

TEST_F(ResyncWriterTest, FullStateListsEveryOpenConnectionWithItsSubscriptions) {
  connects_.BeginConnect(a_, Facts("a"), 1);
  connects_.Settle();
  connects_.Subscribe(a_, "events/1", 1);
  connects_.BeginConnect(b_, Facts("b"), 2);
  connects_.Settle();
  connects_.BeginConnect(c_, Facts("c"), 3);  // still pending: announced when settled
  sink_.lines.clear();
  ASSERT_TRUE(resync_.Begin(7));
  ASSERT_TRUE(resync_.Continue());
  std::set<std::string> middle(sink_.lines.begin() + 1, sink_.lines.end() - 1);
  EXPECT_EQ(sink_.lines.front(), "begin 7");
  EXPECT_EQ(sink_.lines.back(), "end 7");
  EXPECT_EQ(middle, (std::set<std::string>{"open 1 a", "sub 1 events/1 1", "open 2 b"}));
}

// An open connection keeps its strings and subscriptions packed: a resync gives back every
// field as announced, and the subscriptions left after removing one in the middle, long
// filters included.
TEST_F(ResyncWriterTest, FullStateGivesBackEveryFieldAndSubscriptionOfAnOpenConnection) {
  ClientFacts facts = Facts("client-é");
  facts.username = "user";
  facts.ip_address = "::1";
  facts.auth_method = "SCRAM-SHA-1";
  facts.peer_certificate_subject = "CN=device";
  facts.keep_alive = 30;
  facts.port = 40000;
  facts.local_port = 1883;
  facts.mechanism = AuthMechanism::kEnhanced;
  facts.proxied = true;
  facts.proxy_ip = "10.0.0.2";
  facts.proxy_port = 41000;
  connects_.BeginConnect(a_, facts, 5);
  connects_.Settle();
  const std::string long_filter = "events/" + std::string(300, 'x');
  connects_.Subscribe(a_, "events/first", 0);
  connects_.Subscribe(a_, "events/middle", 1);
  connects_.Subscribe(a_, long_filter, 2);
  connects_.Subscribe(a_, "", 1);
  table_.Unsubscribe(a_, "events/middle");
  connects_.Subscribe(a_, long_filter, 1);
  ASSERT_EQ(sink_.connections.size(), 1u);
  const ConnectionEvent announced = sink_.connections[0];
  sink_.lines.clear();
  ASSERT_TRUE(resync_.Begin(9));
  ASSERT_TRUE(resync_.Continue());
  ASSERT_EQ(sink_.connections.size(), 2u);
  const ConnectionEvent& again = sink_.connections[1];
  EXPECT_EQ(again.seq, announced.seq);
  EXPECT_EQ(again.uid, announced.uid);
  EXPECT_EQ(again.open_time_ns, 5);
  EXPECT_EQ(again.client_id, "client-é");
  EXPECT_EQ(again.username, "user");
  EXPECT_EQ(again.ip_address, "::1");
  EXPECT_EQ(again.auth_method, "SCRAM-SHA-1");
  EXPECT_EQ(again.peer_certificate_subject, "CN=device");
  EXPECT_EQ(again.keep_alive, 30);
  EXPECT_EQ(again.port, 40000);
  EXPECT_EQ(again.local_port, 1883);
  EXPECT_EQ(again.proxy_address, "10.0.0.2");
  EXPECT_EQ(again.proxy_port, 41000);
  EXPECT_EQ(announced.proxy_address, "10.0.0.2");
  EXPECT_EQ(announced.proxy_port, 41000);
  EXPECT_EQ(again.auth_mechanism, AuthMechanism::kEnhanced);
  EXPECT_EQ(again.auth_state, announced.auth_state);
  EXPECT_EQ(again.protocol_version, announced.protocol_version);
  EXPECT_THAT(sink_.lines, ElementsAre("begin 9", "open 1 client-é", "sub 1 events/first 0",
                                       "sub 1 " + long_filter + " 1", "sub 1  1", "end 9"));
}

TEST_F(ResyncWriterTest, FullStateIsSpreadOverCallsWhenTheSinkHasLittleRoom) {
  Open(a_, Facts("a"), 1);
  connects_.Subscribe(a_, "events/1", 1);  // a connection and its subscription go together
  Open(b_, Facts("b"), 2);
  sink_.lines.clear();
  sink_.SetRoom(1);
  ASSERT_TRUE(resync_.Begin(3));
  EXPECT_FALSE(resync_.Continue());  // "a" needs room for two records
  sink_.SetRoom(2);
  EXPECT_FALSE(resync_.Continue());  // "a" and its subscription fit, "b" does not
  connects_.Disconnect(b_, true, CloseReason::kClientDisconnect, 4);  // live events go on
  sink_.SetRoom(-1);
  EXPECT_TRUE(resync_.Continue());
  EXPECT_FALSE(resync_.active());
  EXPECT_EQ(sink_.lines.front(), "begin 3");
  EXPECT_EQ(sink_.lines.back(), "end 3");
  EXPECT_EQ(std::count(sink_.lines.begin(), sink_.lines.end(), "open 1 a"), 1);
}

TEST_F(ResyncWriterTest, FullStateReportsARefusingSink) {
  Open(a_, Facts("a"), 1);
  sink_.lines.clear();
  sink_.RefuseAfter(1);
  ASSERT_TRUE(resync_.Begin(1));
  EXPECT_FALSE(resync_.Continue());
  EXPECT_FALSE(resync_.active());  // abandoned: it starts again with a new generation
}

}  // namespace
}  // namespace mqc
