// SPDX-License-Identifier: BSD-3-Clause
// View helpers (see view_util.h).
#include "companion/http/view_util.h"

#include <string>
#include <string_view>

#include "companion/json_writer.h"

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

std::string_view ConnectRpcCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      break;
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kDeadlineExceeded:
      return "deadline_exceeded";
    case StatusCode::kResourceExhausted:
      return "resource_exhausted";
    case StatusCode::kUnimplemented:
      return "unimplemented";
    case StatusCode::kInternal:
      return "internal";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kUnauthenticated:
      return "unauthenticated";
    case StatusCode::kPermissionDenied:
      return "permission_denied";
    case StatusCode::kUnavailable:
      return "unavailable";
  }
  return "unknown";
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
