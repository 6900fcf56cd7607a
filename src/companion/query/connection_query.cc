// RunConnectionQuery: check the paging values, parse filter and order_by, then filter, sort and
// cut one keyset page. The grammars live in connection_filter / connection_order, the token
// format in connection_page_token, QuoteFilterString beside the literal reader in query_syntax.
//
// Where the spec is silent: page_size and offset are checked before the filter, the filter
// before order_by, order_by before the token (the first problem is the one reported); offset is
// ignored when a page_token is given; a token stays valid across page_size changes.
#include "companion/query/connection_query.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "companion/query/connection_filter.h"
#include "companion/query/connection_order.h"
#include "companion/query/connection_page_token.h"
#include "link/connection.h"

namespace mqc {
namespace {

bool CheckPaging(std::int64_t page_size, std::int64_t offset, std::string* error) {
  if (page_size < 0 || page_size > kMaxPageSize) {
    *error = "page_size must be between 0 and " + std::to_string(kMaxPageSize) + ", got " +
             std::to_string(page_size);
    return false;
  }
  if (offset < 0) {
    *error = "offset must not be negative, got " + std::to_string(offset);
    return false;
  }
  return true;
}

// Filters, sorts and cuts one page; the snapshot is only read.
void RunTyped(const std::vector<Connection>& snapshot, const ConnectionFilter& filter,
              const ConnectionOrder& order, const OrderCursor* after, std::int64_t page_size,
              std::int64_t offset, TypedConnectionPage* page) {
  // Pointers keep the connections (strings, subscription vectors) in place while sorting.
  std::vector<const Connection*> matches;
  for (const Connection& connection : snapshot) {
    if (filter.Matches(connection)) matches.push_back(&connection);
  }
  const auto total_size = static_cast<std::int64_t>(matches.size());
  std::size_t start = 0;
  if (after != nullptr) {
    // Only what comes after the previous page competes for this one.
    matches.erase(std::remove_if(matches.begin(), matches.end(),
                                 [&](const Connection* connection) {
                                   return order.Compare(*connection, *after) <= 0;
                                 }),
                  matches.end());
  } else {
    start = static_cast<std::size_t>(std::min(offset, total_size));
  }
  const auto size = static_cast<std::size_t>(page_size == 0 ? kDefaultPageSize : page_size);
  const std::size_t end = start + std::min(size, matches.size() - start);
  // Only the connections up to the end of the page need to be in order: O(n log end).
  std::partial_sort(
      matches.begin(), matches.begin() + static_cast<std::ptrdiff_t>(end), matches.end(),
      [&order](const Connection* a, const Connection* b) { return order.Compare(*a, *b) < 0; });

  page->total_size = total_size;
  if (end < matches.size()) page->next = order.CursorOf(*matches[end - 1]);
  page->connections.reserve(end - start);
  for (std::size_t i = start; i < end; ++i) page->connections.push_back(*matches[i]);
}

Status RunQuery(const std::vector<Connection>& snapshot, const ConnectionQuery& query,
                ConnectionPage* page) {
  std::string error;
  if (!CheckPaging(query.page_size, query.offset, &error)) {
    return Status(StatusCode::kInvalidArgument, std::move(error));
  }
  ConnectionFilter filter;
  Status status = ConnectionFilter::Parse(query.filter, &filter);
  if (!status.ok()) return status;
  ConnectionOrder order;
  status = ConnectionOrder::Parse(query.order_by, &order);
  if (!status.ok()) return status;
  const std::uint64_t fingerprint = QueryFingerprint(query.filter, query.order_by);
  OrderCursor after;
  const bool has_token = !query.page_token.empty();
  if (has_token) {
    status = DecodePageToken(query.page_token, fingerprint, order, &after);
    if (!status.ok()) return status;
  }
  TypedConnectionPage typed;
  RunTyped(snapshot, filter, order, has_token ? &after : nullptr, query.page_size, query.offset,
           &typed);
  page->connections = std::move(typed.connections);
  page->total_size = typed.total_size;
  if (typed.next) page->next_page_token = EncodePageToken(fingerprint, order, *typed.next);
  return Status();
}

// The query's answer when running it threw (in practice std::bad_alloc).
Status InternalQueryError(const char* what) {
  return Status(StatusCode::kInternal, std::string("internal error while running the query") +
                                           (what[0] == '\0' ? "" : ": ") + what);
}

}  // namespace

Status RunConnectionQuery(const std::vector<Connection>& snapshot, const ConnectionQuery& query,
                          ConnectionPage* page) {
  Status status;
  try {
    *page = ConnectionPage();
    status = RunQuery(snapshot, query, page);
    if (status.ok()) return status;
  } catch (const std::exception& e) {
    status = InternalQueryError(e.what());
  } catch (...) {
    status = InternalQueryError("");
  }
  *page = ConnectionPage();
  return status;
}

Status RunConnectionQuery(const std::vector<Connection>& snapshot,
                          const TypedConnectionQuery& query, TypedConnectionPage* page) {
  Status status;
  try {
    *page = TypedConnectionPage();
    std::string error;
    if (CheckPaging(query.page_size, query.offset, &error)) {
      RunTyped(snapshot, query.filter, query.order, query.after ? &*query.after : nullptr,
               query.page_size, query.offset, page);
      return status;
    }
    status = Status(StatusCode::kInvalidArgument, std::move(error));
  } catch (const std::exception& e) {
    status = InternalQueryError(e.what());
  } catch (...) {
    status = InternalQueryError("");
  }
  *page = TypedConnectionPage();
  return status;
}

}  // namespace mqc
