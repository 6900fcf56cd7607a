// SPDX-License-Identifier: BSD-3-Clause
// ConnectRpcService (see connect_rpc_service.h).
//
// Where the spec is silent:
// - Checks run method name (501), HTTP method (405), then for POST: Content-Type (415),
//   Connect-Protocol-Version (400), Connect-Timeout-Ms (400), Content-Encoding (501), body
//   (400); for GET/HEAD: connect, encoding (400, or 415 for another codec), compression (501),
//   Connect-Timeout-Ms, message. The first problem found is the one reported.
// - 415 carries a Connect error body with code `invalid_argument` (and `Accept-Post:
//   application/json, application/proto` for POST): the request is at fault whatever the server's
//   state, and Connect clients take the code from the body. No code maps to 415 in Connect's table;
//   connect-go answers 415 without a body, which clients read as `unknown`, a less useful code.
// - Content-Type (POST) and `encoding` (GET) choose the codec, binary protobuf or JSON
//   (connect_codec.h); the response is in the request's codec, errors are always JSON. Anything
//   else is 415.
// - Connect-Timeout-Ms: 1 to 10 ASCII digits (leading zeros fine, spaces around trimmed). "0"
//   is accepted as an already expired budget (as connect-go and gRPC read a zero timeout) and
//   answered `deadline_exceeded` before any work. The budget runs from the start of Handle();
//   it is checked before the snapshot is taken and again once the response is built
//   (elapsed >= budget: exceeded). Parse and query errors are reported as such even when late.
// - Content-Encoding / compression: only `identity` (case-insensitive; an empty or absent
//   header is identity); others are `unimplemented` listing `identity`, as the protocol asks.
// - GET: `connect=v1` is required (as the header is for POST); `encoding` is required; a missing
//   `message` is the empty message (defaults), as an empty POST body is. A Connect parameter
//   given twice is `invalid_argument`; unknown parameters are ignored (the protocol asks so).
//   `base64=1` selects URL-safe base64 (padding optional, '+' and '/' refused: MHD turns '+'
//   into a space); other `base64` values are ignored, as the protocol says. Send a literal '+'
//   in a plain message as %2B. Connect-Protocol-Version is not looked at on GET.
// - Query-engine errors are `invalid_argument`. A throw (out of memory, a failing source) leaves
//   Handle() for the router, which answers `internal` (500) with a fixed message and logs the
//   exception's text: it never reaches the caller.
// - The request and response messages are read and written in connect_rpc_json.cc (JSON) and
//   connect_rpc_proto.cc (binary), chosen in connect_codec.cc.
#include "companion/http/connect_rpc_service.h"

#include <cjson/cJSON.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "companion/http/connect_codec.h"
#include "companion/http/connect_rpc_json.h"
#include "companion/http/connect_rpc_proto.h"
#include "companion/http/view_util.h"
#include "companion/http/watch_resume_token.h"
#include "companion/json_util.h"
#include "companion/query/connection_fields.h"
#include "companion/query/connection_query.h"
#include "link/status.h"
#include "link/text_util.h"
#include "link/topic_mapping.h"

