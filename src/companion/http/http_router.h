// Maps HTTP requests to the companion's views:
//   GET  /api/mqtt/connections                          KubeMQ connections endpoint
//   GET  /metrics                                       Prometheus text (when a provider is set)
//   POST /mqtt.connections.v1.ConnectionsService/<M>    Connect unary (GET: Connect's GET form)
// HEAD is served wherever GET is (MHD drops the body). Errors come in the format of the path:
// the KubeMQ envelope, or a Connect error under the service prefix.
//
// Threads: built on the owner's thread before the HttpServer starts, then only read. Handle()
// runs on MHD's threads, several at a time, so the source and both functions must be safe to
// call concurrently.
#pragma once

#include <functional>
#include <string>

#include "companion/http/http_server.h"
#include "companion/http/kubemq_view.h"
#include "link/connection.h"

namespace mqc {

// Prometheus text exposition format 0.0.4.
using MetricsProvider = std::function<std::string()>;
// A Connect unary call: `method` is the part after the service prefix ("ListConnections";
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

  // Never throws for a failing view: a view's exception is answered 500 in the path's format.
  HttpResponse Handle(const HttpRequest& request) const;

 private:
  HttpResponse Route(const HttpRequest& request) const;

  const ConnectionSource& connections_;
  const MetricsProvider metrics_;
  const ConnectRpcHandler connect_;
  const KubeMqView kubemq_view_{};
};

}  // namespace mqc
