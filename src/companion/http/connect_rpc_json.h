// SPDX-License-Identifier: BSD-3-Clause
// The JSON encoding of the Connect RPC service's messages, apart from the protocol handling in
// connect_rpc_service.cc: requests read from JSON text (with cJSON), and a page or a watch
// message written as protobuf JSON text (with JsonWriter; docs/api.md, the Connection field
// table). Pure functions, safe on any thread.
#pragma once

#include <cjson/cJSON.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "companion/connection_changes.h"
#include "companion/http/connect_protocol.h"
#include "companion/query/connection_query.h"
#include "link/status.h"

namespace mqc {

// Reads the message from JSON text; empty text is the default message. `where` names the text
// in error messages ("request body"). kInvalidArgument naming the problem when it is not a valid
// message.
Status DecodeListConnectionsRequest(std::string_view text, std::string_view where,
                                    ListConnectionsRequest* request);

// The ListConnectionsResponse for `page`, as compact JSON text. Throws std::bad_alloc when out
// of memory.
std::string ListConnectionsResponseJson(const ConnectionPage& page);

// A ConnectionScope field of a JSON request (the ban RPCs' `scope`): the enum's name or number.
// kInvalidArgument naming the field otherwise.
StatusOr<ConnectionScope> ReadConnectionScope(const cJSON& item, std::string_view name);

// "CONNECTION_CHANGE_KIND_OPENED", ...
std::string_view ChangeKindName(ChangeKind kind);

// Reads the message from JSON text (`resumeAfter` as a string of digits or a number); empty text
// is the default message. kInvalidArgument naming the problem otherwise.
Status DecodeWatchConnectionsRequest(std::string_view text, std::string_view where,
                                     WatchConnectionsRequest* request);

// The WatchConnectionsResponse for `message`, as compact JSON text. Throws std::bad_alloc when
// out of memory.
std::string WatchConnectionsResponseJson(const WatchMessage& message);

}  // namespace mqc
