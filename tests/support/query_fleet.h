// SPDX-License-Identifier: BSD-3-Clause
// What the tests of src/companion/query/ share: the filter fleet (four connections that differ in
// every field the tests look at), a ConnectionQuery from its parts, and RunQuery, which runs one
// through RunConnectionQuery (over a source, or over a fleet as a FleetSource holds it) and keeps
// what came back (the seqs in page order, the page's connections, total, next token, error).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "companion/connection.h"
#include "companion/query/connection_query.h"
#include "connection_builder.h"
#include "fleet_source.h"
#include "link/status.h"
#include "link/topic_mapping.h"

namespace mqc {

inline constexpr std::uint64_t kTestMaxU64 = std::numeric_limits<std::uint64_t>::max();

// Four connections that differ in every field the filter tests look at.
inline std::vector<Connection> FilterFleet() {
  Connection c1 = ConnectionBuilder(1)
                      .Identity("a1", 1)
                      .Client("sensor-1", "alice")
                      .Mqtt(4, true, 60)
                      .From("10.0.0.1", 50001)
                      .Proxy("192.0.2.10", 41000);  // behind a load balancer
  c1.authentication = {AuthMechanism::kPassword, AuthState::kSuccess, "alice", {}};
  c1.subscriptions = {TestSubscription("events/a", 1, Pattern::kEvents, "a"),
                      TestSubscription("$share/g1/queues/q", 2, Pattern::kQueues, "q", "g1")};
  c1.idle_ns = 5 * kTestSecond;
  c1.total_statistics = {10, 1000, 20, 2000, 30};
  c1.recent_statistics = {1, 100, 2, 200, 3};

  Connection c2 = ConnectionBuilder(2)
                      .Identity("b2", 2)
                      .Client("sensor-2", "")
                      .Mqtt(5, false, 30)
                      .From("10.0.0.2", 0, "mqtts:8883");
  c2.open_time_ns = kTestTime0 + 3600 * kTestSecond;
  c2.tls = {true, "TLSv1.3", "TLS_AES_256_GCM_SHA384", "CN=dev2"};
  c2.authentication = {AuthMechanism::kMtls, AuthState::kSuccess, "CN=dev2", {}};
  c2.subscriptions = {TestSubscription("store/b", 0, Pattern::kStore, "b")};
  c2.idle_ns = -1;

  Connection c3 = ConnectionBuilder(3)
                      .Identity("c3", 1)
                      .Client("actuator-3", "bob")
                      .Mqtt(3, true, 0)
                      .From("::1", 60000, "ws:8083")
                      .Closed(kTestTime0 + 1800 * kTestSecond, CloseReason::kKicked);
  c3.open_time_ns = kTestTime0 - 3600 * kTestSecond;
  c3.authentication = {AuthMechanism::kAnonymous, AuthState::kUnauthenticated, "", {}};
  c3.idle_ns = 120 * kTestSecond;
  c3.total_statistics = {5, 0, 0, 0, 0};

  Connection c4 = ConnectionBuilder(4)
                      .Identity("d4", 1)
                      .Client("sensor-4*", "carol")
                      .Mqtt(5, true, 120)
                      .From("10.0.0.4", 40000)
                      .Closed(kTestTime0 + 7200 * kTestSecond, CloseReason::kClientDisconnect);
  c4.tls = {true, "TLSv1.2", "", ""};
  c4.authentication = {AuthMechanism::kEnhanced, AuthState::kFailure, "",
                       std::string("SCRAM-SHA-1")};
  c4.subscriptions = {TestSubscription("$SYS/#", 0, Pattern::kNone, ""),
                      TestSubscription("commands/x", 1, Pattern::kCommands, "x")};
  c4.idle_ns = 100 * kTestMilli;
  c4.total_statistics = {7, kTestMaxU64, 0, 0, 0};
  return {c1, c2, c3, c4};
}

inline ConnectionQuery MakeQuery(std::string filter, std::string order_by = "",
                                 std::int64_t page_size = 0, std::string page_token = "",
                                 std::int64_t offset = 0) {
  ConnectionQuery query;
  query.filter = std::move(filter);
  query.order_by = std::move(order_by);
  query.page_size = page_size;
  query.page_token = std::move(page_token);
  query.offset = offset;
  return query;
}

struct Outcome {
  bool ok = false;
  std::vector<std::uint64_t> seqs;  // in page order
  std::vector<Connection> connections;
  std::int64_t total_size = 0;
  std::string next_page_token;
  std::string error;
};

// A query's page and status as one Outcome.
inline Outcome OutcomeOf(const Status& status, ConnectionPage page) {
  Outcome outcome;
  outcome.ok = status.ok();
  outcome.error = status.message();
  for (const Connection& c : page.connections) outcome.seqs.push_back(c.seq);
  outcome.connections = std::move(page.connections);
  outcome.total_size = page.total_size;
  outcome.next_page_token = std::move(page.next_page_token);
  return outcome;
}

inline Outcome RunQuery(const ConnectionSource& source, const ConnectionQuery& query) {
  ConnectionPage page;
  const Status status = RunConnectionQuery(source, query, &page);
  return OutcomeOf(status, std::move(page));
}

inline Outcome RunQuery(const std::vector<Connection>& fleet, const ConnectionQuery& query) {
  return RunQuery(FleetSource(fleet), query);
}

inline std::string FilterError(const std::string& filter) {
  const Outcome outcome = RunQuery(FilterFleet(), MakeQuery(filter));
  return outcome.ok ? "(no error)" : outcome.error;
}

}  // namespace mqc
