// SPDX-License-Identifier: BSD-3-Clause
// The Host check against DNS rebinding (README, Security; plugin_opt_http_allowed_hosts).
//
// A page on attacker.example whose name is re-pointed to 127.0.0.1 after it loaded is, to the
// browser, the same origin as the API it then reaches: the same-origin rule does not stop it
// reading the answers. What gives it away is the Host header, which still says
// attacker.example. So every request must name a host the server is reached by:
// - loopback: `localhost` and every name under `localhost.` (RFC 6761 section 6.3 reserves them
//   for loopback; Chromium and Firefox resolve them so without asking DNS), 127.0.0.0/8, ::1
//   and ::ffff:127.0.0.0/104;
// - the address of http_bind when it is not a wildcard (0.0.0.0, ::);
// - the address the request's connection arrived on, when Host is an IP literal: a literal
//   cannot be re-pointed, and naming the address one connected to is how a client on another
//   machine reaches a wildcard bind (http://192.0.2.10:8080/);
// - plugin_opt_http_allowed_hosts: names (a reverse proxy's, the machine's own) and addresses.
// The machine's own host name is not accepted unless listed: on a LAN, resolvers such as mDNS
// and LLMNR let others answer for it. The port in Host is ignored (a proxy may forward any
// port). A request without Host is accepted only over HTTP/1.0 (no browser sends one; HTTP/1.1
// requires Host, and MHD already refuses its absence there). Letter case and one trailing dot
// do not matter; other spellings of an address (`127.1`) are refused, since browsers send only
// the canonical forms (link/host_names.h).
//
// Threads: built on the owner's thread before the server starts, then only read: Check runs on
// MHD's threads, several at a time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "companion/http/http_server.h"
#include "link/host_names.h"

namespace mqc {

inline constexpr char kAllowedHostsOption[] = "plugin_opt_http_allowed_hosts";

class HostCheck {
 public:
  enum class Verdict {
    kAllowed,
    kMalformed,   // no Host on HTTP/1.1, several, or one that is no host: answer 400
    kNotAllowed,  // a host this server does not answer to: answer 421
  };
  struct Result {
    Verdict verdict = Verdict::kAllowed;
    // For a refusal: names the refused host (printable ASCII, at most 64 bytes) and the option.
    std::string message;
  };

  // Loopback only.
  HostCheck() = default;
  // `allowed`: canonical texts (ParseAllowedHosts); `bind_address`: plugin_opt_http_bind.
  HostCheck(std::vector<std::string> allowed, const std::string& bind_address);

  Result Check(const HttpRequest& request) const;

  // Whether `host` is one this server answers to on a connection that arrived on
  // `local_address` (empty: unknown).
  bool Allows(const CanonicalHost& host, std::string_view local_address) const;

 private:
  std::vector<std::string> allowed_;  // canonical; the bind address among them
};

}  // namespace mqc
