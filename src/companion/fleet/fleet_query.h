// SPDX-License-Identifier: BSD-3-Clause
// ListConnections with CONNECTION_SCOPE_FLEET (docs/fleet.md): one node-scope request to every
// peer, in parallel, and this broker's own query while they answer, under one deadline; the
// answers merged by fleet_merge.h.
//
// What goes to a peer: a binary ListConnectionsRequest with the caller's filter and order_by,
// its share of the fleet page's size (FirstAskSize; the brokers that ran short are asked for
// the rest from their next_page_token, MoreToAsk) and the peer's own cursor from the fleet
// token, scope NODE (so a peer never fans out again: peers that name each other cannot loop),
// the read token of plugin_opt_fleet_token_file as a bearer token, and Connect-Timeout-Ms of
// what is left of the deadline. Then the page's open client ids that a broker did not show
// open itself are looked up on it (`state = MQTT_CONNECTION_STATE_OPEN AND client_id IN
// (...)`, node scope again; a broker that showed them all is not asked), and each open
// connection of the page whose id is open on another broker too gets duplicate_client_id
// (this broker's own lookup again runs while the peers answer; a filter on client_id alone
// whose matches all fit the page needs no lookup). What comes back and counts: HTTP 200 with a
// binary ListConnectionsResponse whose connections are at most the size asked. Anything else (no connection, a timeout, a Connect error, other
// bytes) makes a PeerFailure naming the peer; the answer is then partial.
//
// Threads: Run() is called on HTTP threads, several at a time; it starts one thread per peer,
// runs this broker's part on its own thread meanwhile, and joins them all before it returns
// (each peer request ends by the deadline). The members are set in the constructor and only
// read afterwards.
#pragma once

#include <prometheus/gauge.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "companion/connection.h"
#include "companion/fleet/fleet_merge.h"
#include "companion/fleet/peer_client.h"
#include "companion/http/connect_protocol.h"
#include "companion/http/connect_rpc_service.h"
#include "companion/query/connection_filter.h"
#include "companion/query/connection_query.h"
#include "link/peer_url.h"
#include "link/plugin_options.h"
#include "link/status.h"

namespace mqc {

// Without Connect-Timeout-Ms, a fleet query waits this long for its peers.
inline constexpr std::chrono::milliseconds kDefaultFleetDeadline{5000};
// Peers answer this much before the caller's deadline, so that the merge fits inside it.
inline constexpr std::chrono::milliseconds kFleetMergeMargin{50};

struct FleetQueryOptions {
  std::vector<PeerUrl> peers;
  std::string token;  // sent as `Authorization: Bearer`; empty: none
  std::uint32_t node_id = 0;  // this broker's plugin_opt_node_id
  std::shared_ptr<const PeerClient> client;
};

class FleetQuery {
 public:
  FleetQuery(const ConnectionSource& local, FleetQueryOptions options);

  // The fleet's page for `request` (its scope is not looked at). kInvalidArgument for a bad
  // filter, order_by, page size or token (checked here before any peer is asked); peers'
  // failures are not errors but page->peer_errors.
  Status Run(const ListConnectionsRequest& request, std::chrono::steady_clock::time_point deadline,
             ConnectionPage* page) const;

  const std::vector<PeerUrl>& peers() const { return options_.peers; }
  const FleetQueryOptions& options() const { return options_; }

  // Where each answer's count of duplicated client ids goes (a /metrics gauge); null: nowhere.
  // Set before the first Run().
  void SetDuplicatesGauge(prometheus::Gauge* gauge) { duplicates_gauge_ = gauge; }

  // Run() as ConnectRpcServiceOptions::fleet calls it; the query must outlive the function.
  ConnectRpcServiceOptions::FleetLister Lister() const;

 private:
  // This broker's part of a round: RunConnectionQuery into answer->page, with its node id and
  // how long it took.
  Status RunTimed(const ConnectionQuery& query, BrokerAnswer* answer) const;
  // Asks peer i for requests[i] (a page of its page_size) where ask[i], each in its own thread,
  // into (*answers)[i + 1], and runs `meanwhile` (this broker's own part, into (*answers)[0]) on
  // the calling thread while they answer; returns when all are done.
  void AskPeers(const std::vector<ListConnectionsRequest>& requests, const std::vector<bool>& ask,
                std::chrono::steady_clock::time_point deadline, std::vector<BrokerAnswer>* answers,
                const std::function<void()>& meanwhile) const;
  // Flags the page's open connections whose client id is open on another broker too: from
  // `known` when not null (OpenByClientIdKnown), else by one lookup of the page's open client
  // ids on every broker that answered the page, less the ids shown_open[b] says broker b
  // (0: this one, i + 1: peer i) showed open in its page answers.
  void MarkDuplicates(std::chrono::steady_clock::time_point deadline,
                      const std::vector<BrokerAnswer>* known,
                      const std::vector<std::unordered_set<std::string>>& shown_open,
                      ConnectionPage* page) const;
  // Sets the gauge (when set) to the number of client ids flagged on `page`.
  void ReportDuplicates(const ConnectionPage& page) const;

  const ConnectionSource& local_;
  FleetQueryOptions options_;
  prometheus::Gauge* duplicates_gauge_ = nullptr;  // thread-safe (prometheus-cpp)
};

// The fleet of plugin_opt_fleet_peers over `local` (which must outlive it), or null without
// peers. Reads plugin_opt_fleet_token_file (its first token) and plugin_opt_fleet_ca_file;
// kInvalidArgument naming the option when either cannot be read.
StatusOr<std::unique_ptr<FleetQuery>> MakeFleetQuery(const PluginOptions& options,
                                                     const ConnectionSource& local);

// Whether the brokers' page answers already show, for every client id they hold, each
// broker's open connections of that id: when `filter` has clauses on client_id only (it then
// selects by client id alone, such as a lookup by client id), the answers are of a walk's
// first page (`from_start`: no broker was asked from a cursor) and no answered broker has more
// matches. If so, *known gets each answer's open connections (client id and state only), as
// MarkDuplicateClientIds reads them, and Run() needs no lookup round. Exposed for tests.
bool OpenByClientIdKnown(const ConnectionFilter& filter, bool from_start,
                         const std::vector<BrokerAnswer>& answers,
                         std::vector<BrokerAnswer>* known);

// One peer's node page, as Run() asks for it (exposed for tests): the page, or a PeerFailure
// in *failure and false.
bool AskPeer(const PeerClient& client, const PeerUrl& peer, const std::string& token,
             const ListConnectionsRequest& node_request,
             std::chrono::steady_clock::time_point deadline, std::size_t page_size,
             ConnectionPage* page, PeerFailure* failure);

}  // namespace mqc
