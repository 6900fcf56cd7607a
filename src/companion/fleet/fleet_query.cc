// SPDX-License-Identifier: BSD-3-Clause
// FleetQuery (see fleet_query.h).
#include "companion/fleet/fleet_query.h"

#include <cjson/cJSON.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <thread>
#include <unordered_set>
#include <utility>

#include "companion/fleet/fleet_duplicates.h"
#include "companion/fleet/fleet_merge.h"
#include "companion/http/access_tokens.h"
#include "companion/http/connect_rpc_proto.h"
#include "companion/http/view_util.h"
#include "companion/json_util.h"
#include "companion/query/connection_filter.h"
#include "companion/query/connection_page_token.h"
#include "companion/query/query_syntax.h"

namespace mqc {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kListPath[] = "/mqtt.connections.v1.ConnectionsService/ListConnections";
// A page of 10,000 connections with many subscriptions each stays well below this.
constexpr std::size_t kMaxPeerAnswerBytes = 256u << 20;

PeerFailure Failure(const PeerUrl& peer, StatusCode code, std::string message) {
  return {peer.Text(), std::string(ConnectRpcCodeName(code)), std::move(message)};
}

// A Connect error body's code and message, when the bytes are one.
bool ReadConnectError(const std::string& body, std::string* code, std::string* message) {
  const CjsonPtr root = ParseJson(body);
  if (!root || !cJSON_IsObject(root.get())) return false;
  const cJSON* c = cJSON_GetObjectItemCaseSensitive(root.get(), "code");
  const cJSON* m = cJSON_GetObjectItemCaseSensitive(root.get(), "message");
  if (!cJSON_IsString(c)) return false;
  *code = c->valuestring;
  *message = cJSON_IsString(m) ? m->valuestring : "";
  return true;
}

}  // namespace

bool AskPeer(const PeerClient& client, const PeerUrl& peer, const std::string& token,
             const ListConnectionsRequest& node_request, Clock::time_point deadline,
             std::size_t page_size, ConnectionPage* page, PeerFailure* failure) {
  connections_v1::ListConnectionsRequest message;
  message.set_filter(node_request.filter);
  message.set_order_by(node_request.order_by);
  message.set_page_size(static_cast<std::int32_t>(page_size));
  message.set_page_token(node_request.page_token);
  message.set_scope(connections_v1::CONNECTION_SCOPE_NODE);
  PeerRequest request;
  request.path = kListPath;
  request.body = message.SerializeAsString();
  request.deadline = deadline;
  request.max_response_bytes = kMaxPeerAnswerBytes;
  request.keep_alive = true;  // a read: safe to send again on a new connection
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  request.headers = {{"Content-Type", "application/proto"},
                     {"Connect-Protocol-Version", "1"},
                     {"Connect-Timeout-Ms", std::to_string(std::max<long long>(1, left))}};
  if (!token.empty()) request.headers.emplace_back("Authorization", "Bearer " + token);
  StatusOr<PeerResponse> response = client.Post(peer, request);
  if (!response.ok()) {
    *failure = Failure(peer, response.status().code(), response.status().message());
    return false;
  }
  if (response->status != 200) {
    std::string code;
    std::string text;
    if (ReadConnectError(response->body, &code, &text)) {
      *failure = {peer.Text(), code, "the peer answered " + code + ": " + text};
    } else {
      *failure = Failure(peer, StatusCode::kInternal,
                         "the peer answered HTTP " + std::to_string(response->status) +
                             " without a Connect error");
    }
    return false;
  }
  if (response->content_type.rfind("application/proto", 0) != 0) {
    *failure = Failure(peer, StatusCode::kInternal,
                       "the peer answered HTTP 200 with Content-Type " +
                           QuoteForMessage(response->content_type) +
                           ", not a binary ListConnectionsResponse");
    return false;
  }
  const Status decoded =
      DecodeListConnectionsResponseProto(response->body, "the peer's answer", page);
  if (!decoded.ok()) {
    *failure = Failure(peer, StatusCode::kInternal, decoded.message());
    return false;
  }
  if (page->connections.size() > page_size || page->total_size < 0 ||
      page->total_size < static_cast<std::int64_t>(page->connections.size())) {
    *failure =
        Failure(peer, StatusCode::kInternal,
                "the peer's answer does not add up (" + std::to_string(page->connections.size()) +
                    " connections for a page of " + std::to_string(page_size) + ", totalSize " +
                    std::to_string(page->total_size) + ")");
    *page = ConnectionPage();
    return false;
  }
  return true;
}

