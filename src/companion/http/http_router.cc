// SPDX-License-Identifier: BSD-3-Clause
// HttpRouter (see http_router.h).
//
// Where the spec is silent:
// - The Host check runs first, on every path, before the path is looked up (404): a page
//   reached through DNS rebinding learns nothing, not even which paths exist. Then path (404),
//   token (401/403), method (405 with Allow), body size (413), so the answer names the most
//   basic problem.
// - A refused Host is 421 Misdirected Request (RFC 9110 section 15.5.20: "directed at a server
//   that is unable or unwilling to produce an authoritative response for the target URI"),
//   not 403: no credential would help, the request is for another host. Connect has no code of
//   its own for it: `permission_denied` with HTTP 421. A missing, repeated or malformed Host is
//   400 (`invalid_argument`), as RFC 9112 section 3.2 asks.
// - A view's exception is answered 500 with a fixed message; its text goes to the error log
//   (the broker's log), never to the caller. A path matches exactly: no trailing '/', no case
//   folding.
// - HEAD is allowed wherever GET is, as HTTP asks; MHD sends the GET answer's headers only.
// - Under the Connect service prefix every error is a Connect error: wrong method -> 405 with
//   code `unimplemented` (Connect has no code of its own for it; connect-go answers 405 too);
//   body too large -> 413 with `resource_exhausted`; a failing handler -> 500 `internal`.
//   Every method name under the prefix goes to the Connect handler, which knows its methods.
// - /healthz needs no token and says nothing but "ok" (200) or "catching up" (503): a probe
//   must not need a secret, and an unauthenticated caller learns only that the service runs.
// - /metrics ignores query parameters (scrapers send none that matter).
// - The embedded files (the console and the OpenAPI document) ignore query parameters too, and
//   carry Content-Security-Policy default-src 'self' (the console loads nothing from elsewhere
//   and has no inline script or style), X-Content-Type-Options nosniff, and Cache-Control
//   no-cache (a new build's files are fetched at once). The path "/" is exact, not a prefix.
#include "companion/http/http_router.h"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "companion/http/embedded_files.h"
#include "companion/http/view_util.h"
#include "companion/json_util.h"
#include "link/status.h"
#include "link/text_util.h"

