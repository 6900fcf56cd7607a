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
#include <string>
#include <string_view>
#include <utility>

#include "companion/http/json_util.h"
#include "companion/http/view_util.h"
#include "link/status.h"

namespace mqc {
namespace {

constexpr char kMetricsContentType[] = "text/plain; version=0.0.4; charset=utf-8";
constexpr char kGetMethods[] = "GET, HEAD";
constexpr char kConnectRpcMethods[] = "GET, HEAD, POST";
constexpr char kBodyTooLarge[] = "request body too large";

bool Allows(std::string_view methods, const HttpRequest& request) {
  return IsGet(request) || (request.method == "POST" && methods == kConnectRpcMethods);
}

std::string NotAllowedMessage(const HttpRequest& request, const char* allowed) {
  return "method " + QuoteForMessage(request.method) + " is not allowed on " +
         QuoteForMessage(request.path) + "; allowed: " + allowed;
}

}  // namespace

HttpRouter::HttpRouter(const ConnectionSource& connections, MetricsProvider metrics,
                       ConnectRpcHandler connect)
    : connections_(connections) {
  routes_.push_back({"/api/mqtt/connections", kGetMethods, ErrorFormat::kKubeMq,
                     [this](const HttpRequest& request, std::string_view) {
                       return kubemq_view_.ListConnections(connections_, request.query);
                     }});
  if (metrics) {
    routes_.push_back({"/metrics", kGetMethods, ErrorFormat::kKubeMq,
                       [metrics = std::move(metrics)](const HttpRequest&, std::string_view) {
                         HttpResponse response;
                         response.status = kHttpOk;
                         response.content_type = kMetricsContentType;
                         response.body = metrics();
                         return response;
                       }});
  }
  routes_.push_back(
      {kConnectRpcServicePrefix, kConnectRpcMethods, ErrorFormat::kConnectRpc,
       [connect = std::move(connect)](const HttpRequest& request, std::string_view method) {
         if (!connect) {
           return ConnectRpcErrorResponse(
               Status(StatusCode::kUnimplemented,
                      "method " + QuoteForMessage(method) + " is not implemented"));
         }
         return connect(std::string(method), request);
       }});
}

const HttpRouter::Route* HttpRouter::Find(std::string_view path) const {
  for (const Route& route : routes_) {
    const bool prefix = !route.path.empty() && route.path.back() == '/';
    if (prefix ? path.substr(0, route.path.size()) == route.path : path == route.path) {
      return &route;
    }
  }
  return nullptr;
}

HttpResponse HttpRouter::ErrorAnswer(ErrorFormat format, StatusCode code, std::string_view message,
                                     int http_status) {
  if (format == ErrorFormat::kConnectRpc) {
    return ConnectRpcErrorResponse(Status(code, std::string(message)), http_status);
  }
  return KubeMqErrorResponse(http_status, message);
}

HttpResponse HttpRouter::Handle(const HttpRequest& request) const {
  std::string what;
  try {
    return Dispatch(request);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "unknown exception";
  }
  const Route* route = Find(request.path);
  return ErrorAnswer(route != nullptr ? route->errors : ErrorFormat::kKubeMq, StatusCode::kInternal,
                     "internal error: " + what, kHttpInternalServerError);
}

HttpResponse HttpRouter::Dispatch(const HttpRequest& request) const {
  const Route* route = Find(request.path);
  if (route == nullptr) {
    return KubeMqErrorResponse(kHttpNotFound, "unknown path " + QuoteForMessage(request.path));
  }
  if (!Allows(route->methods, request)) {
    HttpResponse response =
        ErrorAnswer(route->errors, StatusCode::kUnimplemented,
                    NotAllowedMessage(request, route->methods), kHttpMethodNotAllowed);
    response.headers.emplace_back("Allow", route->methods);
    return response;
  }
  if (request.body_too_large) {
    return ErrorAnswer(route->errors, StatusCode::kResourceExhausted, kBodyTooLarge,
                       kHttpPayloadTooLarge);
  }
  return route->view(request, std::string_view(request.path).substr(route->path.size()));
}

}  // namespace mqc