namespace mqc {
namespace {

using Milliseconds = std::chrono::milliseconds;

constexpr std::string_view kListConnections = "ListConnections";
constexpr std::string_view kWatchConnections = "WatchConnections";

// --- Connect errors ------------------------------------------------------------------------

// docs/api.md, the Connect error map; only the codes this service answers with.
constexpr StatusCode kInvalidArgument = StatusCode::kInvalidArgument;
constexpr StatusCode kDeadlineExceeded = StatusCode::kDeadlineExceeded;
constexpr StatusCode kUnimplemented = StatusCode::kUnimplemented;
constexpr StatusCode kResourceExhausted = StatusCode::kResourceExhausted;

// `status` 0: the code's own status.
HttpResponse ConnectRpcError(StatusCode code, std::string_view message, int status = 0) {
  return ConnectRpcErrorResponse(Status(code, std::string(message)), status);
}

// --- small text helpers --------------------------------------------------------------------

// Without the spaces and tabs HTTP allows around header values and their parts.
std::string_view TrimSpaces(std::string_view text) {
  const std::size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return {};
  const std::size_t end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

std::string HeaderName(std::string_view name) { return "header '" + std::string(name) + "'"; }

// --- request headers -----------------------------------------------------------------------

constexpr std::string_view kContentType = "Content-Type";
constexpr std::string_view kProtocolVersion = "Connect-Protocol-Version";
constexpr std::string_view kTimeout = "Connect-Timeout-Ms";
constexpr std::string_view kContentEncoding = "Content-Encoding";
constexpr std::size_t kMaxTimeoutDigits = 10;

bool CheckContentType(const HttpRequest& request, ConnectCodec* codec, HttpResponse* error) {
  const std::string* value = request.FindHeader(kContentType);
  if (value != nullptr && CodecOfContentType(*value, codec)) return true;
  const std::string expected = std::string("; expected one of: ") + kConnectContentTypes +
                               " ('application/json' optionally with '; charset=utf-8')";
  const std::string message =
      value == nullptr ? "missing " + HeaderName(kContentType) + expected
                       : HeaderName(kContentType) + " is " + QuoteForMessage(*value) + expected;
  *error = ConnectRpcError(kInvalidArgument, message, kHttpUnsupportedMediaType);
  error->headers.emplace_back("Accept-Post", kConnectContentTypes);
  return false;
}

bool CheckProtocolVersion(const HttpRequest& request, HttpResponse* error) {
  const std::string* value = request.FindHeader(kProtocolVersion);
  if (value != nullptr && TrimSpaces(*value) == "1") return true;
  *error = ConnectRpcError(
      kInvalidArgument,
      value == nullptr
          ? "missing required " + HeaderName(kProtocolVersion) + "; expected '1'"
          : HeaderName(kProtocolVersion) + " is " + QuoteForMessage(*value) + "; expected '1'");
  return false;
}

// Connect-Timeout-Ms, when sent.
bool ReadTimeout(const HttpRequest& request, std::optional<Milliseconds>* budget,
                 HttpResponse* error) {
  const std::string* value = request.FindHeader(kTimeout);
  if (value == nullptr) return true;
  const std::string_view digits = TrimSpaces(*value);
  bool valid = !digits.empty() && digits.size() <= kMaxTimeoutDigits;
  std::int64_t milliseconds = 0;
  for (const char c : digits) {
    valid = valid && IsAsciiDigit(c);
    if (valid) milliseconds = milliseconds * 10 + (c - '0');  // at most 10 digits: no overflow
  }
  if (!valid) {
    *error =
        ConnectRpcError(kInvalidArgument, HeaderName(kTimeout) + " is " + QuoteForMessage(*value) +
                                              "; expected milliseconds, 1 to 10 digits");
    return false;
  }
  *budget = Milliseconds(milliseconds);
  return true;
}

bool IsIdentity(std::string_view coding) { return EqualsIgnoreAsciiCase(coding, "identity"); }

HttpResponse UnsupportedCompression(std::string_view what, std::string_view value) {
  return ConnectRpcError(kUnimplemented, std::string(what) + " " + QuoteForMessage(value) +
                                             " is not supported; supported: identity");
}

bool CheckContentEncoding(const HttpRequest& request, HttpResponse* error) {
  const std::string* value = request.FindHeader(kContentEncoding);
  if (value == nullptr || TrimSpaces(*value).empty() || IsIdentity(TrimSpaces(*value))) {
    return true;
  }
  *error = UnsupportedCompression(kContentEncoding, *value);
  return false;
}

// --- Connect's GET form --------------------------------------------------------------------

struct GetParameters {
  const std::string* connect = nullptr;
  const std::string* encoding = nullptr;
  const std::string* message = nullptr;
  const std::string* base64 = nullptr;
  const std::string* compression = nullptr;
};

std::string ParameterName(std::string_view name) {
  return "query parameter '" + std::string(name) + "'";
}

// RFC 4648 section 5 (URL-safe alphabet), padding optional. The unused bits of the last
// character are not checked, as Go's decoder does not check them.
bool DecodePaddedBase64Url(std::string_view text, std::string* out) {
  std::size_t padding = 0;
  while (padding < text.size() && text[text.size() - 1 - padding] == '=') ++padding;
  if (padding > 0 && (padding > 2 || text.size() % 4 != 0)) return false;
  text.remove_suffix(padding);
  if (padding > 0 && text.size() % 4 + padding != 4) return false;
  return DecodeBase64Url(text, out, /*canonical=*/false);
}

// The request message of a GET, still encoded, and its codec.
bool ReadGetMessage(const HttpRequest& request, std::string* message, ConnectCodec* codec,
                    HttpResponse* error) {
  GetParameters parameters;
  const std::pair<std::string_view, const std::string**> known[] = {
      {"connect", &parameters.connect},         {"encoding", &parameters.encoding},
      {"message", &parameters.message},         {"base64", &parameters.base64},
      {"compression", &parameters.compression},
  };
  for (const auto& [name, value] : request.query) {
    for (const auto& [known_name, slot] : known) {
      if (name != known_name) continue;
      if (*slot != nullptr) {
        *error = ConnectRpcError(
            kInvalidArgument, ParameterName(name) + " is given more than once; expected it once");
        return false;
      }
      *slot = &value;
    }
  }
  if (parameters.connect == nullptr || *parameters.connect != "v1") {
    *error = ConnectRpcError(kInvalidArgument,
                             parameters.connect == nullptr
                                 ? "missing " + ParameterName("connect") + "; expected 'v1'"
                                 : ParameterName("connect") + " is " +
                                       QuoteForMessage(*parameters.connect) + "; expected 'v1'");
    return false;
  }
  if (parameters.encoding == nullptr) {
    *error = ConnectRpcError(
        kInvalidArgument, "missing " + ParameterName("encoding") + "; expected 'json' or 'proto'");
    return false;
  }
  if (!CodecOfEncoding(*parameters.encoding, codec)) {
    // The protocol asks for 415 when the codec is not supported, as for POST's Content-Type.
    *error = ConnectRpcError(kInvalidArgument,
                             ParameterName("encoding") + " is " +
                                 QuoteForMessage(*parameters.encoding) + "; supported: json, proto",
                             kHttpUnsupportedMediaType);
    return false;
  }
  if (parameters.compression != nullptr && !IsIdentity(*parameters.compression)) {
    *error = UnsupportedCompression(ParameterName("compression"), *parameters.compression);
    return false;
  }
  if (parameters.message == nullptr) {
    message->clear();
  } else if (parameters.base64 != nullptr && *parameters.base64 == "1") {
    if (!DecodePaddedBase64Url(*parameters.message, message)) {
      *error = ConnectRpcError(
          kInvalidArgument, ParameterName("message") + " is not valid URL-safe base64 (base64=1)");
      return false;
    }
  } else {
    *message = *parameters.message;
  }
  return true;
}

// --- the call ------------------------------------------------------------------------------

// The request message in `codec`; false with the Connect error in *error.
bool DecodeRequestMessage(ConnectCodec codec, std::string_view bytes, std::string_view where,
                          ListConnectionsRequest* request, HttpResponse* error) {
  const Status status = ReadListConnectionsRequest(codec, bytes, where, request);
  if (!status.ok()) *error = ConnectRpcErrorResponse(status);
  return status.ok();
}

// Whether the budget is used up; if so, *error is the answer.
bool DeadlineExceeded(std::optional<Milliseconds> budget,
                      std::chrono::steady_clock::duration elapsed, HttpResponse* error) {
  if (!budget || elapsed < *budget) return false;
  const auto elapsed_ms = std::chrono::duration_cast<Milliseconds>(elapsed).count();
  *error =
      ConnectRpcError(kDeadlineExceeded, "deadline exceeded: " + HeaderName(kTimeout) + " allows " +
                                             std::to_string(budget->count()) + " ms, " +
                                             std::to_string(elapsed_ms) + " ms have passed");
  return true;
}

}  // namespace

bool CheckConnectUnaryPost(const HttpRequest& request, ConnectCodec* codec, HttpResponse* error) {
  std::optional<Milliseconds> budget;
  return CheckContentType(request, codec, error) && CheckProtocolVersion(request, error) &&
         ReadTimeout(request, &budget, error) && CheckContentEncoding(request, error);
}

ConnectRpcService::ConnectRpcService(const ConnectionSource& source,
                                     ConnectRpcServiceOptions options)
    : source_(source),
      clock_(options.clock ? std::move(options.clock) : ConnectRpcServiceOptions::Clock([] {
        return std::chrono::steady_clock::now();
      })),
      live_(options.live),
      changes_(options.changes),
      stream_buffer_(options.stream_buffer),
      slots_(options.max_streams),
      fleet_(std::move(options.fleet)),
      fleet_deadline_(options.fleet_deadline),
      fleet_peers_(options.fleet_peers),
      node_id_(options.node_id),
      fleet_watch_(std::move(options.fleet_watch)) {}

HttpResponse ConnectRpcService::Handle(const std::string& method,
                                       const HttpRequest& request) const {
  if (method == kWatchConnections && Watches()) return HandleWatchConnections(request);
  if (method == kListConnections) return HandleListConnections(request);
  // Through HttpRouter only a method of Methods() comes here; the router's answer to any other
  // also names the methods of its own routes.
  return ConnectRpcError(kUnimplemented,
                         "method " + QuoteForMessage(method) +
                             " is not implemented; implemented: " + JoinMethodNames(Methods()));
}

std::vector<std::string> ConnectRpcService::Methods() const {
  std::vector<std::string> methods = {std::string(kListConnections)};
  if (Watches()) methods.emplace_back(kWatchConnections);
  return methods;
}

ConnectRpcHandler ConnectRpcService::Handler() const {
  return [this](const std::string& method, const HttpRequest& request) {
    return Handle(method, request);
  };
}

HttpResponse ConnectRpcService::HandleListConnections(const HttpRequest& request) const {
  const auto start = clock_();
  HttpResponse error;
  std::optional<Milliseconds> budget;
  ListConnectionsRequest message;
  ConnectCodec codec = ConnectCodec::kJson;
  if (request.method == "POST") {
    if (!CheckContentType(request, &codec, &error) || !CheckProtocolVersion(request, &error) ||
        !ReadTimeout(request, &budget, &error) || !CheckContentEncoding(request, &error) ||
        !DecodeRequestMessage(codec, request.body, "request body", &message, &error)) {
      return error;
    }
  } else if (IsGet(request)) {
    std::string bytes;
    if (!ReadGetMessage(request, &bytes, &codec, &error) ||
        !ReadTimeout(request, &budget, &error) ||
        !DecodeRequestMessage(codec, bytes, "query parameter 'message'", &message, &error)) {
      return error;
    }
  } else {
    // The router answers this before calling; kept so that Handle() stands on its own.
    error = ConnectRpcError(
        kUnimplemented,
        "method " + QuoteForMessage(request.method) + " is not allowed; allowed: GET, HEAD, POST",
        kHttpMethodNotAllowed);
    error.headers.emplace_back("Allow", "GET, HEAD, POST");
    return error;
  }
  // No snapshot for a call whose budget is already gone (Connect-Timeout-Ms: 0).
  if (DeadlineExceeded(budget, clock_() - start, &error)) return error;

  if (message.scope == ConnectionScope::kFleet && fleet_) {
    // The fleet's deadline on the real clock: peers are asked over real sockets.
    const auto left = budget ? *budget - std::chrono::duration_cast<Milliseconds>(clock_() - start)
                             : fleet_deadline_;
    ConnectionPage page;
    const Status status = fleet_(message, std::chrono::steady_clock::now() + left, &page);
    if (!status.ok()) return ConnectRpcError(status.code(), status.message());
    page.fleet_peers = fleet_peers_;
    page.node_id = node_id_;
    HttpResponse response = ListConnectionsResponseIn(codec, page);
    if (DeadlineExceeded(budget, clock_() - start, &error)) return error;
    return response;
  }
  ConnectionQuery query;
  query.filter = std::move(message.filter);
  query.order_by = std::move(message.order_by);
  query.page_size = message.page_size;
  query.page_token = std::move(message.page_token);
  ConnectionPage page;
  const Status status = RunConnectionQuery(source_, query, &page);
  if (!status.ok()) {
    return ConnectRpcError(kInvalidArgument, status.message());
  }
  page.fleet_peers = fleet_peers_;
  page.node_id = node_id_;
  HttpResponse response = ListConnectionsResponseIn(codec, page);
  if (DeadlineExceeded(budget, clock_() - start, &error)) return error;
  return response;
}

namespace {

// --- the streaming protocol (WatchConnections) ---------------------------------------------

constexpr std::string_view kStreamJsonContentType = "application/connect+json";
constexpr std::string_view kStreamProtoContentType = "application/connect+proto";
constexpr char kStreamContentTypes[] = "application/connect+json, application/connect+proto";
constexpr std::string_view kStreamContentEncoding = "Connect-Content-Encoding";

bool StreamCodecOf(std::string_view value, ConnectCodec* codec) {
  const std::size_t semicolon = value.find(';');
  const std::string_view media_type = TrimSpaces(value.substr(0, semicolon));
  const std::string_view parameter = semicolon == std::string_view::npos
                                         ? std::string_view()
                                         : TrimSpaces(value.substr(semicolon + 1));
  if (EqualsIgnoreAsciiCase(media_type, kStreamJsonContentType)) {
    if (!parameter.empty() && !EqualsIgnoreAsciiCase(parameter, "charset=utf-8")) return false;
    *codec = ConnectCodec::kJson;
    return true;
  }
  if (EqualsIgnoreAsciiCase(media_type, kStreamProtoContentType) && parameter.empty()) {
    *codec = ConnectCodec::kProto;
    return true;
  }
  return false;
}

// A stream that ends at once with `status`: HTTP 200 and the end-of-stream message, as the
// streaming protocol reports errors.
HttpResponse StreamError(ConnectCodec codec, const Status& status) {
  HttpResponse response;
  response.status = kHttpOk;
  response.content_type =
      std::string(codec == ConnectCodec::kProto ? kStreamProtoContentType : kStreamJsonContentType);
  AppendEndOfStream(status, &response.body);
  return response;
}

// The one enveloped request message of a server-streaming call.
bool ReadRequestEnvelope(std::string_view body, std::string_view* message, Status* error) {
  if (body.size() < 5) {
    *error = Status(kInvalidArgument, "request body is " + std::to_string(body.size()) +
                                          " bytes; expected one enveloped message (5-byte prefix)");
    return false;
  }
  const auto flags = static_cast<std::uint8_t>(body[0]);
  const std::uint32_t size = (std::uint32_t{static_cast<std::uint8_t>(body[1])} << 24) |
                             (std::uint32_t{static_cast<std::uint8_t>(body[2])} << 16) |
                             (std::uint32_t{static_cast<std::uint8_t>(body[3])} << 8) |
                             std::uint32_t{static_cast<std::uint8_t>(body[4])};
  if (flags != 0) {
    *error = Status(kInvalidArgument, "request envelope has flags " + std::to_string(flags) +
                                          "; expected 0 (uncompressed, not end-of-stream)");
    return false;
  }
  if (size != body.size() - 5) {
    *error = Status(kInvalidArgument, "request envelope says " + std::to_string(size) +
                                          " bytes, the body has " +
                                          std::to_string(body.size() - 5) + " after the prefix");
    return false;
  }
  *message = body.substr(5);
  return true;
}

}  // namespace

HttpResponse ConnectRpcService::HandleWatchConnections(const HttpRequest& request) const {
  if (request.method != "POST") {
    HttpResponse error = ConnectRpcError(
        kUnimplemented,
        "method " + QuoteForMessage(request.method) + " is not allowed; allowed: POST",
        kHttpMethodNotAllowed);
    error.headers.emplace_back("Allow", "POST");
    return error;
  }
  ConnectCodec codec = ConnectCodec::kJson;
  const std::string* content_type = request.FindHeader(kContentType);
  if (content_type == nullptr || !StreamCodecOf(*content_type, &codec)) {
    HttpResponse error =
        ConnectRpcError(kInvalidArgument,
                        (content_type == nullptr
                             ? "missing " + HeaderName(kContentType)
                             : HeaderName(kContentType) + " is " + QuoteForMessage(*content_type)) +
                            "; a server stream takes one of: " + kStreamContentTypes,
                        kHttpUnsupportedMediaType);
    error.headers.emplace_back("Accept-Post", kStreamContentTypes);
    return error;
  }
  HttpResponse error;
  std::optional<Milliseconds> budget;
  if (!CheckProtocolVersion(request, &error) || !ReadTimeout(request, &budget, &error)) {
    // The header problem, as the end of an empty stream.
    const CjsonPtr body = ParseJson(error.body);
    const cJSON* message = body ? cJSON_GetObjectItemCaseSensitive(body.get(), "message") : nullptr;
    return StreamError(
        codec, Status(kInvalidArgument,
                      cJSON_IsString(message) ? message->valuestring : "invalid request headers"));
  }
  const std::string* encoding = request.FindHeader(kStreamContentEncoding);
  if (encoding != nullptr && !TrimSpaces(*encoding).empty() && !IsIdentity(TrimSpaces(*encoding))) {
    return StreamError(codec, Status(kUnimplemented, HeaderName(kStreamContentEncoding) + " " +
                                                         QuoteForMessage(*encoding) +
                                                         " is not supported; supported: identity"));
  }
  if (request.body_too_large) {
    return StreamError(codec, Status(kResourceExhausted, "request body is too large"));
  }
  std::string_view bytes;
  Status status;
  if (!ReadRequestEnvelope(request.body, &bytes, &status)) return StreamError(codec, status);
  WatchConnectionsRequest message;
  status = codec == ConnectCodec::kProto
               ? DecodeWatchConnectionsRequestProto(bytes, "request message", &message)
               : DecodeWatchConnectionsRequest(bytes, "request message", &message);
  if (!status.ok()) return StreamError(codec, status);
  WatchStreamOptions options;
  options.codec = codec;
  status = ConnectionFilter::Parse(message.filter, &options.filter);
  if (!status.ok()) return StreamError(codec, Status(kInvalidArgument, status.message()));
  options.resume_after = message.resume_after;
  options.buffer = stream_buffer_;
  options.node_id = node_id_;
  if (budget) options.deadline = std::chrono::steady_clock::now() + *budget;
  const bool fleet = message.scope == ConnectionScope::kFleet && fleet_watch_;
  if (message.resume_after != 0 && !message.resume_token.empty()) {
    return StreamError(codec, Status(kInvalidArgument,
                                     "resume_after and resume_token are both set; give one"));
  }
  if (fleet && message.resume_after != 0) {
    return StreamError(codec, Status(kInvalidArgument,
                                     "resume_after is for CONNECTION_SCOPE_NODE; a fleet stream "
                                     "resumes with resume_token"));
  }
  if (!fleet && !message.resume_token.empty()) {
    // A fleet token read by one node: its own position (how a fleet stream asks its peers).
    FleetWatchPositions positions;
    status = FleetWatchPositions::FromToken(message.resume_token, &positions);
    if (!status.ok()) return StreamError(codec, status);
    options.resume_after = positions.ResumeAfter(node_id_);
  }
  std::shared_ptr<void> slot = slots_.TryTake();
  if (!slot) {
    return StreamError(codec,
                       Status(kResourceExhausted,
                              "too many WatchConnections streams: " + std::to_string(slots_.max()) +
                                  " at most (plugin_opt_http_max_streams)"));
  }
  HttpResponse response;
  response.status = kHttpOk;
  response.content_type =
      std::string(codec == ConnectCodec::kProto ? kStreamProtoContentType : kStreamJsonContentType);
  if (fleet) {
    StatusOr<std::shared_ptr<HttpBodyStream>> stream =
        fleet_watch_(options, message.filter, message.resume_token, std::move(slot));
    if (!stream.ok()) return StreamError(codec, stream.status());
    response.stream = std::move(stream).value();
    return response;
  }
  response.stream =
      std::make_shared<WatchStream>(*live_, changes_, std::move(options), std::move(slot));
  return response;
}

}  // namespace mqc
