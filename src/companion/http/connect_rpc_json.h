// SPDX-License-Identifier: BSD-3-Clause
// The JSON encoding of the Connect RPC service's messages, apart from the protocol handling in
// connect_rpc_service.cc: ListConnectionsRequest read from JSON text, and a page written as a
// protobuf-JSON ListConnectionsResponse (docs/api.md, the Connection field table). Pure
// functions, safe on any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "companion/connection_changes.h"
#include "companion/http/connect_protocol.h"
#include "companion/json_util.h"
#include "companion/query/connection_query.h"
#include "link/status.h"

namespace mqc {

// Reads the message from JSON text; empty text is the default message. `where` names the text
// in error messages ("request body"). kInvalidArgument naming the problem when it is not a valid
// message.
Status DecodeListConnectionsRequest(std::string_view text, std::string_view where,
                                    ListConnectionsRequest* request);

// The ListConnectionsResponse for `page`. Throws std::bad_alloc when out of memory.
CjsonPtr ListConnectionsResponseJson(const ConnectionPage& page);

// "CONNECTION_CHANGE_KIND_OPENED", ...
std::string_view ChangeKindName(ChangeKind kind);

// Reads the message from JSON text (`resumeAfter` as a string of digits or a number); empty text
// is the default message. kInvalidArgument naming the problem otherwise.
Status DecodeWatchConnectionsRequest(std::string_view text, std::string_view where,
                                     WatchConnectionsRequest* request);

// The WatchConnectionsResponse for `message`. Throws std::bad_alloc when out of memory.
CjsonPtr WatchConnectionsResponseJson(const WatchMessage& message);

}  // namespace mqc
