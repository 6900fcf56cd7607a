// SPDX-License-Identifier: BSD-3-Clause
// FleetQuery against peers on loopback: peers that answer as a broker would (a node query over
// their own connections, in binary protobuf), and peers that answer garbage, a Connect error,
// too much, or nothing in time.
#include "companion/fleet/fleet_query.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <chrono>
#include <cstdio>
#include <initializer_list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../../support/connection_builder.h"
#include "../../support/fleet_source.h"
#include "companion/http/connect_rpc_proto.h"
#include "loopback_server.h"

namespace mqc {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

std::vector<Connection> NodeConnections(std::uint32_t node, std::uint64_t count) {
  std::vector<Connection> connections;
  for (std::uint64_t seq = 1; seq <= count; ++seq) {
    Connection c = TestConnection(seq);
    c.node_id = node;
    c.uid = "uid-" + std::to_string(node) + "-" + std::to_string(seq);
    c.client_id = "c-" + std::to_string((seq * 3 + node) % 10);
    connections.push_back(c);
  }
  return connections;
}

// The body of a raw HTTP request.
std::string BodyOf(const std::string& request) {
  const std::size_t end = request.find("\r\n\r\n");
  return end == std::string::npos ? std::string() : request.substr(end + 4);
}

// A peer that answers as a broker does: its node query over `connections`, as node `node_id`,
// after `delay`.
LoopbackServer::Handler BrokerLike(std::shared_ptr<FleetSource> source,
                                   std::uint32_t node_id = 0,
                                   std::chrono::milliseconds delay = {}) {
  return [source, node_id, delay](const std::string& raw) {
    std::this_thread::sleep_for(delay);
    connections_v1::ListConnectionsRequest request;
    const std::string body = BodyOf(raw);
    if (!request.ParseFromString(body)) return LoopbackServer::Response(400, "text/plain", "bad");
    ConnectionQuery query;
    query.filter = request.filter();
    query.order_by = request.order_by();
    query.page_size = request.page_size();
    query.page_token = request.page_token();
    ConnectionPage page;
    if (!RunConnectionQuery(*source, query, &page).ok()) {
      return LoopbackServer::Response(400, "application/json",
                                      R"({"code":"invalid_argument","message":"bad query"})");
    }
    page.node_id = node_id;
    return LoopbackServer::Response(200, "application/proto",
                                    EncodeListConnectionsResponseProto(page));
  };
}

PeerUrl Loopback(int port) { return *ParsePeerUrl("http://127.0.0.1:" + std::to_string(port)); }

std::shared_ptr<const PeerClient> Client() {
  StatusOr<std::unique_ptr<PeerClient>> client = PeerClient::Create("", false);
  return std::shared_ptr<const PeerClient>(std::move(client).value());
}

// The options of a fleet of the peers on these loopback ports.
FleetQueryOptions PeersAt(std::initializer_list<int> ports) {
  FleetQueryOptions options;
  for (const int port : ports) options.peers.push_back(Loopback(port));
  options.client = Client();
  return options;
}

TEST(FleetQueryTest, MergesThePeersAndAsksThemForTheirNodeAlone) {
  const FleetSource local(NodeConnections(1, 5));
  auto source_b = std::make_shared<FleetSource>(NodeConnections(2, 6));
  auto source_c = std::make_shared<FleetSource>(NodeConnections(3, 4));
  LoopbackServer b(BrokerLike(source_b));
  LoopbackServer c(BrokerLike(source_c));
  FleetQueryOptions options = PeersAt({b.port(), c.port()});
  options.token = "fleet-token-0123456789";
  const FleetQuery fleet(local, options);

  ListConnectionsRequest request;
  request.order_by = "client_id desc";
  request.page_size = 4;
  request.scope = ConnectionScope::kFleet;
  std::vector<std::string> client_ids;
  std::vector<std::uint32_t> nodes;
  std::string token;
  for (int round = 0; round < 20; ++round) {
    request.page_token = token;
    ConnectionPage page;
    const Status status = fleet.Run(request, Clock::now() + std::chrono::seconds(5), &page);
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_TRUE(page.peer_errors.empty());
    EXPECT_EQ(page.total_size, 15);
    for (const Connection& connection : page.connections) {
      client_ids.push_back(connection.client_id);
      nodes.push_back(connection.node_id);
    }
    token = page.next_page_token;
    if (token.empty()) break;
  }
  EXPECT_TRUE(token.empty());
  ASSERT_EQ(client_ids.size(), 15u);
  EXPECT_TRUE(std::is_sorted(client_ids.rbegin(), client_ids.rend()));
  EXPECT_EQ(std::count(nodes.begin(), nodes.end(), 2u), 6);
  EXPECT_EQ(std::count(nodes.begin(), nodes.end(), 3u), 4);

  // What a peer got: scope NODE (so it never fans out again), the token, the same query; the
  // first request of each page (the second looks the page's open client ids up).
  const std::string sent = b.all_requests().front();
  EXPECT_THAT(sent, HasSubstr("Authorization: Bearer fleet-token-0123456789\r\n"));
  EXPECT_THAT(sent, HasSubstr("Connect-Timeout-Ms: "));
  connections_v1::ListConnectionsRequest asked;
  ASSERT_TRUE(asked.ParseFromString(BodyOf(sent)));
  EXPECT_EQ(asked.scope(), connections_v1::CONNECTION_SCOPE_NODE);
  EXPECT_EQ(asked.order_by(), "client_id desc");
  EXPECT_EQ(asked.page_size(), 4);
}

TEST(FleetQueryTest, PeersThatFailAreNamedAndTheRestIsAnswered) {
  const FleetSource local(NodeConnections(1, 3));
  LoopbackServer garbage([](const std::string&) {
    return LoopbackServer::Response(200, "application/proto", "\xff\xff\xff garbage");
  });
  LoopbackServer html([](const std::string&) {
    return LoopbackServer::Response(200, "text/html", "<html>hello</html>");
  });
  LoopbackServer refusing([](const std::string&) {
    return LoopbackServer::Response(401, "application/json",
                                    R"({"code":"unauthenticated","message":"no token"})");
  });
  LoopbackServer not_http([](const std::string&) { return std::string("SSH-2.0-x\r\n"); });
  LoopbackServer slow([](const std::string&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return std::string();
  });
  auto too_many_source = std::make_shared<FleetSource>(NodeConnections(9, 50));
  LoopbackServer too_many([too_many_source](const std::string&) {
    ConnectionPage page;
    ConnectionQuery query;
    query.page_size = 50;
    RunConnectionQuery(*too_many_source, query, &page);
    return LoopbackServer::Response(200, "application/proto",
                                    EncodeListConnectionsResponseProto(page));
  });
  const FleetQuery fleet(local, PeersAt({garbage.port(), html.port(), refusing.port(),
                                         not_http.port(), slow.port(), too_many.port()}));
  ListConnectionsRequest request;
  request.page_size = 10;
  ConnectionPage page;
  const auto start = Clock::now();
  ASSERT_TRUE(fleet.Run(request, start + std::chrono::milliseconds(500), &page).ok());
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(1400));  // the slow one not awaited
  EXPECT_EQ(page.connections.size(), 3u);
  EXPECT_EQ(page.total_size, 3);
  EXPECT_TRUE(page.next_page_token.empty());
  ASSERT_EQ(page.peer_errors.size(), 6u);
  const auto error_of = [&page](const LoopbackServer& server) {
    for (const PeerFailure& failure : page.peer_errors) {
      if (failure.peer == "http://127.0.0.1:" + std::to_string(server.port())) {
        return failure.code + ": " + failure.message;
      }
    }
    return std::string("(not named)");
  };
  EXPECT_THAT(error_of(garbage), HasSubstr("internal: the peer's answer is not a valid binary"));
  EXPECT_THAT(error_of(html), HasSubstr("Content-Type 'text/html'"));
  EXPECT_THAT(error_of(refusing), HasSubstr("unauthenticated: the peer answered unauthenticated"));
  EXPECT_THAT(error_of(not_http), HasSubstr("internal: the answer is not HTTP/1.x"));
  EXPECT_THAT(error_of(slow), HasSubstr("deadline_exceeded: no answer in time"));
  EXPECT_THAT(error_of(too_many), HasSubstr("does not add up (50 connections for a page of 10"));
}

