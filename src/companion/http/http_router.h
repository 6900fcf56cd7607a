// SPDX-License-Identifier: BSD-3-Clause
// Maps HTTP requests to the companion's views, from one route table (which is also where an
// `unimplemented` answer to an unknown Connect method takes the implemented ones from):
//   GET    /api/mqtt/connections                        KubeMQ connections endpoint
//   DELETE /api/mqtt/connections/{client_id}            disconnect (admin)
//   GET    /api/mqtt/bans, POST (admin)                 the ban list, a new ban (ban_view.h)
//   DELETE /api/mqtt/bans/{as}/{who}                    unban (admin)
//   GET    /metrics                                     Prometheus text (when a provider is set)
//   POST   /mqtt.connections.v1.ConnectionsService/DisconnectConnection   disconnect (admin)
//   POST   .../ListBans, .../BanClient (admin), .../UnbanClient (admin)     bans
//   POST   .../GetClientHistory                          a client's history (history_view.h)
//   POST   .../GetActivity                               the last hour (activity_view.h)
//   POST   /mqtt.connections.v1.ConnectionsService/<M>  Connect RPC unary (GET: Connect's GET form)
//   GET    /, /console.css, /console.js                 the web console (console/, embedded; no
//                                                       token: it holds no data, and asks for one)
//   GET    /api/openapi.json                            the API's document (api/openapi.json)
//   GET    /healthz                                     200 when the view is current, 503 while
//                                                       it catches up with the broker (no token)
// Before anything else, on every path (unknown ones too) and with or without tokens, the Host
// header must name a host this server answers to (HostCheck, host_check.h): 421 Misdirected
// Request for another host, 400 for a missing or malformed Host, in the format of the path's 401.
// With token files (SetAccess), every other route needs a bearer token (reading, or admin for the
// disconnects), checked after the path (404) and before the method (405): 401 with
// WWW-Authenticate for a missing or wrong token, 403 for a read token on an admin action.
// The views are siblings: each route names its path, its methods, the format of its errors (the
// KubeMQ envelope or a Connect error) and its view. HEAD is served wherever GET is (MHD drops
// the body).
//
// Threads: built on the owner's thread before the HttpServer starts, then only read. Handle()
// runs on MHD's threads, several at a time, so the source and both functions must be safe to
// call concurrently.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "companion/connection.h"
#include "companion/http/access_tokens.h"
#include "companion/http/activity_view.h"
#include "companion/http/ban_view.h"
#include "companion/http/connect_protocol.h"
#include "companion/http/disconnect_view.h"
#include "companion/http/history_view.h"
#include "companion/http/host_check.h"
#include "companion/http/http_server.h"
#include "companion/http/kubemq_list_cache.h"
#include "companion/http/kubemq_view.h"
#include "link/status.h"

namespace mqc {

// Prometheus text exposition format 0.0.4.
using MetricsProvider = std::function<std::string()>;
// The label value of kubemq_mqtt_http_requests_total{path} for a request's path: the path itself
// for the API's reading paths (/api/mqtt/connections, ListConnections, /metrics) and /healthz,
// else "other", so that scanners probing random paths cannot add series.
std::string_view HttpPathLabel(std::string_view path) noexcept;

class HttpRouter {
 public:
  // `connections` must outlive the router. Empty `metrics`: /metrics is 404. Empty `connect`:
  // every Connect call but the router's own Connect routes is answered `unimplemented` (501).
  // `connect_methods`: the methods `connect` implements (ConnectRpcService::Methods()); the
  // router answers any other method `unimplemented` with the list of every implemented one, its
  // own routes' included. Empty: every method without a route of its own goes to `connect`.
  HttpRouter(const ConnectionSource& connections, MetricsProvider metrics,
             ConnectRpcHandler connect, std::vector<std::string> connect_methods = {});

  // Every Connect method this router answers, sorted: its own Connect routes' and
  // `connect_methods`. What an `unimplemented` answer lists.
  const std::vector<std::string>& connect_methods() const { return implemented_; }
  // Its routes point back at it: not copied or moved.
  HttpRouter(const HttpRouter&) = delete;
  HttpRouter& operator=(const HttpRouter&) = delete;

