// SPDX-License-Identifier: BSD-3-Clause
// Fuzz target for the Connect ListConnections call (connect_rpc_service.h) over a small fixed
// snapshot. Input: a mode byte, then parts split at the byte 0x1E:
//   body or GET message | Content-Type | Connect-Protocol-Version | Connect-Timeout-Ms |
//   Content-Encoding (POST) or compression (GET) | encoding | connect | method name
// A missing part takes a valid value (or, for the timeout and the coding, no header), so that
// short inputs reach the message decoder. Mode bits: 0-1 POST, GET, HEAD, GET with base64=1;
// 2 drops Content-Type, 3 drops Connect-Protocol-Version.
//
// Besides crashes and sanitizer reports it aborts when a response is neither JSON with
// `Content-Type: application/json` nor, for a success in the binary codec, a
// ListConnectionsResponse with `Content-Type: application/proto`; when an error is not exactly
// {"code","message"} with a known code and that code's HTTP status (415 with invalid_argument, 405
// with unimplemented); when a success is not
// {"connections":[...],"totalSize":"N"[,"nextPageToken":"..."]} with connections from the snapshot,
// no more than totalSize and totalSize no more than the snapshot (the same for a binary success);
// and when the same message answers differently as a POST body, a GET message and a base64 GET
// message.
#include <cjson/cJSON.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../tests/support/fuzz_fleet.h"
#include "companion/connection.h"
#include "companion/http/connect_rpc_service.h"
#include "companion/http/http_router.h"
#include "companion/http/http_server.h"
#include "companion/json_util.h"
#include "link/text_util.h"
#include "mqtt/connections/v1/connections.pb.h"

namespace {

using mqc::Connection;
using mqc::HttpRequest;
using mqc::HttpResponse;

constexpr char kSeparator = '\x1E';
constexpr std::size_t kParts = 8;

[[noreturn]] void Fail(const char* what, const HttpResponse& response) {
  std::fprintf(stderr, "connect_rpc_request_fuzz: %s (status %d, body of %zu bytes: %.300s)\n",
               what, response.status, response.body.size(), response.body.c_str());
  std::abort();
}

class FixedSource : public mqc::ConnectionSource {
 public:
  FixedSource() {
    // Invalid UTF-8 and characters JSON escapes among the client ids.
    const char* const client_ids[] = {"sensor-1", "sensor-2", "", "a\"b\\c", "\xC3\xA9\xFF", "zz"};
    for (std::uint64_t i = 0; i < 6; ++i) {
      connections_.push_back(mqc::FuzzConnection(i, client_ids[i]));
      uids_.insert(connections_.back().uid);
    }
  }
  std::vector<Connection> Snapshot() const override { return connections_; }
  const std::set<std::string>& uids() const { return uids_; }

