// SPDX-License-Identifier: BSD-3-Clause
// Tests for order_by (connection_order.h): every ordering with its tiebreaks, unset values first
// ascending, every scalar field in both directions, and every order_by error with its position.
#include "companion/query/connection_order.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../../support/connection_builder.h"
#include "../../support/query_fleet.h"
#include "companion/connection.h"
#include "companion/query/connection_fields.h"

namespace mqc {
namespace {

struct ErrorRow {
  std::string input;
  std::string message;
};

std::string OrderError(const std::string& order_by) {
  const Outcome outcome = RunQuery(FilterFleet(), MakeQuery("", order_by));
  return outcome.ok ? "(no error)" : outcome.error;
}

// Four connections whose values tie and differ in the fields the orderings look at.
std::vector<Connection> OrderFleet() {
  Connection o1 = ConnectionBuilder(1)
                      .Identity("u2", 0)
                      .Client("b", "")
                      .From("127.0.0.1", 0)
                      .Closed(kTestTime0 + 10, CloseReason::kUnspecified);
  o1.idle_ns = -1;  // unknown: first in ascending order
  o1.total_statistics->publish_bytes = 3;

  Connection o2 = ConnectionBuilder(2)
                      .Identity("u1", 0)
                      .Client("a", "x")
                      .Mqtt(5, true, 0)
                      .From("127.0.0.1", 100);
  o2.idle_ns = 5;
  o2.total_statistics->publish_bytes = 1;

  Connection o3 = ConnectionBuilder(3).Identity("u3", 0).Client("c", "y").From("127.0.0.1", 50);
  o3.open_time_ns = kTestTime0 - 1;
  o3.idle_ns = 0;
  o3.total_statistics->publish_bytes = 2;

  Connection o4 = ConnectionBuilder(4)
                      .Identity("u0", 0)
                      .Client("a", "")
                      .Mqtt(3, true, 0)
                      .From("127.0.0.1", 0)
                      .Closed(kTestTime0 + 5, CloseReason::kUnspecified);
  o4.open_time_ns = kTestTime0 + 1;
  o4.idle_ns = 1;
  o4.total_statistics->publish_bytes = kTestMaxU64;
  return {o1, o2, o3, o4};
}

TEST(ConnectionOrderTest, Orders) {
  const std::pair<const char*, std::vector<std::uint64_t>> rows[] = {
      {"", {3, 2, 1, 4}},  // open_time, then uid, then seq
      {"  ", {3, 2, 1, 4}},
      {"client_id", {2, 4, 1, 3}},  // the two "a" by seq
      {"client_id asc", {2, 4, 1, 3}},
      {"client_id Asc", {2, 4, 1, 3}},
      {"client_id desc", {3, 1, 2, 4}},  // ties still by seq ascending
      {"clientId DESC", {3, 1, 2, 4}},
      {"state", {2, 3, 1, 4}},  // OPEN (1) before CLOSED (2): by number, not by name
      {"state desc", {1, 4, 2, 3}},
      {"close_time", {2, 3, 4, 1}},       // unset first
      {"close_time desc", {1, 4, 2, 3}},  // unset last
      {"idle_duration", {1, 3, 4, 2}},
      {"idleDuration desc", {2, 4, 3, 1}},
      {"source.port", {1, 4, 3, 2}},
      {"username", {1, 4, 2, 3}},
      {"protocol_version desc, client_id", {2, 1, 3, 4}},
      {"protocol_version, client_id desc", {4, 3, 1, 2}},
      {" open_time desc , uid ", {4, 2, 1, 3}},
      {"open_time desc,uid desc", {4, 1, 2, 3}},
      {"uid", {4, 2, 1, 3}},
      {"clean_session", {1, 2, 3, 4}},
      {"clean_session desc", {1, 2, 3, 4}},
      {"totalRequestStatistics.publishBytes", {2, 3, 1, 4}},
      {"total_request_statistics.publish_bytes desc", {4, 1, 3, 2}},
  };
  for (const auto& [order_by, seqs] : rows) {
    SCOPED_TRACE(order_by);
    const Outcome outcome = RunQuery(OrderFleet(), MakeQuery("", order_by));
    EXPECT_TRUE(outcome.ok) << outcome.error;
    EXPECT_EQ(outcome.seqs, seqs);
  }
}

// Every scalar field sorts, both ways, and the result is monotonic in that field.
TEST(ConnectionOrderTest, EveryScalarFieldSorts) {
  std::vector<Connection> snapshot = FilterFleet();
  for (const Connection& c : OrderFleet()) {
    snapshot.push_back(c);
    snapshot.back().seq += 10;
  }
  for (const FieldDef& field : ConnectionFields()) {
    if (field.repeated()) continue;
    for (const char* direction : {" asc", " desc"}) {
      const std::string order_by = std::string(field.path) + direction;
      SCOPED_TRACE(order_by);
      const Outcome outcome = RunQuery(snapshot, MakeQuery("", order_by));
      ASSERT_TRUE(outcome.ok) << outcome.error;
      ASSERT_EQ(outcome.connections.size(), snapshot.size());
      for (std::size_t i = 1; i < outcome.connections.size(); ++i) {
        const int comparison = CompareFieldValues(field.kind, field.get(outcome.connections[i - 1]),
                                                  field.get(outcome.connections[i]));
        EXPECT_TRUE(direction[1] == 'a' ? comparison <= 0 : comparison >= 0) << i;
        if (comparison == 0) {
          EXPECT_LT(outcome.connections[i - 1].seq, outcome.connections[i].seq);
        }
      }
    }
  }
}

TEST(ConnectionOrderTest, ErrorMessagesNameWhatAndWhere) {
  const std::vector<ErrorRow> rows = {
      {"foo", "Unknown order_by field 'foo' at position 1"},
      {"seq", "Unknown order_by field 'seq' at position 1"},
      {"client_id, foo desc", "Unknown order_by field 'foo' at position 12"},
      {"client_id up",
       "Unknown order_by direction 'up' for field 'client_id' (expected asc or desc) at position "
       "11"},
      {"client_id ascending",
       "Unknown order_by direction 'ascending' for field 'client_id' (expected asc or desc) at "
       "position 11"},
      {"client_id asc desc", "Expected ',' or end of order_by, got 'desc' at position 15"},
      {"subscriptions.qos",
       "order_by cannot use the repeated field 'subscriptions.qos' at position 1"},
      {"uid, subscriptions.filter desc",
       "order_by cannot use the repeated field 'subscriptions.filter' at position 6"},
      {"uid, client_id, uid desc", "order_by names the field 'uid' more than once at position 17"},
      {"clientId, client_id", "order_by names the field 'client_id' more than once at position 11"},
      {"client_id,", "Expected a field name in order_by, got end of order_by at position 11"},
      {"client_id, ", "Expected a field name in order_by, got end of order_by at position 12"},
      {"client_id,,uid", "Expected a field name in order_by, got ',' at position 11"},
      {",client_id", "Expected a field name in order_by, got ',' at position 1"},
      {std::string(1025, ' '), "order_by is longer than 1024 characters at position 1025"},
  };
  for (const ErrorRow& row : rows) {
    SCOPED_TRACE(row.input);
    EXPECT_EQ(OrderError(row.input), row.message);
  }
}

}  // namespace
}  // namespace mqc
