// SPDX-License-Identifier: BSD-3-Clause
// Filtering, ordering and paging of connections: one implementation behind both the Connect
// ListConnections method and the KubeMQ endpoint's query parameters.
// Grammar: docs/query-language.md (filter, order_by, page tokens).
// Pure values, safe to use on any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "companion/connection.h"
#include "companion/query/connection_filter.h"
#include "companion/query/connection_order.h"
#include "link/status.h"

namespace mqc {

// What a caller asks for. Empty filter: everything; empty order_by: open_time, then uid.
struct ConnectionQuery {
  std::string filter;
  std::string order_by;
  std::int64_t page_size = 0;  // 0 = the default (1000); more than kMaxPageSize is an error
  std::string page_token;      // from a previous ConnectionPage::next_page_token
  std::int64_t offset = 0;     // KubeMQ endpoint only: matches skipped before the page
};

inline constexpr std::int64_t kDefaultPageSize = 1000;
inline constexpr std::int64_t kMaxPageSize = 10000;

// A fleet peer missing from a page (companion/fleet/; the schema's PeerError).
struct PeerFailure {
  std::string peer;  // canonical base URL
  std::string code;  // Connect code: "unavailable", "deadline_exceeded", ...
  std::string message;
};

// A broker that answered a fleet page (the schema's NodeAnswer).
struct NodeAnswer {
  std::string peer;  // canonical base URL; empty: the answering broker
  std::uint32_t node_id = 0;
  std::int64_t total_size = 0;
  double answer_ms = 0;  // from asking it to its whole answer, every round
};

struct ConnectionPage {
  std::vector<Connection> connections;
  std::int64_t total_size = 0;  // every match, not only this page
  std::string next_page_token;  // empty when there are no more matches
  std::vector<PeerFailure> peer_errors;  // fleet pages only: the brokers that are missing
  std::uint32_t fleet_peers = 0;         // plugin_opt_fleet_peers of the answering broker
  std::uint32_t node_id = 0;             // plugin_opt_node_id of the answering broker
  std::vector<NodeAnswer> node_answers;  // fleet pages only: the brokers that answered
};

// The same query as typed values, for callers that build it in code (the KubeMQ endpoint): the
// clauses, the order and where the previous page ended, with no text in between, so a value of
// any length or content selects exactly itself.
struct TypedConnectionQuery {
  ConnectionFilter filter;           // default: everything
  ConnectionOrder order;             // no key: by seq only
  std::optional<OrderCursor> after;  // start strictly after this position; offset is then ignored
  std::int64_t page_size = 0;        // as in ConnectionQuery
  std::int64_t offset = 0;
  bool unlimited = false;  // every match from offset (or after) on, in one page; page_size ignored
};

// Runs a query over what `source` holds and copies only the page. Candidates come from the
// source's client id index, one lookup per id, when the filter narrows client_id to exact ids
// (`client_id = "<id>"`, `client_id IN (...)` without prefixes, through AND, OR and parentheses:
// ConnectionFilter::ClientIdCandidates), else from its shared snapshot; the page's copies then
// get their details (AddDetails). A filter or order on a detail field (FieldDef::detail) reads
// source.Snapshot() instead, every connection with its details. On a bad filter, order, page
// size or token: kInvalidArgument with a message naming the problem (position, field or value),
// and an empty page. Out of memory, or an exception from the source, passes through unchanged
// (the page emptied): the HTTP router answers it 500 and logs it.
Status RunConnectionQuery(const ConnectionSource& source, const ConnectionQuery& query,
                          ConnectionPage* page);

// The typed query over a source, the page as the stored connections themselves (no copies, no
// details): for views that only read the page, such as the KubeMQ endpoint. Fails only for a
// page size or offset out of range (kInvalidArgument); exceptions pass through, as above.
struct SharedConnectionPage {
  std::vector<ConnectionPtr> connections;
  std::int64_t total_size = 0;
  std::optional<OrderCursor> next;
};
Status RunConnectionQuery(const ConnectionSource& source, const TypedConnectionQuery& query,
                          SharedConnectionPage* page);

}  // namespace mqc
