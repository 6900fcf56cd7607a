// SPDX-License-Identifier: BSD-3-Clause
// The base URL of a fleet peer's API (plugin_opt_fleet_peers): `http://host[:port]` or
// `https://host[:port]`, with an optional trailing '/' and nothing else (no path, query, user
// or fragment: the companion appends the Connect paths itself). The host is canonical as
// link/host_names.h makes it, so that the same peer written twice compares equal.
// Pure values and functions, safe on any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "link/host_names.h"
#include "link/status.h"

namespace mqc {

struct PeerUrl {
  bool https = false;
  CanonicalHost host;
  int port = 80;

  // The canonical text: "http://127.0.0.1:8081", "https://[::1]:8443" (the port always written),
  // which names the peer in error details, page tokens and logs.
  std::string Text() const;
  // The Host header value for requests to it ("127.0.0.1:8081", "[::1]:8443").
  std::string HostHeader() const;
  bool operator==(const PeerUrl& other) const { return Text() == other.Text(); }
};

// One URL; kInvalidArgument saying what is wrong with it (without repeating the whole value).
StatusOr<PeerUrl> ParsePeerUrl(std::string_view text);

// A fleet query asks every peer at once, one thread each: at most this many.
inline constexpr std::size_t kMaxPeers = 64;

// A comma-separated list (spaces around the commas allowed; empty items refused; at most
// kMaxPeers).
// kInvalidArgument naming the item, by its text and position, that is wrong or given twice.
StatusOr<std::vector<PeerUrl>> ParsePeerUrls(std::string_view text);

}  // namespace mqc
