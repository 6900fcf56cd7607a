// SPDX-License-Identifier: BSD-3-Clause
// Host names and IP literals as HTTP's Host header and plugin_opt_http_allowed_hosts write them,
// brought to one canonical text so that the same host compares equal however it was written:
// ASCII lower case, no trailing dot, IPv4 in dotted-quad form, IPv6 in inet_ntop's form without
// brackets. Only the forms a browser sends are accepted: a browser turns `127.1` or `0x7f.1`
// into `127.0.0.1` and IDNs into `xn--` labels before it writes Host, so those other spellings
// (which only hand-made requests carry) are refused rather than guessed at.
//
// Pure functions, safe on any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "link/status.h"

namespace mqc {

enum class HostKind { kName, kIPv4, kIPv6 };

struct CanonicalHost {
  HostKind kind = HostKind::kName;
  std::string text;  // "localhost", "api.example", "127.0.0.1", "::1"
};

// Names longer than this (without the trailing dot) are no DNS names (RFC 1035).
inline constexpr std::size_t kMaxHostNameLength = 253;

// `host` without a port: a DNS name (labels of letters, digits, '-' and '_', 1 to 63 bytes
// each), a dotted-quad IPv4 address, or an IPv6 address in brackets (also without them when
// `bare_ipv6`: option values, never Host). One trailing dot is dropped. A refusal
// (kInvalidArgument) says why without repeating `host`.
StatusOr<CanonicalHost> CanonicalizeHost(std::string_view host, bool bare_ipv6);

// The host part of a Host header value (RFC 9110 section 7.2: uri-host [":" port]):
// "[::1]:8080" -> "[::1]", "api.example:80" -> "api.example", "localhost" -> "localhost". The
// port, if any, must be digits (it is not otherwise looked at). The host views `value`.
StatusOr<std::string_view> SplitHostHeader(std::string_view value);

// plugin_opt_http_allowed_hosts: host names and IP addresses (IPv6 with or without brackets)
// separated by commas and/or white space; at least one. `*` and entries with a port are refused
// with a refusal saying so. The canonical texts, without repeats, in the order given.
StatusOr<std::vector<std::string>> ParseAllowedHosts(std::string_view value);

// An address and a port as URLs and messages write them: "127.0.0.1:8080", "api.example:80",
// "[::1]:8080" (an address with a ':' is IPv6, and goes in brackets before its port).
std::string HostPort(std::string_view host, int port);
// The same appended to *text, for a caller that reuses its buffer.
void AppendHostPort(std::string_view host, int port, std::string* text);

}  // namespace mqc
