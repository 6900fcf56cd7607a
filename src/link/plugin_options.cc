// SPDX-License-Identifier: BSD-3-Clause
#include "link/plugin_options.h"

#include <arpa/inet.h>

#include <cctype>
#include <cstdint>
#include <functional>
#include <string_view>

#include "link/host_names.h"
#include "link/text_util.h"

namespace mqc {

namespace {

std::string Quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

// mosquitto.conf has no end-of-line comments: the value is the rest of the line.
std::string CommentHint(std::string_view value) {
  return value.find('#') != std::string_view::npos
             ? " (mosquitto.conf has no end-of-line comments: put the comment on its own line)"
             : "";
}

bool ParseUnsigned(std::string_view value, std::uint64_t min, std::uint64_t max,
                   std::uint64_t* out) {
  if (value.empty() || value.size() > 20) return false;
  std::uint64_t n = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return false;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (n > (UINT64_MAX - digit) / 10) return false;
    n = n * 10 + digit;
  }
  if (n < min || n > max) return false;
  *out = n;
  return true;
}

// Applies a value, or refuses it: kInvalidArgument whose message, when not empty, says more
// than the spec's `accepted` can.
using ApplyOption = std::function<Status(std::string_view, PluginOptions*)>;

struct OptionSpec {
  const char* name;
  const char* accepted;  // for the error line
  ApplyOption apply;
};

Status Refused(std::string why = std::string()) { return InvalidArgument(std::move(why)); }

template <typename T>
ApplyOption UnsignedInto(std::uint64_t min, std::uint64_t max, T PluginOptions::*field) {
  return [=](std::string_view value, PluginOptions* options) {
    std::uint64_t n = 0;
    if (!ParseUnsigned(value, min, max, &n)) return Refused();
    options->*field = static_cast<T>(n);
    return Status();
  };
}

ApplyOption AbsolutePathInto(std::string PluginOptions::*field) {
  return [field](std::string_view value, PluginOptions* options) {
    if (value.empty() || value.front() != '/') return Refused();
    options->*field = std::string(value);
    return Status();
  };
}

ApplyOption BoolInto(bool PluginOptions::*field) {
  return [field](std::string_view value, PluginOptions* options) {
    if (value != "true" && value != "false") return Refused();
    options->*field = value == "true";
    return Status();
  };
}

// Whether `peer` is this broker's own API: its port, on http_bind (or localhost for a loopback
// http_bind; any loopback address for a wildcard one, which listens on them all). A host name other
// than localhost is not resolved here, so a name of this machine is not caught (the fleet query's
// peers are always asked for their node alone, so even then nothing loops: docs/fleet.md).
bool NamesThisBroker(const PeerUrl& peer, const PluginOptions& options) {
  if (options.http_port == 0 || peer.port != options.http_port) return false;
  const std::string& host = peer.host.text;
  const bool wildcard = options.http_bind == "0.0.0.0" || options.http_bind == "::";
  if (host == options.http_bind) return true;
  if (wildcard) return host == "localhost" || IsLoopbackAddress(host);
  return host == "localhost" && (options.http_bind == "127.0.0.1" || options.http_bind == "::1");
}

// The checks that involve more than one option; kInvalidArgument naming them.
Status CheckCombinations(const PluginOptions& options) {
  if (options.http_tls_cert.empty() != options.http_tls_key.empty()) {
    return InvalidArgument(std::string("plugin_opt_") +
                           (options.http_tls_cert.empty() ? "http_tls_key" : "http_tls_cert") +
                           " is set without plugin_opt_" +
                           (options.http_tls_cert.empty() ? "http_tls_cert" : "http_tls_key") +
                           ": HTTPS needs both the certificate and its key");
  }
  if (!IsLoopbackAddress(options.http_bind) && !options.RequiresToken() &&
      !options.http_allow_anonymous) {
    return InvalidArgument(
        "plugin_opt_http_bind " + options.http_bind +
        " exposes the API beyond this machine without a token: set "
        "plugin_opt_http_token_file (see README, Security), or "
        "plugin_opt_http_allow_anonymous true to serve it to anyone who can reach the port");
  }
  for (const PeerUrl& peer : options.fleet_peers) {
    if (NamesThisBroker(peer, options)) {
      return InvalidArgument("plugin_opt_fleet_peers names " + peer.Text() +
                             ", this broker's own API (plugin_opt_http_bind " + options.http_bind +
                             ", plugin_opt_http_port " + std::to_string(options.http_port) +
                             "): list only the other brokers");
    }
  }
  if ((!options.fleet_token_file.empty() || !options.fleet_ca_file.empty()) &&
      options.fleet_peers.empty()) {
    return InvalidArgument(
        std::string("plugin_opt_") +
        (options.fleet_token_file.empty() ? "fleet_ca_file" : "fleet_token_file") +
        " is set without plugin_opt_fleet_peers: it is only for the peers");
  }
  return Status();
}

const std::vector<OptionSpec>& Specs() {
  static const std::vector<OptionSpec> specs = {
      {"http_port", "a port number from 0 to 65535 (0 = any free port)",
       UnsignedInto(0, 65535, &PluginOptions::http_port)},
      {"http_bind", "an IPv4 or IPv6 address such as 127.0.0.1, 0.0.0.0, ::1 or ::",
       [](std::string_view value, PluginOptions* o) {
         const std::string address(value);
         unsigned char buffer[16];
         if (inet_pton(AF_INET, address.c_str(), buffer) != 1 &&
             inet_pton(AF_INET6, address.c_str(), buffer) != 1) {
           return Refused();
         }
         o->http_bind = address;
         return Status();
       }},
      {"node_id", "an integer from 0 to 2147483647",
       UnsignedInto(0, 2147483647, &PluginOptions::node_id)},
      {"default_pattern", "events, store or none",
       [](std::string_view value, PluginOptions* o) {
         return ParseDefaultPattern(value, &o->default_pattern) ? Status() : Refused();
       }},
      {"closed_max", "an integer from 0 to 1000000 (0 = keep no closed connection)",
       UnsignedInto(0, 1000000, &PluginOptions::closed_max)},
      {"closed_ttl", "seconds, an integer from 1 to 604800",
       UnsignedInto(1, 604800, &PluginOptions::closed_ttl_s)},
      {"history_events", "an integer from 0 to 1000 (events kept per client id; 0 = none)",
       UnsignedInto(0, 1000, &PluginOptions::history_events)},
      {"history_max_events", "an integer from 1 to 10000000 (client events kept in all)",
       UnsignedInto(1, 10000000, &PluginOptions::history_max_events)},
      {"activity_interval",
       "seconds, an integer from 1 to 60 (a sample of the console's last hour)",
       UnsignedInto(1, 60, &PluginOptions::activity_interval_s)},
      {"rpc_timeout", "seconds, an integer from 1 to 3600",
       UnsignedInto(1, 3600, &PluginOptions::rpc_timeout_s)},
      {"rpc_max_pending", "an integer from 1 to 1000000",
       UnsignedInto(1, 1000000, &PluginOptions::rpc_max_pending)},
      {"http_max_streams", "an integer from 0 to 256 (WatchConnections streams at once; 0 = none)",
       UnsignedInto(0, 256, &PluginOptions::http_max_streams)},
      {"http_stream_buffer",
       "an integer from 16 to 1000000 (changes a WatchConnections stream may fall behind)",
       UnsignedInto(16, 1000000, &PluginOptions::http_stream_buffer)},
      {"http_token_file", "the absolute path of a file of bearer tokens, one per line",
       AbsolutePathInto(&PluginOptions::http_token_file)},
      {"http_admin_token_file", "the absolute path of a file of bearer tokens, one per line",
       AbsolutePathInto(&PluginOptions::http_admin_token_file)},
      {"metrics_public", "true or false", BoolInto(&PluginOptions::metrics_public)},
      {"http_tls_cert", "the absolute path of a PEM certificate (chain) file",
       AbsolutePathInto(&PluginOptions::http_tls_cert)},
      {"http_tls_key", "the absolute path of a PEM private key file",
       AbsolutePathInto(&PluginOptions::http_tls_key)},
      {"http_allow_anonymous", "true or false", BoolInto(&PluginOptions::http_allow_anonymous)},
      {"http_allowed_hosts",
       "host names or IP addresses separated by commas or spaces, such as "
       "'mqtt-api.example.com, 192.0.2.10, [2001:db8::10]'",
       [](std::string_view value, PluginOptions* o) {
         StatusOr<std::vector<std::string>> hosts = ParseAllowedHosts(value);
         if (!hosts.ok()) return Refused(hosts.status().message());
         o->http_allowed_hosts = std::move(hosts).value();
         return Status();
       }},
      {"presence_events", "true or false", BoolInto(&PluginOptions::presence_events)},
      {"presence_retained", "true or false", BoolInto(&PluginOptions::presence_retained)},
      {"presence_node",
       "one MQTT topic level (no '/', '+' or '#'), at most 255 bytes, such as mosquitto@host-1",
       [](std::string_view value, PluginOptions* o) {
         if (value.empty() || value.size() > 255 ||
             value.find_first_of(std::string_view("/+#\0", 4)) != std::string_view::npos) {
           return Refused();
         }
         o->presence_node = std::string(value);
         return Status();
       }},
      {"kubemq_strict", "true or false", BoolInto(&PluginOptions::kubemq_strict)},
      {"metrics_top_clients", "an integer from 0 to 100 (0 = off)",
       UnsignedInto(0, 100, &PluginOptions::metrics_top_clients)},
      {"client_layout", "verify or off (off: read nothing of the broker's client struct)",
       [](std::string_view value, PluginOptions* o) {
         if (value != "verify" && value != "off") return Refused();
         o->client_layout = value == "verify";
         return Status();
       }},
      {"flapping_max_count",
       "an integer from 0 to 100000 (connects allowed in flapping_window_time; 0 = no ban)",
       UnsignedInto(0, 100000, &PluginOptions::flapping_max_count)},
      {"flapping_window_time", "seconds, an integer from 1 to 3600",
       UnsignedInto(1, 3600, &PluginOptions::flapping_window_time_s)},
      {"flapping_ban_time", "seconds, an integer from 1 to 604800",
       UnsignedInto(1, 604800, &PluginOptions::flapping_ban_time_s)},
      {"fleet_peers",
       "comma-separated base URLs of the other brokers' APIs, such as "
       "'http://broker-b:8080, https://broker-c:8443' (no path; each peer once)",
       [](std::string_view value, PluginOptions* o) {
         StatusOr<std::vector<PeerUrl>> peers = ParsePeerUrls(value);
         if (!peers.ok()) return Refused(peers.status().message());
         o->fleet_peers = std::move(peers).value();
         return Status();
       }},
      {"fleet_token_file", "the absolute path of a file whose first token is sent to the peers",
       AbsolutePathInto(&PluginOptions::fleet_token_file)},
      {"fleet_ca_file", "the absolute path of a PEM file of CA certificates for https peers",
       AbsolutePathInto(&PluginOptions::fleet_ca_file)},
      {"companion", "the absolute path of the companion executable",
       AbsolutePathInto(&PluginOptions::companion_path)},
  };
  return specs;
}

}  // namespace

