// SPDX-License-Identifier: BSD-3-Clause
// The fleet merge and its page token: three brokers, each a FleetSource answering its node
// query as a peer would (RunConnectionQuery with its own cursor), walked page by page and
// compared with the union of the three sorted by the same order.
#include "companion/fleet/fleet_merge.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "../../support/connection_builder.h"
#include "../../support/fleet_source.h"
#include "companion/query/connection_page_token.h"
#include "companion/query/connection_query.h"

namespace mqc {
namespace {

using ::testing::HasSubstr;

struct Broker {
  std::string key;
  std::vector<Connection> connections;
  bool up = true;
};

// Node ids 1..3; sequences overlap between brokers (each broker counts its own), client ids
// and open times interleave.
std::vector<Broker> ThreeBrokers() {
  std::vector<Broker> brokers = {
      {kSelfBroker, {}}, {"http://127.0.0.1:1", {}}, {"http://127.0.0.1:2", {}}};
  for (std::size_t b = 0; b < brokers.size(); ++b) {
    for (std::uint64_t seq = 1; seq <= 7 + b; ++seq) {
      Connection c = TestConnection(seq);
      c.node_id = static_cast<std::uint32_t>(b + 1);
      c.uid = "uid-" + std::to_string(b) + "-" + std::to_string(seq);
      c.client_id = "c-" + std::to_string((seq * 7 + b * 3) % 11);
      c.open_time_ns = kTestTime0 + static_cast<std::int64_t>((seq * 5 + b) % 9) * kTestSecond;
      brokers[b].connections.push_back(c);
    }
  }
  return brokers;
}

// One broker's node page in process, as a peer answers it.
BrokerAnswer AskBroker(const Broker& broker, const std::string& filter, const std::string& order_by,
                       std::size_t size, const std::string& token, Status* status) {
  BrokerAnswer answer;
  answer.broker = broker.key;
  if (!broker.up) {
    answer.failure = {broker.key, "unavailable", "cannot connect: Connection refused"};
    return answer;
  }
  const FleetSource source(broker.connections);
  ConnectionQuery query;
  query.filter = filter;
  query.order_by = order_by;
  query.page_size = static_cast<std::int64_t>(size);
  query.page_token = token;
  *status = RunConnectionQuery(source, query, &answer.page);
  answer.answered = status->ok();
  return answer;
}

// What FleetQuery::Run does, with each broker answered in process: each asked for `first`
// connections (0: the page size), then those that ran short for more (MoreToAsk), which a
// second round always settles.
Status FleetPage(const std::vector<Broker>& brokers, const std::string& filter,
                 const std::string& order_by, std::size_t page_size, const std::string& token,
                 ConnectionPage* page, std::size_t first = 0) {
  ConnectionOrder order;
  Status status = ConnectionOrder::Parse(order_by, &order);
  if (!status.ok()) return status;
  const std::uint64_t fingerprint = QueryFingerprint(filter, order_by);
  std::vector<BrokerCursor> cursors;
  if (!token.empty()) {
    status = DecodeFleetToken(token, fingerprint, &cursors);
    if (!status.ok()) return status;
  }
  std::vector<BrokerAnswer> answers;
  for (const Broker& broker : brokers) {
    answers.push_back(AskBroker(broker, filter, order_by, first == 0 ? page_size : first,
                                NodeTokenOf(cursors, broker.key), &status));
    if (!status.ok()) return status;
  }
  for (int round = 0; round < 3; ++round) {
    const std::vector<std::size_t> more = MoreToAsk(order, page_size, answers);
    if (std::all_of(more.begin(), more.end(), [](std::size_t n) { return n == 0; })) break;
    EXPECT_LT(round, 1) << "a third round was needed";
    for (std::size_t i = 0; i < brokers.size(); ++i) {
      if (more[i] == 0) continue;
      AppendAnswer(AskBroker(brokers[i], filter, order_by, more[i], answers[i].page.next_page_token,
                             &status),
                   &answers[i]);
      if (!status.ok()) return status;
    }
  }
  MergeBrokerPages(order, fingerprint, page_size, cursors, std::move(answers), page);
  return Status();
}

// The union, sorted as the merge must give it.
std::vector<std::string> SortedUnion(const std::vector<Broker>& brokers,
                                     const std::string& order_by) {
  ConnectionOrder order;
  EXPECT_TRUE(ConnectionOrder::Parse(order_by, &order).ok());
  std::vector<Connection> all;
  for (const Broker& broker : brokers) {
    if (broker.up) all.insert(all.end(), broker.connections.begin(), broker.connections.end());
  }
  std::stable_sort(all.begin(), all.end(), [&order](const Connection& a, const Connection& b) {
    const int c = order.Compare(a, b);
    return c != 0 ? c < 0 : a.node_id < b.node_id;
  });
  std::vector<std::string> uids;
  for (const Connection& c : all) uids.push_back(c.uid);
  return uids;
}

// Every page of a walk, as uids; fails the test on an error or a walk without end.
std::vector<std::string> Walk(const std::vector<Broker>& brokers, const std::string& order_by,
                              std::size_t page_size, std::int64_t* total = nullptr,
                              std::size_t first = 0) {
  std::vector<std::string> uids;
  std::string token;
  for (int round = 0; round < 100; ++round) {
    ConnectionPage page;
    const Status status = FleetPage(brokers, "", order_by, page_size, token, &page, first);
    EXPECT_TRUE(status.ok()) << status.message();
    if (!status.ok()) break;
    EXPECT_LE(page.connections.size(), page_size);
    for (const Connection& c : page.connections) uids.push_back(c.uid);
    if (total != nullptr) *total = page.total_size;
    token = page.next_page_token;
    if (token.empty()) return uids;
  }
  ADD_FAILURE() << "the walk did not end";
  return uids;
}

TEST(FleetMergeTest, PagesWalkTheUnionInOrderForEveryOrderAndPageSize) {
  const std::vector<Broker> brokers = ThreeBrokers();
  for (const std::string order_by : {"", "client_id", "open_time desc, client_id desc", "uid"}) {
    const std::vector<std::string> expected = SortedUnion(brokers, order_by);
    ASSERT_EQ(expected.size(), 7u + 8u + 9u);
    for (const std::size_t page_size : {1u, 2u, 5u, 7u, 24u, 1000u}) {
      std::int64_t total = 0;
      EXPECT_EQ(Walk(brokers, order_by, page_size, &total), expected)
          << "order_by '" << order_by << "', page size " << page_size;
      EXPECT_EQ(total, 24);
    }
  }
}

TEST(FleetMergeTest, BrokersAskedForLessThanAPageAreAskedForTheRestWhereTheyRunShort) {
  std::vector<Broker> brokers = ThreeBrokers();
  for (const std::string order_by : {"", "client_id", "open_time desc, client_id desc", "uid"}) {
    const std::vector<std::string> expected = SortedUnion(brokers, order_by);
    for (const std::size_t page_size : {1u, 2u, 5u, 7u, 24u, 1000u}) {
      for (const std::size_t first : {1u, 2u, 3u, 5u}) {
        std::int64_t total = 0;
        EXPECT_EQ(Walk(brokers, order_by, page_size, &total, first), expected)
            << "order_by '" << order_by << "', page size " << page_size << ", first " << first;
        EXPECT_EQ(total, 24);
      }
    }
  }
  // "uid" puts all of broker 0's first: the merge stops where broker 0's answer ends, and
  // each broker that could run short before the page ends is asked for enough to reach it.
  ConnectionOrder order;
  ASSERT_TRUE(ConnectionOrder::Parse("uid", &order).ok());
  std::vector<BrokerAnswer> answers;
  Status status;
  for (const Broker& broker : brokers) {
    answers.push_back(AskBroker(broker, "", "uid", 2, "", &status));
  }
  EXPECT_THAT(MoreToAsk(order, 5, answers), ::testing::ElementsAre(3u, 1u, 1u));
  // A broker that fails its second round is left out and named.
  brokers[0].up = false;
  AppendAnswer(AskBroker(brokers[0], "", "uid", 3, answers[0].page.next_page_token, &status),
               &answers[0]);
  EXPECT_FALSE(answers[0].answered);
  EXPECT_TRUE(answers[0].page.connections.empty());
  // It is not asked again; the page now comes from the others, which ran short in turn.
  EXPECT_THAT(MoreToAsk(order, 5, answers), ::testing::ElementsAre(0u, 3u, 1u));
}

TEST(FleetMergeTest, TheAnsweredBrokersAreListedWithTheirCountsAndTheirRoundsTimesSummed) {
  std::vector<Broker> brokers = ThreeBrokers();
  brokers[2].up = false;
  ConnectionOrder order;
  ASSERT_TRUE(ConnectionOrder::Parse("uid", &order).ok());
  std::vector<BrokerAnswer> answers;
  Status status;
  for (std::size_t b = 0; b < brokers.size(); ++b) {
    answers.push_back(AskBroker(brokers[b], "", "uid", 2, "", &status));
    answers.back().page.node_id = static_cast<std::uint32_t>(b + 1);
    answers.back().answer_ms = 1.5 + static_cast<double>(b);
  }
  BrokerAnswer later = AskBroker(brokers[0], "", "uid", 3, answers[0].page.next_page_token,
                                 &status);
  later.answer_ms = 0.25;
  AppendAnswer(std::move(later), &answers[0]);
  ConnectionPage page;
  MergeBrokerPages(order, 0, 5, {}, std::move(answers), &page);
  ASSERT_EQ(page.node_answers.size(), 2u);
  EXPECT_EQ(page.node_answers[0].peer, "");  // this broker
  EXPECT_EQ(page.node_answers[0].node_id, 1u);
  EXPECT_EQ(page.node_answers[0].total_size, 7);
  EXPECT_EQ(page.node_answers[0].answer_ms, 1.75);  // both rounds
  EXPECT_EQ(page.node_answers[1].peer, "http://127.0.0.1:1");
  EXPECT_EQ(page.node_answers[1].node_id, 2u);
  EXPECT_EQ(page.node_answers[1].total_size, 8);
  EXPECT_EQ(page.node_answers[1].answer_ms, 2.5);
  EXPECT_EQ(page.total_size, 15);
  ASSERT_EQ(page.peer_errors.size(), 1u);
  EXPECT_EQ(page.peer_errors[0].peer, "http://127.0.0.1:2");
}

TEST(FleetMergeTest, TheFirstAskIsAShareOfThePageAndAMargin) {
  EXPECT_EQ(FirstAskSize(1000, 3), 334u + 83u + 16u);
  EXPECT_EQ(FirstAskSize(1000, 20), 50u + 12u + 16u);
  EXPECT_EQ(FirstAskSize(10, 3), 10u);  // small pages: the whole page, one round
  EXPECT_EQ(FirstAskSize(1, 3), 1u);
  EXPECT_EQ(FirstAskSize(1000, 1), 1000u);
}

TEST(FleetMergeTest, TheTotalIsTheFleetsAndEachConnectionKeepsItsNode) {
  const std::vector<Broker> brokers = ThreeBrokers();
  ConnectionPage page;
  ASSERT_TRUE(FleetPage(brokers, "client_id = \"c-3\"", "", 100, "", &page).ok());
  std::int64_t expected = 0;
  std::map<std::string, std::uint32_t> node_of;
  for (const Broker& broker : brokers) {
    for (const Connection& c : broker.connections) {
      if (c.client_id == "c-3") ++expected;
      node_of[c.uid] = c.node_id;
    }
  }
  EXPECT_EQ(page.total_size, expected);
  ASSERT_EQ(page.connections.size(), static_cast<std::size_t>(expected));
  for (const Connection& c : page.connections) EXPECT_EQ(c.node_id, node_of[c.uid]);
  EXPECT_TRUE(page.next_page_token.empty());
}

TEST(FleetMergeTest, ABrokerThatFailsMidWalkIsNamedAndResumesWhereItStopped) {
  std::vector<Broker> brokers = ThreeBrokers();
  const std::vector<std::string> expected = SortedUnion(brokers, "client_id");
  std::vector<std::string> seen;
  ConnectionPage page;
  ASSERT_TRUE(FleetPage(brokers, "", "client_id", 5, "", &page).ok());
  for (const Connection& c : page.connections) seen.push_back(c.uid);
  // Broker 2 goes away for one page: the page is partial and names it.
  brokers[2].up = false;
  std::string token = page.next_page_token;
  ASSERT_TRUE(FleetPage(brokers, "", "client_id", 5, token, &page).ok());
  ASSERT_EQ(page.peer_errors.size(), 1u);
  EXPECT_EQ(page.peer_errors[0].peer, "http://127.0.0.1:2");
  EXPECT_EQ(page.peer_errors[0].code, "unavailable");
  EXPECT_EQ(page.total_size, 7 + 8);
  std::vector<std::string> during;
  for (const Connection& c : page.connections) {
    seen.push_back(c.uid);
    during.push_back(c.uid);
  }
  // It comes back: the walk goes on, and every connection appears exactly once overall.
  brokers[2].up = true;
  token = page.next_page_token;
  for (int round = 0; round < 50 && !token.empty(); ++round) {
    ASSERT_TRUE(FleetPage(brokers, "", "client_id", 5, token, &page).ok());
    EXPECT_TRUE(page.peer_errors.empty());
    for (const Connection& c : page.connections) seen.push_back(c.uid);
    token = page.next_page_token;
  }
  EXPECT_TRUE(token.empty());
  std::vector<std::string> sorted_seen = seen;
  std::sort(sorted_seen.begin(), sorted_seen.end());
  std::vector<std::string> sorted_expected = expected;
  std::sort(sorted_expected.begin(), sorted_expected.end());
  EXPECT_EQ(sorted_seen, sorted_expected);
  EXPECT_FALSE(during.empty());
}

TEST(FleetMergeTest, AFailedBrokerAloneDoesNotKeepAWalkGoing) {
  std::vector<Broker> brokers = ThreeBrokers();
  brokers[1].up = false;
  std::int64_t total = 0;
  EXPECT_EQ(Walk(brokers, "", 1000, &total).size(), 7u + 9u);
  EXPECT_EQ(total, 7 + 9);
}

TEST(FleetMergeTest, ABrokerThatJoinsMidWalkStartsFromItsBeginning) {
  std::vector<Broker> brokers = ThreeBrokers();
  const Broker late = brokers[2];
  brokers.pop_back();
  ConnectionPage page;
  ASSERT_TRUE(FleetPage(brokers, "", "uid", 4, "", &page).ok());
  brokers.push_back(late);
  std::size_t count = page.connections.size();
  std::string token = page.next_page_token;
  for (int round = 0; round < 50 && !token.empty(); ++round) {
    ASSERT_TRUE(FleetPage(brokers, "", "uid", 4, token, &page).ok());
    count += page.connections.size();
    token = page.next_page_token;
  }
  EXPECT_EQ(count, 7u + 8u + 9u);  // nothing of the first two repeated, all of the third shown
}

TEST(FleetMergeTest, TokensAreCheckedAgainstTheQueryAndTheScope) {
  const std::vector<Broker> brokers = ThreeBrokers();
  ConnectionPage page;
  ASSERT_TRUE(FleetPage(brokers, "", "client_id", 2, "", &page).ok());
  const std::string token = page.next_page_token;
  ASSERT_FALSE(token.empty());
  EXPECT_THAT(FleetPage(brokers, "", "uid", 2, token, &page).message(),
              HasSubstr("does not belong to this filter and order_by"));
  EXPECT_THAT(
      FleetPage(brokers, "", "client_id", 2, token.substr(0, token.size() - 3), &page).message(),
      HasSubstr("malformed page_token"));
  EXPECT_THAT(FleetPage(brokers, "", "client_id", 2, "!!", &page).message(),
              HasSubstr("malformed page_token"));
  // A node page's token is not a fleet page's.
  const FleetSource source(brokers[0].connections);
  ConnectionQuery query;
  query.order_by = "client_id";
  query.page_size = 2;
  ConnectionPage node_page;
  ASSERT_TRUE(RunConnectionQuery(source, query, &node_page).ok());
  EXPECT_THAT(FleetPage(brokers, "", "client_id", 2, node_page.next_page_token, &page).message(),
              HasSubstr("not a fleet page token"));
}

TEST(FleetMergeTest, TokenRoundTripsItsCursors) {
  const std::vector<BrokerCursor> cursors = {{kSelfBroker, "abc"}, {"https://[::1]:8443", ""}};
  const std::string token = EncodeFleetToken(42, cursors);
  std::vector<BrokerCursor> decoded;
  ASSERT_TRUE(DecodeFleetToken(token, 42, &decoded).ok());
  ASSERT_EQ(decoded.size(), 2u);
  EXPECT_EQ(decoded[0].node_token, "abc");
  EXPECT_EQ(decoded[1].broker, "https://[::1]:8443");
  EXPECT_EQ(NodeTokenOf(decoded, kSelfBroker), "abc");
  EXPECT_EQ(NodeTokenOf(decoded, "http://elsewhere:1"), "");
}

}  // namespace
}  // namespace mqc

