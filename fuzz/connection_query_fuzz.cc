// SPDX-License-Identifier: BSD-3-Clause
// Fuzz target for filtering, ordering and paging of connections. The input is split at '\n' into
// filter, order_by, page_token, page_size and offset (missing parts are empty; the offset part
// takes the rest), and run over a small fixed snapshot. Besides crashes and sanitizer reports it
// aborts when a failed query has no message or leaves a page behind, when a page holds a
// connection that is not in the snapshot (or holds one twice), when total_size or the page size
// is more than they may be, when following next_page_token repeats, skips or reorders a match,
// when a value quoted by QuoteFilterString matches anything but itself, when NOT (F), -(F),
// (F) OR (F) and (F) AND (F) do not select what F's matches say they must, and when the same
// query over a source with a client id index (the path `client_id IN (...)` and `=` take)
// answers otherwise than the reference over the plain snapshot (tests/support/reference_query.h).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../tests/support/fleet_source.h"
#include "../tests/support/fuzz_fleet.h"
#include "../tests/support/quote_filter_string.h"
#include "../tests/support/reference_query.h"
#include "companion/connection.h"
#include "companion/query/connection_filter.h"
#include "companion/query/connection_query.h"
#include "companion/query/query_syntax.h"
#include "link/status.h"

namespace {

using mqc::Connection;
using mqc::ConnectionPage;
using mqc::ConnectionQuery;

constexpr int kMaxPagesFollowed = 64;

[[noreturn]] void Fail(const char* what, const ConnectionQuery& query) {
  std::fprintf(stderr, "connection_query_fuzz: %s (filter of %zu bytes, order_by of %zu bytes)\n",
               what, query.filter.size(), query.order_by.size());
  std::abort();
}

// Ten connections with ties in most fields, unset values and extreme numbers.
std::vector<Connection> MakeSnapshot() {
  std::vector<Connection> snapshot;
  const char* const client_ids[] = {"sensor-1", "sensor-2", "sensor-1*", "",   "actuator",
                                    "a\"b\\c",  "\xC3\xA9", "sensor-2",  "zz", "\x01\x7f"};
  for (std::uint64_t i = 0; i < 10; ++i) {
    Connection c = mqc::FuzzConnection(i, client_ids[i]);
    c.uid = "uid-" + std::to_string(i % 4);  // ties, for the orderings' tiebreaks
    snapshot.push_back(std::move(c));
  }
  return snapshot;
}

const std::vector<Connection>& Snapshot() {
  static const std::vector<Connection> snapshot = MakeSnapshot();
  return snapshot;
}

// The snapshot behind the ConnectionSource interface, with a client id index.
const mqc::FleetSource& Source() {
  static const mqc::FleetSource source(Snapshot());
  return source;
}

std::int64_t ParseNumber(std::string_view text) {
  std::int64_t value = 0;
  return mqc::ParseInt64(text, &value) == mqc::NumberStatus::kOk ? value : 0;
}

ConnectionQuery QueryFromInput(std::string_view input) {
  std::string_view parts[5];
  for (int i = 0; i < 4; ++i) {
    const std::size_t newline = input.find('\n');
    parts[i] = input.substr(0, newline);
    input = newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);
  }
  parts[4] = input;
  ConnectionQuery query;
  query.filter = std::string(parts[0]);
  query.order_by = std::string(parts[1]);
  query.page_token = std::string(parts[2]);
  query.page_size = ParseNumber(parts[3]);
  query.offset = ParseNumber(parts[4]);
  return query;
}

bool Run(const ConnectionQuery& query, ConnectionPage* page) {
  page->connections.push_back(Connection());  // must be cleared by the query
  const mqc::Status status = mqc::RunConnectionQuery(Source(), query, page);
  const bool ok = status.ok();
  if (!ok && status.message().empty()) Fail("failed without a message", query);
  if (!ok && (!page->connections.empty() || !page->next_page_token.empty())) {
    Fail("failed but left a page", query);
  }
  return ok;
}

// A page holds connections of the snapshot, each once, and no more than it may.
void CheckPage(const ConnectionQuery& query, const ConnectionPage& page) {
  const std::vector<Connection>& snapshot = Snapshot();
  if (page.total_size < 0 || page.total_size > static_cast<std::int64_t>(snapshot.size())) {
    Fail("total_size out of range", query);
  }
  const std::int64_t limit = query.page_size == 0 ? mqc::kDefaultPageSize : query.page_size;
  if (static_cast<std::int64_t>(page.connections.size()) > std::min(limit, page.total_size)) {
    Fail("page larger than page_size or total_size", query);
  }
  if (!page.next_page_token.empty() && page.connections.empty()) {
    Fail("an empty page with a next_page_token", query);
  }
  std::set<std::uint64_t> seen;
  for (const Connection& c : page.connections) {
    if (!seen.insert(c.seq).second) Fail("a connection twice in one page", query);
    bool found = false;
    for (const Connection& s : snapshot) {
      found = found || (s.seq == c.seq && s.uid == c.uid && s.client_id == c.client_id);
    }
    if (!found) Fail("a connection that is not in the snapshot", query);
  }
}