StatusOr<PluginOptions> ParsePluginOptions(const OptionPairs& pairs) {
  PluginOptions parsed;
  for (const auto& [raw_key, raw_value] : pairs) {
    const std::string_view key = Trim(raw_key);
    const std::string_view value = Trim(raw_value);
    const OptionSpec* spec = nullptr;
    for (const auto& candidate : Specs()) {
      if (key == candidate.name) spec = &candidate;
    }
    if (spec == nullptr) {
      std::string known;
      for (const auto& candidate : Specs()) {
        known += known.empty() ? "" : ", ";
        known += candidate.name;
      }
      return InvalidArgument("unknown option plugin_opt_" + std::string(key) + " (known: " + known +
                             ")");
    }
    const Status applied = spec->apply(value, &parsed);
    if (!applied.ok()) {
      const std::string& why = applied.message();
      return InvalidArgument("bad value " + Quoted(value) + " for plugin_opt_" + std::string(key) +
                             ": " + (why.empty() ? "" : why + "; ") + "expected " + spec->accepted +
                             CommentHint(value));
    }
  }
  Status combinations = CheckCombinations(parsed);
  if (!combinations.ok()) return combinations;
  return parsed;
}

bool IsLoopbackAddress(const std::string& address) {
  in_addr v4{};
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, address.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

}  // namespace mqc