 private:
  std::vector<Connection> connections_;
  std::set<std::string> uids_;
};

const FixedSource& Source() {
  static const FixedSource source;
  return source;
}

const mqc::ConnectRpcService& Service() {
  static const mqc::ConnectRpcService service = [] {
    mqc::ConnectRpcServiceOptions options;
    // A clock that never moves: only a zero budget is ever exceeded, so runs are repeatable.
    options.clock = [] { return std::chrono::steady_clock::time_point(std::chrono::hours(1)); };
    return mqc::ConnectRpcService(Source(), options);
  }();
  return service;
}

int StatusOf(std::string_view code) {
  static const std::pair<std::string_view, int> kTable[] = {
      {"canceled", 499},
      {"unknown", 500},
      {"invalid_argument", 400},
      {"deadline_exceeded", 504},
      {"not_found", 404},
      {"already_exists", 409},
      {"permission_denied", 403},
      {"resource_exhausted", 429},
      {"failed_precondition", 400},
      {"aborted", 409},
      {"out_of_range", 400},
      {"unimplemented", 501},
      {"internal", 500},
      {"unavailable", 503},
      {"data_loss", 500},
      {"unauthenticated", 401},
  };
  for (const auto& [name, status] : kTable) {
    if (name == code) return status;
  }
  return 0;
}

bool IsDecimal(const char* text) {
  if (*text == '\0') return false;
  for (; *text != '\0'; ++text) {
    if (*text < '0' || *text > '9') return false;
  }
  return true;
}

// Checks a binary success: a ListConnectionsResponse whose connections are from the snapshot,
// each once, no more than totalSize, and totalSize no more than the snapshot.
void CheckBinarySuccess(const HttpResponse& response) {
  mqtt::connections::v1::ListConnectionsResponse page;
  if (!page.ParseFromString(response.body)) Fail("a binary success does not parse", response);
  const auto listed = static_cast<std::size_t>(page.connections_size());
  if (page.total_size() < 0 ||
      static_cast<std::size_t>(page.total_size()) > Source().uids().size() ||
      listed > static_cast<std::size_t>(page.total_size())) {
    Fail("more connections than there are (binary)", response);
  }
  if (!page.next_page_token().empty() && listed == 0) {
    Fail("an empty page with a next page (binary)", response);
  }
  std::set<std::string> seen;
  for (const auto& connection : page.connections()) {
    if (Source().uids().count(connection.uid()) == 0 || !seen.insert(connection.uid()).second) {
      Fail("a connection not from the snapshot, or twice (binary)", response);
    }
  }
}

// Checks one response; returns its code ("" for a success).
std::string CheckResponse(const HttpResponse& response) {
  if (response.status == 200 && response.content_type == "application/proto") {
    CheckBinarySuccess(response);
    return "";
  }
  if (response.content_type != "application/json") Fail("content type is not JSON", response);
  const mqc::CjsonPtr root = mqc::ParseJson(response.body);
  if (root == nullptr || !cJSON_IsObject(root.get())) Fail("body is not a JSON object", response);
  if (response.status != 200) {
    const cJSON* code = cJSON_GetObjectItemCaseSensitive(root.get(), "code");
    const cJSON* message = cJSON_GetObjectItemCaseSensitive(root.get(), "message");
    if (cJSON_GetArraySize(root.get()) != 2 || !cJSON_IsString(code) || !cJSON_IsString(message) ||
        message->valuestring[0] == '\0') {
      Fail("an error is not {code, message}", response);
    }
    const std::string code_name = code->valuestring;
    const int expected = StatusOf(code_name);
    const bool allowed = expected == response.status ||
                         (response.status == 415 && code_name == "invalid_argument") ||
                         (response.status == 405 && code_name == "unimplemented");
    if (expected == 0 || !allowed) Fail("code and HTTP status disagree", response);
    if (code_name == "internal") Fail("an internal error", response);
    return code_name;
  }
  const cJSON* connections = cJSON_GetObjectItemCaseSensitive(root.get(), "connections");
  const cJSON* total = cJSON_GetObjectItemCaseSensitive(root.get(), "totalSize");
  const cJSON* token = cJSON_GetObjectItemCaseSensitive(root.get(), "nextPageToken");
  const int keys = cJSON_GetArraySize(root.get());
  if (!cJSON_IsArray(connections) || !cJSON_IsString(total) || !IsDecimal(total->valuestring) ||
      keys != (token == nullptr ? 2 : 3) ||
      (token != nullptr && (!cJSON_IsString(token) || token->valuestring[0] == '\0'))) {
    Fail("a success is not {connections, totalSize[, nextPageToken]}", response);
  }
  const std::size_t total_size = std::strtoull(total->valuestring, nullptr, 10);
  const auto listed = static_cast<std::size_t>(cJSON_GetArraySize(connections));
  if (total_size > Source().uids().size() || listed > total_size) {
    Fail("more connections than there are", response);
  }
  if (token != nullptr && listed == 0) Fail("an empty page with a next page", response);
  std::set<std::string> seen;
  const cJSON* item = nullptr;
  cJSON_ArrayForEach(item, connections) {
    const cJSON* uid = cJSON_GetObjectItemCaseSensitive(item, "uid");
    if (!cJSON_IsString(uid) || Source().uids().count(uid->valuestring) == 0 ||
        !seen.insert(uid->valuestring).second) {
      Fail("a connection not from the snapshot, or twice", response);
    }
  }
  return "";
}

HttpRequest GetRequest(mqc::QueryParams query) {
  HttpRequest request;
  request.method = "GET";
  request.query = std::move(query);
  return request;
}

// The same message as a POST body, a GET message and a base64 GET message: same answer.
void CheckForms(const std::string& message) {
  HttpRequest post;
  post.method = "POST";
  post.headers = {{"Content-Type", "application/json"}, {"Connect-Protocol-Version", "1"}};
  post.body = message;
  const HttpResponse by_post = Service().Handle("ListConnections", post);
  const std::string code = CheckResponse(by_post);
  const HttpResponse by_get =
      Service().Handle("ListConnections",
                       GetRequest({{"connect", "v1"}, {"encoding", "json"}, {"message", message}}));
  const HttpResponse by_base64 =
      Service().Handle("ListConnections", GetRequest({{"connect", "v1"},
                                                      {"encoding", "json"},
                                                      {"base64", "1"},
                                                      {"message", mqc::EncodeBase64Url(message)}}));
  for (const HttpResponse* response : {&by_get, &by_base64}) {
    if (CheckResponse(*response) != code || response->status != by_post.status) {
      Fail("GET and POST disagree", *response);
    }
    if (code.empty() && response->body != by_post.body) Fail("GET and POST differ", *response);
  }
}

}  // namespace

// No try/catch: the source here never throws, so an exception from Handle() (which lets the
// source's and allocation failures through to the router) is a crash to report.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const unsigned mode = input.empty() ? 0 : static_cast<unsigned char>(input.front());
  if (!input.empty()) input.remove_prefix(1);
  std::vector<std::string> parts;
  while (parts.size() + 1 < kParts) {
    const std::size_t separator = input.find(kSeparator);
    if (separator == std::string_view::npos) break;
    parts.emplace_back(input.substr(0, separator));
    input.remove_prefix(separator + 1);
  }
  parts.emplace_back(input);
  const auto part = [&parts](std::size_t index) -> const std::string* {
    return index < parts.size() ? &parts[index] : nullptr;
  };
  const std::string& message = parts[0];
  const std::string method = part(7) != nullptr ? *part(7) : "ListConnections";

  HttpRequest request;
  const unsigned form = mode & 3;
  request.method = form == 0 ? "POST" : form == 2 ? "HEAD" : "GET";
  if ((mode & 4) == 0) {
    request.headers.emplace_back("Content-Type",
                                 part(1) != nullptr ? *part(1) : "application/json");
  }
  if ((mode & 8) == 0) {
    request.headers.emplace_back("Connect-Protocol-Version", part(2) != nullptr ? *part(2) : "1");
  }
  if (part(3) != nullptr) request.headers.emplace_back("Connect-Timeout-Ms", *part(3));
  if (form == 0) {
    if (part(4) != nullptr) request.headers.emplace_back("Content-Encoding", *part(4));
    request.body = message;
  } else {
    request.query = {{"connect", part(6) != nullptr ? *part(6) : "v1"},
                     {"encoding", part(5) != nullptr ? *part(5) : "json"},
                     {"message", message}};
    if (part(4) != nullptr) request.query.emplace_back("compression", *part(4));
    if (form == 3) request.query.emplace_back("base64", "1");
  }
  CheckResponse(Service().Handle(method, request));
  CheckForms(message);
  return 0;
}
