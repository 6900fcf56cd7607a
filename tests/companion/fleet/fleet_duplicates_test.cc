// SPDX-License-Identifier: BSD-3-Clause
// The duplicate_client_id filter of a fleet query: which ids count as duplicated, which filters
// require the field, and the page walk over candidates whose set changes between pages.
#include "companion/fleet/fleet_duplicates.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../support/connection_builder.h"
#include "companion/query/connection_fields.h"
#include "companion/query/connection_page_token.h"

namespace mqc {
namespace {

using ::testing::ElementsAre;

TEST(DuplicatedIdsTest, AnIdCountsOncePerBrokerAndNeedsTwoBrokers) {
  EXPECT_THAT(DuplicatedIds({{"a", "b", "b"}, {"c", "a"}, {"d", "c"}}), ElementsAre("a", "c"));
  EXPECT_THAT(DuplicatedIds({{"a", "a"}, {"b"}}), ElementsAre());
  EXPECT_THAT(DuplicatedIds({}), ElementsAre());
}

bool Requires(const std::string& text) {
  ConnectionFilter filter;
  EXPECT_TRUE(ConnectionFilter::Parse(text, &filter).ok()) << text;
  return filter.RequiresTrue(FindField("duplicate_client_id"));
}

TEST(RequiresTrueTest, OnlyFiltersThatNeedTheFieldTrue) {
  EXPECT_TRUE(Requires("duplicate_client_id = true"));
  EXPECT_TRUE(Requires("duplicateClientId != false"));
  EXPECT_TRUE(Requires("client_id = \"a*\" AND duplicate_client_id = true"));
  EXPECT_TRUE(
      Requires("(duplicate_client_id = true AND node_id = 1) OR "
               "(duplicate_client_id = true AND node_id = 2)"));
  EXPECT_TRUE(Requires("duplicate_client_id IN (true)"));
  EXPECT_FALSE(Requires("duplicate_client_id = false"));
  EXPECT_FALSE(Requires("NOT duplicate_client_id = true"));
  EXPECT_FALSE(Requires("duplicate_client_id = true OR node_id = 1"));
  EXPECT_FALSE(Requires("duplicate_client_id IN (true, false)"));
  EXPECT_FALSE(Requires("client_id = \"a\""));
  EXPECT_FALSE(Requires(""));
}

Connection Open(std::uint32_t node, std::uint64_t seq, const std::string& client_id) {
  Connection c = TestConnection(seq);
  c.node_id = node;
  c.state = ConnectionState::kOpen;
  c.client_id = client_id;
  c.uid = "u" + std::to_string(node) + "-" + std::to_string(seq);
  return c;
}

BrokerAnswer Answer(const std::string& broker, std::vector<Connection> connections) {
  BrokerAnswer answer;
  answer.broker = broker;
  answer.answered = true;
  answer.page.connections = std::move(connections);
  return answer;
}

std::vector<std::string> Names(const ConnectionPage& page) {
  std::vector<std::string> names;
  for (const Connection& c : page.connections) {
    names.push_back(std::to_string(c.node_id) + ":" + c.client_id +
                    (c.duplicate_client_id ? "" : "(not flagged)"));
  }
  return names;
}

// A query as the fleet runs it: parsed, with the fingerprint its page tokens carry.
struct ParsedQuery {
  ConnectionFilter filter;
  ConnectionOrder order;
  std::uint64_t fingerprint = 0;
};

ParsedQuery Parse(const std::string& filter, const std::string& order_by) {
  ParsedQuery query;
  EXPECT_TRUE(ConnectionFilter::Parse(filter, &query.filter).ok());
  EXPECT_TRUE(ConnectionOrder::Parse(order_by, &query.order).ok());
  query.fingerprint = QueryFingerprint(filter, order_by);
  return query;
}

TEST(DuplicatePageTest, FlagsFiltersAndWalksWithCursorsWhileTheSetChanges) {
  const ParsedQuery query = Parse("duplicate_client_id = true", "client_id");
  // "x" is open on brokers 1 and 2, "y" on 1 and 3, "z" on 2 alone (a lookup of candidates
  // can return an id that closed elsewhere meanwhile: it must not be flagged).
  std::vector<BrokerAnswer> first = {
      Answer(kSelfBroker, {Open(1, 5, "y"), Open(1, 4, "x")}),
      Answer("http://127.0.0.1:2", {Open(2, 1, "x"), Open(2, 2, "z")}),
      Answer("http://127.0.0.1:3", {Open(3, 9, "y")})};
  ConnectionPage page;
  ASSERT_TRUE(
      DuplicatePage(query.filter, query.order, query.fingerprint, 3, {}, first, &page).ok());
  // Ties in client_id: the sequence, the last key of every order, then the node id.
  EXPECT_THAT(Names(page), ElementsAre("2:x", "1:x", "1:y"));
  EXPECT_EQ(page.total_size, 4);
  ASSERT_FALSE(page.next_page_token.empty());

  // The next page, after "x" closed on broker 2 and "w" became duplicated on brokers 1 and 3:
  // each broker goes on after its own last shown connection. Broker 1's "w" comes before its
  // position and is not shown; broker 3 showed nothing yet, so its "w" and "y" both are.
  std::vector<BrokerCursor> cursors;
  ASSERT_TRUE(DecodeFleetToken(page.next_page_token, query.fingerprint, &cursors).ok());
  std::vector<BrokerAnswer> second = {
      Answer(kSelfBroker, {Open(1, 5, "y"), Open(1, 4, "x"), Open(1, 6, "w")}),
      Answer("http://127.0.0.1:2", {Open(2, 2, "z")}),
      Answer("http://127.0.0.1:3", {Open(3, 9, "y"), Open(3, 10, "w")})};
  ConnectionPage next;
  ASSERT_TRUE(
      DuplicatePage(query.filter, query.order, query.fingerprint, 3, cursors, second, &next).ok());
  EXPECT_THAT(Names(next), ElementsAre("3:w", "3:y"));
  EXPECT_TRUE(next.next_page_token.empty());
}

TEST(DuplicatePageTest, TheRestOfTheFilterAppliesAndFailedBrokersAreNamed) {
  const ParsedQuery query = Parse("duplicate_client_id = true AND node_id = 2", "");
  BrokerAnswer failed;
  failed.broker = "http://127.0.0.1:3";
  failed.failure = {failed.broker, "unavailable", "connection refused"};
  std::vector<BrokerAnswer> answers = {Answer(kSelfBroker, {Open(1, 4, "x")}),
                                       Answer("http://127.0.0.1:2", {Open(2, 1, "x")}), failed};
  ConnectionPage page;
  ASSERT_TRUE(
      DuplicatePage(query.filter, query.order, query.fingerprint, 10, {}, answers, &page).ok());
  EXPECT_THAT(Names(page), ElementsAre("2:x"));
  ASSERT_EQ(page.peer_errors.size(), 1u);
  EXPECT_EQ(page.peer_errors[0].peer, "http://127.0.0.1:3");
}

TEST(DuplicatePageTest, ABadCursorIsRefused) {
  ConnectionFilter filter;
  ASSERT_TRUE(ConnectionFilter::Parse("duplicate_client_id = true", &filter).ok());
  ConnectionOrder order;
  ConnectionPage page;
  const Status status = DuplicatePage(filter, order, 1, 10, {{kSelfBroker, "not a token"}},
                                      {Answer(kSelfBroker, {Open(1, 4, "x")})}, &page);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mqc
