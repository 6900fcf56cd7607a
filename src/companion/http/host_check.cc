// SPDX-License-Identifier: BSD-3-Clause
// HostCheck (see host_check.h).
#include "companion/http/host_check.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "link/host_names.h"
#include "link/plugin_options.h"
#include "link/text_util.h"

namespace mqc {
namespace {

bool IsWildcardAddress(const CanonicalHost& host) {
  return host.text == "0.0.0.0" || host.text == "::";
}

bool IsLoopbackName(std::string_view name) {
  constexpr std::string_view kLocalhost = "localhost";
  constexpr std::string_view kUnderLocalhost = ".localhost";
  return name == kLocalhost ||
         (name.size() > kUnderLocalhost.size() &&
          name.substr(name.size() - kUnderLocalhost.size()) == kUnderLocalhost);
}

std::string Quoted(std::string_view value) { return "'" + PrintableExcerpt(value) + "'"; }

HostCheck::Result Refuse(HostCheck::Verdict verdict, std::string message) {
  HostCheck::Result result;
  result.verdict = verdict;
  result.message = std::move(message);
  return result;
}

}  // namespace

HostCheck::HostCheck(std::vector<std::string> allowed, const std::string& bind_address)
    : allowed_(std::move(allowed)) {
  const StatusOr<CanonicalHost> bind = CanonicalizeHost(bind_address, /*bare_ipv6=*/true);
  if (bind.ok() && !IsWildcardAddress(*bind) &&
      std::find(allowed_.begin(), allowed_.end(), bind->text) == allowed_.end()) {
    allowed_.push_back(bind->text);
  }
}

bool HostCheck::Allows(const CanonicalHost& host, std::string_view local_address) const {
  if (host.kind == HostKind::kName) {
    if (IsLoopbackName(host.text)) return true;
  } else if (IsLoopbackAddress(host.text) ||
             (!local_address.empty() && host.text == local_address)) {
    return true;
  }
  return std::find(allowed_.begin(), allowed_.end(), host.text) != allowed_.end();
}

HostCheck::Result HostCheck::Check(const HttpRequest& request) const {
  const std::string* value = nullptr;
  for (const auto& [name, header] : request.headers) {
    if (!EqualsIgnoreAsciiCase(name, "Host")) continue;
    if (value != nullptr) {
      return Refuse(Verdict::kMalformed,
                    std::string("more than one Host header; send one, naming a host this server "
                                "answers to (loopback, or one in ") +
                        kAllowedHostsOption + ")");
    }
    value = &header;
  }
  if (value == nullptr) {
    if (request.version == "HTTP/1.0") return Result();
    if (request.version.empty()) return Result();  // not from HTTP (tests, internal callers)
    return Refuse(Verdict::kMalformed,
                  std::string("a Host header is required; name a host this server answers to "
                              "(loopback, or one in ") +
                      kAllowedHostsOption + ")");
  }
  const std::string_view header = Trim(*value);
  const StatusOr<std::string_view> host_part = SplitHostHeader(header);
  const StatusOr<CanonicalHost> host = host_part.ok()
                                           ? CanonicalizeHost(*host_part, /*bare_ipv6=*/false)
                                           : StatusOr<CanonicalHost>(host_part.status());
  if (!host.ok()) {
    return Refuse(Verdict::kMalformed, "Host " + Quoted(header) + " is not a host name or IP " +
                                           "address: " + host.status().message() + "; " +
                                           kAllowedHostsOption +
                                           " lists the hosts this server answers to");
  }
  if (Allows(*host, request.local_address)) return Result();
  return Refuse(Verdict::kNotAllowed, "Host " + Quoted(header) +
                                          " is not a host this server answers to: add " +
                                          Quoted(host->text) + " to " + kAllowedHostsOption +
                                          " if the API is meant to be reached by that name");
}

}  // namespace mqc
