// SPDX-License-Identifier: BSD-3-Clause
// Tests for the boolean part of the filter (connection_filter.h): OR, NOT and '-', parentheses
// and their precedence, `field IN (...)` on every kind of field, the errors of each new form with
// their positions, the length rules around IN lists, and the client ids a filter narrows to (the
// index path of RunConnectionQuery, counted on a source that behaves like the registry).
#include "companion/query/connection_filter.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "companion/connection.h"
#include "companion/query/connection_fields.h"
#include "companion/query/connection_query.h"
#include "link/status.h"
#include "link/topic_mapping.h"

namespace mqc {
namespace {

constexpr std::int64_t kSecond = 1000000000;
constexpr std::int64_t kT0 = 1767225600 * kSecond;  // 2026-01-01T00:00:00Z

Connection MakeConnection(std::uint64_t seq, std::string client_id) {
  Connection c;
  c.seq = seq;
  c.uid = "uid-" + std::to_string(seq);
  c.state = ConnectionState::kOpen;
  c.open_time_ns = kT0 + static_cast<std::int64_t>(seq) * kSecond;
  c.client_id = std::move(client_id);
  c.protocol_version = 4;
  c.ip_address = "127.0.0.1";
  c.port = 40000;
  return c;
}

// Six connections: sensors and actuators, two protocol versions, one closed, some subscribed.
std::vector<Connection> Fleet() {
  std::vector<Connection> fleet;
  const char* const ids[] = {"sensor-1", "sensor-2", "actuator-1", "actuator-2", "gateway", "x*"};
  for (std::uint64_t i = 0; i < 6; ++i) fleet.push_back(MakeConnection(i + 1, ids[i]));
  fleet[1].protocol_version = 5;
  fleet[3].protocol_version = 5;
  fleet[4].state = ConnectionState::kClosed;
  fleet[4].close_time_ns = kT0 + 100 * kSecond;
  fleet[0].username = "alice";
  fleet[2].username = "bob";
  Subscription subscription;
  subscription.filter = "events/a";
  subscription.qos = 1;
  subscription.mapping.pattern = Pattern::kEvents;
  fleet[0].subscriptions.push_back(subscription);
  subscription.qos = 2;
  fleet[2].subscriptions.push_back(subscription);
  return fleet;
}

// The seqs the filter matches in Fleet(), or the error message.
std::string Matching(std::string_view text) {
  ConnectionFilter filter;
  const Status status = ConnectionFilter::Parse(text, &filter);
  if (!status.ok()) return status.message();
  std::string seqs;
  for (const Connection& c : Fleet()) {
    if (filter.Matches(c)) seqs += (seqs.empty() ? "" : " ") + std::to_string(c.seq);
  }
  return "[" + seqs + "]";
}

std::string Error(std::string_view text) {
  ConnectionFilter filter;
  const Status status = ConnectionFilter::Parse(text, &filter);
  return status.ok() ? "(no error)" : status.message();
}

TEST(ConnectionFilterBooleanTest, OrNotAndParentheses) {
  const std::pair<const char*, const char*> rows[] = {
      {R"(client_id = "sensor-1" OR client_id = "gateway")", "[1 5]"},
      {R"(client_id = "sensor-*" OR client_id = "actuator-*")", "[1 2 3 4]"},
      {R"(NOT client_id = "sensor-*")", "[3 4 5 6]"},
      {R"(-client_id = "sensor-*")", "[3 4 5 6]"},
      {R"(-(client_id = "sensor-*" OR protocol_version = 5))", "[3 5 6]"},
      {R"(NOT NOT client_id = "gateway")", "[5]"},
      {R"(NOT(client_id = "gateway"))", "[1 2 3 4 6]"},
      {R"(NOT -client_id = "gateway")", "[5]"},
      // NOT binds tightest, then AND, then OR.
      {R"(client_id = "sensor-1" OR client_id = "actuator-*" AND protocol_version = 5)", "[1 4]"},
      {R"((client_id = "sensor-1" OR client_id = "actuator-*") AND protocol_version = 5)", "[4]"},
      {R"(protocol_version = 5 AND client_id = "actuator-*" OR client_id = "sensor-1")", "[1 4]"},
      {R"(NOT protocol_version = 5 AND client_id = "actuator-*")", "[3]"},
      {R"(NOT (protocol_version = 5 AND client_id = "actuator-*"))", "[1 2 3 5 6]"},
      {R"(((client_id = "gateway")))", "[5]"},
      {R"(client_id = "a"OR(client_id = "gateway"))", "[5]"},
      {R"(state = MQTT_CONNECTION_STATE_CLOSED OR username = "bob" OR client_id = "x\*")",
       "[3 5 6]"},
      // A negated != is =, also for unset values and subscriptions.
      {R"(NOT close_time != 2026-01-01T00:01:40Z)", "[5]"},
      {R"(NOT subscriptions.qos != 2)", "[3]"},
      {R"(-subscriptions.qos = 2)", "[1 2 4 5 6]"},
  };
  for (const auto& [text, expected] : rows) {
    SCOPED_TRACE(text);
    EXPECT_EQ(Matching(text), expected);
  }
}

TEST(ConnectionFilterBooleanTest, InOnEveryKindOfField) {
  const std::pair<const char*, const char*> rows[] = {
      {R"(client_id IN ("sensor-1", "gateway", "nobody"))", "[1 5]"},
      {R"(client_id IN ("gateway"))", "[5]"},
      {R"(client_id IN("sensor-1","sensor-1"))", "[1]"},
      {R"(client_id IN ("sensor-*", "gateway"))", "[1 2 5]"},
      {R"(client_id IN ("x\*"))", "[6]"},
      {R"(clientId IN ("gateway"))", "[5]"},
      {R"(NOT client_id IN ("sensor-1", "gateway"))", "[2 3 4 6]"},
      {R"(-client_id IN ("sensor-1", "gateway"))", "[2 3 4 6]"},
      {R"(protocol_version IN (3, 5))", "[2 4]"},
      {R"(state IN (MQTT_CONNECTION_STATE_CLOSED, MQTT_CONNECTION_STATE_OFFLINE))", "[5]"},
      {R"(clean_session IN (true))", "[1 2 3 4 5 6]"},
      {R"(clean_session IN (false))", "[]"},
      {R"(total_request_statistics.publish_count IN (0, 18446744073709551615))", "[1 2 3 4 5 6]"},
      // An unset value is in no list.
      {R"(close_time IN (2026-01-01T00:01:40Z, 2026-01-01T00:00:01Z))", "[5]"},
      {R"(idle_duration IN (0, 1s))", "[]"},
      // Repeated fields: ANY subscription in the list; NOT IN: none.
      {R"(subscriptions.qos IN (1, 2))", "[1 3]"},
      {R"(subscriptions.qos IN (2))", "[3]"},
      {R"(NOT subscriptions.qos IN (2))", "[1 2 4 5 6]"},
      {R"(subscriptions.filter IN ("events/*"))", "[1 3]"},
      {R"(username IN ("alice", "bob") AND protocol_version = 4)", "[1 3]"},
  };
  for (const auto& [text, expected] : rows) {
    SCOPED_TRACE(text);
    EXPECT_EQ(Matching(text), expected);
  }
}

TEST(ConnectionFilterBooleanTest, ErrorsNameWhatAndWhere) {
  const std::pair<const char*, const char*> rows[] = {
      // Keywords in another case.
      {R"(client_id = "a" or client_id = "b")",
       "'or' is not supported: write OR in upper case at position 17"},
      {R"(not client_id = "a")", "'not' is not supported: write NOT in upper case at position 1"},
      {R"(client_id in ("a"))", "'in' is not supported: write IN in upper case at position 11"},
      {R"(client_id In ("a"))", "'In' is not supported: write IN in upper case at position 11"},
      // OR and NOT without an operand.
      {R"(client_id = "a" OR)", "Expected a field name after OR, got end of filter at position 19"},
      {R"(client_id = "a" OR OR client_id = "b")",
       "Expected a field name, got 'OR' at position 20"},
      {R"(OR client_id = "a")", "Expected a field name, got 'OR' at position 1"},
      {"NOT", "Expected a field name or '(' after NOT, got end of filter at position 4"},
      {R"(client_id = "a" AND NOT)",
       "Expected a field name or '(' after NOT, got end of filter at position 24"},
      {R"(NOT = "a")", "Expected a field name, got '=' at position 5"},
      {R"(client_id = "a" NOT client_id = "b")",
       "Expected AND, OR or end of filter, got 'NOT' at position 17"},
      // '-'.
      {R"(- client_id = "a")",
       "Expected a field name or '(' right after '-' (no space between) at position 1"},
      {"-", "Expected a field name or '(' right after '-' (no space between) at position 1"},
      {R"(-nonsense = "a")", "Unknown field 'nonsense' at position 2"},
      {R"(client_id = "a" -client_id = "b")",
       "Expected AND, OR or end of filter, got '-client_id' at position 17"},
      // Parentheses.
      {R"((client_id = "a")",
       "Expected ')' to close the '(' at position 1, got end of filter "
       "at position 17"},
      {R"(client_id = "a")", "(no error)"},
      {R"(client_id = "a"))", "Unmatched ')' at position 16"},
      {"()", "Expected a field name, NOT or '(' inside parentheses, got ')' at position 2"},
      {"(", "Expected a field name after '(', got end of filter at position 2"},
      {R"((client_id = "a" "b"))", "Expected AND, OR or ')', got quoted \"b\" at position 18"},
      {R"((client_id = "a" and state = OPEN))",
       "'and' is not supported: write AND in upper case at position 18"},
      {R"(client_id = ("a"))", "Expected a value for field 'client_id', got '(' at position 13"},
      {R"(client_id = "a" ())", "Expected AND, OR or end of filter, got '(' at position 17"},
      // IN.
      {R"(client_id IN "a")", "Expected '(' after IN, got quoted \"a\" at position 14"},
      {"client_id IN", "Expected '(' after IN, got end of filter at position 13"},
      {"client_id IN ()",
       "Expected a value in the IN list of field 'client_id', got ')' (an empty list) at "
       "position 15"},
      {R"(client_id IN ("a",))", "Expected a value for field 'client_id', got ')' at position 19"},
      {R"(client_id IN ("a" "b"))",
       "Expected ',' or ')' in the IN list of field 'client_id', got quoted \"b\" at position 19"},
      {R"(client_id IN ("a")",
       "Expected ',' or ')' in the IN list of field 'client_id', got end of filter at "
       "position 18"},
      {R"(client_id IN ("a", b))",
       "Expected quoted literal for field 'client_id', got unquoted 'b' at position 20"},
      {"protocol_version IN (4, \"5\")",
       "Expected an unquoted integer for field 'protocol_version', got quoted \"5\" at "
       "position 25"},
      {R"(client_id IN ("a\q"))",
       "Invalid escape '\\q' in string literal (allowed: \\\" \\\\ \\/ \\b \\f \\n \\r \\t "
       "\\uXXXX \\*) at position 17"},
      {R"(IN ("a"))", "Expected a field name, got 'IN' at position 1"},
      {R"(client_id = "a" IN ("b"))", "Expected AND, OR or end of filter, got 'IN' at position 17"},
      // Positions count characters.
      {"client_id IN (\"\xC3\xA9\" x)",
       "Expected ',' or ')' in the IN list of field 'client_id', got 'x' at position 19"},
  };
  for (const auto& [text, expected] : rows) {
    SCOPED_TRACE(text);
    EXPECT_EQ(Error(text), expected);
  }
  const std::string enum_error = Error("close_reason IN (CLIENT_DISCONNECT, GONE)");
  EXPECT_EQ(enum_error.rfind("Unknown value 'GONE' for enum field 'close_reason'; expected", 0), 0u)
      << enum_error;
  EXPECT_EQ(enum_error.substr(enum_error.size() - 15), " at position 37") << enum_error;
}

TEST(ConnectionFilterBooleanTest, NestingIsBounded) {
  std::string nested = R"(client_id = "gateway")";
  for (int i = 0; i < 63; ++i) nested = "(" + nested + ")";
  EXPECT_EQ(Matching(nested), "[5]");
  EXPECT_EQ(Error("(" + nested + ")"),
            "Parentheses and negations nest deeper than 64 at position 65");
  std::string negations;
  for (int i = 0; i < 63; ++i) negations += "NOT ";
  EXPECT_EQ(Matching(negations + R"(client_id = "gateway")"), "[1 2 3 4 6]");
  EXPECT_EQ(Error(negations + R"(NOT client_id = "gateway")"),
            "Parentheses and negations nest deeper than 64 at position 257");
  EXPECT_EQ(Error(std::string(64, '-') + R"(client_id = "a")"),
            "Parentheses and negations nest deeper than 64 at position 65");
}

// `n` distinct quoted client ids, comma separated.
std::string IdList(std::size_t n) {
  std::string list;
  for (std::size_t i = 0; i < n; ++i) {
    list += (i == 0 ? "\"" : ", \"") + std::string("id-") + std::to_string(i) + "\"";
  }
  return list;
}

TEST(ConnectionFilterBooleanTest, InListsAreLeftOutOfTheLengthLimit) {
  // 10,000 values (about 120,000 characters) pass; the 10,001st is refused where it is.
  const std::string most = "client_id IN (" + IdList(kMaxInValues) + ")";
  EXPECT_EQ(Error(most), "(no error)");
  const std::string one_more = "client_id IN (" + IdList(kMaxInValues + 1) + ")";
  const std::size_t last = one_more.rfind("\"id-");
  EXPECT_EQ(Error(one_more),
            "The IN list of field 'client_id' has more than 10000 values at "
            "position " +
                std::to_string(last + 1));
  // Outside the lists, the limit holds as before: 1024 characters.
  const std::string list = "client_id IN (" + IdList(2000) + ")";
  // Outside: "client_id IN (" and ")" (15), " AND username = \"" (17), the u's and '"' (1).
  std::string text = list + " AND username = \"" + std::string(1024 - 15 - 17 - 1, 'u') + "\"";
  EXPECT_EQ(Error(text), "(no error)");
  text.insert(text.size() - 1, "u");
  EXPECT_EQ(Error(text),
            "Filter is longer than 1024 characters at position " + std::to_string(text.size()));
  // A syntax error inside a long list is reported as such, not as a length problem.
  const std::string broken = "client_id IN (" + IdList(2000) + " x)";
  EXPECT_EQ(Error(broken),
            "Expected ',' or ')' in the IN list of field 'client_id', got 'x' at "
            "position " +
                std::to_string(broken.size() - 1));
  // The whole text is bounded too.
  EXPECT_EQ(Error(std::string(kMaxFilterTextBytes + 1, ' ')),
            "Filter is longer than 1048576 bytes at position 1048577");
}

TEST(ConnectionFilterBooleanTest, ClausesMadeInCodeMayHoldInLists) {
  FilterClause clause;
  clause.field = FindField("client_id");
  clause.op = CompareOp::kIn;
  clause.in.texts = {"gateway", "sensor-2", "gateway"};  // any order, repeats allowed
  clause.in.prefixes = {"actuator-"};
  const ConnectionFilter filter({clause});
  std::string seqs;
  for (const Connection& c : Fleet()) {
    if (filter.Matches(c)) seqs += std::to_string(c.seq);
  }
  EXPECT_EQ(seqs, "2345");
}

// What ClientIdCandidates gives: the ids, or "scan".
std::string Candidates(std::string_view text) {
  ConnectionFilter filter;
  const Status status = ConnectionFilter::Parse(text, &filter);
  if (!status.ok()) return status.message();
  std::vector<std::string_view> ids;
  if (!filter.ClientIdCandidates(&ids)) return "scan";
  std::string joined;
  for (const std::string_view id : ids) joined += (joined.empty() ? "" : ",") + std::string(id);
  return "{" + joined + "}";
}

TEST(ConnectionFilterBooleanTest, ClientIdCandidatesFollowTheTree) {
  const std::pair<const char*, const char*> rows[] = {
      {"", "scan"},
      {R"(client_id = "a")", "{a}"},
      {R"(client_id = "a*")", "scan"},
      {R"(client_id != "a")", "scan"},
      {R"(client_id IN ("b", "a", "b"))", "{a,b}"},
      {R"(client_id IN ("b", "a*"))", "scan"},
      {R"(client_id = "a" OR client_id IN ("c", "b"))", "{a,b,c}"},
      {R"(client_id = "a" OR username = "u")", "scan"},
      {R"(client_id IN ("a", "b", "c") AND (client_id = "d" OR client_id = "e"))", "{d,e}"},
      {R"(username = "u" AND client_id IN ("a", "b"))", "{a,b}"},
      {R"(NOT client_id = "a")", "scan"},
      {R"(NOT NOT client_id = "a")", "scan"},
      {R"(subscriptions.filter = "a")", "scan"},
  };
  for (const auto& [text, expected] : rows) {
    SCOPED_TRACE(text);
    EXPECT_EQ(Candidates(text), expected);
  }
}

// A source with an index by client id that counts its lookups and snapshots.
class CountingSource : public ConnectionSource {
 public:
  explicit CountingSource(const std::vector<Connection>& fleet) {
    for (const Connection& c : fleet) all_.push_back(std::make_shared<const Connection>(c));
  }
  std::vector<Connection> Snapshot() const override {
    std::vector<Connection> copies;
    for (const ConnectionPtr& c : all_) copies.push_back(*c);
    return copies;
  }
  ConnectionList SharedSnapshot() const override {
    ++snapshots;
    return std::make_shared<const std::vector<ConnectionPtr>>(all_);
  }
  std::vector<ConnectionPtr> FindByClientId(std::string_view client_id) const override {
    ++lookups;
    std::vector<ConnectionPtr> found;
    for (const ConnectionPtr& c : all_) {
      if (c->client_id == client_id) found.push_back(c);
    }
    return found;
  }

  mutable int snapshots = 0;
  mutable int lookups = 0;

 private:
  std::vector<ConnectionPtr> all_;
};

TEST(ConnectionFilterBooleanTest, QueriesNarrowedToClientIdsUseTheIndexAndAnswerAlike) {
  const std::vector<Connection> fleet = Fleet();
  const char* const filters[] = {
      R"(client_id IN ("sensor-1", "gateway", "nobody", "sensor-1"))",
      R"(client_id = "sensor-2" OR client_id = "actuator-1" AND protocol_version = 4)",
      R"((client_id = "sensor-2" OR client_id = "actuator-2") AND protocol_version = 5)",
      R"(client_id IN ("sensor-1", "sensor-2") AND NOT username = "alice")",
  };
  for (const char* text : filters) {
    SCOPED_TRACE(text);
    ConnectionQuery query;
    query.filter = text;
    ConnectionPage from_snapshot;
    ASSERT_TRUE(RunConnectionQuery(fleet, query, &from_snapshot).ok());
    const CountingSource source(fleet);
    ConnectionPage from_index;
    ASSERT_TRUE(RunConnectionQuery(source, query, &from_index).ok());
    EXPECT_EQ(source.snapshots, 0);
    EXPECT_GT(source.lookups, 0);
    ASSERT_EQ(from_index.connections.size(), from_snapshot.connections.size());
    EXPECT_GT(from_index.connections.size(), 0u);
    for (std::size_t i = 0; i < from_index.connections.size(); ++i) {
      EXPECT_EQ(from_index.connections[i].seq, from_snapshot.connections[i].seq);
    }
    EXPECT_EQ(from_index.total_size, from_snapshot.total_size);
  }
  // One lookup per distinct id.
  const CountingSource source(fleet);
  ConnectionQuery query;
  query.filter = R"(client_id IN ("sensor-1", "gateway", "nobody", "sensor-1"))";
  ConnectionPage page;
  ASSERT_TRUE(RunConnectionQuery(source, query, &page).ok());
  EXPECT_EQ(source.lookups, 3);
  // An OR with a clause the index cannot answer reads the snapshot.
  const CountingSource scanned(fleet);
  query.filter = R"(client_id = "sensor-1" OR username = "bob")";
  ASSERT_TRUE(RunConnectionQuery(scanned, query, &page).ok());
  EXPECT_EQ(scanned.lookups, 0);
  EXPECT_EQ(scanned.snapshots, 1);
  EXPECT_EQ(page.total_size, 2);
}

}  // namespace
}  // namespace mqc
