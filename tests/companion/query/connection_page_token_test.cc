// SPDX-License-Identifier: BSD-3-Clause
// Tests for page tokens (connection_page_token.h): a token belongs to its filter and order_by,
// malformed ones are refused, and every kind of sort value round-trips.
#include "companion/query/connection_page_token.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "../../support/query_fleet.h"
#include "companion/connection.h"
#include "companion/query/connection_order.h"
#include "companion/query/connection_query.h"
#include "link/status.h"

namespace mqc {
namespace {

TEST(ConnectionPageTokenTest, TokensBelongToTheirFilterAndOrder) {
  const std::vector<Connection> fleet = FilterFleet();
  const Outcome first = RunQuery(fleet, MakeQuery(R"(client_id = "sensor-*")", "client_id", 1));
  ASSERT_TRUE(first.ok);
  ASSERT_FALSE(first.next_page_token.empty());
  const std::string token = first.next_page_token;
  const std::string foreign = "page_token does not belong to this filter and order_by";
  const std::pair<ConnectionQuery, std::string> rows[] = {
      {MakeQuery(R"(client_id = "sensor-*")", "client_id", 1, token), ""},
      {MakeQuery(R"(client_id = "sensor-*")", "client_id", 500, token), ""},  // sizes may change
      {MakeQuery(R"(client_id = "sensor*")", "client_id", 1, token), foreign},
      {MakeQuery(R"(client_id="sensor-*")", "client_id", 1, token), foreign},
      {MakeQuery("", "client_id", 1, token), foreign},
      {MakeQuery(R"(client_id = "sensor-*")", "client_id desc", 1, token), foreign},
      {MakeQuery(R"(client_id = "sensor-*")", "", 1, token), foreign},
  };
  for (const auto& [query, message] : rows) {
    SCOPED_TRACE(query.filter + " / " + query.order_by);
    const Outcome outcome = RunQuery(fleet, query);
    EXPECT_EQ(outcome.ok ? "" : outcome.error, message);
  }
  // The filter and order_by are part of the fingerprint with a boundary between them.
  EXPECT_NE(QueryFingerprint("ab", "c"), QueryFingerprint("a", "bc"));
}

TEST(ConnectionPageTokenTest, MalformedTokens) {
  const std::vector<Connection> fleet = FilterFleet();
  const Outcome first = RunQuery(fleet, MakeQuery("", "client_id, open_time", 1));
  ASSERT_FALSE(first.next_page_token.empty());
  const std::string token = first.next_page_token;
  std::string other_version = token;
  other_version[0] = 'B';  // the version byte becomes 5
  const std::string rows[] = {
      "!!!!",
      "A",
      "AAAA",
      token + "A",
      token + "AA",
      token + "=",
      token.substr(0, token.size() - 2),
      token.substr(0, 12),
      "a b",
      other_version,
  };
  for (const std::string& bad : rows) {
    SCOPED_TRACE(bad);
    const Outcome outcome = RunQuery(fleet, MakeQuery("", "client_id, open_time", 1, bad));
    EXPECT_FALSE(outcome.ok);
    EXPECT_EQ(outcome.error, "malformed page_token");
    EXPECT_TRUE(outcome.seqs.empty());
  }
}

TEST(ConnectionPageTokenTest, TokensRoundTripEveryKindOfValue) {
  ConnectionOrder order;
  const Status parsed = ConnectionOrder::Parse(
      "client_id desc, close_time, source.port, total_request_statistics.publish_bytes, state, "
      "idle_duration",
      &order);
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  OrderCursor cursor;
  cursor.seq = kTestMaxU64 - 3;
  std::string every_byte;
  for (int b = 0; b < 256; ++b) every_byte.push_back(static_cast<char>(b));
  cursor.values = {
      {true, 0, 0, every_byte}, {false, 0, 0, ""},
      {true, -5, 0, ""},        {true, 0, kTestMaxU64, ""},
      {true, 2, 0, ""},         {true, std::numeric_limits<std::int64_t>::min(), 0, ""}};
  const std::string token = EncodePageToken(42, order, cursor);
  OrderCursor decoded;
  const Status decoded_status = DecodePageToken(token, 42, order, &decoded);
  ASSERT_TRUE(decoded_status.ok()) << decoded_status.message();
  EXPECT_EQ(decoded.seq, cursor.seq);
  ASSERT_EQ(decoded.values.size(), cursor.values.size());
  for (std::size_t i = 0; i < cursor.values.size(); ++i) {
    EXPECT_EQ(decoded.values[i].is_set, cursor.values[i].is_set);
    EXPECT_EQ(decoded.values[i].number, cursor.values[i].number);
    EXPECT_EQ(decoded.values[i].unsigned_number, cursor.values[i].unsigned_number);
    EXPECT_EQ(decoded.values[i].text, cursor.values[i].text);
  }
  const Status foreign = DecodePageToken(token, 43, order, &decoded);
  EXPECT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.message(), "page_token does not belong to this filter and order_by");
  // Every strict prefix of the token is malformed.
  for (std::size_t length = 1; length < token.size(); ++length) {
    EXPECT_FALSE(DecodePageToken(token.substr(0, length), 42, order, &decoded).ok());
  }
}

}  // namespace
}  // namespace mqc