FleetQuery::FleetQuery(const ConnectionSource& local, FleetQueryOptions options)
    : local_(local), options_(std::move(options)) {}

Status FleetQuery::Run(const ListConnectionsRequest& request, Clock::time_point deadline,
                       ConnectionPage* page) const {
  *page = ConnectionPage();
  if (request.page_size < 0 || request.page_size > kMaxPageSize) {
    return InvalidArgument("page_size must be between 0 and " + std::to_string(kMaxPageSize) +
                           ", got " + std::to_string(request.page_size));
  }
  const std::size_t page_size =
      static_cast<std::size_t>(request.page_size == 0 ? kDefaultPageSize : request.page_size);
  ConnectionOrder order;
  Status status = ConnectionOrder::Parse(request.order_by, &order);
  if (!status.ok()) return status;
  const std::uint64_t fingerprint = QueryFingerprint(request.filter, request.order_by);
  std::vector<BrokerCursor> cursors;
  if (!request.page_token.empty()) {
    status = DecodeFleetToken(request.page_token, fingerprint, &cursors);
    if (!status.ok()) return status;
  }

  // The filter is checked before any peer is asked, so that a bad one is refused by this
  // broker alone; its own query then runs while the peers answer (docs/fleet.md, "Cost").
  ConnectionFilter filter;
  status = ConnectionFilter::Parse(request.filter, &filter);
  if (!status.ok()) return status;
  // A filter that requires duplicate_client_id: the fleet finds its candidates first.
  static const FieldDef* const duplicate = FindField("duplicate_client_id");
  if (filter.Names(duplicate)) {
    if (!filter.RequiresTrue(duplicate)) {
      return InvalidArgument(
          "duplicate_client_id in a CONNECTION_SCOPE_FLEET filter must be required true "
          "(`duplicate_client_id = true`, joined by AND or on every side of an OR, not under "
          "NOT): the fleet looks for the duplicated ids first");
    }
    std::size_t duplicated = 0;
    status = RunDuplicateQuery(local_, options_, filter, order, fingerprint, page_size, cursors,
                               deadline, page, &duplicated);
    if (status.ok() && duplicates_gauge_ != nullptr) {
      duplicates_gauge_->Set(static_cast<double>(duplicated));
    }
    return status;
  }

  // Each broker is asked for about its share of the page first, and those that ran short
  // for the rest (fleet_merge.h, FirstAskSize and MoreToAsk).
  const std::size_t brokers = options_.peers.size() + 1;
  std::vector<BrokerAnswer> answers(brokers);
  ConnectionQuery local_query;
  local_query.filter = request.filter;
  local_query.order_by = request.order_by;
  local_query.page_size = static_cast<std::int64_t>(FirstAskSize(page_size, brokers));
  local_query.page_token = NodeTokenOf(cursors, kSelfBroker);
  answers[0].broker = kSelfBroker;

  // Peers answer a little before the caller's deadline, so that the merge fits inside it.
  const Clock::time_point peer_deadline = std::max(Clock::now(), deadline - kFleetMergeMargin);
  std::vector<ListConnectionsRequest> node_requests(options_.peers.size());
  for (std::size_t i = 0; i < options_.peers.size(); ++i) {
    node_requests[i].filter = request.filter;
    node_requests[i].order_by = request.order_by;
    node_requests[i].page_size = static_cast<std::int32_t>(local_query.page_size);
    node_requests[i].page_token = NodeTokenOf(cursors, options_.peers[i].Text());
  }
  // Three quarters of what is left for the page, the rest for the lookup of duplicate client
  // ids, so that a peer that never answers leaves time for the others' lookups.
  const Clock::time_point page_deadline =
      std::min(peer_deadline, Clock::now() + (peer_deadline - Clock::now()) * 3 / 4);
  AskPeers(node_requests, std::vector<bool>(options_.peers.size(), true), page_deadline, &answers,
           [&] { status = RunTimed(local_query, &answers[0]); });
  // A node token in a well-formed fleet token can still be refused here (the peers' answers
  // are then dropped): the caller's error, as before.
  if (!status.ok()) return status;
  answers[0].answered = true;
  // A second round at most: each broker asked again is asked for the rest of the page.
  for (int round = 0; round < 2; ++round) {
    const std::vector<std::size_t> more = MoreToAsk(order, page_size, answers);
    if (std::all_of(more.begin(), more.end(), [](std::size_t n) { return n == 0; })) break;
    std::vector<BrokerAnswer> later(brokers);
    std::vector<bool> ask(options_.peers.size());
    for (std::size_t i = 0; i < options_.peers.size(); ++i) {
      ask[i] = more[i + 1] > 0;
      node_requests[i].page_size = static_cast<std::int32_t>(more[i + 1]);
      node_requests[i].page_token = answers[i + 1].page.next_page_token;
    }
    local_query.page_size = static_cast<std::int64_t>(more[0]);
    local_query.page_token = answers[0].page.next_page_token;
    AskPeers(node_requests, ask, page_deadline, &later, [&] {
      if (more[0] > 0) status = RunTimed(local_query, &later[0]);
    });
    if (!status.ok()) return status;
    later[0].answered = true;
    for (std::size_t i = 0; i < brokers; ++i) {
      if (more[i] > 0) AppendAnswer(std::move(later[i]), &answers[i]);
    }
  }
  std::vector<BrokerAnswer> known;
  const bool all_known = OpenByClientIdKnown(filter, cursors.empty(), answers, &known);
  // Each broker's open client ids it showed: the lookup of duplicates need not ask it again.
  std::vector<std::unordered_set<std::string>> shown_open(brokers);
  for (std::size_t i = 0; i < brokers && !all_known; ++i) {
    for (const Connection& connection : answers[i].page.connections) {
      if (connection.state == ConnectionState::kOpen) shown_open[i].insert(connection.client_id);
    }
  }
  MergeBrokerPages(order, fingerprint, page_size, cursors, std::move(answers), page);
  MarkDuplicates(peer_deadline, all_known ? &known : nullptr, shown_open, page);
  return Status();
}

