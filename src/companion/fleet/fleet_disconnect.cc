// SPDX-License-Identifier: BSD-3-Clause
// RouteDisconnects (see fleet_disconnect.h).
#include "companion/fleet/fleet_disconnect.h"

#include <cjson/cJSON.h>

#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "companion/http/view_util.h"
#include "companion/json_util.h"
#include "companion/json_writer.h"
#include "companion/query/query_syntax.h"

namespace mqc {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kDisconnectPath[] = "/mqtt.connections.v1.ConnectionsService/DisconnectConnection";
constexpr std::chrono::seconds kRouteDeadline{5};

std::string Describe(const DisconnectTarget& target) {
  return target.uid.empty() ? "client id " + QuoteFilterString(target.client_id)
                            : "uid " + QuoteFilterString(target.uid);
}

// The peer's answer to the forwarded request, as this broker's outcome.
DisconnectOutcome Forward(const FleetQuery& fleet, const PeerUrl& peer,
                          const DisconnectTarget& target, const Caller& caller,
                          Clock::time_point deadline) {
  DisconnectOutcome outcome;
  PeerRequest request;
  request.path = kDisconnectPath;
  request.deadline = deadline;
  request.max_response_bytes = 1 << 20;
  JsonWriter json(&request.body);
  json.BeginObject();
  if (target.uid.empty()) {
    json.Key("clientId").String(target.client_id);
  } else {
    json.Key("uid").String(target.uid);
  }
  // The admin's choice about the will goes with the request to the broker that holds it.
  if (target.prevent_will) json.Key("preventWill").Bool(true);
  json.EndObject();
  request.headers = {{"Content-Type", "application/json"}, {"Connect-Protocol-Version", "1"}};
  if (!caller.authorization.empty())
    request.headers.emplace_back("Authorization", caller.authorization);
  StatusOr<PeerResponse> response = fleet.options().client->Post(peer, request);
  if (!response.ok()) {
    outcome.status = Status(response.status().code(),
                            "peer " + peer.Text() + ": " + response.status().message());
    return outcome;
  }
  const CjsonPtr body = ParseJson(response->body);
  const auto text = [&body](const char* name) -> std::string {
    const cJSON* item = body ? cJSON_GetObjectItemCaseSensitive(body.get(), name) : nullptr;
    return cJSON_IsString(item) ? item->valuestring : "";
  };
  if (response->status == 200 && body) {
    outcome.client_id = text("clientId");
    outcome.uid = text("uid");
    return outcome;
  }
  const std::string code = text("code");
  outcome.status = Status(code.empty() ? StatusCode::kInternal : ConnectRpcCodeOfName(code),
                          "peer " + peer.Text() + " answered " +
                              (code.empty() ? "HTTP " + std::to_string(response->status)
                                            : code + ": " + text("message")));
  return outcome;
}

}  // namespace

Disconnector RouteDisconnects(const FleetQuery& fleet, std::uint32_t own_node_id,
                              Disconnector local) {
  return [&fleet, own_node_id, local = std::move(local)](const DisconnectTarget& target,
                                                         const Caller& caller) {
    if (!target.node_id || *target.node_id == own_node_id) return local(target, caller);
    const Clock::time_point deadline = Clock::now() + kRouteDeadline;
    ListConnectionsRequest lookup;
    lookup.filter = "node_id = " + std::to_string(*target.node_id) + " AND " +
                    (target.uid.empty() ? "state = MQTT_CONNECTION_STATE_OPEN AND client_id = " +
                                              QuoteFilterString(target.client_id)
                                        : "uid = " + QuoteFilterString(target.uid));
    const std::vector<PeerUrl>& peers = fleet.peers();
    std::vector<ConnectionPage> pages(peers.size());
    std::vector<PeerFailure> failures(peers.size());
    std::vector<char> answered(peers.size(), 0);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < peers.size(); ++i) {
      threads.emplace_back([&, i] {
        try {
          answered[i] = AskPeer(*fleet.options().client, peers[i], fleet.options().token, lookup,
                                deadline, 1, &pages[i], &failures[i]);
        } catch (const std::exception& e) {
          failures[i] = {peers[i].Text(), "internal", e.what()};
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    std::string unanswered;
    for (std::size_t i = 0; i < peers.size(); ++i) {
      if (answered[i] && !pages[i].connections.empty()) {
        return Forward(fleet, peers[i], target, caller, deadline);
      }
      if (!answered[i]) {
        unanswered += (unanswered.empty() ? "" : "; ") + failures[i].peer + ": " +
                      failures[i].code + ": " + failures[i].message;
      }
    }
    DisconnectOutcome outcome;
    const std::string what = Describe(target) + " on node " + std::to_string(*target.node_id);
    outcome.status = unanswered.empty()
                         ? Status(StatusCode::kNotFound, "no broker of the fleet holds " + what +
                                                             " (plugin_opt_fleet_peers)")
                         : Status(StatusCode::kUnavailable, "no answering peer holds " + what +
                                                                "; not answering: " + unanswered);
    return outcome;
  };
}

}  // namespace mqc
