// SPDX-License-Identifier: BSD-3-Clause
#include "link/peer_url.h"

#include <cstddef>
#include <string>

#include "link/text_util.h"

namespace mqc {

std::string PeerUrl::HostHeader() const {
  const std::string host_text = host.kind == HostKind::kIPv6 ? "[" + host.text + "]" : host.text;
  return host_text + ":" + std::to_string(port);
}

std::string PeerUrl::Text() const { return (https ? "https://" : "http://") + HostHeader(); }

StatusOr<PeerUrl> ParsePeerUrl(std::string_view text) {
  PeerUrl url;
  std::string_view rest = text;
  if (rest.substr(0, 7) == "http://") {
    rest.remove_prefix(7);
  } else if (rest.substr(0, 8) == "https://") {
    url.https = true;
    rest.remove_prefix(8);
  } else {
    return InvalidArgument("expected a URL starting with http:// or https://");
  }
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.find_first_of("/?#@") != std::string_view::npos) {
    return InvalidArgument("expected only scheme, host and port (no path, query, user or '#')");
  }
  url.port = url.https ? 443 : 80;
  std::string_view host = rest;
  std::string_view port;
  if (!rest.empty() && rest.front() == '[') {
    const std::size_t close = rest.find(']');
    if (close == std::string_view::npos) return InvalidArgument("an IPv6 host without its ']'");
    host = rest.substr(0, close + 1);
    const std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return InvalidArgument("expected ':port' after the IPv6 host");
      port = after.substr(1);
      if (port.empty()) return InvalidArgument("an empty port after ':'");
    }
  } else if (const std::size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (port.empty()) return InvalidArgument("an empty port after ':'");
  }
  if (host.empty()) return InvalidArgument("no host");
  if (!port.empty()) {
    int n = 0;
    for (const char c : port) {
      if (c < '0' || c > '9' || n > 65535) return InvalidArgument("the port is not 1 to 65535");
      n = n * 10 + (c - '0');
    }
    if (n < 1 || n > 65535) return InvalidArgument("the port is not 1 to 65535");
    url.port = n;
  }
  StatusOr<CanonicalHost> canonical = CanonicalizeHost(host, /*bare_ipv6=*/false);
  if (!canonical.ok()) return InvalidArgument("bad host: " + canonical.status().message());
  url.host = std::move(canonical).value();
  return url;
}

StatusOr<std::vector<PeerUrl>> ParsePeerUrls(std::string_view text) {
  std::vector<PeerUrl> urls;
  std::size_t position = 0;
  std::size_t index = 0;
  while (position <= text.size()) {
    std::size_t comma = text.find(',', position);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = Trim(text.substr(position, comma - position));
    ++index;
    const std::string name = "peer " + std::to_string(index) + " '" + std::string(item) + "'";
    if (item.empty()) return InvalidArgument("peer " + std::to_string(index) + " is empty");
    StatusOr<PeerUrl> url = ParsePeerUrl(item);
    if (!url.ok()) return InvalidArgument(name + ": " + url.status().message());
    for (const PeerUrl& earlier : urls) {
      if (earlier == *url) {
        return InvalidArgument(name + " names " + url->Text() + " again");
      }
    }
    if (urls.size() == kMaxPeers) {
      return InvalidArgument("more than " + std::to_string(kMaxPeers) +
                             " peers (a fleet query asks each at once)");
    }
    urls.push_back(std::move(url).value());
    position = comma + 1;
  }
  return urls;
}

}  // namespace mqc