TEST(FleetQueryTest, EachBrokerThatAnsweredIsListedWithItsCountAndAnswerTime) {
  const FleetSource local(NodeConnections(1, 5));
  auto source_b = std::make_shared<FleetSource>(NodeConnections(2, 6));
  LoopbackServer b(BrokerLike(source_b, 2, std::chrono::milliseconds(40)));
  LoopbackServer garbage([](const std::string&) {
    return LoopbackServer::Response(200, "application/proto", "\xff\xff\xff garbage");
  });
  FleetQueryOptions options = PeersAt({b.port(), garbage.port()});
  options.node_id = 1;
  const FleetQuery fleet(local, options);
  ListConnectionsRequest request;
  request.filter = "client_id != \"c-0\"";
  ConnectionPage page;
  ASSERT_TRUE(fleet.Run(request, Clock::now() + std::chrono::seconds(5), &page).ok());
  ASSERT_EQ(page.node_answers.size(), 2u);  // this broker first, the one that failed not
  const NodeAnswer& self = page.node_answers[0];
  const NodeAnswer& peer = page.node_answers[1];
  EXPECT_EQ(self.peer, "");
  EXPECT_EQ(self.node_id, 1u);
  EXPECT_EQ(peer.peer, "http://127.0.0.1:" + std::to_string(b.port()));
  EXPECT_EQ(peer.node_id, 2u);
  // Node 1's client ids c-4, c-7, c-0, c-3, c-6; node 2's c-5, c-8, c-1, c-4, c-7, c-0.
  EXPECT_EQ(self.total_size, 4);
  EXPECT_EQ(peer.total_size, 5);
  EXPECT_EQ(page.total_size, self.total_size + peer.total_size);
  EXPECT_GE(peer.answer_ms, 40.0);
  EXPECT_LT(peer.answer_ms, 5000.0);
  EXPECT_GE(self.answer_ms, 0.0);
  EXPECT_LT(self.answer_ms, peer.answer_ms);
  ASSERT_EQ(page.peer_errors.size(), 1u);

  // The duplicated ids (c-0, c-4 and c-7 are open on both): the walk of open ids and the
  // lookup, each broker's part of both timed.
  request.filter = "duplicate_client_id = true";
  ASSERT_TRUE(fleet.Run(request, Clock::now() + std::chrono::seconds(5), &page).ok());
  EXPECT_EQ(page.total_size, 6);
  ASSERT_EQ(page.node_answers.size(), 2u);
  EXPECT_EQ(page.node_answers[0].peer, "");
  EXPECT_EQ(page.node_answers[0].node_id, 1u);
  EXPECT_EQ(page.node_answers[0].total_size, 3);
  EXPECT_EQ(page.node_answers[1].node_id, 2u);
  EXPECT_EQ(page.node_answers[1].total_size, 3);
  EXPECT_GE(page.node_answers[1].answer_ms, 80.0);  // two requests of 40 ms
  EXPECT_GT(page.node_answers[0].answer_ms, 0.0);
}