namespace mqc {
namespace {

constexpr char kMetricsContentType[] = "text/plain; version=0.0.4; charset=utf-8";
constexpr char kGetMethods[] = "GET, HEAD";
constexpr char kConnectRpcMethods[] = "GET, HEAD, POST";
constexpr char kPostMethod[] = "POST";
constexpr char kDeleteMethod[] = "DELETE";
constexpr char kConnectionsPath[] = "/api/mqtt/connections";
constexpr char kConnectionsPrefix[] = "/api/mqtt/connections/";
constexpr char kMetricsPath[] = "/metrics";
constexpr char kHealthPath[] = "/healthz";
constexpr char kListConnectionsPath[] = "/mqtt.connections.v1.ConnectionsService/ListConnections";
static_assert(std::string_view(kListConnectionsPath)
                      .substr(0, sizeof kConnectRpcServicePrefix - 1) == kConnectRpcServicePrefix,
              "ListConnections is a method of the service");
constexpr char kAuthenticateHeader[] = "WWW-Authenticate";
constexpr char kAuthenticateChallenge[] = "Bearer realm=\"mosquitto-connections\"";
constexpr char kDisconnectOff[] = "disconnecting is off: it needs plugin_opt_http_admin_token_file";
constexpr char kBanningOff[] = "banning is off: it needs plugin_opt_http_admin_token_file";
constexpr char kBodyTooLarge[] = "request body too large";
// The whole message of every 500: the exception's text goes to the log only.
constexpr char kInternalError[] = "internal error";

struct EmbeddedRoute {
  const char* path;
  const char* name;  // in the repository (and in the build's list of embedded files)
  const char* content_type;
  AccessLevel needs;  // kNone: served without a token
};
constexpr EmbeddedRoute kEmbeddedRoutes[] = {
    {"/", "console/index.html", "text/html; charset=utf-8", AccessLevel::kNone},
    {"/console.css", "console/console.css", "text/css; charset=utf-8", AccessLevel::kNone},
    {"/console.js", "console/console.js", "text/javascript; charset=utf-8", AccessLevel::kNone},
    {"/api/openapi.json", "api/openapi.json", kJsonContentType, AccessLevel::kRead},
};
constexpr char kContentSecurityPolicy[] =
    "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// Whether `methods` (an Allow header value) lists the request's method; HEAD goes with GET.
bool Allows(std::string_view methods, const HttpRequest& request) {
  const std::string_view wanted =
      request.method == "HEAD" ? std::string_view("GET") : std::string_view(request.method);
  while (!methods.empty()) {
    const std::size_t comma = methods.find(", ");
    if (methods.substr(0, comma) == wanted) return true;
    methods = comma == std::string_view::npos ? std::string_view() : methods.substr(comma + 2);
  }
  return false;
}

std::string NotAllowedMessage(const HttpRequest& request, const char* allowed) {
  return "method " + QuoteForMessage(request.method) + " is not allowed on " +
         QuoteForMessage(request.path) + "; allowed: " + allowed;
}

// A view answering one file of the build's embedded files (the build fails to link without
// them; a name missing from the list in CMakeLists.txt is a programming error caught by the
// router's unit test as a 500).
HttpResponse EmbeddedFileResponse(const EmbeddedRoute& route) {
  const EmbeddedFile* file = FindEmbeddedFile(route.name);
  if (file == nullptr) {
    throw std::logic_error(std::string("no embedded file ") + route.name);
  }
  HttpResponse response;
  response.status = kHttpOk;
  response.content_type = route.content_type;
  response.body = std::string(file->bytes);
  response.headers = {{"Content-Security-Policy", kContentSecurityPolicy},
                      {"X-Content-Type-Options", "nosniff"},
                      {"Cache-Control", "no-cache"}};
  return response;
}

}  // namespace

std::string_view HttpPathLabel(std::string_view path) noexcept {
  for (std::string_view known :
       {kConnectionsPath, kMetricsPath, kListConnectionsPath, kHealthPath}) {
    if (path == known) return known;
  }
  return "other";
}

HttpRouter::HttpRouter(const ConnectionSource& connections, MetricsProvider metrics,
                       ConnectRpcHandler connect, std::vector<std::string> connect_methods)
    : connections_(connections) {
  routes_.push_back({kConnectionsPath, kGetMethods, ErrorFormat::kKubeMq,
                     [this](const HttpRequest& request, std::string_view, const Caller&) {
                       return kubemq_cache_.Answer(kubemq_view_, connections_, request.query);
                     }});
  routes_.push_back({kConnectionsPrefix, kDeleteMethod, ErrorFormat::kKubeMq,
                     [this](const HttpRequest&, std::string_view client_id, const Caller& caller) {
                       if (!disconnector_)
                         return KubeMqErrorResponse(kHttpForbidden, kDisconnectOff);
                       return KubeMqDisconnect(disconnector_, client_id, caller);
                     },
                     AccessLevel::kAdmin, ErrorFormat::kKubeMq, /*needs_rest=*/true});
  // Bans: GET reads (read token), POST adds (admin); DELETE .../{as}/{who} removes (admin).
  {
    Route bans{kBansPath, kConnectRpcMethods, ErrorFormat::kKubeMq,
               [this](const HttpRequest& request, std::string_view, const Caller& caller) {
                 if (!ban_admin_.list) return KubeMqErrorResponse(kHttpForbidden, kBanningOff);
                 if (IsGet(request)) return KubeMqListBans(ban_admin_);
                 return KubeMqAddBan(ban_admin_, request, caller);
               }};
    bans.admin_writes = true;
    bans.admin_off = kBanningOff;
    routes_.push_back(std::move(bans));
    Route unban{kBansPrefix,
                kDeleteMethod,
                ErrorFormat::kKubeMq,
                [this](const HttpRequest&, std::string_view rest, const Caller& caller) {
                  if (!ban_admin_.list) return KubeMqErrorResponse(kHttpForbidden, kBanningOff);
                  return KubeMqRemoveBan(ban_admin_, rest, caller);
                },
                AccessLevel::kAdmin,
                ErrorFormat::kKubeMq,
                /*needs_rest=*/true};
    unban.admin_off = kBanningOff;
    routes_.push_back(std::move(unban));
  }
  if (metrics) {
    Route route{
        kMetricsPath, kGetMethods, ErrorFormat::kKubeMq,
        [metrics = std::move(metrics)](const HttpRequest&, std::string_view, const Caller&) {
          HttpResponse response;
          response.status = kHttpOk;
          response.content_type = kMetricsContentType;
          response.body = metrics();
          return response;
        }};
    route.auth_errors = ErrorFormat::kPlainText;
    routes_.push_back(std::move(route));
  }
  // For probes (systemd, Kubernetes): no token, no data, only whether the view is current.
  Route health{kHealthPath, kGetMethods, ErrorFormat::kPlainText,
               [this](const HttpRequest&, std::string_view, const Caller&) {
                 const bool current = !health_ || health_();
                 HttpResponse response;
                 response.status = current ? kHttpOk : kHttpServiceUnavailable;
                 response.content_type = "text/plain; charset=utf-8";
                 response.body = current ? "ok\n" : "catching up with the broker\n";
                 response.headers = {{"Cache-Control", "no-store"}};
                 return response;
               },
               AccessLevel::kNone};
  routes_.push_back(std::move(health));
  // The web console (console/) and the API's document, as the build embedded them. The
  // console's files hold no data and must load without a token (the page then asks for one).
  for (const EmbeddedRoute& file : kEmbeddedRoutes) {
    routes_.push_back({file.path, kGetMethods, ErrorFormat::kKubeMq,
                       [&file](const HttpRequest&, std::string_view, const Caller&) {
                         return EmbeddedFileResponse(file);
                       },
                       file.needs});
  }
  // Before the service prefix: the first matching route wins.
  routes_.push_back({disconnect_rpc_path_, kPostMethod, ErrorFormat::kConnectRpc,
                     [this](const HttpRequest& request, std::string_view, const Caller& caller) {
                       if (!disconnector_) {
                         return ConnectRpcErrorResponse(
                             Status(StatusCode::kPermissionDenied, kDisconnectOff));
                       }
                       return ConnectRpcDisconnect(disconnector_, request, caller);
                     },
                     AccessLevel::kAdmin});
  for (const auto& [path, method, needs] :
       {std::tuple<const std::string&, const char*, AccessLevel>{
            list_bans_rpc_path_, kListBansMethod, AccessLevel::kRead},
        std::tuple<const std::string&, const char*, AccessLevel>{ban_rpc_path_, kBanClientMethod,
                                                                 AccessLevel::kAdmin},
        std::tuple<const std::string&, const char*, AccessLevel>{
            unban_rpc_path_, kUnbanClientMethod, AccessLevel::kAdmin}}) {
    const char* const name = method;  // a structured binding cannot be captured in C++17
    Route route{
        path, kPostMethod, ErrorFormat::kConnectRpc,
        [this, name](const HttpRequest& request, std::string_view, const Caller& caller) {
          if (!ban_admin_.list) {
            return ConnectRpcErrorResponse(Status(StatusCode::kPermissionDenied, kBanningOff));
          }
          return ConnectRpcBans(ban_admin_, name, request, caller);
        },
        needs};
    route.admin_off = kBanningOff;
    routes_.push_back(std::move(route));
  }
  routes_.push_back({history_rpc_path_, kPostMethod, ErrorFormat::kConnectRpc,
                     [this](const HttpRequest& request, std::string_view, const Caller&) {
                       if (history_ == nullptr) {
                         return ConnectRpcErrorResponse(
                             Status(StatusCode::kPermissionDenied, kHistoryOff));
                       }
                       return ConnectRpcGetClientHistory(*history_, request);
                     },
                     AccessLevel::kRead});
  routes_.push_back({activity_rpc_path_, kPostMethod, ErrorFormat::kConnectRpc,
                     [this](const HttpRequest& request, std::string_view, const Caller&) {
                       if (activity_ == nullptr) {
                         return ConnectRpcErrorResponse(
                             Status(StatusCode::kUnavailable, "no activity is kept"));
                       }
                       return ConnectRpcGetActivity(*activity_, request);
                     },
                     AccessLevel::kRead});
  // Every Connect method answered, from the routes above and what `connect` says it answers:
  // the one list, so that a new route or service method is named without a second list.
  const std::string_view prefix = kConnectRpcServicePrefix;
  for (const Route& route : routes_) {
    if (route.path.size() > prefix.size() && StartsWith(route.path, prefix)) {
      implemented_.emplace_back(route.path.substr(prefix.size()));
    }
  }
  const bool filtered = !connect_methods.empty();
  implemented_.insert(implemented_.end(), connect_methods.begin(), connect_methods.end());
  std::sort(implemented_.begin(), implemented_.end());
  routes_.push_back(
      {kConnectRpcServicePrefix, kConnectRpcMethods, ErrorFormat::kConnectRpc,
       [this, filtered, connect = std::move(connect), served = std::move(connect_methods)](
           const HttpRequest& request, std::string_view method, const Caller&) {
         if (connect &&
             (!filtered || std::find(served.begin(), served.end(), method) != served.end())) {
           return connect(std::string(method), request);
         }
         std::string message = "method " + QuoteForMessage(method) + " is not implemented";
         if (!implemented_.empty()) message += "; implemented: " + JoinMethodNames(implemented_);
         return ConnectRpcErrorResponse(Status(StatusCode::kUnimplemented, message));
       }});
}

const HttpRouter::Route* HttpRouter::Find(std::string_view path) const {
  for (const Route& route : routes_) {
    const bool prefix = route.path.size() > 1 && route.path.back() == '/';
    if (route.needs_rest && path.size() <= route.path.size()) continue;
    if (prefix ? StartsWith(path, route.path) : path == route.path) {
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
  if (format == ErrorFormat::kPlainText) {
    HttpResponse response;
    response.status = http_status;
    response.content_type = "text/plain; charset=utf-8";
    response.body = std::string(message) + "\n";
    return response;
  }
  return KubeMqErrorResponse(http_status, message);
}

void HttpRouter::SetAccess(const AccessTokens* tokens, bool metrics_public) {
  tokens_ = tokens;
  metrics_public_ = metrics_public;
}

void HttpRouter::SetDisconnector(Disconnector disconnector) {
  disconnector_ = std::move(disconnector);
}

void HttpRouter::SetBanAdmin(BanAdmin admin) { ban_admin_ = std::move(admin); }

void HttpRouter::SetClientHistory(const ClientHistory* history) { history_ = history; }

void HttpRouter::SetActivity(const ActivityHistory* activity) { activity_ = activity; }

void HttpRouter::SetHealth(std::function<bool()> current) { health_ = std::move(current); }

void HttpRouter::SetHostCheck(HostCheck host_check) { host_check_ = std::move(host_check); }

void HttpRouter::SetErrorLog(std::function<void(const std::string&)> log) {
  error_log_ = std::move(log);
}

bool HttpRouter::CheckHost(const Route* route, const HttpRequest& request,
                           HttpResponse* refusal) const {
  const HostCheck::Result result = host_check_.Check(request);
  if (result.verdict == HostCheck::Verdict::kAllowed) return true;
  const bool malformed = result.verdict == HostCheck::Verdict::kMalformed;
  *refusal = ErrorAnswer(route != nullptr ? route->auth_errors : ErrorFormat::kKubeMq,
                         malformed ? StatusCode::kInvalidArgument : StatusCode::kPermissionDenied,
                         result.message, malformed ? kHttpBadRequest : kHttpMisdirectedRequest);
  return false;
}

bool HttpRouter::Authorize(const Route& route, const HttpRequest& request, Caller* caller,
                           HttpResponse* refusal) const {
  caller->address = request.remote_address;
  const AccessLevel needs =
      route.admin_writes && !IsGet(request) ? AccessLevel::kAdmin : route.needs;
  const bool public_route =
      needs == AccessLevel::kNone || (metrics_public_ && route.path == kMetricsPath);
  if (tokens_ == nullptr || public_route) {
    if (needs != AccessLevel::kAdmin) return true;
  }
  AccessGrant grant;
  if (tokens_ != nullptr) {
    grant = tokens_->Check(request.FindHeader("Authorization"));
  } else {
    grant.level = AccessLevel::kRead;
  }
  caller->token_line = grant.token_line;
  if (grant.level == AccessLevel::kNone) {
    *refusal = ErrorAnswer(route.auth_errors, StatusCode::kUnauthenticated,
                           grant.token_presented ? "the bearer token is not valid"
                                                 : "a bearer token is required (Authorization: "
                                                   "Bearer <token>)",
                           kHttpUnauthorized);
    refusal->headers.emplace_back(kAuthenticateHeader, kAuthenticateChallenge);
    return false;
  }
  if (needs == AccessLevel::kAdmin && grant.level != AccessLevel::kAdmin) {
    // Without an admin token file there is no admin: say that the action is off.
    *refusal = ErrorAnswer(route.auth_errors, StatusCode::kPermissionDenied,
                           disconnector_                ? "this action needs an admin token"
                           : route.admin_off != nullptr ? route.admin_off
                                                        : kDisconnectOff,
                           kHttpForbidden);
    return false;
  }
  return true;
}

HttpResponse HttpRouter::Handle(const HttpRequest& request) const {
  std::string what;
  try {
    return Dispatch(request);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "an exception of unknown type";
  }
  if (error_log_) {
    try {
      // The path is the client's text: printable only, so that it cannot forge a log line.
      error_log_("HTTP " + PrintableExcerpt(request.method) + " " + PrintableExcerpt(request.path) +
                 " failed: " + what);
    } catch (...) {
      // The answer goes out even when its line cannot be logged.
    }
  }
  const Route* route = Find(request.path);
  return ErrorAnswer(route != nullptr ? route->errors : ErrorFormat::kKubeMq, StatusCode::kInternal,
                     kInternalError, kHttpInternalServerError);
}

HttpResponse HttpRouter::Dispatch(const HttpRequest& request) const {
  const Route* route = Find(request.path);
  HttpResponse refusal;
  if (!CheckHost(route, request, &refusal)) return refusal;
  if (route == nullptr) {
    return KubeMqErrorResponse(kHttpNotFound, "unknown path " + QuoteForMessage(request.path));
  }
  Caller caller;
  if (!Authorize(*route, request, &caller, &refusal)) return refusal;
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
  return route->view(request, std::string_view(request.path).substr(route->path.size()), caller);
}

}  // namespace mqc
