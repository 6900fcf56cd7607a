// SPDX-License-Identifier: BSD-3-Clause
// The plugin's options (plugin_opt_<name> lines of mosquitto.conf), parsed and checked in one
// place. The broker-side plugin parses them at init (a bad value stops the broker with a log line
// naming the option); the companion receives the same key=value pairs and parses them again.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "link/peer_url.h"
#include "link/status.h"
#include "link/topic_mapping.h"

namespace mqc {

struct PluginOptions {
  int http_port = 8080;  // 0 = any free port (the chosen one is logged)
  std::string http_bind = "127.0.0.1";
  std::uint32_t node_id = 0;
  DefaultPattern default_pattern = DefaultPattern::kEvents;
  std::uint32_t closed_max = 1000;   // recently closed connections kept (0 = none)
  std::uint32_t closed_ttl_s = 300;  // seconds a closed connection stays listed
  // A client's history (GetClientHistory): events kept per client id (0 = none), and in all.
  std::uint32_t history_events = 32;
  std::uint32_t history_max_events = 20000;
  // GetActivity (the console's charts): seconds per sample; an hour of them is kept.
  std::uint32_t activity_interval_s = 10;
  std::uint32_t rpc_timeout_s = 30;
  std::uint32_t rpc_max_pending = 1024;
  std::string companion_path;  // empty: beside the plugin's .so
  // Refuse what KubeMQ's MQTT side would refuse (docs/topic-mapping.md, "Strict mode").
  bool kubemq_strict = false;
  // /metrics: the N clients of highest publish and delivery rate (0 = off; at most 100).
  std::uint32_t metrics_top_clients = 0;
  std::uint32_t http_max_streams = 8;  // WatchConnections streams at once (0: the method is off)
  // Changes a WatchConnections stream may fall behind the newest before it is cut off.
  std::uint32_t http_stream_buffer = 4096;
  // plugin_opt_client_layout: `verify` (true) lets the plugin verify and then read the broker's
  // client struct (broker/broker_layout.h); `off` (false) reads nothing of it, as on a build
  // whose layout is unknown. Tests use `off` to see what such a build shows.
  bool client_layout = true;

  // Security (README, "Security"). The companion reads the token files itself: tokens never
  // enter the broker process or the shared region.
  std::string http_token_file;        // tokens that may read; empty: reading needs no token
  std::string http_admin_token_file;  // tokens that may also disconnect; empty: disconnect off
  bool metrics_public = false;        // /metrics without a token
  std::string http_tls_cert;          // PEM; with http_tls_key: HTTPS on http_port
  std::string http_tls_key;
  bool http_allow_anonymous = false;  // a non-loopback http_bind without token files
  // Host names and addresses the API answers to besides loopback and http_bind (canonical:
  // link/host_names.h); any other Host is refused, against DNS rebinding.
  std::vector<std::string> http_allowed_hosts;
  // Presence messages on EMQX's system topics (broker/presence.h; README, "Presence messages").
  bool presence_events = false;
  bool presence_retained = false;
  std::string presence_node;  // empty: mosquitto@<host name>
  // Automatic ban of flapping clients (EMQX's flapping_detect; docs/api.md, "Flapping
  // clients"): a client id that connects more than flapping_max_count times within
  // flapping_window_time seconds is banned for flapping_ban_time seconds. 0: off.
  std::uint32_t flapping_max_count = 0;
  std::uint32_t flapping_window_time_s = 60;
  std::uint32_t flapping_ban_time_s = 300;
  // The fleet (README, "Fleet"; docs/fleet.md): the other brokers' API base URLs, the file of the
  // read token sent to them (the companion reads it, as it reads the other token files) and the
  // CA certificates that check the https ones (empty: the system's).
  std::vector<PeerUrl> fleet_peers;
  std::string fleet_token_file;
  std::string fleet_ca_file;

  // True when some token file is set: every API request then needs a token.
  bool RequiresToken() const { return !http_token_file.empty() || !http_admin_token_file.empty(); }
};

// True for 127.0.0.0/8 and ::1 (and ::ffff:127.x.y.z): only this machine can connect.
bool IsLoopbackAddress(const std::string& address);

using OptionPairs = std::vector<std::pair<std::string, std::string>>;

// Parses every pair into options (the defaults above where a pair is absent). The first unknown
// option or bad value, or a bad combination of options, is kInvalidArgument with a line naming
// the option, the value and what is accepted.
StatusOr<PluginOptions> ParsePluginOptions(const OptionPairs& pairs);

}  // namespace mqc
