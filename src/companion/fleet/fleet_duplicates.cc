// SPDX-License-Identifier: BSD-3-Clause
// The fleet's duplicated client ids as a filter (see fleet_duplicates.h).
#include "companion/fleet/fleet_duplicates.h"

#include <algorithm>
#include <exception>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "companion/http/view_util.h"
#include "companion/query/connection_page_token.h"
#include "companion/query/query_syntax.h"

namespace mqc {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kOpen[] = "state = MQTT_CONNECTION_STATE_OPEN";

// Runs `ask(i)` for every peer i, each in its own thread, and joins them all. `ask` must not
// throw out (an exception ends the process): it catches and fails its own peer.
template <typename Ask>
void ForEachPeer(std::size_t peers, const Ask& ask) {
  std::vector<std::thread> threads;
  threads.reserve(peers);
  for (std::size_t i = 0; i < peers; ++i) threads.emplace_back([&ask, i] { ask(i); });
  for (std::thread& thread : threads) thread.join();
}

PeerFailure Failed(const std::string& peer, const std::string& step, const char* what) {
  return {peer, "internal", step + what};
}

// One broker's open client ids, walked in pages: `page(token, &page)` asks for the next.
template <typename PageFn>
bool WalkOpenIds(const PageFn& page_fn, std::vector<std::string>* ids, Status* error) {
  std::string token;
  for (;;) {  // bounded: each turn reads a full page or ends, and at most kMaxScannedClientIds
    ConnectionPage page;
    if (!page_fn(token, &page)) return false;
    for (Connection& connection : page.connections) ids->push_back(std::move(connection.client_id));
    if (page.next_page_token.empty() || page.connections.empty()) return true;
    if (ids->size() >= kMaxScannedClientIds) {
      *error = Status(StatusCode::kResourceExhausted,
                      "more than " + std::to_string(kMaxScannedClientIds) +
                          " open connections on one broker: too many to look for duplicated "
                          "client ids across the fleet");
      return false;
    }
    token = std::move(page.next_page_token);
  }
}

}  // namespace

std::vector<std::string> DuplicatedIds(const std::vector<std::vector<std::string>>& ids_per_broker) {
  std::unordered_map<std::string_view, std::size_t> brokers;
  for (const std::vector<std::string>& ids : ids_per_broker) {
    std::unordered_set<std::string_view> here;
    for (const std::string& id : ids) {
      if (here.insert(id).second) ++brokers[id];
    }
  }
  std::vector<std::string> duplicated;
  for (const auto& [id, count] : brokers) {
    if (count >= 2) duplicated.emplace_back(id);
  }
  std::sort(duplicated.begin(), duplicated.end());
  return duplicated;
}

Status DuplicatePage(const ConnectionFilter& filter, const ConnectionOrder& order,
                     std::uint64_t fingerprint, std::size_t page_size,
                     const std::vector<BrokerCursor>& previous,
                     std::vector<BrokerAnswer> candidates, ConnectionPage* out) {
  // Brokers with the id open, counted once per broker, as MarkDuplicateClientIds counts them.
  std::unordered_map<std::string, std::size_t> brokers_open;
  for (const BrokerAnswer& answer : candidates) {
    if (!answer.answered) continue;
    std::unordered_set<std::string_view> here;
    for (const Connection& connection : answer.page.connections) {
      if (connection.state == ConnectionState::kOpen && here.insert(connection.client_id).second) {
        ++brokers_open[connection.client_id];
      }
    }
  }
  for (BrokerAnswer& answer : candidates) {
    if (!answer.answered) continue;
    OrderCursor cursor;
    const std::string token = NodeTokenOf(previous, answer.broker);
    const bool after_cursor = !token.empty();
    if (after_cursor) {
      const Status status = DecodePageToken(token, fingerprint, order, &cursor);
      if (!status.ok()) return status;
    }
    std::vector<Connection> kept;
    std::int64_t matched = 0;
    for (Connection& connection : answer.page.connections) {
      const auto found = brokers_open.find(connection.client_id);
      connection.duplicate_client_id = connection.state == ConnectionState::kOpen &&
                                       found != brokers_open.end() && found->second >= 2;
      if (!filter.Matches(connection)) continue;
      ++matched;
      if (after_cursor && order.Compare(connection, cursor) <= 0) continue;
      kept.push_back(std::move(connection));
    }
    std::sort(kept.begin(), kept.end(), [&order](const Connection& a, const Connection& b) {
      return order.Compare(a, b) < 0;
    });
    answer.page.connections = std::move(kept);
    answer.page.total_size = matched;
    answer.page.next_page_token.clear();  // everything after the cursor is here
  }
  MergeBrokerPages(order, fingerprint, page_size, previous, std::move(candidates), out);
  return Status();
}

