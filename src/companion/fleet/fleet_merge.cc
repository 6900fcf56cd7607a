// SPDX-License-Identifier: BSD-3-Clause
// The fleet token and merge (see fleet_merge.h).
#include "companion/fleet/fleet_merge.h"

#include <algorithm>
#include <iterator>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "companion/query/connection_page_token.h"
#include "link/text_util.h"

namespace mqc {
namespace {

constexpr std::uint8_t kFleetTokenVersion = 'F';
constexpr std::size_t kMaxBrokersInToken = 4096;

void PutString(std::string_view text, std::string* out) {
  PutVarint(text.size(), out);
  out->append(text);
}

class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  bool ReadU8(std::uint8_t* value) {
    if (bytes_.empty()) return false;
    *value = static_cast<std::uint8_t>(bytes_.front());
    bytes_.remove_prefix(1);
    return true;
  }
  bool ReadU64(std::uint64_t* value) {
    if (bytes_.size() < 8) return false;
    *value = 0;
    for (int i = 0; i < 8; ++i) *value = (*value << 8) | static_cast<std::uint8_t>(bytes_[i]);
    bytes_.remove_prefix(8);
    return true;
  }
  bool ReadLength(std::size_t* length) {
    std::uint64_t value = 0;
    if (!GetVarint(&bytes_, &value)) return false;
    *length = static_cast<std::size_t>(value);
    return true;
  }
  bool ReadString(std::string* text) {
    std::size_t length = 0;
    if (!ReadLength(&length) || length > bytes_.size()) return false;
    text->assign(bytes_.substr(0, length));
    bytes_.remove_prefix(length);
    return true;
  }
  bool AtEnd() const { return bytes_.empty(); }

 private:
  std::string_view bytes_;
};

// Ties between brokers: by node id, then broker key, so that a page reads the same whichever
// broker answered first.
bool ComesFirst(const ConnectionOrder& order, const Connection& a, std::string_view broker_a,
                const Connection& b, std::string_view broker_b) {
  const int compared = order.Compare(a, b);
  if (compared != 0) return compared < 0;
  if (a.node_id != b.node_id) return a.node_id < b.node_id;
  return broker_a < broker_b;
}

bool HasMore(const BrokerAnswer& answer, std::size_t taken) {
  return taken < answer.page.connections.size() || !answer.page.next_page_token.empty();
}

// A k-way merge by linear scan (a fleet has few brokers, and each step is one comparison per
// broker): calls take(i) for the next connection of answer i in order, then counts it in
// (*taken)[i], until `page_size` are taken or the answers run out. With `stop_where_unsure`,
// it stops before a step while a broker that has more has nothing left in its answer (its next
// connection could come first).
template <typename Take>
void MergeOrder(const ConnectionOrder& order, std::size_t page_size,
                const std::vector<BrokerAnswer>& answers, bool stop_where_unsure,
                std::vector<std::size_t>* taken, Take take) {
  for (std::size_t step = 0; step < page_size; ++step) {
    std::size_t best = answers.size();
    for (std::size_t i = 0; i < answers.size(); ++i) {
      const BrokerAnswer& answer = answers[i];
      if (!answer.answered) continue;
      if ((*taken)[i] == answer.page.connections.size()) {
        if (stop_where_unsure && HasMore(answer, (*taken)[i])) return;
        continue;
      }
      if (best == answers.size() ||
          ComesFirst(order, answer.page.connections[(*taken)[i]], answer.broker,
                     answers[best].page.connections[(*taken)[best]], answers[best].broker)) {
        best = i;
      }
    }
    if (best == answers.size()) return;
    take(best);
    ++(*taken)[best];
  }
}

}  // namespace

std::size_t FirstAskSize(std::size_t page_size, std::size_t brokers) {
  if (brokers == 0) return page_size;
  const std::size_t share = (page_size + brokers - 1) / brokers;
  return std::min(page_size, share + share / 4 + 16);
}

std::vector<std::size_t> MoreToAsk(const ConnectionOrder& order, std::size_t page_size,
                                   const std::vector<BrokerAnswer>& answers) {
  std::vector<std::size_t> taken(answers.size(), 0);
  std::size_t merged = 0;
  MergeOrder(order, page_size, answers, /*stop_where_unsure=*/true, &taken,
             [&merged](std::size_t) { ++merged; });
  std::vector<std::size_t> more(answers.size(), 0);
  const std::size_t needed = page_size - merged;
  for (std::size_t i = 0; i < answers.size() && needed > 0; ++i) {
    const BrokerAnswer& answer = answers[i];
    if (!answer.answered || answer.page.next_page_token.empty()) continue;
    const std::size_t left = answer.page.connections.size() - taken[i];
    if (left < needed) more[i] = needed - left;
  }
  return more;
}

void AppendAnswer(BrokerAnswer later, BrokerAnswer* answer) {
  if (!later.answered) {
    answer->answered = false;
    answer->failure = std::move(later.failure);
    answer->page = ConnectionPage();
    return;
  }
  std::vector<Connection>& connections = answer->page.connections;
  connections.insert(connections.end(), std::make_move_iterator(later.page.connections.begin()),
                     std::make_move_iterator(later.page.connections.end()));
  answer->page.next_page_token = std::move(later.page.next_page_token);
  answer->answer_ms += later.answer_ms;
}

