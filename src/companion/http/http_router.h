// Maps HTTP requests to the companion's views, from one route table:
//   GET  /api/mqtt/connections                          KubeMQ connections endpoint
//   GET  /metrics                                       Prometheus text (when a provider is set)
//   POST /mqtt.connections.v1.ConnectionsService/<M>    Connect RPC unary (GET: Connect's GET form)
//   GET  /, /console.css, /console.js                   the web console (console/, embedded)
//   GET  /api/openapi.json                              the API's document (api/openapi.json)
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

#include "companion/http/http_server.h"
#include "companion/http/kubemq_view.h"
#include "link/connection.h"
#include "link/status.h"

namespace mqc {

// Prometheus text exposition format 0.0.4.
using MetricsProvider = std::function<std::string()>;
// A Connect RPC unary call: `method` is the part after the service prefix ("ListConnections";
// possibly unknown or empty: answer `unimplemented`), `request` is the whole HTTP request
// (POST, or GET/HEAD for Connect's GET form).
using ConnectRpcHandler =
    std::function<HttpResponse(const std::string& method, const HttpRequest& request)>;

inline constexpr char kConnectRpcServicePrefix[] = "/mqtt.connections.v1.ConnectionsService/";

class HttpRouter {
 public:
  // `connections` must outlive the router. Empty `metrics`: /metrics is 404. Empty `connect`:
  // every Connect call is answered `unimplemented` (501).
  HttpRouter(const ConnectionSource& connections, MetricsProvider metrics,
             ConnectRpcHandler connect);
  // Its routes point back at it: not copied or moved.
  HttpRouter(const HttpRouter&) = delete;
  HttpRouter& operator=(const HttpRouter&) = delete;

  // Never throws for a failing view: a view's exception is answered 500 in the path's format.
  HttpResponse Handle(const HttpRequest& request) const;

 private:
  enum class ErrorFormat { kKubeMq, kConnectRpc };
  // A view gets the request and the part of the path after the route's path (empty for an
  // exact path).
  using View = std::function<HttpResponse(const HttpRequest& request, std::string_view rest)>;
  struct Route {
    std::string_view path;  // matched exactly, or as a prefix when it ends in '/' (not "/")
    const char* methods;    // the Allow header: "GET, HEAD" or "GET, HEAD, POST"
    ErrorFormat errors;
    View view;
  };

  const Route* Find(std::string_view path) const;
  HttpResponse Dispatch(const HttpRequest& request) const;
  static HttpResponse ErrorAnswer(ErrorFormat format, StatusCode code, std::string_view message,
                                  int http_status);

  const ConnectionSource& connections_;
  const KubeMqView kubemq_view_{};
  std::vector<Route> routes_;
};

}  // namespace mqc
