// SPDX-License-Identifier: BSD-3-Clause
// DisconnectConnection routed to the broker that holds the connection (docs/fleet.md): a
// request whose nodeId is another broker's is looked up on every peer (node scope, `node_id = N
// AND uid = "..."`, or the open connection of that client id, with the fleet's read token), and
// forwarded to the one that holds it, without nodeId (so the peer acts on its own connection
// and never forwards again), with the caller's own Authorization header: the caller must hold
// an admin token that peer accepts too. The fleet's read token never disconnects anything.
//
// Threads: the Disconnector runs on MHD's threads, several at a time; it starts one thread per
// peer for the lookup and joins them before it returns.
#pragma once

#include <cstdint>

#include "companion/admin_actions.h"
#include "companion/fleet/fleet_query.h"

namespace mqc {

// `local` for this broker's own connections (target.node_id unset or `own_node_id`); the
// peers' for the others. `fleet` must outlive the result.
Disconnector RouteDisconnects(const FleetQuery& fleet, std::uint32_t own_node_id,
                              Disconnector local);

}  // namespace mqc
