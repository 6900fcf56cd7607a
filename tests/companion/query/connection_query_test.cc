// SPDX-License-Identifier: BSD-3-Clause
// Tests for running a query (connection_query.h): keyset pages that visit every match once in
// order (also while connections come and go), the default and largest page, offset, paging
// errors, total size, the typed query, and the source path (the shared snapshot, the client id
// index, details for the page only), page for page as the reference (reference_query.h) answers.
#include "companion/query/connection_query.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../../support/connection_builder.h"
#include "../../support/fleet_source.h"
#include "../../support/query_fleet.h"
#include "../../support/reference_query.h"
#include "companion/connection.h"
#include "companion/query/connection_fields.h"
#include "companion/query/connection_filter.h"
#include "companion/query/connection_order.h"
#include "link/status.h"

namespace mqc {
namespace {

using ::testing::HasSubstr;

// --- pages -----------------------------------------------------------------------------------

// A connection with random sort keys drawn from small ranges, so that ties are common.
Connection RandomConnection(std::uint64_t seq, std::mt19937* rng) {
  Connection c = TestConnection(seq);
  c.uid = "uid-" + std::to_string((*rng)() % 1000);
  c.open_time_ns = kTestTime0 + static_cast<std::int64_t>((*rng)() % 50) * kTestSecond;
  c.client_id = "client-" + std::to_string((*rng)() % 300);
  c.protocol_version = 3 + static_cast<int>((*rng)() % 3);
  c.idle_ns = static_cast<std::int64_t>((*rng)() % 20) - 1;
  if ((*rng)() % 3 == 0) {
    c.state = ConnectionState::kClosed;
    c.close_time_ns = c.open_time_ns + static_cast<std::int64_t>((*rng)() % 10) * kTestSecond;
  }
  c.username = (*rng)() % 4 == 0 ? "" : "user-" + std::to_string((*rng)() % 5);
  return c;
}

std::vector<Connection> RandomFleet(std::size_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Connection> fleet;
  for (std::size_t i = 0; i < count; ++i) fleet.push_back(RandomConnection(i + 1, &rng));
  std::shuffle(fleet.begin(), fleet.end(), rng);
  return fleet;
}

// Follows next_page_token to the end; checks every page on the way.
std::vector<std::uint64_t> AllPages(const ConnectionSource& source, const std::string& filter,
                                    const std::string& order_by, std::int64_t page_size) {
  const std::size_t limit = static_cast<std::size_t>(page_size == 0 ? 1000 : page_size);
  std::vector<std::uint64_t> seqs;
  std::string token;
  std::int64_t total = -1;
  for (int pages = 0; pages < 100000; ++pages) {
    const Outcome outcome = RunQuery(source, MakeQuery(filter, order_by, page_size, token));
    EXPECT_TRUE(outcome.ok) << outcome.error;
    if (!outcome.ok) break;
    if (total < 0) total = outcome.total_size;
    EXPECT_EQ(outcome.total_size, total);
    seqs.insert(seqs.end(), outcome.seqs.begin(), outcome.seqs.end());
    if (outcome.next_page_token.empty()) {
      EXPECT_LE(outcome.seqs.size(), limit);
      break;
    }
    EXPECT_EQ(outcome.seqs.size(), limit);
    EXPECT_EQ(outcome.next_page_token.find_first_not_of(
                  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
              std::string::npos);
    token = outcome.next_page_token;
  }
  EXPECT_EQ(static_cast<std::int64_t>(seqs.size()), total);
  return seqs;
}

TEST(ConnectionPagesTest, PagesVisitEveryMatchOnceInOrder) {
  // One source for every page: built once, as the registry's is (a few hundred pages each).
  const FleetSource fleet(RandomFleet(2500, 1));
  struct Row {
    const char* filter;
    const char* order_by;
    // Besides 1000 and the default; 7 costs a few hundred pages. An order or filter on a detail
    // field reads the source's whole Snapshot() for every page, as it does in production: 97.
    std::int64_t small_page;
  };
  const Row rows[] = {
      {"", "", 7},
      {"", "client_id desc", 7},
      {"", "protocol_version, open_time desc", 7},
      {"", "close_time, idle_duration desc", 97},
      {"", "username desc, uid", 97},
      {"state = MQTT_CONNECTION_STATE_OPEN", "idle_duration", 97},
      {R"(client_id = "client-1*")", "open_time desc", 7},
  };
  for (const auto& [filter, order_by, small_page] : rows) {
    const Outcome all = RunQuery(fleet, MakeQuery(filter, order_by, kMaxPageSize));
    ASSERT_TRUE(all.ok) << all.error;
    EXPECT_TRUE(all.next_page_token.empty());
    for (const std::int64_t page_size : {small_page, std::int64_t{1000}, std::int64_t{0}}) {
      SCOPED_TRACE(std::string(filter) + " / " + order_by + " / " + std::to_string(page_size));
      EXPECT_EQ(AllPages(fleet, filter, order_by, page_size), all.seqs);
    }
  }
  const Outcome everything = RunQuery(fleet, MakeQuery("", "", kMaxPageSize));
  EXPECT_EQ(everything.seqs.size(), 2500u);
  EXPECT_EQ(std::set<std::uint64_t>(everything.seqs.begin(), everything.seqs.end()).size(), 2500u);
}

TEST(ConnectionPagesTest, DefaultPageSizeIs1000) {
  const std::vector<Connection> fleet = RandomFleet(2500, 2);
  const Outcome first = RunQuery(fleet, MakeQuery("", "", 0));
  ASSERT_TRUE(first.ok);
  EXPECT_EQ(first.seqs.size(), 1000u);
  EXPECT_EQ(first.total_size, 2500);
  EXPECT_FALSE(first.next_page_token.empty());
  const Outcome largest = RunQuery(fleet, MakeQuery("", "", 10000));
  EXPECT_EQ(largest.seqs.size(), 2500u);
  EXPECT_TRUE(largest.next_page_token.empty());
  const Outcome exact = RunQuery(fleet, MakeQuery("", "", 2500));
  EXPECT_EQ(exact.seqs.size(), 2500u);
  EXPECT_TRUE(exact.next_page_token.empty());
  const Outcome empty = RunQuery({}, MakeQuery(""));
  EXPECT_TRUE(empty.ok);
  EXPECT_TRUE(empty.seqs.empty());
  EXPECT_EQ(empty.total_size, 0);
  EXPECT_TRUE(empty.next_page_token.empty());
}

// Keyset pages: connections that stay are neither skipped nor repeated while others come and go.
TEST(ConnectionPagesTest, PagesStayConsistentWhileConnectionsComeAndGo) {
  for (const char* order_by : {"", "client_id desc", "protocol_version, username desc"}) {
    SCOPED_TRACE(order_by);
    std::mt19937 rng(3);
    std::vector<Connection> live = RandomFleet(600, 4);
    std::uint64_t next_seq = 601;
    std::set<std::uint64_t> stayed;
    for (const Connection& c : live) stayed.insert(c.seq);
    ConnectionOrder order;
    ASSERT_TRUE(ConnectionOrder::Parse(order_by, &order).ok());

    std::vector<Connection> returned;
    std::string token;
    for (int pages = 0; pages < 1000; ++pages) {
      const Outcome outcome = RunQuery(live, MakeQuery("", order_by, 7, token));
      ASSERT_TRUE(outcome.ok) << outcome.error;
      returned.insert(returned.end(), outcome.connections.begin(), outcome.connections.end());
      token = outcome.next_page_token;
      if (token.empty()) break;
      for (int i = 0; i < 4 && !live.empty(); ++i) {  // some leave, also ones already returned
        const std::size_t victim = rng() % live.size();
        stayed.erase(live[victim].seq);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(victim));
      }
      for (int i = 0; i < 5; ++i) live.push_back(RandomConnection(next_seq++, &rng));
    }
    ASSERT_TRUE(token.empty());
    std::map<std::uint64_t, int> times;
    for (const Connection& c : returned) ++times[c.seq];
    for (const auto& [seq, count] : times) EXPECT_EQ(count, 1) << "seq " << seq;
    for (const std::uint64_t seq : stayed) EXPECT_EQ(times.count(seq), 1u) << "seq " << seq;
    for (std::size_t i = 1; i < returned.size(); ++i) {
      EXPECT_LT(order.Compare(returned[i - 1], returned[i]), 0) << i;
    }
  }
}

TEST(ConnectionPagesTest, Offset) {
  const std::vector<Connection> fleet = FilterFleet();  // default order: 3, 1, 4, 2
  const std::pair<std::int64_t, std::vector<std::uint64_t>> rows[] = {
      {0, {3, 1}}, {1, {1, 4}}, {3, {2}}, {4, {}}, {100, {}},
  };
  for (const auto& [offset, seqs] : rows) {
    SCOPED_TRACE(offset);
    const Outcome outcome = RunQuery(fleet, MakeQuery("", "", 2, "", offset));
    ASSERT_TRUE(outcome.ok) << outcome.error;
    EXPECT_EQ(outcome.seqs, seqs);
    EXPECT_EQ(outcome.total_size, 4);
    EXPECT_EQ(outcome.next_page_token.empty(), offset + 2 >= 4);
  }
  // The token of a page reached by offset continues after it; offset is ignored with a token.
  const Outcome skipped = RunQuery(fleet, MakeQuery("", "", 1, "", 1));
  ASSERT_EQ(skipped.seqs, std::vector<std::uint64_t>{1});
  const Outcome next = RunQuery(fleet, MakeQuery("", "", 2, skipped.next_page_token, 3));
  EXPECT_EQ(next.seqs, (std::vector<std::uint64_t>{4, 2}));
  EXPECT_TRUE(next.next_page_token.empty());
  // With a filter, offset counts matches only.
  const Outcome filtered = RunQuery(fleet, MakeQuery("node_id = 1", "", 10, "", 1));
  EXPECT_EQ(filtered.seqs, (std::vector<std::uint64_t>{1, 4}));
  EXPECT_EQ(filtered.total_size, 3);
}

TEST(ConnectionPagesTest, PagingErrors) {
  const std::vector<Connection> fleet = FilterFleet();
  const std::pair<ConnectionQuery, std::string> rows[] = {
      {MakeQuery("", "", -1), "page_size must be between 0 and 10000, got -1"},
      {MakeQuery("", "", 10001), "page_size must be between 0 and 10000, got 10001"},
      {MakeQuery("", "", std::numeric_limits<std::int64_t>::min()),
       "page_size must be between 0 and 10000, got -9223372036854775808"},
      {MakeQuery("", "", 0, "", -1), "offset must not be negative, got -1"},
      // The first problem is reported: paging values, filter, order_by, token.
      {MakeQuery("bad", "bad", -1, "bad"), "page_size must be between 0 and 10000, got -1"},
      {MakeQuery("bad", "bad", 0, "bad"), "Unknown field 'bad' at position 1"},
      {MakeQuery("", "bad", 0, "bad"), "Unknown order_by field 'bad' at position 1"},
      {MakeQuery("", "", 0, "bad"), "malformed page_token"},
  };
  for (const auto& [query, message] : rows) {
    SCOPED_TRACE(message);
    ConnectionPage page;
    page.total_size = 99;
    page.next_page_token = "stale";
    page.connections.push_back(TestConnection(5));
    const Status status = RunConnectionQuery(FleetSource(fleet), query, &page);
    EXPECT_FALSE(status.ok());
    EXPECT_EQ(status.message(), message);
    EXPECT_TRUE(page.connections.empty());
    EXPECT_EQ(page.total_size, 0);
    EXPECT_TRUE(page.next_page_token.empty());
  }
}

TEST(ConnectionPagesTest, TotalSizeCountsEveryMatch) {
  const std::vector<Connection> fleet = RandomFleet(300, 5);
  const Outcome outcome = RunQuery(fleet, MakeQuery("protocol_version = 4", "", 10));
  ASSERT_TRUE(outcome.ok);
  const auto expected = std::count_if(fleet.begin(), fleet.end(),
                                      [](const Connection& c) { return c.protocol_version == 4; });
  EXPECT_EQ(outcome.total_size, expected);
  EXPECT_EQ(outcome.seqs.size(), 10u);
  EXPECT_THAT(outcome.error, ::testing::IsEmpty());
  EXPECT_THAT(FilterError("client_id = x"), HasSubstr("client_id"));
}

// A typed query pages through one large source by reference: the stored connections are only
// read (not reordered), every connection comes exactly once, in order, and the cursor of one
// page is where the next one starts.
TEST(TypedConnectionQueryTest, PagesALargeSourceByReference) {
  const FleetSource source(RandomFleet(50000, 11));
  const std::vector<ConnectionPtr> before = *source.SharedSnapshot();
  TypedConnectionQuery query;
  query.order = ConnectionOrder({OrderKey{FindField("client_id")}});
  query.page_size = kMaxPageSize;
  std::vector<std::uint64_t> seqs;
  std::string previous;
  for (int pages = 0; pages < 10; ++pages) {
    SharedConnectionPage page;
    const Status status = RunConnectionQuery(source, query, &page);
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(page.total_size, 50000);
    for (const ConnectionPtr& c : page.connections) {
      EXPECT_LE(previous, c->client_id);
      previous = c->client_id;
      seqs.push_back(c->seq);
    }
    if (!page.next) break;
    query.after = std::move(page.next);
  }
  std::sort(seqs.begin(), seqs.end());
  ASSERT_EQ(seqs.size(), 50000u);
  for (std::size_t i = 0; i < seqs.size(); ++i) ASSERT_EQ(seqs[i], i + 1);
  EXPECT_EQ(*source.SharedSnapshot(), before);
}

TEST(TypedConnectionQueryTest, ClausesAreMatchedAsGivenAndPagingIsChecked) {
  std::vector<Connection> fleet = {TestConnection(1), TestConnection(2), TestConnection(3)};
  fleet[1].client_id = std::string(5000, 'a') + "\" = \"";
  const FleetSource source(fleet);
  FilterClause clause;
  clause.field = FindField("client_id");
  clause.text = fleet[1].client_id;
  TypedConnectionQuery query;
  query.filter = ConnectionFilter({clause});
  SharedConnectionPage page;
  const Status found = RunConnectionQuery(source, query, &page);
  ASSERT_TRUE(found.ok()) << found.message();
  ASSERT_EQ(page.connections.size(), 1u);
  EXPECT_EQ(page.connections[0]->seq, 2u);
  EXPECT_FALSE(page.next);

  query.page_size = kMaxPageSize + 1;
  const Status refused = RunConnectionQuery(source, query, &page);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("page_size"));
  EXPECT_TRUE(page.connections.empty());
}

// --- the source path: shared snapshot, client id index, details for the page only ----------

namespace source_path {

// A source over a fleet that behaves like the registry: shared connections without their
// details, an index by client id, details added by seq; FleetSource counts which way each query
// went.
class DetailedFleetSource : public FleetSource {
 public:
  explicit DetailedFleetSource(std::vector<Connection> fleet)
      : FleetSource(Bare(fleet)), fleet_(std::move(fleet)) {}
  std::vector<Connection> Snapshot() const override {
    ++snapshots;
    return fleet_;
  }
  void AddDetails(std::vector<Connection>* connections) const override {
    details_added += connections->size();
    for (Connection& c : *connections) {
      for (const Connection& full : fleet_) {
        if (full.seq != c.seq) continue;
        c.idle_ns = full.idle_ns;
        c.total_statistics = full.total_statistics;
        c.recent_statistics = full.recent_statistics;
      }
    }
  }

