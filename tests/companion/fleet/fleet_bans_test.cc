// SPDX-License-Identifier: BSD-3-Clause
// RouteBans against loopback peers that run the real ban views over their own ban lists: a
// fleet ban is made on every broker with one author and one end, a node id goes to its broker
// alone, a peer that is down or refuses is named and never hides the others, and the fleet's
// list carries each ban's node. What reaches a peer has neither nodeId nor scope (no second
// hop) and the caller's own token.
#include "companion/fleet/fleet_bans.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../../support/fleet_source.h"
#include "companion/http/ban_view.h"
#include "companion/http/connect_rpc_proto.h"
#include "companion/http/view_util.h"
#include "loopback_server.h"

namespace mqc {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::int64_t kNow = std::int64_t{1780000000} * 1000000000;
constexpr char kAdminAuthorization[] = "Bearer admin-token-0123456789";
constexpr char kFleetToken[] = "fleet-read-token-0123";

// One broker's ban list and the BanAdmin over it (as BrokerBans, without a broker).
struct BanBroker {
  explicit BanBroker(std::uint32_t node) {
    admin.node_id = node;
    admin.list = [this] {
      std::lock_guard<std::mutex> lock(mutex);
      return bans;
    };
    admin.add = [this](Ban ban, const Caller& caller) {
      std::lock_guard<std::mutex> lock(mutex);
      if (ban.by.empty()) ban.by = caller.token_line;
      for (Ban& old : bans) {
        if (SameTarget(old, ban)) old = ban;
      }
      if (bans.empty() || !SameTarget(bans.back(), ban)) bans.push_back(ban);
      return BanOutcome{Status(), ban, 1};
    };
    admin.remove = [this](const Ban& target, const Caller&) {
      std::lock_guard<std::mutex> lock(mutex);
      for (auto it = bans.begin(); it != bans.end(); ++it) {
        if (SameTarget(*it, target)) {
          BanOutcome outcome{Status(), *it, 0};
          bans.erase(it);
          return outcome;
        }
      }
      return BanOutcome{Status(StatusCode::kNotFound, "no ban on " + target.Describe()), {}, 0};
    };
    admin.refused_total = [] { return std::uint64_t{5}; };
    admin.now_ns = [] { return kNow; };
  }

  std::vector<Ban> Bans() {
    std::lock_guard<std::mutex> lock(mutex);
    return bans;
  }

  // The peer's HTTP side: the ban RPCs, a change only with the admin token.
  LoopbackServer::Handler Handler() {
    return [this](const std::string& raw) {
      HttpRequest request;
      request.method = raw.substr(0, raw.find(' '));
      const std::size_t path_end = raw.find(' ', request.method.size() + 1);
      request.path = raw.substr(request.method.size() + 1, path_end - request.method.size() - 1);
      const std::size_t headers_end = raw.find("\r\n\r\n");
      request.body = raw.substr(headers_end + 4);
      std::size_t line = raw.find("\r\n") + 2;
      while (line < headers_end) {
        const std::size_t end = raw.find("\r\n", line);
        const std::size_t colon = raw.find(": ", line);
        request.headers.emplace_back(raw.substr(line, colon - line),
                                     raw.substr(colon + 2, end - colon - 2));
        line = end + 2;
      }
      const std::string method = request.path.substr(request.path.rfind('/') + 1);
      const std::string* authorization = request.FindHeader("Authorization");
      HttpResponse response;
      if (method != kListBansMethod &&
          (authorization == nullptr || *authorization != kAdminAuthorization)) {
        response = ConnectRpcErrorResponse(
            Status(StatusCode::kPermissionDenied, "this needs an admin token"));
      } else {
        response = ConnectRpcBans(admin, method, request, Caller{"", "admin token file line 4", ""});
      }
      return LoopbackServer::Response(response.status, response.content_type, response.body);
    };
  }

  BanAdmin admin;
  std::mutex mutex;
  std::vector<Ban> bans;
};

Ban ClientBan(const std::string& who) {
  Ban ban;
  EXPECT_TRUE(ParseBanTarget("clientid", who, &ban).ok());
  ban.reason = "leaks";
  ban.at_ns = kNow;
  ban.until_ns = kNow + std::int64_t{600} * 1000000000;
  return ban;
}

std::shared_ptr<const PeerClient> Client() {
  return std::shared_ptr<const PeerClient>(PeerClient::Create("", false).value().release());
}

PeerUrl UrlOf(int port) { return *ParsePeerUrl("http://127.0.0.1:" + std::to_string(port)); }

// A port nothing listens on.
int ClosedPort() {
  LoopbackServer gone([](const std::string&) { return std::string(); });
  return gone.port();
}

class FleetBansTest : public ::testing::Test {
 protected:
  FleetBansTest()
      : here_(1), b_(2), c_(3), server_b_(b_.Handler()), server_c_(c_.Handler()) {
    caller_ = Caller{"127.0.0.1:1", "admin token file line 1", kAdminAuthorization};
  }

