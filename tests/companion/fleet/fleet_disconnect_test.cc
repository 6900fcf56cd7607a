// SPDX-License-Identifier: BSD-3-Clause
// RouteDisconnects against loopback peers: the peer that holds the node's connection gets the
// request with the caller's token; this broker's own node stays local; nobody holding it is
// not_found, a peer that cannot be asked makes it unavailable, naming the peer.
#include "companion/fleet/fleet_disconnect.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "../../support/connection_builder.h"
#include "../../support/fleet_source.h"
#include "companion/http/connect_rpc_proto.h"
#include "loopback_server.h"

namespace mqc {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A peer holding `connections`: it answers ListConnections as a broker and DisconnectConnection
// with success.
LoopbackServer::Handler Holding(std::shared_ptr<FleetSource> source) {
  return [source](const std::string& raw) {
    const std::string body = raw.substr(raw.find("\r\n\r\n") + 4);
    if (raw.rfind("POST /mqtt.connections.v1.ConnectionsService/DisconnectConnection", 0) == 0) {
      return LoopbackServer::Response(200, "application/json",
                                      R"({"clientId":"twin","uid":"uid-2-1","disconnected":true})");
    }
    connections_v1::ListConnectionsRequest request;
    request.ParseFromString(body);
    ConnectionQuery query;
    query.filter = request.filter();
    query.page_size = request.page_size();
    ConnectionPage page;
    RunConnectionQuery(*source, query, &page);
    return LoopbackServer::Response(200, "application/proto",
                                    EncodeListConnectionsResponseProto(page));
  };
}

Connection On(std::uint32_t node, std::uint64_t seq, std::string client_id) {
  Connection c = TestConnection(seq);
  c.node_id = node;
  c.uid = "uid-" + std::to_string(node) + "-" + std::to_string(seq);
  c.client_id = std::move(client_id);
  return c;
}

TEST(FleetDisconnectTest, GoesToThePeerThatHoldsTheNodesConnection) {
  LoopbackServer other(Holding(std::make_shared<FleetSource>(
      std::vector<Connection>{On(3, 1, "twin")})));  // node 3 has a "twin" too: not asked for
  LoopbackServer holder(
      Holding(std::make_shared<FleetSource>(std::vector<Connection>{On(2, 1, "twin")})));
  const FleetSource local({On(1, 1, "twin")});
  FleetQueryOptions options;
  options.peers = {*ParsePeerUrl("http://127.0.0.1:" + std::to_string(other.port())),
                   *ParsePeerUrl("http://127.0.0.1:" + std::to_string(holder.port()))};
  options.token = "fleet-read-token-0123";
  options.client =
      std::shared_ptr<const PeerClient>(PeerClient::Create("", false).value().release());
  const FleetQuery fleet(local, options);
  int local_calls = 0;
  const Disconnector route =
      RouteDisconnects(fleet, 1, [&local_calls](const DisconnectTarget&, const Caller&) {
        ++local_calls;
        return DisconnectOutcome{Status(), "twin", "uid-1-1"};
      });
  Caller caller{"127.0.0.1:1", "admin token file line 1", "Bearer admin-token-0123456789"};

  DisconnectTarget target;
  target.client_id = "twin";
  target.node_id = 2;
  DisconnectOutcome outcome = route(target, caller);
  ASSERT_TRUE(outcome.status.ok()) << outcome.status.message();
  EXPECT_EQ(outcome.uid, "uid-2-1");
  EXPECT_EQ(local_calls, 0);
  const std::string forwarded = holder.last_request();
  EXPECT_THAT(forwarded, HasSubstr("POST /mqtt.connections.v1.ConnectionsService/"
                                   "DisconnectConnection HTTP/1.1\r\n"));
  EXPECT_THAT(forwarded, HasSubstr("Authorization: Bearer admin-token-0123456789\r\n"));
  EXPECT_THAT(forwarded, HasSubstr(R"({"clientId":"twin"})"));  // no nodeId: no second hop
  for (const std::string& request : other.all_requests()) {
    EXPECT_THAT(request, Not(HasSubstr("DisconnectConnection")));
  }

  // This broker's node, or none: local.
  target.node_id = 1;
  EXPECT_TRUE(route(target, caller).status.ok());
  target.node_id.reset();
  EXPECT_TRUE(route(target, caller).status.ok());
  EXPECT_EQ(local_calls, 2);

  // A node nobody has.
  target.node_id = 7;
  outcome = route(target, caller);
  EXPECT_EQ(outcome.status.code(), StatusCode::kNotFound);
  EXPECT_THAT(outcome.status.message(), HasSubstr("no broker of the fleet holds client id "
                                                  "\"twin\" on node 7"));
}

TEST(FleetDisconnectTest, APeerThatCannotBeAskedIsNamed) {
  int port = 0;
  {
    LoopbackServer gone([](const std::string&) { return std::string(); });
    port = gone.port();
  }
  const FleetSource local({});
  FleetQueryOptions options;
  options.peers = {*ParsePeerUrl("http://127.0.0.1:" + std::to_string(port))};
  options.client =
      std::shared_ptr<const PeerClient>(PeerClient::Create("", false).value().release());
  const FleetQuery fleet(local, options);
  const Disconnector route = RouteDisconnects(
      fleet, 1, [](const DisconnectTarget&, const Caller&) { return DisconnectOutcome{}; });
  DisconnectTarget target;
  target.uid = "uid-x";
  target.node_id = 2;
  const DisconnectOutcome outcome = route(target, Caller{});
  EXPECT_EQ(outcome.status.code(), StatusCode::kUnavailable);
  EXPECT_THAT(outcome.status.message(),
              HasSubstr("not answering: http://127.0.0.1:" + std::to_string(port)));
}

}  // namespace
}  // namespace mqc