namespace mqc {
namespace {

TEST(FleetDuplicatesTest, AnIdOpenOnTwoBrokersIsFlaggedAndOnlyWhereOpen) {
  ConnectionPage page;
  Connection shared_a = TestConnection(1);
  shared_a.client_id = "shared";
  Connection alone = TestConnection(2);
  alone.client_id = "alone";
  Connection closed_shared = TestConnection(3);
  closed_shared.client_id = "shared";
  closed_shared.state = ConnectionState::kClosed;
  page.connections = {shared_a, alone, closed_shared};
  EXPECT_EQ(OpenClientIds(page), (std::vector<std::string>{"shared", "alone"}));

  std::vector<BrokerAnswer> lookups(3);
  lookups[0].answered = true;
  lookups[0].page.connections = {shared_a, alone};
  lookups[1].answered = true;
  Connection shared_b = TestConnection(9);
  shared_b.client_id = "shared";
  lookups[1].page.connections = {shared_b};
  lookups[2].answered = false;  // a broker that did not answer counts for nothing
  lookups[2].page.connections = {alone};
  MarkDuplicateClientIds(lookups, &page);
  EXPECT_TRUE(page.connections[0].duplicate_client_id);
  EXPECT_FALSE(page.connections[1].duplicate_client_id);
  EXPECT_FALSE(page.connections[2].duplicate_client_id);  // closed: not a live clash

  // The same id twice on one broker (a takeover in flight) is no fleet duplicate.
  lookups[1].page.connections.clear();
  lookups[0].page.connections = {shared_a, shared_a};
  MarkDuplicateClientIds(lookups, &page);
  EXPECT_FALSE(page.connections[0].duplicate_client_id);
}

}  // namespace
}  // namespace mqc
