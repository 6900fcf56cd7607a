// SPDX-License-Identifier: BSD-3-Clause
// The Connect unary protocol (docs/api.md) for mqtt.connections.v1.ConnectionsService, with
// binary protobuf and JSON (connect_codec.h): ListConnections over POST, and over Connect's GET
// form (`?connect=v1&encoding=json|proto&message=...`, also `base64=1`). Requests become a
// ConnectionQuery for RunConnectionQuery; pages become ListConnectionsResponse messages.
//
// Threads: built on the owner's thread before the HTTP server starts, then only read. Handle()
// runs on the HTTP server's threads, several at a time; the source and the clock must be safe
// to call concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "companion/connection.h"
#include "companion/connection_changes.h"
#include "companion/http/connect_codec.h"
#include "companion/http/connect_protocol.h"
#include "companion/http/connect_rpc_json.h"
#include "companion/http/http_server.h"
#include "companion/http/watch_stream.h"
#include "companion/query/connection_query.h"
#include "link/status.h"

namespace mqc {

struct ConnectRpcServiceOptions {
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  // Where Connect-Timeout-Ms budgets are measured. Empty: std::chrono::steady_clock::now. Tests
  // inject a clock they move forward, to make a request take longer than its budget.
  Clock clock;
  // WatchConnections: the registry's live view and its changes (both null: the method answers
  // unimplemented); both must outlive the service and its streams.
  const LiveConnections* live = nullptr;
  ConnectionChanges* changes = nullptr;
  std::size_t max_streams = 8;       // plugin_opt_http_max_streams
  std::size_t stream_buffer = 4096;  // changes a stream may fall behind before it is cut off
  // ListConnections with scope CONNECTION_SCOPE_FLEET (companion/fleet/fleet_query.h): the
  // page of the whole fleet by `deadline`. Empty (no plugin_opt_fleet_peers): FLEET answers as
  // NODE, this broker being the whole fleet.
  using FleetLister =
      std::function<Status(const ListConnectionsRequest& request,
                           std::chrono::steady_clock::time_point deadline, ConnectionPage* page)>;
  FleetLister fleet;
  // The fleet's deadline without Connect-Timeout-Ms.
  std::chrono::milliseconds fleet_deadline{5000};
  // How many peers `fleet` asks: every ListConnections answer says it (fleetPeers), so that a
  // client can turn to the fleet by itself.
  std::uint32_t fleet_peers = 0;
  // plugin_opt_node_id: on every WatchConnections message.
  std::uint32_t node_id = 0;
  // WatchConnections with scope CONNECTION_SCOPE_FLEET (companion/fleet/fleet_watch.h): the
  // stream of the whole fleet for the node stream's options (filter parsed, codec, deadline,
  // buffer, node id), the filter's text, the request's resume_token and the stream's slot; an
  // error (a bad token) ends the call. Empty (no plugin_opt_fleet_peers): FLEET streams as NODE.
  using FleetWatcher = std::function<StatusOr<std::shared_ptr<HttpBodyStream>>(
      const WatchStreamOptions& options, const std::string& filter,
      const std::string& resume_token, std::shared_ptr<void> slot)>;
  FleetWatcher fleet_watch;
};

class ConnectRpcService {
 public:
  // `source` must outlive the service.
  explicit ConnectRpcService(const ConnectionSource& source, ConnectRpcServiceOptions options = {});

  // A ConnectRpcHandler (connect_protocol.h): `method` is the path after the service prefix.
  // Answers 200 with the response message in the request's codec (`application/proto` or
  // `application/json`), or a Connect error `{"code":"...","message":"..."}` in JSON with the
  // code's HTTP status (415 for a content type or encoding that is neither). Throws what the
  // source or an allocation throws: HttpRouter answers that `internal` and logs it.
  HttpResponse Handle(const std::string& method, const HttpRequest& request) const;

  // WatchConnections streams running now.
  std::size_t watch_streams() const { return slots_.in_use(); }

  // Handle() bound to this service, for HttpRouter. The service must outlive the handler.
  ConnectRpcHandler Handler() const;

  // The methods Handle() answers (WatchConnections only with `live` and `changes`), for
  // HttpRouter, which answers every other method itself.
  std::vector<std::string> Methods() const;

 private:
  HttpResponse HandleListConnections(const HttpRequest& request) const;
  HttpResponse HandleWatchConnections(const HttpRequest& request) const;
  bool Watches() const { return live_ != nullptr && changes_ != nullptr; }

  const ConnectionSource& source_;
  const ConnectRpcServiceOptions::Clock clock_;
  const LiveConnections* const live_;
  ConnectionChanges* const changes_;
  const std::size_t stream_buffer_;
  mutable WatchSlots slots_;
  const ConnectRpcServiceOptions::FleetLister fleet_;
  const std::chrono::milliseconds fleet_deadline_;
  const std::uint32_t fleet_peers_;
  const std::uint32_t node_id_;
  const ConnectRpcServiceOptions::FleetWatcher fleet_watch_;
};

}  // namespace mqc
