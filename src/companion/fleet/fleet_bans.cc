// SPDX-License-Identifier: BSD-3-Clause
// RouteBans (see fleet_bans.h).
//
// Where the issue is silent:
// - A fleet change asks every broker even when this one fails (an unban of a ban that only a
//   peer holds is not_found here and done there); it is an error only when no broker made it,
//   and then the message names each broker's reason.
// - A fleet ban is made here first; the peers then get the ban as this broker made it (its
//   `by`, its end as a time), so that every broker ends it at the same moment and names the
//   same author.
#include "companion/fleet/fleet_bans.h"

#include <cjson/cJSON.h>

#include <algorithm>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "companion/http/connect_rpc_proto.h"
#include "companion/http/view_util.h"
#include "companion/json_util.h"

namespace mqc {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kListBansPath[] = "/mqtt.connections.v1.ConnectionsService/ListBans";
constexpr char kBanClientPath[] = "/mqtt.connections.v1.ConnectionsService/BanClient";
constexpr char kUnbanClientPath[] = "/mqtt.connections.v1.ConnectionsService/UnbanClient";
// 1000 bans of 256-byte texts stay below 1 MiB.
constexpr std::size_t kMaxAnswerBytes = 4u << 20;

// The body of a peer's HTTP 200 binary answer to a Connect unary call, else why not (the code
// the peer answered with, or what went wrong on the way). The caller names the peer.
StatusOr<std::string> CallPeer(const FleetQuery& fleet, const PeerUrl& peer, const char* path,
                               std::string body, const std::string& authorization,
                               Clock::time_point deadline) {
  PeerRequest request;
  request.path = path;
  request.body = std::move(body);
  request.deadline = deadline;
  request.max_response_bytes = kMaxAnswerBytes;
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  request.headers = {{"Content-Type", "application/proto"},
                     {"Connect-Protocol-Version", "1"},
                     {"Connect-Timeout-Ms", std::to_string(std::max<long long>(1, left))}};
  if (!authorization.empty()) request.headers.emplace_back("Authorization", authorization);
  StatusOr<PeerResponse> response = fleet.options().client->Post(peer, request);
  if (!response.ok()) return response.status();
  if (response->status == 200) {
    if (response->content_type.rfind("application/proto", 0) != 0) {
      return Status(StatusCode::kInternal, "the peer answered HTTP 200 with Content-Type " +
                                               QuoteForMessage(response->content_type) +
                                               ", not a binary answer");
    }
    return std::move(response->body);
  }
  const CjsonPtr error = ParseJson(response->body);
  const cJSON* code =
      error && cJSON_IsObject(error.get()) ? cJSON_GetObjectItemCaseSensitive(error.get(), "code")
                                           : nullptr;
  if (!cJSON_IsString(code)) {
    return Status(StatusCode::kInternal, "the peer answered HTTP " +
                                             std::to_string(response->status) +
                                             " without a Connect error");
  }
  const cJSON* message = cJSON_GetObjectItemCaseSensitive(error.get(), "message");
  return Status(ConnectRpcCodeOfName(code->valuestring),
                std::string("the peer answered ") + code->valuestring + ": " +
                    (cJSON_IsString(message) ? message->valuestring : ""));
}

struct PeerBans {
  Status status;
  std::uint32_t node_id = 0;
  std::vector<Ban> bans;
  std::uint64_t refused_total = 0;
};

// Every peer's ListBans (node scope, the fleet's read token), in parallel.
std::vector<PeerBans> ListPeers(const FleetQuery& fleet, Clock::time_point deadline) {
  const std::vector<PeerUrl>& peers = fleet.peers();
  std::vector<PeerBans> answers(peers.size());
  const std::string authorization =
      fleet.options().token.empty() ? "" : "Bearer " + fleet.options().token;
  std::vector<std::thread> threads;
  threads.reserve(peers.size());
  for (std::size_t i = 0; i < peers.size(); ++i) {
    threads.emplace_back([&, i] {
      PeerBans& answer = answers[i];
      try {
        StatusOr<std::string> body =
            CallPeer(fleet, peers[i], kListBansPath, std::string(), authorization, deadline);
        answer.status = body.status();
        if (body.ok()) {
          answer.status = DecodeListBansResponseProto(*body, "the peer's ListBans answer",
                                                      &answer.bans, &answer.refused_total,
                                                      &answer.node_id);
        }
      } catch (const std::exception& e) {  // out of memory: this peer fails, not the process
        answer.status = Status(StatusCode::kInternal, e.what());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  return answers;
}

// The change on one peer; *done gets the ban as the peer answered it.
BrokerBanOutcome ChangeOnPeer(const FleetQuery& fleet, const PeerUrl& peer, bool remove,
                              const Ban& ban, const Caller& caller, Clock::time_point deadline,
                              NodeBan* done) {
  BrokerBanOutcome outcome;
  outcome.peer = peer.Text();
  try {
    StatusOr<std::string> body =
        CallPeer(fleet, peer, remove ? kUnbanClientPath : kBanClientPath,
                 remove ? EncodeUnbanClientRequestProto(ban) : EncodeBanClientRequestProto(ban),
                 caller.authorization, deadline);
    outcome.status = body.status();
    if (body.ok()) {
      outcome.status =
          remove ? DecodeUnbanClientResponseProto(*body, "the peer's UnbanClient answer", done)
                 : DecodeBanClientResponseProto(*body, "the peer's BanClient answer", done,
                                                &outcome.kicked);
      outcome.node_id = done->node_id;
    }
  } catch (const std::exception& e) {
    outcome.status = Status(StatusCode::kInternal, e.what());
  }
  return outcome;
}

std::string Describe(const BrokerBanOutcome& broker) {
  return (broker.peer.empty() ? std::string("this broker") : broker.peer) +
         (broker.node_id != 0 ? " (node " + std::to_string(broker.node_id) + ")" : "") + ": " +
         std::string(ConnectRpcCodeName(broker.status.code())) + ": " + broker.status.message();
}

// The answer of a fleet change from each broker's outcome: done when any broker made it.
void Conclude(FleetBanOutcome* result, const std::vector<NodeBan>& done) {
  BanOutcome& outcome = result->outcome;
  outcome.kicked = 0;
  bool made = false;
  for (std::size_t i = 0; i < result->brokers.size(); ++i) {
    const BrokerBanOutcome& broker = result->brokers[i];
    if (!broker.status.ok()) continue;
    outcome.kicked += broker.kicked;
    if (!made) {
      outcome.ban = done[i].ban;
      result->node_id = done[i].node_id;
    }
    made = true;
  }
  if (made) {
    outcome.status = Status();
    return;
  }
  // Every broker refused: the common code when they agree (not_found everywhere), else
  // unavailable, and each one's reason.
  StatusCode code = result->brokers.front().status.code();
  std::string reasons;
  for (const BrokerBanOutcome& broker : result->brokers) {
    if (broker.status.code() != code) code = StatusCode::kUnavailable;
    reasons += (reasons.empty() ? "" : "; ") + Describe(broker);
  }
  outcome.status = Status(code, "no broker of the fleet made the change: " + reasons);
}

FleetBanOutcome ChangeEverywhere(const FleetQuery& fleet, const BanAdmin& local, bool remove,
                                 const Ban& ban, const Caller& caller) {
  const Clock::time_point deadline = Clock::now() + kFleetBanDeadline;
  const std::vector<PeerUrl>& peers = fleet.peers();
  FleetBanOutcome result;
  result.brokers.resize(peers.size() + 1);
  std::vector<NodeBan> done(peers.size() + 1);
  const BanOutcome here = remove ? local.remove(ban, caller) : local.add(ban, caller);
  result.brokers[0].node_id = local.node_id;
  result.brokers[0].status = here.status;
  result.brokers[0].kicked = here.kicked;
  done[0] = {local.node_id, here.ban};
  // The peers get the ban as this broker made it (its author and end), or as asked.
  const Ban& sent = here.status.ok() && !remove ? here.ban : ban;
  std::vector<std::thread> threads;
  threads.reserve(peers.size());
  for (std::size_t i = 0; i < peers.size(); ++i) {
    threads.emplace_back([&, i] {
      result.brokers[i + 1] =
          ChangeOnPeer(fleet, peers[i], remove, sent, caller, deadline, &done[i + 1]);
    });
  }
  for (std::thread& thread : threads) thread.join();
  Conclude(&result, done);
  return result;
}

FleetBanOutcome ChangeOnNode(const FleetQuery& fleet, std::uint32_t node_id, bool remove,
                             const Ban& ban, const Caller& caller) {
  const Clock::time_point deadline = Clock::now() + kFleetBanDeadline;
  const std::vector<PeerBans> listed = ListPeers(fleet, deadline);
  std::string unanswered;
  for (std::size_t i = 0; i < listed.size(); ++i) {
    if (listed[i].status.ok() && listed[i].node_id == node_id) {
      FleetBanOutcome result;
      std::vector<NodeBan> done(1);
      result.brokers.push_back(
          ChangeOnPeer(fleet, fleet.peers()[i], remove, ban, caller, deadline, &done[0]));
      result.brokers[0].node_id = node_id;
      const BrokerBanOutcome& broker = result.brokers[0];
      if (broker.status.ok()) {
        result.outcome.ban = done[0].ban;
        result.outcome.kicked = broker.kicked;
        result.node_id = node_id;
      } else {
        result.outcome.status = Status(broker.status.code(), Describe(broker));
      }
      return result;
    }
    if (!listed[i].status.ok()) {
      unanswered += (unanswered.empty() ? "" : "; ") + fleet.peers()[i].Text() + ": " +
                    std::string(ConnectRpcCodeName(listed[i].status.code())) + ": " +
                    listed[i].status.message();
    }
  }
  FleetBanOutcome result;
  const std::string node = "node " + std::to_string(node_id);
  result.outcome.status =
      unanswered.empty()
          ? Status(StatusCode::kNotFound, "nodeId: no broker of the fleet is " + node +
                                              " (plugin_opt_fleet_peers)")
          : Status(StatusCode::kUnavailable,
                   "nodeId: no answering peer is " + node + "; not answering: " + unanswered);
  return result;
}

FleetBanList ListEverywhere(const FleetQuery& fleet, const BanAdmin& local) {
  FleetBanList list;
  for (Ban& ban : local.list()) list.bans.push_back({local.node_id, std::move(ban)});
  list.refused_total = local.refused_total();
  std::vector<PeerBans> listed = ListPeers(fleet, Clock::now() + kFleetBanDeadline);
  for (std::size_t i = 0; i < listed.size(); ++i) {
    PeerBans& peer = listed[i];
    if (!peer.status.ok()) {
      BrokerBanOutcome failed;
      failed.peer = fleet.peers()[i].Text();
      failed.status = std::move(peer.status);
      list.failed.push_back(std::move(failed));
      continue;
    }
    for (Ban& ban : peer.bans) list.bans.push_back({peer.node_id, std::move(ban)});
    list.refused_total += peer.refused_total;
  }
  return list;
}

FleetBanOutcome Change(const FleetQuery& fleet, const BanAdmin& local, bool remove,
                       const Ban& ban, const BanPlace& place, const Caller& caller) {
  if (place.fleet) return ChangeEverywhere(fleet, local, remove, ban, caller);
  if (place.node_id && *place.node_id != local.node_id) {
    return ChangeOnNode(fleet, *place.node_id, remove, ban, caller);
  }
  FleetBanOutcome result;
  result.outcome = remove ? local.remove(ban, caller) : local.add(ban, caller);
  result.node_id = local.node_id;
  return result;
}

}  // namespace

void RouteBans(const FleetQuery& fleet, BanAdmin* admin) {
  // A copy of this broker's own functions: the routed ones call them for this broker's part.
  const BanAdmin local = *admin;
  admin->add_at = [&fleet, local](const Ban& ban, const BanPlace& place, const Caller& caller) {
    return Change(fleet, local, false, ban, place, caller);
  };
  admin->remove_at = [&fleet, local](const Ban& target, const BanPlace& place,
                                     const Caller& caller) {
    return Change(fleet, local, true, target, place, caller);
  };
  admin->list_fleet = [&fleet, local] { return ListEverywhere(fleet, local); };
}

}  // namespace mqc
