// SPDX-License-Identifier: BSD-3-Clause
// The broker's last hour (companion/activity_history.h), as a Connect unary method:
//   POST /mqtt.connections.v1.ConnectionsService/GetActivity  {}
//        -> {"intervalSeconds","samples":[{"time","seconds","openConnections","connects",
//            "connectsRefused","disconnects":{"<CloseReason>":n},"messagesReceived",
//            "messagesDelivered","subscribesRefused","publishesRefused","flappingClients"}],
//            "aclDenialsShown"}
// JSON or binary protobuf, a read token (the router checks). Counts are per sample; zero
// members are left out, as protobuf's JSON mapping does.
//
// Threads: MHD's threads, several at a time (ActivityHistory locks).
#pragma once

#include "companion/activity_history.h"
#include "companion/http/http_server.h"

namespace mqc {

inline constexpr char kGetActivityMethod[] = "GetActivity";

HttpResponse ConnectRpcGetActivity(const ActivityHistory& activity, const HttpRequest& request);

}  // namespace mqc