TEST(FleetQueryTest, BadInputIsRefusedBeforeAnyPeerIsAsked) {
  const FleetSource local(NodeConnections(1, 3));
  auto source_b = std::make_shared<FleetSource>(NodeConnections(2, 3));
  LoopbackServer b(BrokerLike(source_b));
  const FleetQuery fleet(local, PeersAt({b.port()}));
  ConnectionPage page;
  ListConnectionsRequest request;
  request.filter = "nonsense = 1";
  EXPECT_EQ(fleet.Run(request, Clock::now() + std::chrono::seconds(2), &page).code(),
            StatusCode::kInvalidArgument);
  request = ListConnectionsRequest();
  request.order_by = "bogus";
  EXPECT_EQ(fleet.Run(request, Clock::now() + std::chrono::seconds(2), &page).code(),
            StatusCode::kInvalidArgument);
  request = ListConnectionsRequest();
  request.page_size = 10001;
  EXPECT_THAT(fleet.Run(request, Clock::now() + std::chrono::seconds(2), &page).message(),
              HasSubstr("page_size"));
  request = ListConnectionsRequest();
  request.page_token = "AQ";
  EXPECT_THAT(fleet.Run(request, Clock::now() + std::chrono::seconds(2), &page).message(),
              HasSubstr("page_token"));
  EXPECT_EQ(b.requests(), 0);
}

