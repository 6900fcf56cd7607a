// SPDX-License-Identifier: BSD-3-Clause
// What the HTTP views share: HTTP status numbers, the JSON content type, and the two error answers
// (the KubeMQ envelope and the Connect error), each built from one Status. The router answers
// its own refusals (unknown path, method, body size) with these too, so every error of a path
// has the path's format. Pure functions, safe on any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "companion/http/http_server.h"
#include "companion/json_util.h"
#include "companion/json_writer.h"
#include "link/status.h"

namespace mqc {

inline constexpr int kHttpOk = 200;
inline constexpr int kHttpBadRequest = 400;
inline constexpr int kHttpUnauthorized = 401;
inline constexpr int kHttpForbidden = 403;
inline constexpr int kHttpNotFound = 404;
inline constexpr int kHttpMethodNotAllowed = 405;
inline constexpr int kHttpPayloadTooLarge = 413;
inline constexpr int kHttpUnsupportedMediaType = 415;
inline constexpr int kHttpMisdirectedRequest = 421;
inline constexpr int kHttpTooManyRequests = 429;
inline constexpr int kHttpInternalServerError = 500;
inline constexpr int kHttpServiceUnavailable = 503;
inline constexpr int kHttpNotImplemented = 501;
inline constexpr int kHttpGatewayTimeout = 504;

inline constexpr char kJsonContentType[] = "application/json";

// GET, or HEAD (which HTTP allows wherever GET is; MHD sends the GET answer's headers only).
bool IsGet(const HttpRequest& request);

// A request body that must be a JSON object, parsed; an empty body is the empty object (a
// Connect request message's default). kInvalidArgument for anything else.
StatusOr<CjsonPtr> ParseBodyObject(std::string_view body);

// The KubeMQ error envelope {"error":true,"error_string":"<message>","data":null} with `status`.
HttpResponse KubeMqErrorResponse(int status, std::string_view message);

// The KubeMQ envelope of an answer, {"error":false,"error_string":"","data":{...}} with 200:
// `write_data_members(JsonWriter*)` writes the data object's members. `reserve`: bytes set aside
// for the body before writing (0: none).
template <typename Write>
HttpResponse KubeMqOkResponse(const Write& write_data_members, std::size_t reserve = 0) {
  HttpResponse response;
  response.status = kHttpOk;
  response.content_type = kJsonContentType;
  response.body.reserve(reserve);
  JsonWriter json(&response.body);
  json.BeginObject();
  json.Key("error").Bool(false);
  json.Key("error_string").String("");
  json.Key("data").BeginObject();
  write_data_members(&json);
  json.EndObject();
  json.EndObject();
  return response;
}

// A Connect error {"code":"<code>","message":"<message>"} (docs/api.md, the Connect error map):
// the code's name from status.code(), with the code's own HTTP status unless `http_status` is
// given (a method not allowed is `unimplemented` with 405, a body too large
// `resource_exhausted` with 413).
HttpResponse ConnectRpcErrorResponse(const Status& status, int http_status = 0);

// The Connect name of a code ("invalid_argument") and its HTTP status (400).
std::string_view ConnectRpcCodeName(StatusCode code);
int ConnectRpcHttpStatus(StatusCode code);
// The code of a Connect name, as a peer's error answer gives it; kInternal for a name Connect
// does not have.
StatusCode ConnectRpcCodeOfName(std::string_view name);

}  // namespace mqc
