// SPDX-License-Identifier: BSD-3-Clause
// A client's history (companion/client_history.h), as a Connect unary method:
//   POST /mqtt.connections.v1.ConnectionsService/GetClientHistory  {"clientId":"..."}
//        -> {"clientId","events":[{"time","kind","closeReason","uid","ipAddress","port",
//            "username","protocolVersion","count","filter"}],"droppedEvents"}
// JSON or binary protobuf. A read token (the router checks). An id with no event kept:
// not_found; the history turned off (plugin_opt_history_events 0): permission_denied.
//
// Threads: MHD's threads, several at a time (ClientHistory locks).
#pragma once

#include "companion/client_history.h"
#include "companion/http/http_server.h"

namespace mqc {

inline constexpr char kGetClientHistoryMethod[] = "GetClientHistory";
inline constexpr char kHistoryOff[] = "the client history is off (plugin_opt_history_events 0)";

HttpResponse ConnectRpcGetClientHistory(const ClientHistory& history, const HttpRequest& request);

}  // namespace mqc
