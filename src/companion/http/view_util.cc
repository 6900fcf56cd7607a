// SPDX-License-Identifier: BSD-3-Clause
// View helpers (see view_util.h).
#include "companion/http/view_util.h"

#include <string>
#include <string_view>

#include "companion/json_writer.h"
#include "link/name_table.h"

namespace mqc {

bool IsGet(const HttpRequest& request) {
  return request.method == "GET" || request.method == "HEAD";
}

HttpResponse KubeMqErrorResponse(int status, std::string_view message) {
  HttpResponse response;
  response.status = status;
  response.content_type = kJsonContentType;
  JsonWriter json(&response.body);
  json.BeginObject();
  json.Key("error").Bool(true);
  json.Key("error_string").String(message);
  json.Key("data").Null();
  json.EndObject();
  return response;
}

namespace {

// kOk is no error and has no Connect name.
constexpr NamedValue<StatusCode> kConnectRpcCodeNames[] = {
    {StatusCode::kInvalidArgument, "invalid_argument"},
    {StatusCode::kDeadlineExceeded, "deadline_exceeded"},
    {StatusCode::kResourceExhausted, "resource_exhausted"},
    {StatusCode::kUnimplemented, "unimplemented"},
    {StatusCode::kInternal, "internal"},
    {StatusCode::kNotFound, "not_found"},
    {StatusCode::kUnauthenticated, "unauthenticated"},
    {StatusCode::kPermissionDenied, "permission_denied"},
    {StatusCode::kUnavailable, "unavailable"},
};

}  // namespace

std::string_view ConnectRpcCodeName(StatusCode code) {
  return NameOf(kConnectRpcCodeNames, code, "unknown");
}

int ConnectRpcHttpStatus(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return kHttpOk;
    case StatusCode::kInvalidArgument:
      return kHttpBadRequest;
    case StatusCode::kDeadlineExceeded:
      return kHttpGatewayTimeout;
    case StatusCode::kResourceExhausted:
      return 429;  // Connect's mapping; the router answers a body too large with 413
    case StatusCode::kUnimplemented:
      return kHttpNotImplemented;
    case StatusCode::kNotFound:
      return kHttpNotFound;
    case StatusCode::kUnauthenticated:
      return kHttpUnauthorized;
    case StatusCode::kPermissionDenied:
      return kHttpForbidden;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kInternal:
      break;
  }
  return kHttpInternalServerError;
}

HttpResponse ConnectRpcErrorResponse(const Status& status, int http_status) {
  HttpResponse response;
  response.status = http_status == 0 ? ConnectRpcHttpStatus(status.code()) : http_status;
  response.content_type = kJsonContentType;
  JsonWriter json(&response.body);
  json.BeginObject();
  json.Key("code").String(ConnectRpcCodeName(status.code()));
  json.Key("message").String(status.message());
  json.EndObject();
  return response;
}

}  // namespace mqc