TEST(FleetQueryTest, AClientIdOpenOnTwoBrokersIsFlaggedEvenWhenOneIsOffThePage) {
  std::vector<Connection> mine = NodeConnections(1, 2);
  mine[0].client_id = "twin";  // sorts last: "c-*" come first
  std::vector<Connection> theirs = NodeConnections(2, 3);
  theirs[2].client_id = "twin";
  const FleetSource local(mine);
  auto source_b = std::make_shared<FleetSource>(theirs);
  LoopbackServer b(BrokerLike(source_b));
  FleetQuery fleet(local, PeersAt({b.port()}));
  prometheus::Registry registry;
  prometheus::Gauge& gauge = prometheus::BuildGauge().Name("duplicates").Register(registry).Add({});
  gauge.Set(-1);
  fleet.SetDuplicatesGauge(&gauge);
  ListConnectionsRequest request;
  request.order_by = "client_id desc, node_id";
  request.page_size = 1;  // only this broker's "twin" is on the first page
  ConnectionPage page;
  ASSERT_TRUE(fleet.Run(request, Clock::now() + std::chrono::seconds(5), &page).ok());
  ASSERT_EQ(page.connections.size(), 1u);
  EXPECT_EQ(page.connections[0].client_id, "twin");
  EXPECT_EQ(page.connections[0].node_id, 1u);
  EXPECT_TRUE(page.connections[0].duplicate_client_id);
  EXPECT_EQ(gauge.Value(), 1);
  // The peer's page answer showed its open "twin" (not taken into the page): no lookup.
  EXPECT_EQ(b.requests(), 1);
  // A filter that keeps the peer's "twin" out of its answer: the lookup asks the peer for the
  // page's open ids, with node scope.
  request.filter = "node_id = 1";
  gauge.Set(-1);
  ASSERT_TRUE(fleet.Run(request, Clock::now() + std::chrono::seconds(5), &page).ok());
  ASSERT_EQ(page.connections.size(), 1u);
  EXPECT_EQ(page.connections[0].client_id, "twin");
  EXPECT_TRUE(page.connections[0].duplicate_client_id);
  EXPECT_EQ(gauge.Value(), 1);
  EXPECT_EQ(b.requests(), 3);
  request.filter.clear();
  connections_v1::ListConnectionsRequest asked;
  ASSERT_TRUE(asked.ParseFromString(BodyOf(b.last_request())));
  EXPECT_EQ(asked.filter(), R"(state = MQTT_CONNECTION_STATE_OPEN AND client_id IN ("twin"))");
  EXPECT_EQ(asked.scope(), connections_v1::CONNECTION_SCOPE_NODE);

  request.page_size = 10;
  ASSERT_TRUE(fleet.Run(request, Clock::now() + std::chrono::seconds(5), &page).ok());
  for (const Connection& connection : page.connections) {
    EXPECT_EQ(connection.duplicate_client_id, connection.client_id == "twin")
        << connection.client_id;
  }
  request.filter = R"(client_id = "c-*")";
  ASSERT_TRUE(fleet.Run(request, Clock::now() + std::chrono::seconds(5), &page).ok());
  EXPECT_EQ(gauge.Value(), 0);  // the last answer had none
}

