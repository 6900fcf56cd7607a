// SPDX-License-Identifier: BSD-3-Clause
// The ban views, in both forms of the API (EMQX's banned API gives the field names):
//   GET    /api/mqtt/bans                       KubeMQ envelope, data {bans, count, refused_total}
//   POST   /api/mqtt/bans                       {"as","who","reason","by","until"|"duration_s"}
//   DELETE /api/mqtt/bans/{as}/{who}            (who may hold '/': "peerhost_net/10.0.0.0/8")
//   POST /mqtt.connections.v1.ConnectionsService/ListBans  {"scope"} -> {"bans","refusedTotal",
//                                                                     "peerErrors","nodeId"}
//   POST .../BanClient    {"as","who","reason","by","until","durationS","nodeId","scope"}
//                         -> {"ban","kicked","brokers","peerErrors"}
//   POST .../UnbanClient  {"as","who","nodeId","scope"} -> {"ban","removed":true,"brokers",...}
// The KubeMQ forms act on this broker alone; the Connect ones also on another broker (nodeId)
// or the whole fleet (scope CONNECTION_SCOPE_FLEET), through the BanAdmin's add_at, remove_at
// and list_fleet (fleet/fleet_bans.h; docs/fleet.md). Every ban answered carries its nodeId.
// Reading needs a read token, changes an admin token (the router checks). The work is a
// BanAdmin's (companion/admin_actions.h; the companion's BanStore and the broker,
// companion/broker_bans.h).
//
// Threads: MHD's threads, several at a time; the BanAdmin's functions must be safe to call
// concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "companion/admin_actions.h"
#include "companion/http/connect_rpc_proto.h"
#include "companion/http/http_server.h"
#include "link/ban_list.h"
#include "link/status.h"

namespace mqc {

inline constexpr char kBansPath[] = "/api/mqtt/bans";
inline constexpr char kBansPrefix[] = "/api/mqtt/bans/";
inline constexpr char kListBansMethod[] = "ListBans";
inline constexpr char kBanClientMethod[] = "BanClient";
inline constexpr char kUnbanClientMethod[] = "UnbanClient";

// The new ban of a request body (JSON object), checked: kInvalidArgument naming the field.
// `connect_names`: the Connect JSON names (durationS) rather than the KubeMQ ones (duration_s).
Status ReadBanRequest(std::string_view body, std::int64_t now_ns, bool connect_names, Ban* ban);

// The fields of a request (either codec) checked into *ban, at_ns = now_ns.
Status CheckBanRequest(const BanRequestFields& fields, std::int64_t now_ns, bool connect_names,
                       Ban* ban);

HttpResponse KubeMqListBans(const BanAdmin& admin);
HttpResponse KubeMqAddBan(const BanAdmin& admin, const HttpRequest& request, const Caller& caller);
// `rest`: what follows /api/mqtt/bans/ ("clientid/c1").
HttpResponse KubeMqRemoveBan(const BanAdmin& admin, std::string_view rest, const Caller& caller);

// `method`: kListBansMethod, kBanClientMethod or kUnbanClientMethod.
HttpResponse ConnectRpcBans(const BanAdmin& admin, std::string_view method,
                            const HttpRequest& request, const Caller& caller);

}  // namespace mqc
