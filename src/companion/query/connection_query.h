// Filtering, ordering and paging of connections: one implementation behind both the Connect
// ListConnections method and the KubeMQ endpoint's query parameters.
// Grammar: docs/query-language.md (filter, order_by, page tokens).
// Pure values, safe to use on any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "link/connection.h"

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

struct ConnectionPage {
  std::vector<Connection> connections;
  std::int64_t total_size = 0;  // every match, not only this page
  std::string next_page_token;  // empty when there are no more matches
};

// Runs a query over a snapshot. On a bad filter, order, page size or token: returns false and
// sets *error to a message naming the problem (position, field or value).
bool RunConnectionQuery(std::vector<Connection> snapshot, const ConnectionQuery& query,
                        ConnectionPage* page, std::string* error);

// A string as a quoted filter literal (JSON escapes), for building filters from other inputs.
std::string QuoteFilterString(std::string_view value);

}  // namespace mqc
