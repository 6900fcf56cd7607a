// SPDX-License-Identifier: BSD-3-Clause
// View helpers (see view_util.h).
#include "companion/http/view_util.h"

#include <string>
#include <string_view>
#include <utility>

#include "companion/json_writer.h"

namespace mqc {

bool IsGet(const HttpRequest& request) {
  return request.method == "GET" || request.method == "HEAD";
}

StatusOr<CjsonPtr> ParseBodyObject(std::string_view body) {
  CjsonPtr message = ParseJson(body.empty() ? "{}" : body);
  if (message && cJSON_IsObject(message.get())) return StatusOr<CjsonPtr>(std::move(message));
  return Status(StatusCode::kInvalidArgument, "request body is not a JSON object");
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

struct ConnectCode {
  StatusCode code;
  std::string_view name;
  int http_status;
};

// Connect's name of each error code and the HTTP status an error of it is sent with (the Connect
// protocol's table of error codes). kOk is no error and has no name.
constexpr ConnectCode kConnectCodes[] = {
    {StatusCode::kInvalidArgument, "invalid_argument", kHttpBadRequest},
    {StatusCode::kDeadlineExceeded, "deadline_exceeded", kHttpGatewayTimeout},
    // 429 is Connect's; the router answers a request body too large with 413 itself.
    {StatusCode::kResourceExhausted, "resource_exhausted", kHttpTooManyRequests},
    {StatusCode::kUnimplemented, "unimplemented", kHttpNotImplemented},
    {StatusCode::kInternal, "internal", kHttpInternalServerError},
    {StatusCode::kNotFound, "not_found", kHttpNotFound},
    {StatusCode::kUnauthenticated, "unauthenticated", kHttpUnauthorized},
    {StatusCode::kPermissionDenied, "permission_denied", kHttpForbidden},
    {StatusCode::kUnavailable, "unavailable", kHttpServiceUnavailable},
};

const ConnectCode* FindConnectCode(StatusCode code) {
  for (const ConnectCode& entry : kConnectCodes) {
    if (entry.code == code) return &entry;
  }
  return nullptr;
}

}  // namespace

std::string_view ConnectRpcCodeName(StatusCode code) {
  const ConnectCode* entry = FindConnectCode(code);
  return entry != nullptr ? entry->name : "unknown";
}

StatusCode ConnectRpcCodeOfName(std::string_view name) {
  for (const ConnectCode& entry : kConnectCodes) {
    if (entry.name == name) return entry.code;
  }
  return StatusCode::kInternal;
}

int ConnectRpcHttpStatus(StatusCode code) {
  if (code == StatusCode::kOk) return kHttpOk;
  const ConnectCode* entry = FindConnectCode(code);
  return entry != nullptr ? entry->http_status : kHttpInternalServerError;
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
