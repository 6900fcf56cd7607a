// SPDX-License-Identifier: BSD-3-Clause
// The reference a query's answer is checked against: RunReferenceQuery runs a ConnectionQuery
// over a plain snapshot the simplest way, every connection matched, the matches sorted whole and
// the page cut from them, with no index, no candidates by client id and no partial sort. What it
// shares with RunConnectionQuery (connection_query.h) are the units it is built from: the
// filter, the order and the page token, and the checks with their messages.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "companion/connection.h"
#include "companion/query/connection_filter.h"
#include "companion/query/connection_order.h"
#include "companion/query/connection_page_token.h"
#include "companion/query/connection_query.h"
#include "fleet_source.h"
#include "link/status.h"

namespace mqc {

inline Status RunReferenceQuery(const std::vector<Connection>& snapshot,
                                const ConnectionQuery& query, ConnectionPage* page) {
  // The checks, in their order and with their messages: the same query over no connections.
  const FleetSource no_connections{std::vector<Connection>()};
  const Status checked = RunConnectionQuery(no_connections, query, page);
  *page = ConnectionPage();
  if (!checked.ok()) return checked;
  ConnectionFilter filter;
  (void)ConnectionFilter::Parse(query.filter, &filter);
  ConnectionOrder order;
  (void)ConnectionOrder::Parse(query.order_by, &order);
  std::vector<const Connection*> matches;
  for (const Connection& c : snapshot) {
    if (filter.Matches(c)) matches.push_back(&c);
  }
  std::sort(matches.begin(), matches.end(), [&order](const Connection* a, const Connection* b) {
    return order.Compare(*a, *b) < 0;
  });
  const std::uint64_t fingerprint = QueryFingerprint(query.filter, query.order_by);
  std::size_t start = std::min(static_cast<std::size_t>(query.offset), matches.size());
  if (!query.page_token.empty()) {
    OrderCursor after;
    (void)DecodePageToken(query.page_token, fingerprint, order, &after);
    start = 0;
    while (start < matches.size() && order.Compare(*matches[start], after) <= 0) ++start;
  }
  const auto size =
      static_cast<std::size_t>(query.page_size == 0 ? kDefaultPageSize : query.page_size);
  const std::size_t end = std::min(matches.size(), start + size);
  for (std::size_t i = start; i < end; ++i) page->connections.push_back(*matches[i]);
  page->total_size = static_cast<std::int64_t>(matches.size());
  if (end < matches.size()) {
    page->next_page_token = EncodePageToken(fingerprint, order, order.CursorOf(*matches[end - 1]));
  }
  return checked;
}

}  // namespace mqc
