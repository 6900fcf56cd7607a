// SPDX-License-Identifier: BSD-3-Clause
// The admin action of the API: disconnecting a client, in both of its forms.
//   DELETE /api/mqtt/connections/{client_id}                        KubeMQ envelope
//   POST /mqtt.connections.v1.ConnectionsService/DisconnectConnection  Connect unary, JSON or
//        binary protobuf (the same message),
//        {"clientId":"..."} or {"uid":"..."} -> {"clientId","uid","disconnected":true}
// The router checks the caller's token (admin) first; the work is a Disconnector's
// (companion/admin_actions.h; the companion asks the broker thread through the shared region,
// companion/broker_disconnect.h).
//
// Threads: MHD's threads, several at a time; the Disconnector must be safe to call concurrently.
#pragma once

#include <string_view>

#include "companion/admin_actions.h"
#include "companion/http/http_server.h"
#include "link/status.h"

namespace mqc {

inline constexpr char kDisconnectConnectionMethod[] = "DisconnectConnection";

// kInvalidArgument unless `client_id` is 1 to 65535 bytes without NUL (MQTT's bound).
Status CheckClientId(std::string_view client_id);

// DELETE /api/mqtt/connections/{client_id}: `client_id` is the percent-decoded rest of the path.
HttpResponse KubeMqDisconnect(const Disconnector& disconnector, std::string_view client_id,
                              const Caller& caller);

// POST .../DisconnectConnection: the Connect protocol checks, the request message, the answer.
HttpResponse ConnectRpcDisconnect(const Disconnector& disconnector, const HttpRequest& request,
                                  const Caller& caller);

}  // namespace mqc
