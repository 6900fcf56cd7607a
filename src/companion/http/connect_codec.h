// SPDX-License-Identifier: BSD-3-Clause
// The two codecs of the Connect RPC service, from the one schema
// (proto/mqtt/connections/v1/connections.proto): binary protobuf (`application/proto`, GET
// `encoding=proto`) and protobuf's JSON mapping (`application/json`, GET `encoding=json`). The
// protocol handling (connect_rpc_service.cc) asks this file which codec a request uses, and
// reads and writes messages through it; connect_rpc_json.cc and connect_rpc_proto.cc hold one
// encoder and one decoder per codec. Errors stay Connect JSON errors whatever the codec, as
// the unary protocol asks. Pure functions, safe on any thread.
#pragma once

#include <cstdint>
#include <string_view>

#include "companion/http/connect_protocol.h"
#include "companion/http/http_server.h"
#include "companion/http/view_util.h"
#include "companion/json_writer.h"
#include "companion/query/connection_query.h"
#include "link/status.h"

namespace mqc {

inline constexpr char kProtoContentType[] = "application/proto";
// For Accept-Post and error messages: every content type a POST may carry.
inline constexpr char kConnectContentTypes[] = "application/json, application/proto";

// The codec of a POST's Content-Type: `application/json` (the only parameter accepted is
// `charset=utf-8`) or `application/proto` (no parameter), case-insensitive, spaces around the
// parts tolerated. False for anything else: another charset cannot be read, and an unknown
// parameter may change the meaning.
bool CodecOfContentType(std::string_view value, ConnectCodec* codec);

// The codec of a GET's `encoding` parameter: exactly `json` or `proto`.
bool CodecOfEncoding(std::string_view value, ConnectCodec* codec);

// Reads a ListConnectionsRequest in `codec`; empty bytes are the default message. `where` names
// the bytes in error messages ("request body"). kInvalidArgument naming the problem otherwise.
Status ReadListConnectionsRequest(ConnectCodec codec, std::string_view bytes,
                                  std::string_view where, ListConnectionsRequest* request);

// HTTP 200 with `page` as a ListConnectionsResponse in `codec`, and its content type. Throws
// std::bad_alloc when out of memory.
HttpResponse ListConnectionsResponseIn(ConnectCodec codec, const ConnectionPage& page);

// HTTP 200 with one answer message in `codec` and its content type: `encode_proto()` gives the
// binary message, `write_json_members(JsonWriter*)` writes the members of the JSON object. Only
// the codec's own writer runs. Throws std::bad_alloc when out of memory.
template <typename EncodeProto, typename WriteJsonMembers>
HttpResponse ConnectRpcAnswer(ConnectCodec codec, const EncodeProto& encode_proto,
                              const WriteJsonMembers& write_json_members) {
  HttpResponse response;
  response.status = kHttpOk;
  if (codec == ConnectCodec::kProto) {
    response.content_type = kProtoContentType;
    response.body = encode_proto();
    return response;
  }
  response.content_type = kJsonContentType;
  JsonWriter json(&response.body);
  json.BeginObject();
  write_json_members(&json);
  json.EndObject();
  return response;
}

}  // namespace mqc