  // The fleet of this broker (node 1) with `peers`, and its routed BanAdmin.
  BanAdmin Routed(std::vector<PeerUrl> peers) {
    FleetQueryOptions options;
    options.peers = std::move(peers);
    options.token = kFleetToken;
    options.client = Client();
    fleet_ = std::make_unique<FleetQuery>(source_, std::move(options));
    BanAdmin admin = here_.admin;
    RouteBans(*fleet_, &admin);
    return admin;
  }

  const FleetSource source_{std::vector<Connection>{}};
  BanBroker here_, b_, c_;
  LoopbackServer server_b_, server_c_;
  std::unique_ptr<FleetQuery> fleet_;
  Caller caller_;
};

TEST_F(FleetBansTest, AFleetBanIsMadeOnEveryBrokerWithOneAuthorAndOneEnd) {
  const BanAdmin admin = Routed({UrlOf(server_b_.port()), UrlOf(server_c_.port())});
  BanPlace fleet;
  fleet.fleet = true;
  const FleetBanOutcome result = admin.add_at(ClientBan("rogue"), fleet, caller_);
  ASSERT_TRUE(result.outcome.status.ok()) << result.outcome.status.message();
  EXPECT_EQ(result.outcome.kicked, 3u);  // one on each broker
  EXPECT_EQ(result.node_id, 1u);
  ASSERT_EQ(result.brokers.size(), 3u);
  EXPECT_EQ(result.brokers[0].node_id, 1u);
  EXPECT_EQ(result.brokers[0].peer, "");
  EXPECT_EQ(result.brokers[1].node_id, 2u);
  EXPECT_EQ(result.brokers[1].peer, "http://127.0.0.1:" + std::to_string(server_b_.port()));
  EXPECT_EQ(result.brokers[2].node_id, 3u);
  for (BanBroker* broker : {&here_, &b_, &c_}) {
    const std::vector<Ban> bans = broker->Bans();
    ASSERT_EQ(bans.size(), 1u) << broker->admin.node_id;
    EXPECT_EQ(bans[0].who, "rogue");
    EXPECT_EQ(bans[0].by, "admin token file line 1");  // this broker's author, not the peer's
    EXPECT_EQ(bans[0].until_ns, kNow + std::int64_t{600} * 1000000000);
    EXPECT_EQ(bans[0].reason, "leaks");
  }
  // The peer got the caller's token and a node-scope request: it does not forward again.
  const std::string forwarded = server_b_.last_request();
  EXPECT_THAT(forwarded, HasSubstr("POST /mqtt.connections.v1.ConnectionsService/BanClient "));
  EXPECT_THAT(forwarded, HasSubstr(std::string("Authorization: ") + kAdminAuthorization));
  connections_v1::BanClientRequest sent;
  ASSERT_TRUE(sent.ParseFromString(forwarded.substr(forwarded.find("\r\n\r\n") + 4)));
  EXPECT_FALSE(sent.has_node_id());
  EXPECT_EQ(sent.scope(), connections_v1::CONNECTION_SCOPE_UNSPECIFIED);

  // The fleet's list: every broker's ban with its node, the refusals summed.
  const FleetBanList list = admin.list_fleet();
  ASSERT_EQ(list.bans.size(), 3u);
  EXPECT_EQ(list.bans[0].node_id, 1u);
  EXPECT_EQ(list.bans[1].node_id, 2u);
  EXPECT_EQ(list.bans[2].node_id, 3u);
  EXPECT_EQ(list.refused_total, 15u);
  EXPECT_TRUE(list.failed.empty());
  EXPECT_THAT(server_c_.last_request(), HasSubstr(std::string("Bearer ") + kFleetToken));

  // A fleet unban, also where this broker has none.
  here_.admin.remove(ClientBan("rogue"), caller_);
  const FleetBanOutcome removed = admin.remove_at(ClientBan("rogue"), fleet, caller_);
  ASSERT_TRUE(removed.outcome.status.ok()) << removed.outcome.status.message();
  EXPECT_EQ(removed.brokers[0].status.code(), StatusCode::kNotFound);
  EXPECT_TRUE(removed.brokers[1].status.ok());
  EXPECT_TRUE(b_.Bans().empty());
  EXPECT_TRUE(c_.Bans().empty());
  // Nowhere any more: not_found, each broker named.
  const FleetBanOutcome again = admin.remove_at(ClientBan("rogue"), fleet, caller_);
  EXPECT_EQ(again.outcome.status.code(), StatusCode::kNotFound);
  EXPECT_THAT(again.outcome.status.message(),
              HasSubstr("no broker of the fleet made the change: this broker (node 1): "
                        "not_found: no ban on clientid 'rogue'"));
  // A peer that refused is named by its URL (its node id comes only with a done change).
  EXPECT_THAT(again.outcome.status.message(),
              HasSubstr("; http://127.0.0.1:" + std::to_string(server_c_.port()) +
                        ": not_found: the peer answered not_found: no ban on clientid 'rogue'"));
}

TEST_F(FleetBansTest, ANodeIdGoesToThatBrokerAlone) {
  const BanAdmin admin = Routed({UrlOf(server_b_.port()), UrlOf(server_c_.port())});
  BanPlace node;
  node.node_id = 3;
  const FleetBanOutcome result = admin.add_at(ClientBan("on-c"), node, caller_);
  ASSERT_TRUE(result.outcome.status.ok()) << result.outcome.status.message();
  EXPECT_EQ(result.node_id, 3u);
  // Made by that broker for the caller's token, so its own token line names the author.
  EXPECT_EQ(result.outcome.ban.by, "admin token file line 4");
  ASSERT_EQ(result.brokers.size(), 1u);
  EXPECT_EQ(result.brokers[0].node_id, 3u);
  EXPECT_TRUE(here_.Bans().empty());
  EXPECT_TRUE(b_.Bans().empty());
  ASSERT_EQ(c_.Bans().size(), 1u);
  for (const std::string& request : server_b_.all_requests()) {
    EXPECT_THAT(request, Not(HasSubstr("BanClient")));
  }
  // This broker's own node: here.
  node.node_id = 1;
  EXPECT_TRUE(admin.add_at(ClientBan("here"), node, caller_).outcome.status.ok());
  EXPECT_EQ(here_.Bans().size(), 1u);
  // A node nobody is.
  node.node_id = 7;
  const FleetBanOutcome unknown = admin.add_at(ClientBan("x"), node, caller_);
  EXPECT_EQ(unknown.outcome.status.code(), StatusCode::kNotFound);
  EXPECT_EQ(unknown.outcome.status.message(),
            "nodeId: no broker of the fleet is node 7 (plugin_opt_fleet_peers)");
  // The peer refuses the caller's token: its code and reason come back.
  caller_.authorization = "Bearer read-token-0123456789";
  node.node_id = 2;
  const FleetBanOutcome refused = admin.add_at(ClientBan("y"), node, caller_);
  EXPECT_EQ(refused.outcome.status.code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(refused.outcome.status.message(),
              HasSubstr("(node 2): permission_denied: the peer answered permission_denied: "
                        "this needs an admin token"));
  EXPECT_TRUE(b_.Bans().empty());
}

TEST_F(FleetBansTest, APeerThatIsDownIsNamedAndTheOthersStillAct) {
  const PeerUrl down = UrlOf(ClosedPort());
  const BanAdmin admin = Routed({down, UrlOf(server_c_.port())});
  BanPlace fleet;
  fleet.fleet = true;
  const FleetBanOutcome result = admin.add_at(ClientBan("rogue"), fleet, caller_);
  ASSERT_TRUE(result.outcome.status.ok());
  ASSERT_EQ(result.brokers.size(), 3u);
  EXPECT_EQ(result.brokers[1].peer, down.Text());
  EXPECT_EQ(result.brokers[1].node_id, 0u);
  EXPECT_EQ(result.brokers[1].status.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(result.brokers[2].status.ok());
  EXPECT_EQ(c_.Bans().size(), 1u);
  EXPECT_EQ(here_.Bans().size(), 1u);

  const FleetBanList list = admin.list_fleet();
  EXPECT_EQ(list.bans.size(), 2u);
  ASSERT_EQ(list.failed.size(), 1u);
  EXPECT_EQ(list.failed[0].peer, down.Text());

  // A node id that only the silent peer could be: unavailable, naming it.
  BanPlace node;
  node.node_id = 2;
  const FleetBanOutcome routed = admin.add_at(ClientBan("z"), node, caller_);
  EXPECT_EQ(routed.outcome.status.code(), StatusCode::kUnavailable);
  EXPECT_THAT(routed.outcome.status.message(),
              HasSubstr("nodeId: no answering peer is node 2; not answering: " + down.Text()));
}

}  // namespace
}  // namespace mqc