std::string EncodeFleetToken(std::uint64_t fingerprint, const std::vector<BrokerCursor>& cursors) {
  std::string bytes;
  bytes.push_back(static_cast<char>(kFleetTokenVersion));
  for (int shift = 56; shift >= 0; shift -= 8) {
    bytes.push_back(static_cast<char>((fingerprint >> shift) & 0xff));
  }
  PutVarint(cursors.size(), &bytes);
  for (const BrokerCursor& cursor : cursors) {
    PutString(cursor.broker, &bytes);
    PutString(cursor.node_token, &bytes);
  }
  return EncodeBase64Url(bytes);
}

Status DecodeFleetToken(std::string_view token, std::uint64_t fingerprint,
                        std::vector<BrokerCursor>* cursors) {
  cursors->clear();
  const Status malformed = InvalidArgument("malformed page_token");
  std::string bytes;
  if (!DecodeBase64Url(token, &bytes, /*canonical=*/true)) return malformed;
  Reader reader(bytes);
  std::uint8_t version = 0;
  if (!reader.ReadU8(&version)) return malformed;
  if (version != kFleetTokenVersion) {
    return InvalidArgument(
        "page_token is not a fleet page token (a CONNECTION_SCOPE_NODE page's token, or "
        "malformed): pass a token back with the scope it was made for");
  }
  std::uint64_t made_for = 0;
  std::size_t count = 0;
  if (!reader.ReadU64(&made_for) || !reader.ReadLength(&count) || count > kMaxBrokersInToken) {
    return malformed;
  }
  if (made_for != fingerprint) {
    return InvalidArgument("page_token does not belong to this filter and order_by");
  }
  for (std::size_t i = 0; i < count; ++i) {
    BrokerCursor cursor;
    if (!reader.ReadString(&cursor.broker) || !reader.ReadString(&cursor.node_token)) {
      cursors->clear();
      return malformed;
    }
    cursors->push_back(std::move(cursor));
  }
  if (!reader.AtEnd()) {
    cursors->clear();
    return malformed;
  }
  return Status();
}

std::string NodeTokenOf(const std::vector<BrokerCursor>& cursors, std::string_view broker) {
  for (const BrokerCursor& cursor : cursors) {
    if (cursor.broker == broker) return cursor.node_token;
  }
  return {};
}

void MergeBrokerPages(const ConnectionOrder& order, std::uint64_t fingerprint,
                      std::size_t page_size, const std::vector<BrokerCursor>& previous,
                      std::vector<BrokerAnswer> answers, ConnectionPage* out) {
  *out = ConnectionPage();
  std::vector<std::size_t> taken(answers.size(), 0);
  for (const BrokerAnswer& answer : answers) {
    if (answer.answered) {
      out->total_size += answer.page.total_size;
      out->node_answers.push_back({answer.broker == kSelfBroker ? std::string() : answer.broker,
                                   answer.page.node_id, answer.page.total_size, answer.answer_ms});
    } else {
      out->peer_errors.push_back(answer.failure);
    }
  }
  std::vector<std::size_t> origin;  // origin[p]: the answer page entry p came from
  MergeOrder(order, page_size, answers, /*stop_where_unsure=*/false, &taken, [&](std::size_t best) {
    out->connections.push_back(std::move(answers[best].page.connections[taken[best]]));
    origin.push_back(best);
  });
  // The next positions: after the last connection shown from each broker, else unchanged.
  std::vector<BrokerCursor> next = previous;
  bool more = false;
  for (std::size_t i = 0; i < answers.size(); ++i) {
    const BrokerAnswer& answer = answers[i];
    if (!answer.answered) continue;
    if (HasMore(answer, taken[i])) more = true;
    if (taken[i] == 0) continue;
    std::size_t last = origin.size();
    while (last > 0 && origin[last - 1] != i) --last;
    std::string token =
        EncodePageToken(fingerprint, order, order.CursorOf(out->connections[last - 1]));
    bool found = false;
    for (BrokerCursor& cursor : next) {
      if (cursor.broker == answer.broker) {
        cursor.node_token = std::move(token);
        found = true;
        break;
      }
    }
    if (!found) next.push_back({answer.broker, std::move(token)});
  }
  if (more) out->next_page_token = EncodeFleetToken(fingerprint, next);
}

std::vector<std::string> OpenClientIds(const ConnectionPage& page) {
  std::vector<std::string> ids;
  std::unordered_set<std::string> seen;
  for (const Connection& connection : page.connections) {
    if (connection.state == ConnectionState::kOpen && seen.insert(connection.client_id).second) {
      ids.push_back(connection.client_id);
    }
  }
  return ids;
}

void MarkDuplicateClientIds(const std::vector<BrokerAnswer>& lookups, ConnectionPage* page) {
  std::unordered_map<std::string, std::size_t> brokers_open;
  for (const BrokerAnswer& lookup : lookups) {
    if (!lookup.answered) continue;
    std::unordered_set<std::string> here;
    for (const Connection& connection : lookup.page.connections) {
      if (connection.state == ConnectionState::kOpen && here.insert(connection.client_id).second) {
        ++brokers_open[connection.client_id];
      }
    }
  }
  for (Connection& connection : page->connections) {
    const auto found = brokers_open.find(connection.client_id);
    connection.duplicate_client_id = connection.state == ConnectionState::kOpen &&
                                     found != brokers_open.end() && found->second >= 2;
  }
}

}  // namespace mqc