Status FleetQuery::RunTimed(const ConnectionQuery& query, BrokerAnswer* answer) const {
  const Clock::time_point start = Clock::now();
  const Status status = RunConnectionQuery(local_, query, &answer->page);
  answer->page.node_id = options_.node_id;
  answer->answer_ms = MillisecondsSince(start);
  return status;
}

void FleetQuery::AskPeers(const std::vector<ListConnectionsRequest>& requests,
                          const std::vector<bool>& ask, Clock::time_point deadline,
                          std::vector<BrokerAnswer>* answers,
                          const std::function<void()>& meanwhile) const {
  std::vector<std::thread> threads;
  threads.reserve(options_.peers.size());
  for (std::size_t i = 0; i < options_.peers.size(); ++i) {
    const PeerUrl& peer = options_.peers[i];
    BrokerAnswer& answer = (*answers)[i + 1];
    answer.broker = peer.Text();
    if (!ask[i]) continue;
    threads.emplace_back([this, &peer, &answer, &request = requests[i], deadline] {
      try {
        const Clock::time_point asked = Clock::now();
        answer.answered =
            AskPeer(*options_.client, peer, options_.token, request, deadline,
                    static_cast<std::size_t>(request.page_size), &answer.page, &answer.failure);
        answer.answer_ms = MillisecondsSince(asked);
      } catch (const std::exception& e) {  // out of memory: this peer fails, not the process
        answer.answered = false;
        answer.failure = Failure(peer, StatusCode::kInternal, e.what());
      }
    });
  }
  // The threads write into *answers: they are joined before anything leaves, even an
  // exception from `meanwhile` (out of memory in this broker's own query).
  try {
    meanwhile();
  } catch (...) {
    for (std::thread& thread : threads) thread.join();
    throw;
  }
  for (std::thread& thread : threads) thread.join();
}

