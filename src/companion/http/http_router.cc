// HttpRouter (see http_router.h).
//
// Where the spec is silent:
// - Checks run path first (404), then method (405 with Allow), then body size (413), so the
//   answer names the most basic problem. A path matches exactly: no trailing '/', no case
//   folding.
// - HEAD is allowed wherever GET is, as HTTP asks; MHD sends the GET answer's headers only.
// - Under the Connect service prefix every error is a Connect error: wrong method -> 405 with
//   code `unimplemented` (Connect has no code of its own for it; connect-go answers 405 too);
//   body too large -> 413 with `resource_exhausted`; a failing handler -> 500 `internal`.
//   Every method name under the prefix goes to the Connect handler, which knows its methods.
// - /metrics ignores query parameters (scrapers send none that matter).
#include "companion/http/http_router.h"

#include <exception>
#include <string_view>
#include <utility>

#include "companion/http/json_util.h"

namespace mqc {
namespace {

constexpr std::string_view kConnectionsPath = "/api/mqtt/connections";
constexpr std::string_view kMetricsPath = "/metrics";
constexpr char kMetricsContentType[] = "text/plain; version=0.0.4; charset=utf-8";
constexpr char kGetMethods[] = "GET, HEAD";
constexpr char kConnectRpcMethods[] = "GET, HEAD, POST";

constexpr int kHttpOk = 200;
constexpr int kHttpNotFound = 404;
constexpr int kHttpMethodNotAllowed = 405;
constexpr int kHttpPayloadTooLarge = 413;
constexpr int kHttpInternalServerError = 500;
constexpr int kHttpNotImplemented = 501;

bool IsGet(const HttpRequest& request) {
  return request.method == "GET" || request.method == "HEAD";
}

bool IsConnectRpcPath(std::string_view path) {
  return path.substr(0, std::string_view(kConnectRpcServicePrefix).size()) ==
         kConnectRpcServicePrefix;
}

HttpResponse ConnectRpcError(int status, std::string_view code, std::string_view message) {
  CjsonPtr error = NewJsonObject();
  AddToJsonObject(error.get(), "code", NewJsonString(code));
  AddToJsonObject(error.get(), "message", NewJsonString(message));
  HttpResponse response;
  response.status = status;
  response.content_type = "application/json";
  response.body = PrintJson(*error);
  return response;
}

HttpResponse MethodNotAllowed(HttpResponse response, const char* allowed) {
  response.headers.emplace_back("Allow", allowed);
  return response;
}

std::string NotAllowedMessage(const HttpRequest& request, const char* allowed) {
  return "method " + QuoteForMessage(request.method) + " is not allowed on " +
         QuoteForMessage(request.path) + "; allowed: " + allowed;
}

constexpr char kBodyTooLarge[] = "request body too large";

HttpResponse RouteConnectRpc(const HttpRequest& request, const ConnectRpcHandler& connect) {
  if (!IsGet(request) && request.method != "POST") {
    return MethodNotAllowed(ConnectRpcError(kHttpMethodNotAllowed, "unimplemented",
                                            NotAllowedMessage(request, kConnectRpcMethods)),
                            kConnectRpcMethods);
  }
  if (request.body_too_large) {
    return ConnectRpcError(kHttpPayloadTooLarge, "resource_exhausted", kBodyTooLarge);
  }
  const std::string method = request.path.substr(std::string_view(kConnectRpcServicePrefix).size());
  if (!connect) {
    return ConnectRpcError(kHttpNotImplemented, "unimplemented",
                           "method " + QuoteForMessage(method) + " is not implemented");
  }
  return connect(method, request);
}

}  // namespace

HttpRouter::HttpRouter(const ConnectionSource& connections, MetricsProvider metrics,
                       ConnectRpcHandler connect)
    : connections_(connections), metrics_(std::move(metrics)), connect_(std::move(connect)) {}

HttpResponse HttpRouter::Handle(const HttpRequest& request) const {
  std::string what;
  try {
    return Route(request);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "unknown exception";
  }
  const std::string message = "internal error: " + what;
  return IsConnectRpcPath(request.path)
             ? ConnectRpcError(kHttpInternalServerError, "internal", message)
             : KubeMqView::Error(kHttpInternalServerError, message);
}

HttpResponse HttpRouter::Route(const HttpRequest& request) const {
  if (IsConnectRpcPath(request.path)) return RouteConnectRpc(request, connect_);

  const bool connections = request.path == kConnectionsPath;
  const bool metrics = request.path == kMetricsPath && metrics_;
  if (!connections && !metrics) {
    return KubeMqView::Error(kHttpNotFound, "unknown path " + QuoteForMessage(request.path));
  }
  if (!IsGet(request)) {
    return MethodNotAllowed(
        KubeMqView::Error(kHttpMethodNotAllowed, NotAllowedMessage(request, kGetMethods)),
        kGetMethods);
  }
  if (request.body_too_large) return KubeMqView::Error(kHttpPayloadTooLarge, kBodyTooLarge);
  if (connections) return kubemq_view_.ListConnections(connections_.Snapshot(), request.query);

  HttpResponse response;
  response.status = kHttpOk;
  response.content_type = kMetricsContentType;
  response.body = metrics_();
  return response;
}

}  // namespace mqc
