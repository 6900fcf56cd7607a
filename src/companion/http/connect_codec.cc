// SPDX-License-Identifier: BSD-3-Clause
// The codecs of the Connect RPC service (see connect_codec.h).
#include "companion/http/connect_codec.h"

#include <cstddef>
#include <string_view>

#include "companion/http/connect_rpc_json.h"
#include "companion/http/connect_rpc_proto.h"
#include "companion/http/view_util.h"
#include "link/text_util.h"

namespace mqc {
namespace {

// The parameters after the media type: only `charset=utf-8` (quoted or not), and only where
// `charset_allowed`; empty parameters (`application/json;`) are skipped.
// `parameters` is empty or starts with ';'.
bool ParametersAccepted(std::string_view parameters, bool charset_allowed) {
  while (!parameters.empty()) {
    parameters.remove_prefix(1);  // the ';'
    const std::size_t semicolon = parameters.find(';');
    const std::string_view parameter = Trim(parameters.substr(0, semicolon));
    parameters =
        semicolon == std::string_view::npos ? std::string_view() : parameters.substr(semicolon);
    if (parameter.empty()) continue;
    const std::size_t equals = parameter.find('=');
    if (equals == std::string_view::npos || !charset_allowed) return false;
    std::string_view charset = Trim(parameter.substr(equals + 1));
    if (charset.size() >= 2 && charset.front() == '"' && charset.back() == '"') {
      charset = charset.substr(1, charset.size() - 2);
    }
    if (!EqualsIgnoreAsciiCase(Trim(parameter.substr(0, equals)), "charset") ||
        !EqualsIgnoreAsciiCase(charset, "utf-8")) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool CodecOfContentType(std::string_view value, ConnectCodec* codec) {
  const std::size_t semicolon = value.find(';');
  const std::string_view media_type = Trim(value.substr(0, semicolon));
  const std::string_view parameters =
      semicolon == std::string_view::npos ? std::string_view() : value.substr(semicolon);
  if (EqualsIgnoreAsciiCase(media_type, kJsonContentType)) {
    if (!ParametersAccepted(parameters, /*charset_allowed=*/true)) return false;
    *codec = ConnectCodec::kJson;
    return true;
  }
  if (EqualsIgnoreAsciiCase(media_type, kProtoContentType)) {
    if (!ParametersAccepted(parameters, /*charset_allowed=*/false)) return false;
    *codec = ConnectCodec::kProto;
    return true;
  }
  return false;
}

bool CodecOfEncoding(std::string_view value, ConnectCodec* codec) {
  if (value == "json") {
    *codec = ConnectCodec::kJson;
    return true;
  }
  if (value == "proto") {
    *codec = ConnectCodec::kProto;
    return true;
  }
  return false;
}

Status ReadListConnectionsRequest(ConnectCodec codec, std::string_view bytes,
                                  std::string_view where, ListConnectionsRequest* request) {
  if (codec == ConnectCodec::kProto) {
    return DecodeListConnectionsRequestProto(bytes, where, request);
  }
  return DecodeListConnectionsRequest(bytes, where, request);
}

HttpResponse ListConnectionsResponseIn(ConnectCodec codec, const ConnectionPage& page) {
  HttpResponse response;
  response.status = kHttpOk;
  if (codec == ConnectCodec::kJson) {
    response.content_type = kJsonContentType;
    response.body = ListConnectionsResponseJson(page);
  } else {
    response.content_type = kProtoContentType;
    response.body = EncodeListConnectionsResponseProto(page);
  }
  return response;
}

}  // namespace mqc