  mutable std::size_t details_added = 0;

 private:
  static std::vector<Connection> Bare(std::vector<Connection> fleet) {
    for (Connection& c : fleet) {
      c.idle_ns = -1;
      c.total_statistics = RequestStatistics{};
      c.recent_statistics = RequestStatistics{};
    }
    return fleet;
  }

  std::vector<Connection> fleet_;
};

Outcome RunReference(const std::vector<Connection>& fleet, const ConnectionQuery& query) {
  ConnectionPage page;
  const Status status = RunReferenceQuery(fleet, query, &page);
  return OutcomeOf(status, std::move(page));
}

TEST(ConnectionSourceQueryTest, AnswersAsTheReferenceDoesPageForPage) {
  const std::vector<Connection> fleet = RandomFleet(700, 11);
  const DetailedFleetSource source(fleet);
  const char* filters[] = {"",
                           "client_id = \"client-7\"",
                           "client_id = \"client-1*\"",
                           "state = MQTT_CONNECTION_STATE_OPEN AND client_id = \"client-42\"",
                           "idle_duration > 5ns",
                           "client_id = \"nobody\"",
                           "bad field = 1"};
  const char* orders[] = {"", "client_id desc", "idle_duration", "bad"};
  for (const char* filter : filters) {
    for (const char* order_by : orders) {
      SCOPED_TRACE(std::string(filter) + " | " + order_by);
      std::string token;
      for (int pages = 0; pages < 100; ++pages) {
        const ConnectionQuery query = MakeQuery(filter, order_by, 60, token);
        const Outcome expected = RunReference(fleet, query);
        const Outcome actual = RunQuery(source, query);
        EXPECT_EQ(actual.ok, expected.ok);
        EXPECT_EQ(actual.error, expected.error);
        EXPECT_EQ(actual.seqs, expected.seqs);
        EXPECT_EQ(actual.total_size, expected.total_size);
        EXPECT_EQ(actual.next_page_token, expected.next_page_token);
        for (std::size_t i = 0; i < actual.connections.size() && i < expected.connections.size();
             ++i) {
          // Details came back for the page.
          EXPECT_EQ(actual.connections[i].idle_ns, expected.connections[i].idle_ns);
          EXPECT_EQ(actual.connections[i].total_statistics->publish_count,
                    expected.connections[i].total_statistics->publish_count);
        }
        if (expected.next_page_token.empty()) break;
        token = expected.next_page_token;
      }
    }
  }
}

TEST(ConnectionSourceQueryTest, OneClientIdIsLookedUpNotScanned) {
  const DetailedFleetSource source(RandomFleet(500, 3));
  const Outcome outcome = RunQuery(source, MakeQuery("client_id = \"client-9\""));
  ASSERT_TRUE(outcome.ok) << outcome.error;
  EXPECT_EQ(source.lookups, 1);
  EXPECT_EQ(source.shared_snapshots, 0);
  EXPECT_EQ(source.snapshots, 0);
  EXPECT_EQ(source.details_added, outcome.seqs.size());
  // A prefix is no single client id: the shared snapshot is read.
  ASSERT_TRUE(RunQuery(source, MakeQuery("client_id = \"client-9*\"")).ok);
  EXPECT_EQ(source.lookups, 1);
  EXPECT_EQ(source.shared_snapshots, 1);
}

TEST(ConnectionSourceQueryTest, OnlyThePageIsCopiedAndDetailed) {
  const DetailedFleetSource source(RandomFleet(500, 4));
  const Outcome outcome = RunQuery(source, MakeQuery("", "", 25));
  ASSERT_TRUE(outcome.ok);
  EXPECT_EQ(outcome.seqs.size(), 25u);
  EXPECT_EQ(source.details_added, 25u);
  EXPECT_EQ(source.snapshots, 0);
}

TEST(ConnectionSourceQueryTest, AFilterOrOrderOnADetailReadsTheDetailedSnapshot) {
  const DetailedFleetSource source(RandomFleet(100, 5));
  ASSERT_TRUE(RunQuery(source, MakeQuery("total_request_statistics.publish_count > 3")).ok);
  EXPECT_EQ(source.snapshots, 1);
  ASSERT_TRUE(RunQuery(source, MakeQuery("", "recent_request_statistics.deliver_bytes")).ok);
  EXPECT_EQ(source.snapshots, 2);
  EXPECT_EQ(source.shared_snapshots, 0);
  EXPECT_EQ(source.details_added, 0u);  // they came with the snapshot
}

TEST(ConnectionSourceQueryTest, TheSourcesExceptionPassesThrough) {
  class Failing : public ConnectionSource {
   public:
    std::vector<Connection> Snapshot() const override { throw std::out_of_range("gone"); }
  };
  ConnectionPage page;
  EXPECT_THROW(RunConnectionQuery(Failing(), MakeQuery(""), &page), std::out_of_range);
  EXPECT_TRUE(page.connections.empty());
}

TEST(ConnectionSourceQueryTest, TypedPagesShareTheStoredConnectionsAndCanBeUnlimited) {
  const DetailedFleetSource source(RandomFleet(300, 6));
  TypedConnectionQuery query;
  query.order = ConnectionOrder({OrderKey{FindField("client_id")}});
  query.unlimited = true;
  query.offset = 10;
  SharedConnectionPage page;
  ASSERT_TRUE(RunConnectionQuery(source, query, &page).ok());
  EXPECT_EQ(page.total_size, 300);
  ASSERT_EQ(page.connections.size(), 290u);
  EXPECT_FALSE(page.next);
  const std::vector<ConnectionPtr> stored = *source.SharedSnapshot();
  EXPECT_NE(std::find(stored.begin(), stored.end(), page.connections[0]), stored.end());
  for (std::size_t i = 1; i < page.connections.size(); ++i) {
    EXPECT_LE(page.connections[i - 1]->client_id, page.connections[i]->client_id);
  }
}

}  // namespace source_path

}  // namespace
}  // namespace mqc
