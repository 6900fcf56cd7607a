// SPDX-License-Identifier: BSD-3-Clause
// The admin's actions as the HTTP views ask for them and the companion carries them out: a
// disconnect (broker_disconnect.h) and the bans (broker_bans.h). The views
// (http/disconnect_view.h, http/ban_view.h) read requests into these types and write the
// outcomes back; companion/main.cc hands them the companion's Disconnector and BanAdmin. Plain
// values and functions; nothing here knows HTTP.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "link/ban_list.h"
#include "link/status.h"

namespace mqc {

// Who asks, for the broker's log line: never the token itself.
struct Caller {
  std::string address;     // "127.0.0.1:41234"
  std::string token_line;  // "admin token file line 3"
  // The request's Authorization header, only to forward a disconnect or a ban to the fleet
  // peers (never logged).
  std::string authorization;
};

struct DisconnectTarget {  // exactly one of client_id and uid is set
  std::string client_id;
  std::string uid;
  bool prevent_will = false;  // the broker publishes the client's will unless this is set
  // The broker that holds it (DisconnectConnection's nodeId); unset: this one.
  std::optional<std::uint32_t> node_id;
};

struct DisconnectOutcome {
  Status status;  // kNotFound for an unknown (or not open) client
  std::string client_id;
  std::string uid;
};

using Disconnector =
    std::function<DisconnectOutcome(const DisconnectTarget& target, const Caller& caller)>;

struct BanOutcome {
  Status status;
  Ban ban;                 // as it is now in force (or as it was, for a removal)
  std::size_t kicked = 0;  // open connections it concerned, asked to disconnect
};

// Where a ban change is made (BanClient's and UnbanClient's nodeId and scope, docs/fleet.md).
struct BanPlace {
  std::optional<std::uint32_t> node_id;  // another broker's: routed there
  bool fleet = false;                    // this broker and every peer
};

// One broker's part in a routed or fleet-wide ban change (the schema's BrokerBanOutcome), or
// one broker's failure to list its bans.
struct BrokerBanOutcome {
  std::uint32_t node_id = 0;  // 0: a peer that never told it
  std::string peer;           // base URL; empty: this broker
  Status status;
  std::size_t kicked = 0;
};

struct FleetBanOutcome {
  // status: an error only when no broker made the change (naming each); ban: the one in force
  // (or removed) on this broker, else on the first broker that made it; kicked: the sum.
  BanOutcome outcome;
  std::uint32_t node_id = 0;              // of the broker whose ban `outcome.ban` is
  std::vector<BrokerBanOutcome> brokers;  // in the order asked: this broker first
};

struct NodeBan {
  std::uint32_t node_id = 0;
  Ban ban;
};

struct FleetBanList {
  std::vector<NodeBan> bans;  // this broker's first, then each peer's in plugin_opt_fleet_peers order
  std::uint64_t refused_total = 0;        // of the brokers that answered
  std::vector<BrokerBanOutcome> failed;  // the peers that did not answer (status not ok)
};

struct BanAdmin {
  std::function<std::vector<Ban>()> list;
  // `ban` is checked (target, times, texts) and has at_ns; `by` empty: the caller's token line.
  std::function<BanOutcome(Ban ban, const Caller& caller)> add;
  // `target`: kind and canonical who.
  std::function<BanOutcome(const Ban& target, const Caller& caller)> remove;
  std::function<std::uint64_t()> refused_total;  // CONNECTs refused for a ban since start
  std::function<std::int64_t()> now_ns;          // Unix ns (tests set it)
  std::uint32_t node_id = 0;                     // plugin_opt_node_id: every ban listed carries it
  // With plugin_opt_fleet_peers (fleet/fleet_bans.h), else null: a change with another node's
  // id, or for the whole fleet, and the fleet's list.
  std::function<FleetBanOutcome(const Ban& ban, const BanPlace& place, const Caller& caller)> add_at;
  std::function<FleetBanOutcome(const Ban& target, const BanPlace& place, const Caller& caller)>
      remove_at;
  std::function<FleetBanList()> list_fleet;
};

}  // namespace mqc