// Following the tokens from the first page visits exactly the matches of one big page, in order.
void CheckPagesFollow(ConnectionQuery query, const ConnectionPage& first) {
  ConnectionQuery everything = query;
  everything.page_size = mqc::kMaxPageSize;
  everything.offset = 0;
  ConnectionPage all;
  if (!Run(everything, &all)) Fail("a query fails with another page_size", query);
  std::vector<std::uint64_t> followed;
  ConnectionPage page = first;
  for (int pages = 0;; ++pages) {
    for (const Connection& c : page.connections) followed.push_back(c.seq);
    if (page.next_page_token.empty()) break;
    if (pages == kMaxPagesFollowed) return;  // a page size of 1 over ten connections ends sooner
    query.page_token = page.next_page_token;
    query.offset = 0;
    page = ConnectionPage();
    if (!Run(query, &page)) Fail("a next_page_token is refused", query);
    CheckPage(query, page);
    if (page.total_size != all.total_size) Fail("total_size changed between pages", query);
  }
  std::vector<std::uint64_t> expected;
  for (const Connection& c : all.connections) expected.push_back(c.seq);
  if (followed != expected) Fail("pages do not add up to the whole", query);
}

// A quoted value, whatever its bytes, selects exactly the connections that have it.
void CheckQuotedValue(std::string_view value) {
  ConnectionQuery query;
  query.filter = "client_id = " + mqc::QuoteFilterString(value);
  if (query.filter.size() > 1024) return;
  ConnectionPage page;
  if (!Run(query, &page)) Fail("a quoted value does not parse", query);
  std::size_t expected = 0;
  for (const Connection& c : Snapshot()) expected += c.client_id == value ? 1 : 0;
  if (page.connections.size() != expected) Fail("a quoted value matches others", query);
  for (const Connection& c : page.connections) {
    if (c.client_id != value) Fail("a quoted value matches others", query);
  }
}

// The source path gives the page and total the reference gives over the plain snapshot.
void CheckAnswersAsTheReference(const ConnectionQuery& query, const ConnectionPage& page) {
  ConnectionPage expected;
  if (!mqc::RunReferenceQuery(Snapshot(), query, &expected).ok()) {
    Fail("the reference refuses what the source path takes", query);
  }
  if (expected.total_size != page.total_size ||
      expected.connections.size() != page.connections.size() ||
      expected.next_page_token != page.next_page_token) {
    Fail("the source path answers otherwise than the reference", query);
  }
  for (std::size_t i = 0; i < page.connections.size(); ++i) {
    if (expected.connections[i].seq != page.connections[i].seq) {
      Fail("the source path answers otherwise than the reference", query);
    }
  }
}

// Which connections of the snapshot `filter` matches; false when it does not parse.
bool MatchesOf(const std::string& text, std::vector<bool>* matches, std::string* error) {
  mqc::ConnectionFilter filter;
  const mqc::Status status = mqc::ConnectionFilter::Parse(text, &filter);
  if (!status.ok()) {
    *error = status.message();
    return false;
  }
  matches->clear();
  for (const Connection& c : Snapshot()) matches->push_back(filter.Matches(c));
  return true;
}

// NOT, '-', OR and AND around a filter that parses select what they must. Wrapping may take a
// filter past the length or nesting limits; it must then say so.
void CheckBooleanForms(const ConnectionQuery& query) {
  std::vector<bool> plain;
  std::string error;
  if (!MatchesOf(query.filter, &plain, &error)) return;
  if (query.filter.find_first_not_of(" \t\r\f\v") == std::string::npos) return;  // "()"
  const std::string f = "(" + query.filter + ")";
  const struct {
    std::string text;
    bool negated;
  } forms[] = {
      {"NOT " + f, true}, {"-" + f, true}, {f + " OR " + f, false}, {f + " AND " + f, false}};
  for (const auto& form : forms) {
    std::vector<bool> wrapped;
    if (!MatchesOf(form.text, &wrapped, &error)) {
      if (error.find("nest deeper") == std::string::npos &&
          error.find("longer than") == std::string::npos) {
        Fail("a filter that parses does not parse inside NOT, OR or AND", query);
      }
      continue;
    }
    for (std::size_t i = 0; i < plain.size(); ++i) {
      if (wrapped[i] != (plain[i] != form.negated)) {
        Fail("NOT, OR or AND around a filter selects otherwise", query);
      }
    }
  }
}

}  // namespace

// No try/catch, unlike the plugin's C boundaries: an exception here is a finding to report.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const ConnectionQuery query = QueryFromInput(input);
  ConnectionPage page;
  if (Run(query, &page)) {
    CheckPage(query, page);
    CheckAnswersAsTheReference(query, page);
    CheckBooleanForms(query);
    if (query.page_token.empty() && query.offset == 0) CheckPagesFollow(query, page);
  }
  CheckQuotedValue(query.filter);
  return 0;
}