void FleetQuery::MarkDuplicates(Clock::time_point deadline, const std::vector<BrokerAnswer>* known,
                                const std::vector<std::unordered_set<std::string>>& shown_open,
                                ConnectionPage* page) const {
  const std::vector<std::string> ids = OpenClientIds(*page);
  if (ids.empty()) {
    if (duplicates_gauge_ != nullptr) duplicates_gauge_->Set(0);
    return;
  }
  if (known != nullptr) {
    MarkDuplicateClientIds(*known, page);
    ReportDuplicates(*page);
    return;
  }
  // Each broker is asked only for the page's ids it did not show open itself (most of the
  // page, when the order spreads it: each broker showed its share); those it showed count as
  // its own without asking.
  const std::size_t brokers = options_.peers.size() + 1;
  std::vector<BrokerAnswer> answers(brokers);
  std::vector<std::string> filters(brokers);
  std::vector<std::size_t> asked(brokers, 0);
  for (std::size_t b = 0; b < brokers; ++b) {
    std::string& filter = filters[b];
    for (const std::string& id : ids) {
      if (shown_open[b].count(id) != 0) {
        Connection open;  // what MarkDuplicateClientIds reads
        open.client_id = id;
        open.state = ConnectionState::kOpen;
        answers[b].page.connections.push_back(std::move(open));
        continue;
      }
      filter += (asked[b] == 0 ? "state = MQTT_CONNECTION_STATE_OPEN AND client_id IN (" : ", ") +
                QuoteFilterString(id);
      ++asked[b];
    }
    if (asked[b] > 0) filter += ")";
  }
  ConnectionQuery local_query;
  local_query.filter = filters[0];
  // One open connection per client id and broker: the ids asked bound every answer.
  local_query.page_size = static_cast<std::int64_t>(asked[0]);
  answers[0].broker = kSelfBroker;
  // Peers that failed the page are not asked again (their error is already in the page).
  std::vector<bool> ask(options_.peers.size(), true);
  std::vector<ListConnectionsRequest> requests(options_.peers.size());
  for (std::size_t i = 0; i < options_.peers.size(); ++i) {
    for (const PeerFailure& failure : page->peer_errors) {
      if (failure.peer == options_.peers[i].Text()) ask[i] = false;
    }
    requests[i].filter = filters[i + 1];
    requests[i].page_size = static_cast<std::int32_t>(asked[i + 1]);
  }
  std::vector<bool> send = ask;
  for (std::size_t i = 0; i < options_.peers.size(); ++i) send[i] = ask[i] && asked[i + 1] > 0;
  std::vector<BrokerAnswer> lookups(brokers);
  AskPeers(requests, send, deadline, &lookups, [&] {
    lookups[0].answered =
        asked[0] == 0 || RunConnectionQuery(local_, local_query, &lookups[0].page).ok();
  });
  for (std::size_t b = 0; b < brokers; ++b) {
    BrokerAnswer& answer = answers[b];
    if (b > 0) answer.broker = lookups[b].broker;
    if (b > 0 && !ask[b - 1]) continue;  // failed the page: counts for nothing
    if (b > 0 && send[b - 1] && !lookups[b].answered) {
      lookups[b].failure.message = "looking up duplicate client ids: " + lookups[b].failure.message;
      page->peer_errors.push_back(lookups[b].failure);
      continue;
    }
    if (b == 0 && !lookups[0].answered) continue;
    answer.answered = true;
    std::vector<Connection>& found = lookups[b].page.connections;
    answer.page.connections.insert(answer.page.connections.end(),
                                   std::make_move_iterator(found.begin()),
                                   std::make_move_iterator(found.end()));
  }
  MarkDuplicateClientIds(answers, page);
  ReportDuplicates(*page);
}