  // Set-up, before the server starts. `tokens` (null: no token needed) must outlive the router;
  // `metrics_public`: /metrics needs no token.
  void SetAccess(const AccessTokens* tokens, bool metrics_public);
  // Empty (the default): disconnecting is off, answered 403.
  void SetDisconnector(Disconnector disconnector);
  // Unset (the default): the ban routes answer 404 as unknown paths would not; they answer 403
  // "banning is off". Changes need an admin token either way.
  void SetBanAdmin(BanAdmin admin);
  // Null (the default): GetClientHistory answers permission_denied, as with the history off.
  // `history` must outlive the router.
  void SetClientHistory(const ClientHistory* history);
  // Null (the default): GetActivity answers `unavailable`; the companion always sets one.
  // `activity` must outlive the router.
  void SetActivity(const ActivityHistory* activity);
  // Whether the companion's view is current (synchronised with the broker): /healthz answers
  // 200 then, else 503. Empty (the default): always 200. Called on MHD's threads.
  void SetHealth(std::function<bool()> current);
  // The hosts requests may name; the default answers to loopback names and addresses only.
  void SetHostCheck(HostCheck host_check);
  // Where a view's exception goes (one line: method, path, the exception's text); the caller
  // gets a fixed text, never the exception's. Empty: not logged. Called on MHD's threads.
  void SetErrorLog(std::function<void(const std::string&)> log);

  // Never throws for a failing view: a view's exception is answered 500 in the path's format,
  // with the fixed message "internal error", and logged.
  HttpResponse Handle(const HttpRequest& request) const;

  // The whole KubeMQ list's answers kept for an unchanged registry (its counts, for tests).
  const KubeMqListCache& kubemq_cache() const { return kubemq_cache_; }

 private:
  enum class ErrorFormat { kKubeMq, kConnectRpc, kPlainText };
  // A view gets the request, the part of the path after the route's path (empty for an exact
  // path) and its caller.
  using View = std::function<HttpResponse(const HttpRequest& request, std::string_view rest,
                                          const Caller& caller)>;
  struct Route {
    std::string_view path;  // matched exactly, or as a prefix when it ends in '/' (not "/")
    const char* methods;    // the Allow header: "GET, HEAD", "GET, HEAD, POST", "DELETE"
    ErrorFormat errors;
    View view;
    AccessLevel needs = AccessLevel::kRead;
    ErrorFormat auth_errors = errors;  // /metrics answers 401 in plain text
    bool needs_rest = false;           // a prefix route that needs something after the prefix
    bool admin_writes = false;         // methods other than GET and HEAD need an admin token
    const char* admin_off = nullptr;   // the 403 without an admin token file (null: disconnect's)
  };

  // True when the request may go on (*caller then names it for the views); else false with the
  // 401/403 answer in *refusal.
  bool Authorize(const Route& route, const HttpRequest& request, Caller* caller,
                 HttpResponse* refusal) const;

  // True when the request's Host may be served; else false with the 400/421 in *refusal.
  bool CheckHost(const Route* route, const HttpRequest& request, HttpResponse* refusal) const;

  const Route* Find(std::string_view path) const;
  HttpResponse Dispatch(const HttpRequest& request) const;
  static HttpResponse ErrorAnswer(ErrorFormat format, StatusCode code, std::string_view message,
                                  int http_status);

  const ConnectionSource& connections_;
  const KubeMqView kubemq_view_{};
  const KubeMqListCache kubemq_cache_{};  // the whole KubeMQ list of an unchanged registry
  const AccessTokens* tokens_ = nullptr;
  bool metrics_public_ = false;
  Disconnector disconnector_;
  BanAdmin ban_admin_;
  const ClientHistory* history_ = nullptr;
  const ActivityHistory* activity_ = nullptr;
  std::function<bool()> health_;
  HostCheck host_check_;
  std::function<void(const std::string&)> error_log_;
  const std::string disconnect_rpc_path_ =
      std::string(kConnectRpcServicePrefix) + kDisconnectConnectionMethod;
  const std::string list_bans_rpc_path_ = std::string(kConnectRpcServicePrefix) + kListBansMethod;
  const std::string ban_rpc_path_ = std::string(kConnectRpcServicePrefix) + kBanClientMethod;
  const std::string unban_rpc_path_ = std::string(kConnectRpcServicePrefix) + kUnbanClientMethod;
  const std::string history_rpc_path_ =
      std::string(kConnectRpcServicePrefix) + kGetClientHistoryMethod;
  const std::string activity_rpc_path_ = std::string(kConnectRpcServicePrefix) + kGetActivityMethod;
  std::vector<Route> routes_;
  std::vector<std::string> implemented_;  // sorted; from routes_ and `connect_methods`
};

}  // namespace mqc