// This broker's part of each round, held until the peer has been asked for that round (or 2 s
// have passed): it records whether the peer was asked while this broker's own query ran.
class WaitsForThePeer : public FleetSource {
 public:
  WaitsForThePeer(const std::vector<Connection>& fleet, const LoopbackServer* const* peer)
      : FleetSource(fleet), peer_(peer) {}
  ConnectionList SharedSnapshot() const override {
    page_overlapped = WaitForRequests(1);
    return FleetSource::SharedSnapshot();
  }
  std::vector<ConnectionPtr> FindByClientId(std::string_view client_id) const override {
    if (!lookup_started) {
      lookup_started = true;
      lookup_overlapped = WaitForRequests(2);
    }
    return FleetSource::FindByClientId(client_id);
  }
  mutable bool page_overlapped = false;
  mutable bool lookup_started = false;
  mutable bool lookup_overlapped = false;

 private:
  bool WaitForRequests(int count) const {
    for (int i = 0; i < 200; ++i) {
      if ((*peer_)->requests() >= count) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  const LoopbackServer* const* peer_;
};

TEST(FleetQueryTest, ThisBrokersOwnQueriesRunWhileThePeersAnswer) {
  const LoopbackServer* peer = nullptr;
  const WaitsForThePeer local(NodeConnections(1, 3), &peer);
  auto source_b = std::make_shared<FleetSource>(NodeConnections(2, 3));
  LoopbackServer b(BrokerLike(source_b));
  peer = &b;
  const FleetQuery fleet(local, PeersAt({b.port()}));
  ListConnectionsRequest request;
  request.order_by = "client_id";
  ConnectionPage page;
  ASSERT_TRUE(fleet.Run(request, Clock::now() + std::chrono::seconds(10), &page).ok());
  EXPECT_EQ(page.connections.size(), 6u);
  EXPECT_TRUE(page.peer_errors.empty());
  EXPECT_TRUE(local.page_overlapped);
  ASSERT_TRUE(local.lookup_started);
  EXPECT_TRUE(local.lookup_overlapped);
  EXPECT_EQ(b.requests(), 2);
}

TEST(FleetQueryTest, ALookupByClientIdThatShowsEveryMatchNeedsNoSecondRound) {
  std::vector<Connection> mine = NodeConnections(1, 2);
  mine[0].client_id = "twin";
  std::vector<Connection> theirs = NodeConnections(2, 3);
  theirs[2].client_id = "twin";
  theirs[1].client_id = "twin";
  theirs[1].state = ConnectionState::kClosed;  // a closed one counts for nothing
  const FleetSource local(mine);
  auto source_b = std::make_shared<FleetSource>(theirs);
  LoopbackServer b(BrokerLike(source_b));
  const FleetQuery fleet(local, PeersAt({b.port()}));
  ListConnectionsRequest request;
  request.filter = R"(client_id = "twin")";
  request.order_by = "node_id";
  ConnectionPage page;
  ASSERT_TRUE(fleet.Run(request, Clock::now() + std::chrono::seconds(5), &page).ok());
  ASSERT_EQ(page.connections.size(), 3u);
  for (const Connection& connection : page.connections) {
    EXPECT_EQ(connection.duplicate_client_id, connection.state == ConnectionState::kOpen)
        << connection.uid;
  }
  EXPECT_EQ(b.requests(), 1);  // the page alone: it showed every "twin" of the peer

  // A page too small for every match, or a filter on another field too: the lookup round.
  request.page_size = 1;
  ASSERT_TRUE(fleet.Run(request, Clock::now() + std::chrono::seconds(5), &page).ok());
  ASSERT_EQ(page.connections.size(), 1u);
  EXPECT_TRUE(page.connections[0].duplicate_client_id);
  EXPECT_EQ(b.requests(), 3);
  // The walk's next pages: each broker shows what is left after its cursor, not all it holds.
  for (int i = 0; i < 2; ++i) {
    ASSERT_FALSE(page.next_page_token.empty());
    request.page_token = page.next_page_token;
    ASSERT_TRUE(fleet.Run(request, Clock::now() + std::chrono::seconds(5), &page).ok());
    ASSERT_EQ(page.connections.size(), 1u);
    EXPECT_EQ(page.connections[0].duplicate_client_id,
              page.connections[0].state == ConnectionState::kOpen)
        << page.connections[0].uid;
  }
  EXPECT_TRUE(page.next_page_token.empty());
  request.page_token.clear();
  const int asked = b.requests();
  request.page_size = 10;
  request.filter = R"(client_id = "twin" AND node_id = 1)";
  ASSERT_TRUE(fleet.Run(request, Clock::now() + std::chrono::seconds(5), &page).ok());
  ASSERT_EQ(page.connections.size(), 1u);
  EXPECT_TRUE(page.connections[0].duplicate_client_id);
  EXPECT_EQ(b.requests(), asked + 2);
}

// `count` open connections of node `node` whose client ids ("d-0007-n2") interleave with the
// other nodes' in client_id order.
std::vector<Connection> Interleaved(std::uint32_t node, std::uint64_t count) {
  std::vector<Connection> connections = NodeConnections(node, count);
  for (Connection& c : connections) {
    char id[32];
    std::snprintf(id, sizeof(id), "d-%04llu-n%u", static_cast<unsigned long long>(c.seq), node);
    c.client_id = id;
  }
  return connections;
}

// The filter of a broker's lookup of duplicates, or "" when it was not asked for one.
std::string LookupFilterOf(const LoopbackServer& peer) {
  for (const std::string& sent : peer.all_requests()) {
    connections_v1::ListConnectionsRequest asked;
    if (asked.ParseFromString(BodyOf(sent)) && asked.filter().rfind("state = ", 0) == 0) {
      return asked.filter();
    }
  }
  return "";
}

TEST(FleetQueryTest, EachBrokerSendsAboutItsShareAndIsNotAskedForTheIdsItShowed) {
  const FleetSource local(Interleaved(1, 50));
  std::vector<Connection> on_c = Interleaved(3, 50);
  Connection twin = Interleaved(2, 5).back();  // "d-0005-n2", also open on b
  twin.node_id = 3;
  twin.uid = "twin-on-c";
  twin.seq = 99;
  twin.username = "hidden";  // off every page below, still found by the lookup
  on_c.push_back(twin);
  auto source_b = std::make_shared<FleetSource>(Interleaved(2, 50));
  auto source_c = std::make_shared<FleetSource>(on_c);
  LoopbackServer b(BrokerLike(source_b));
  LoopbackServer c(BrokerLike(source_c));
  FleetQueryOptions options;
  options.peers = {Loopback(b.port()), Loopback(c.port())};
  options.client = Client();
  const FleetQuery fleet(local, options);
  ListConnectionsRequest request;
  request.filter = R"(NOT username = "hidden")";
  request.order_by = "client_id";
  request.page_size = 60;
  ConnectionPage page;
  ASSERT_TRUE(fleet.Run(request, Clock::now() + std::chrono::seconds(5), &page).ok());
  ASSERT_EQ(page.connections.size(), 60u);
  EXPECT_TRUE(page.peer_errors.empty());
  EXPECT_EQ(page.total_size, 150);
  for (std::size_t i = 0; i < 60; ++i) {
    char id[32];
    std::snprintf(id, sizeof(id), "d-%04zu-n%zu", i / 3 + 1, i % 3 + 1);
    EXPECT_EQ(page.connections[i].client_id, id);
    EXPECT_EQ(page.connections[i].duplicate_client_id, page.connections[i].client_id == "d-0005-n2")
        << id;
  }
  // One round for the page (each asked for a share of 20, a quarter and 16 more) and one lookup.
  ASSERT_EQ(b.requests(), 2);
  connections_v1::ListConnectionsRequest asked;
  ASSERT_TRUE(asked.ParseFromString(BodyOf(b.all_requests().front())));
  EXPECT_EQ(asked.page_size(), 20 + 5 + 16);
  // b showed its ids open: its lookup is of the others' ids alone; c's includes "d-0005-n2".
  const std::string b_lookup = LookupFilterOf(b);
  EXPECT_THAT(b_lookup, HasSubstr(R"("d-0001-n1")"));
  EXPECT_THAT(b_lookup, HasSubstr(R"("d-0001-n3")"));
  EXPECT_THAT(b_lookup, ::testing::Not(HasSubstr("-n2\"")));
  EXPECT_THAT(LookupFilterOf(c), HasSubstr(R"("d-0005-n2")"));
  EXPECT_THAT(LookupFilterOf(c), ::testing::Not(HasSubstr("-n3\"")));

  // An order that puts all of one broker first: that broker is asked again for the rest, from
  // where its first answer ended.
  request.order_by = "node_id desc, client_id";
  ASSERT_TRUE(fleet.Run(request, Clock::now() + std::chrono::seconds(5), &page).ok());
  ASSERT_EQ(page.connections.size(), 60u);
  for (std::size_t i = 0; i < 60; ++i) {
    EXPECT_EQ(page.connections[i].node_id, i < 50 ? 3u : 2u) << i;
  }
  const std::vector<std::string> to_c = c.all_requests();
  ASSERT_EQ(to_c.size(), 2u + 3u);  // the first page and its lookup, then page, rest, lookup
  ASSERT_TRUE(asked.ParseFromString(BodyOf(to_c[3])));
  EXPECT_EQ(asked.page_size(), 60 - 41);
  EXPECT_FALSE(asked.page_token().empty());
  EXPECT_TRUE(page.peer_errors.empty());
}

TEST(FleetQueryTest, OpenByClientIdIsKnownOnlyForClientIdFiltersShownWhole) {
  std::vector<BrokerAnswer> answers(2);
  answers[0].answered = true;
  answers[0].page.connections = NodeConnections(1, 2);
  answers[1].answered = false;  // failed: not counted, whatever it holds
  ConnectionFilter filter;
  std::vector<BrokerAnswer> known;
  EXPECT_FALSE(OpenByClientIdKnown(filter, true, answers, &known));  // everything: no client id set
  ASSERT_TRUE(
      ConnectionFilter::Parse(R"(client_id IN ("a", "b*") OR NOT client_id = "c")", &filter).ok());
  ASSERT_TRUE(OpenByClientIdKnown(filter, true, answers, &known));
  ASSERT_EQ(known.size(), 2u);
  EXPECT_TRUE(known[0].answered);
  EXPECT_FALSE(known[1].answered);
  EXPECT_EQ(known[0].page.connections.size(), 2u);
  EXPECT_EQ(known[0].page.connections[1].client_id, answers[0].page.connections[1].client_id);
  EXPECT_FALSE(OpenByClientIdKnown(filter, false, answers, &known));  // a later page
  answers[0].page.next_page_token = "more";
  EXPECT_FALSE(OpenByClientIdKnown(filter, true, answers, &known));
  answers[0].page.next_page_token.clear();
  ASSERT_TRUE(ConnectionFilter::Parse(R"(client_id = "a" AND username = "u")", &filter).ok());
  EXPECT_FALSE(OpenByClientIdKnown(filter, true, answers, &known));
}

TEST(FleetQueryTest, MakeFleetQueryNamesAnUnreadableTokenFile) {
  const FleetSource local(NodeConnections(1, 1));
  PluginOptions options;
  EXPECT_EQ(MakeFleetQuery(options, local).value(), nullptr);
  options.fleet_peers = {*ParsePeerUrl("http://127.0.0.1:1")};
  options.fleet_token_file = "/nonexistent/fleet-token";
  const auto fleet = MakeFleetQuery(options, local);
  EXPECT_EQ(fleet.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(fleet.status().message(), HasSubstr("plugin_opt_fleet_token_file"));
}

}  // namespace
}  // namespace mqc
