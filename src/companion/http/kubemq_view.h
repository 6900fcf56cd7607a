// SPDX-License-Identifier: BSD-3-Clause
// GET /api/mqtt/connections: the KubeMQ connections endpoint, envelope and fields exactly as
// docs/api.md ("GET /api/mqtt/connections"), with optional query parameters
// (client_id, username, pattern, protocol_version, limit, offset) run through the same query
// engine as the rich API. Stateless: safe on any thread.
#pragma once

#include <string_view>
#include <vector>

#include "companion/connection.h"
#include "companion/http/http_server.h"

namespace mqc {

class KubeMqView {
 public:
  // 200 with {"error":false,"error_string":"","data":{"connections":[...],"total":N}}, or 400
  // with the error envelope naming the parameter, its value and what is accepted. Reads the
  // source's shared snapshot (or its client id index for `client_id=<id>`) and writes the
  // answer with JsonWriter: no connection is copied.
  HttpResponse ListConnections(const ConnectionSource& source, const QueryParams& params) const;
  // The same over copies the caller holds.
  HttpResponse ListConnections(std::vector<Connection> snapshot, const QueryParams& params) const;

  // {"error":true,"error_string":"<message>","data":null} with `status`.
  static HttpResponse Error(int status, std::string_view message);
};

}  // namespace mqc
