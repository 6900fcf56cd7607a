// SPDX-License-Identifier: BSD-3-Clause
// The JSON encoding of the Connect RPC service's messages, apart from the protocol handling in
// connect_rpc_service.cc: ListConnectionsRequest read from JSON text, and a page written as a
// protobuf-JSON ListConnectionsResponse (docs/api.md, the Connection field table). Pure
// functions, safe on any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "companion/http/json_util.h"
#include "companion/query/connection_query.h"
#include "link/status.h"

namespace mqc {

// A decoded ListConnectionsRequest message (field names as in protobuf's JSON mapping).
struct ListConnectionsRequest {
  std::string filter;
  std::string order_by;
  std::int32_t page_size = 0;  // 0: the default page size
  std::string page_token;
};

// Reads the message from JSON text; empty text is the default message. `where` names the text
// in error messages ("request body"). kInvalidArgument naming the problem when it is not a valid
// message.
Status DecodeListConnectionsRequest(std::string_view text, std::string_view where,
                                    ListConnectionsRequest* request);

// The ListConnectionsResponse for `page`. Throws std::bad_alloc when out of memory.
CjsonPtr ListConnectionsResponseJson(const ConnectionPage& page);

}  // namespace mqc