Status RunDuplicateQuery(const ConnectionSource& local, const FleetQueryOptions& options,
                         const ConnectionFilter& filter,
                         const ConnectionOrder& order, std::uint64_t fingerprint,
                         std::size_t page_size, const std::vector<BrokerCursor>& cursors,
                         Clock::time_point deadline, ConnectionPage* page,
                         std::size_t* duplicated_ids) {
  const std::size_t peers = options.peers.size();
  const Clock::time_point peer_deadline = std::max(Clock::now(), deadline - kFleetMergeMargin);
  // Half of what is left for the walk of open ids, the rest for the candidates.
  const Clock::time_point walk_deadline = Clock::now() + (peer_deadline - Clock::now()) / 2;

  // (1) Every broker's open client ids; index 0 is this broker.
  std::vector<std::vector<std::string>> ids(peers + 1);
  std::vector<BrokerAnswer> answers(peers + 1);
  answers[0].broker = kSelfBroker;
  // Each broker's node id as its walk answered it (the lookup's page may be left out), and its
  // time over both steps (answer_ms).
  std::vector<std::uint32_t> node_ids(peers + 1, 0);
  node_ids[0] = options.node_id;
  Clock::time_point started = Clock::now();
  Status local_error;
  answers[0].answered = WalkOpenIds(
      [&local](const std::string& token, ConnectionPage* out) {
        ConnectionQuery query;
        query.filter = kOpen;
        query.order_by = "client_id";
        query.page_size = kMaxPageSize;
        query.page_token = token;
        return RunConnectionQuery(local, query, out).ok();
      },
      &ids[0], &local_error);
  answers[0].answer_ms = MillisecondsSince(started);
  if (!answers[0].answered) {
    return local_error.ok() ? Status(StatusCode::kInternal, "this broker's open connections "
                                                            "could not be read")
                            : local_error;
  }
  ForEachPeer(peers, [&](std::size_t i) {
    const PeerUrl& peer = options.peers[i];
    BrokerAnswer& answer = answers[i + 1];
    answer.broker = peer.Text();
    const Clock::time_point asked = Clock::now();
    try {
      Status error;
      answer.answered = WalkOpenIds(
          [&](const std::string& token, ConnectionPage* out) {
            ListConnectionsRequest node;
            node.filter = kOpen;
            node.order_by = "client_id";
            node.page_token = token;
            const bool answered =
                AskPeer(*options.client, peer, options.token, node, walk_deadline,
                        static_cast<std::size_t>(kMaxPageSize), out, &answer.failure);
            node_ids[i + 1] = out->node_id;
            return answered;
          },
          &ids[i + 1], &error);
      if (!answer.answered && !error.ok()) {
        answer.failure = {peer.Text(), std::string(ConnectRpcCodeName(error.code())),
                          error.message()};
      }
    } catch (const std::exception& e) {
      answer.answered = false;
      answer.failure = Failed(peer.Text(), "walking open client ids: ", e.what());
    }
    answer.answer_ms = MillisecondsSince(asked);
    if (!answer.answered) {
      ids[i + 1].clear();
      answer.failure.message = "looking for duplicated client ids: " + answer.failure.message;
    }
  });

  // (2) The ids open on two brokers or more, among those that answered.
  const std::vector<std::string> duplicated = DuplicatedIds(ids);
  ids.clear();
  *duplicated_ids = duplicated.size();
  if (duplicated.size() > kMaxInValues) {
    return Status(StatusCode::kResourceExhausted,
                  std::to_string(duplicated.size()) +
                      " client ids are open on two brokers or more; duplicate_client_id lists at "
                      "most " +
                      std::to_string(kMaxInValues));
  }

  // (3) Each broker's open connections among them.
  if (!duplicated.empty()) {
    std::string lookup = std::string(kOpen) + " AND client_id IN (";
    for (std::size_t i = 0; i < duplicated.size(); ++i) {
      lookup += (i == 0 ? "" : ", ") + QuoteFilterString(duplicated[i]);
    }
    lookup += ")";
    ConnectionQuery query;
    query.filter = lookup;
    query.page_size = static_cast<std::int64_t>(duplicated.size());
    started = Clock::now();
    const Status status = RunConnectionQuery(local, query, &answers[0].page);
    answers[0].answer_ms += MillisecondsSince(started);
    if (!status.ok()) return status;
    ForEachPeer(peers, [&](std::size_t i) {
      BrokerAnswer& answer = answers[i + 1];
      if (!answer.answered) return;
      const Clock::time_point asked = Clock::now();
      try {
        ListConnectionsRequest node;
        node.filter = lookup;
        answer.answered = AskPeer(*options.client, options.peers[i], options.token, node,
                                  peer_deadline, duplicated.size(), &answer.page, &answer.failure);
      } catch (const std::exception& e) {
        answer.answered = false;
        answer.failure = Failed(answer.broker, "", e.what());
      }
      answer.answer_ms += MillisecondsSince(asked);
      if (!answer.answered) {
        answer.page = ConnectionPage();
        answer.failure.message = "looking up duplicated client ids: " + answer.failure.message;
      }
    });
  }
  for (std::size_t b = 0; b <= peers; ++b) answers[b].page.node_id = node_ids[b];

  // (4) Flags, the caller's filter, order and page.
  return DuplicatePage(filter, order, fingerprint, page_size, cursors, std::move(answers), page);
}

}  // namespace mqc