void FleetQuery::ReportDuplicates(const ConnectionPage& page) const {
  if (duplicates_gauge_ == nullptr) return;
  std::unordered_set<std::string> duplicated;
  for (const Connection& connection : page.connections) {
    if (connection.duplicate_client_id) duplicated.insert(connection.client_id);
  }
  duplicates_gauge_->Set(static_cast<double>(duplicated.size()));
}

bool OpenByClientIdKnown(const ConnectionFilter& filter, bool from_start,
                         const std::vector<BrokerAnswer>& answers,
                         std::vector<BrokerAnswer>* known) {
  // A later page of a walk shows what is left after each broker's cursor, not all it holds.
  if (!from_start) return false;
  // A filter whose every clause is on client_id matches a connection for its client id alone:
  // a broker that showed all its matches showed every connection of those ids it holds.
  bool clauses = false;
  bool client_id_only = true;
  filter.ForEachClause([&](const FilterClause& clause) {
    clauses = true;
    client_id_only = client_id_only && clause.field->path == "client_id";
  });
  if (!clauses || !client_id_only) return false;
  for (const BrokerAnswer& answer : answers) {
    if (answer.answered && !answer.page.next_page_token.empty()) return false;
  }
  known->assign(answers.size(), BrokerAnswer());
  for (std::size_t i = 0; i < answers.size(); ++i) {
    (*known)[i].broker = answers[i].broker;
    (*known)[i].answered = answers[i].answered;
    for (const Connection& connection : answers[i].page.connections) {
      if (connection.state != ConnectionState::kOpen) continue;
      Connection open;  // what MarkDuplicateClientIds reads
      open.client_id = connection.client_id;
      open.state = connection.state;
      (*known)[i].page.connections.push_back(std::move(open));
    }
  }
  return true;
}

ConnectRpcServiceOptions::FleetLister FleetQuery::Lister() const {
  return [this](const ListConnectionsRequest& request, Clock::time_point deadline,
                ConnectionPage* page) { return Run(request, deadline, page); };
}

StatusOr<std::unique_ptr<FleetQuery>> MakeFleetQuery(const PluginOptions& options,
                                                     const ConnectionSource& local) {
  if (options.fleet_peers.empty()) return std::unique_ptr<FleetQuery>();
  FleetQueryOptions fleet;
  fleet.peers = options.fleet_peers;
  fleet.node_id = options.node_id;
  if (!options.fleet_token_file.empty()) {
    TokenSet set;
    std::string warning;
    const Status read = ReadTokenFile(options.fleet_token_file, "plugin_opt_fleet_token_file",
                                      AccessLevel::kRead, &set, &warning);
    if (!read.ok()) return read;
    fleet.token = set.entries.front().token;
  }
  const bool tls = std::any_of(options.fleet_peers.begin(), options.fleet_peers.end(),
                               [](const PeerUrl& peer) { return peer.https; });
  StatusOr<std::unique_ptr<PeerClient>> client = PeerClient::Create(options.fleet_ca_file, tls);
  if (!client.ok()) return client.status();
  fleet.client = std::move(client).value();
  return std::make_unique<FleetQuery>(local, std::move(fleet));
}

}  // namespace mqc
