// SPDX-License-Identifier: BSD-3-Clause
// ListConnections with CONNECTION_SCOPE_FLEET and a filter that requires
// `duplicate_client_id = true` (docs/fleet.md, "Duplicate client ids"): only the open
// connections whose client id is open on another broker too.
//
// No broker can answer that clause alone (node answers leave the field false), so the fleet
// finds its candidates first: (1) every broker's open client ids, walked in pages of 10,000
// ordered by client_id (at most kMaxScannedClientIds per broker); (2) the ids open on two
// brokers or more (at most kMaxInValues); (3) each broker's open connections among those ids
// (one page: one open connection per id and broker); (4) duplicate_client_id set from (3), the
// caller's whole filter and order applied here, and the usual merge and fleet page token
// (fleet_merge.h). The per-broker positions in the token are node cursors this code reads back
// itself, so they stay valid while the set of duplicated ids changes between pages.
//
// Cost: a full walk of every broker's open connections per page asked for; for an operator's
// look, not a dashboard's poll (docs/fleet.md, "Cost").
//
// Threads: RunDuplicateQuery runs on an HTTP thread and starts one thread per peer for each of
// (1) and (3), joining them before it goes on; the pure functions are safe on any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "companion/fleet/fleet_merge.h"
#include "companion/fleet/fleet_query.h"
#include "companion/query/connection_filter.h"
#include "companion/query/connection_order.h"
#include "companion/query/connection_query.h"
#include "link/status.h"

namespace mqc {

// Open client ids read from one broker at most, while looking for duplicated ones.
inline constexpr std::size_t kMaxScannedClientIds = 1000000;

// The ids that appear in two lists or more of `ids_per_broker` (each list: one broker's distinct
// open client ids), sorted.
std::vector<std::string> DuplicatedIds(const std::vector<std::vector<std::string>>& ids_per_broker);

// Steps (4) above, pure: `candidates` holds per broker its open connections among the
// duplicated ids (BrokerAnswer::page.connections, any order; failed brokers with
// answered = false). Sets duplicate_client_id from all of them, keeps what `filter` matches and
// comes after the broker's cursor in `previous` (a node token made for `fingerprint`), and
// merges the page into *out. kInvalidArgument for a cursor that is not one.
Status DuplicatePage(const ConnectionFilter& filter, const ConnectionOrder& order,
                     std::uint64_t fingerprint, std::size_t page_size,
                     const std::vector<BrokerCursor>& previous,
                     std::vector<BrokerAnswer> candidates, ConnectionPage* out);

// The whole query, (1) to (4), for FleetQuery::Run (whose checks of page size, order_by and
// token have passed). `filter` is the parsed request filter, which RequiresTrue of the field.
Status RunDuplicateQuery(const ConnectionSource& local, const FleetQueryOptions& options,
                         const ConnectionFilter& filter,
                         const ConnectionOrder& order, std::uint64_t fingerprint,
                         std::size_t page_size, const std::vector<BrokerCursor>& cursors,
                         std::chrono::steady_clock::time_point deadline, ConnectionPage* page,
                         std::size_t* duplicated_ids);

}  // namespace mqc
