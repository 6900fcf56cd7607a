// SPDX-License-Identifier: BSD-3-Clause
// Bans across the fleet (docs/fleet.md). BanClient and UnbanClient with another broker's nodeId
// go to the peer of plugin_opt_fleet_peers that has that node id; with scope FLEET they are
// made on this broker, then on every peer in parallel. ListBans with scope FLEET lists every
// broker's bans, each with its node id.
//
// A peer's node id is the one its own ListBans answers with, asked with the fleet's read token
// (plugin_opt_fleet_token_file). A change goes to a peer in binary, without nodeId or scope, so
// the peer changes its own list and never forwards again (peers that name each other cannot
// loop), and with the caller's own Authorization header: the caller must hold an admin token
// that the peer accepts too. The fleet's read token never changes anything.
//
// Threads: the functions run on MHD's threads, several at a time; each starts one thread per
// peer and joins them all before it returns (every peer request ends by the deadline).
#pragma once

#include <chrono>

#include "companion/admin_actions.h"
#include "companion/fleet/fleet_query.h"

namespace mqc {

// A routed or fleet-wide ban change, and the fleet's list, end within this.
inline constexpr std::chrono::seconds kFleetBanDeadline{5};

// Sets admin->add_at, remove_at and list_fleet over admin's own add, remove, list,
// refused_total and node_id (this broker's part). `fleet` must outlive them.
void RouteBans(const FleetQuery& fleet, BanAdmin* admin);

}  // namespace mqc
