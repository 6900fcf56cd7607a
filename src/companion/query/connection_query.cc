// SPDX-License-Identifier: BSD-3-Clause
// RunConnectionQuery: check the paging values, parse filter and order_by, then filter, sort and
// cut one keyset page. The grammars live in connection_filter / connection_order, the token
// format in connection_page_token.
//
// Where the spec is silent: page_size and offset are checked before the filter, the filter
// before order_by, order_by before the token (the first problem is the one reported); offset is
// ignored when a page_token is given; a token stays valid across page_size changes.
#include "companion/query/connection_query.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "companion/connection.h"
#include "companion/query/connection_fields.h"
#include "companion/query/connection_filter.h"
#include "companion/query/connection_order.h"
#include "companion/query/connection_page_token.h"

namespace mqc {
namespace {

Status CheckPaging(std::int64_t page_size, std::int64_t offset) {
  if (page_size < 0 || page_size > kMaxPageSize) {
    return Status(StatusCode::kInvalidArgument, "page_size must be between 0 and " +
                                                    std::to_string(kMaxPageSize) + ", got " +
                                                    std::to_string(page_size));
  }
  if (offset < 0) {
    return Status(StatusCode::kInvalidArgument,
                  "offset must not be negative, got " + std::to_string(offset));
  }
  return Status();
}

// Which candidates make the page: indices into the candidates, in page order.
struct Selection {
  std::vector<std::uint32_t> page;
  std::int64_t total_size = 0;
  std::optional<OrderCursor> next;
};

// Filters, sorts and cuts one page of `count` candidates, `at(i)` being the i-th (only read).
// `size` 0 means every match.
template <typename At>
void Select(std::size_t count, At at, const ConnectionFilter& filter, const ConnectionOrder& order,
            const OrderCursor* after, std::size_t size, std::int64_t offset, Selection* selection) {
  // Indices keep the connections (strings, subscription vectors) in place while sorting.
  std::vector<std::uint32_t> matches;
  for (std::size_t i = 0; i < count; ++i) {
    if (filter.Matches(at(i))) matches.push_back(static_cast<std::uint32_t>(i));
  }
  const auto total_size = static_cast<std::int64_t>(matches.size());
  std::size_t start = 0;
  if (after != nullptr) {
    // Only what comes after the previous page competes for this one.
    matches.erase(
        std::remove_if(matches.begin(), matches.end(),
                       [&](std::uint32_t i) { return order.Compare(at(i), *after) <= 0; }),
        matches.end());
  } else {
    start = static_cast<std::size_t>(std::min(offset, total_size));
  }
  if (size == 0) size = matches.size();
  const std::size_t end = start + std::min(size, matches.size() - start);
  // The order's values of every match, read once: the sort compares them O(n log n) times,
  // and reading a field is an indirect call (a quarter of a whole list's instructions when
  // read in every comparison; docs/benchmarks.md). The values view into the connections, which
  // the caller keeps alive. The comparison is ConnectionOrder::Compare's: the keys, then seq.
  const std::vector<OrderKey>& keys = order.keys();
  const std::size_t width = keys.size();
  std::vector<FieldValue> values;
  values.reserve(matches.size() * width);
  for (const std::uint32_t i : matches) {
    for (const OrderKey& key : keys) values.push_back(key.field->get(at(i)));
  }
  std::vector<std::uint32_t> positions(matches.size());
  for (std::size_t p = 0; p < positions.size(); ++p) positions[p] = static_cast<std::uint32_t>(p);
  const auto less = [&](std::uint32_t a, std::uint32_t b) {
    const FieldValue* value_a = values.data() + a * width;
    const FieldValue* value_b = values.data() + b * width;
    for (std::size_t k = 0; k < width; ++k) {
      const int result = CompareFieldValues(keys[k].field->kind, value_a[k], value_b[k]);
      if (result != 0) return (keys[k].descending ? -result : result) < 0;
    }
    return at(matches[a]).seq < at(matches[b]).seq;
  };
  // Only the connections up to the end of the page need to be in order: O(n log end). The
  // snapshot comes in the order the connections opened, so a list by open time (the KubeMQ
  // list's, the default order_by) is often in order already: one pass finds that out.
  if (std::is_sorted(positions.begin(), positions.end(), less)) {
    // In order already.
  } else if (end == positions.size()) {
    std::sort(positions.begin(), positions.end(), less);
  } else {
    std::partial_sort(positions.begin(), positions.begin() + static_cast<std::ptrdiff_t>(end),
                      positions.end(), less);
  }
  selection->total_size = total_size;
  if (end < positions.size()) selection->next = order.CursorOf(at(matches[positions[end - 1]]));
  selection->page.reserve(end - start);
  for (std::size_t p = start; p < end; ++p) selection->page.push_back(matches[positions[p]]);
}

std::size_t PageSize(std::int64_t page_size) {
  return static_cast<std::size_t>(page_size == 0 ? kDefaultPageSize : page_size);
}

bool NamesDetail(const ConnectionFilter& filter, const ConnectionOrder& order) {
  if (filter.NamesDetail()) return true;
  for (const OrderKey& key : order.keys()) {
    if (key.field->detail) return true;
  }
  return false;
}

// The connections of the given client ids, from the source's index: one lookup per id.
ConnectionList FindByClientIds(const ConnectionSource& source,
                               const std::vector<std::string_view>& client_ids) {
  auto found = std::make_shared<std::vector<ConnectionPtr>>();
  for (const std::string_view client_id : client_ids) {
    std::vector<ConnectionPtr> connections = source.FindByClientId(client_id);
    found->insert(found->end(), std::make_move_iterator(connections.begin()),
                  std::make_move_iterator(connections.end()));
  }
  return found;
}

// One page of the source's connections as shared pointers, and whether they lack details.
bool SelectFromSource(const ConnectionSource& source, const ConnectionFilter& filter,
                      const ConnectionOrder& order, const OrderCursor* after, std::size_t size,
                      std::int64_t offset, std::vector<ConnectionPtr>* page,
                      std::int64_t* total_size, std::optional<OrderCursor>* next) {
  ConnectionList candidates;
  bool without_details = true;
  if (NamesDetail(filter, order)) {
    auto copies = std::make_shared<std::vector<ConnectionPtr>>();
    for (Connection& connection : source.Snapshot()) {
      copies->push_back(std::make_shared<const Connection>(std::move(connection)));
    }
    candidates = std::move(copies);
    without_details = false;
  } else if (std::vector<std::string_view> client_ids; filter.ClientIdCandidates(&client_ids)) {
    candidates = FindByClientIds(source, client_ids);
  } else {
    candidates = source.SharedSnapshot();
  }
  const std::vector<ConnectionPtr>& list = *candidates;
  Selection selection;
  Select(
      list.size(), [&list](std::size_t i) -> const Connection& { return *list[i]; }, filter, order,
      after, size, offset, &selection);
  *total_size = selection.total_size;
  *next = std::move(selection.next);
  page->reserve(selection.page.size());
  for (const std::uint32_t i : selection.page) page->push_back(list[i]);
  return without_details;
}

// Parses and checks the query, then runs `run(filter, order, after or null)` for the page.
template <typename Run>
Status RunQuery(const ConnectionQuery& query, ConnectionPage* page, Run run) {
  Status status = CheckPaging(query.page_size, query.offset);
  if (!status.ok()) return status;
  ConnectionFilter filter;
  status = ConnectionFilter::Parse(query.filter, &filter);
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
  std::optional<OrderCursor> next;
  run(filter, order, has_token ? &after : nullptr, &next);
  if (next) page->next_page_token = EncodePageToken(fingerprint, order, *next);
  return Status();
}

// Runs `body` (which fills *page); whatever it throws (out of memory, the source's own failure)
// passes through unchanged with an empty page. No exception text becomes a Status message: the
// HTTP router answers a throw with a fixed 500 and logs the text (http_router.h).
template <typename Page, typename Body>
Status Guarded(Page* page, Body body) {
  try {
    *page = Page();
    Status status = body();
    if (!status.ok()) *page = Page();
    return status;
  } catch (...) {
    *page = Page();
    throw;
  }
}

Status CheckTyped(const TypedConnectionQuery& query) {
  return CheckPaging(query.page_size, query.offset);
}

std::size_t TypedPageSize(const TypedConnectionQuery& query) {
  return query.unlimited ? 0 : PageSize(query.page_size);
}

}  // namespace

Status RunConnectionQuery(const ConnectionSource& source, const ConnectionQuery& query,
                          ConnectionPage* page) {
  return Guarded(page, [&] {
    return RunQuery(query, page,
                    [&](const ConnectionFilter& filter, const ConnectionOrder& order,
                        const OrderCursor* after, std::optional<OrderCursor>* next) {
                      std::vector<ConnectionPtr> shared;
                      const bool add_details =
                          SelectFromSource(source, filter, order, after, PageSize(query.page_size),
                                           query.offset, &shared, &page->total_size, next);
                      page->connections.reserve(shared.size());
                      for (const ConnectionPtr& connection : shared) {
                        page->connections.push_back(*connection);
                      }
                      if (add_details) source.AddDetails(&page->connections);
                    });
  });
}

Status RunConnectionQuery(const ConnectionSource& source, const TypedConnectionQuery& query,
                          SharedConnectionPage* page) {
  return Guarded(page, [&] {
    const Status status = CheckTyped(query);
    if (!status.ok()) return status;
    SelectFromSource(source, query.filter, query.order, query.after ? &*query.after : nullptr,
                     TypedPageSize(query), query.offset, &page->connections, &page->total_size,
                     &page->next);
    return status;
  });
}

}  // namespace mqc
