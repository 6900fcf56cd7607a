// SPDX-License-Identifier: BSD-3-Clause
// What the plugin needs to know of the broker's own configuration file, which the plugin API
// does not expose: whether any other authentication or ACL source exists (auth neutrality, see
// docs/broker-versions.md, "Mosquitto 2.0"), allow_anonymous, the listeners (names, TLS, protocol),
// and where the broker keeps its persistence file. Read the way Mosquitto 2.0 reads it: one option
// per line, '#' lines are comments, include_dir (main file only) adds its *.conf files in
// alphabetical order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "link/status.h"

namespace mqc {

struct ListenerConfig {
  int port = 0;
  std::string bind_address;
  std::string protocol = "mqtt";  // mqtt or websockets
  bool tls = false;               // certfile set (or psk_hint: TLS-PSK)
  bool psk = false;
  bool require_certificate = false;
  bool use_identity_as_username = false;
  bool use_subject_as_username = false;
  int max_qos = 2;
  // enable_proxy_protocol (Mosquitto 2.1): 0 without, 1 or 2 for PROXY protocol v1 or v2. The
  // socket's peer is then the load balancer, and the broker takes the client's address and port
  // from the PROXY header (docs/how-it-works.md, "Behind a load balancer").
  int proxy_protocol = 0;
  // proxy_protocol_v2_require_tls: the broker refuses a v2 header that carries no TLS facts, so
  // every client on the listener reached the balancer over TLS.
  bool proxy_v2_require_tls = false;
};

// One bridge of the broker (a `connection` block): the connection the broker itself makes to
// another broker. Client ids as written; FillBridgeClientIds gives the broker's defaults.
struct BridgeConfig {
  std::string name;
  std::string host;  // the first of its address(es); empty when none is written
  int port = 0;
  std::string local_clientid;
  std::string remote_clientid;
};

struct BrokerConfig {
  bool per_listener_settings = false;
  std::optional<bool> allow_anonymous;  // as written; see EffectiveAllowAnonymous
  // The security lines of each listener block, by the number of listener lines before them (0:
  // before any, the default listener's). With per_listener_settings true, Mosquitto 2.0 applies
  // them to that listener alone (src/conf.c: conf__set_cur_security_options), and a plugin's
  // callbacks see only the clients of its own listener. See ScopeOf.
  struct ListenerSecurity {
    std::optional<bool> allow_anonymous;
    bool password_file = false;
    bool acl_file = false;
    std::string acl_file_path;
    bool psk_file = false;
    std::vector<std::string> plugins;
  };
  std::vector<ListenerSecurity> listener_security{1};
  bool local_only = true;  // no listener, port or bind_address line
  bool password_file = false;
  bool acl_file = false;
  std::string acl_file_path;  // the last acl_file line's, as written
  bool psk_file = false;
  std::vector<std::string> plugins;  // plugin and auth_plugin paths, in file order
  // The plugin_opt_<key> (or auth_opt_<key>) lines after each of `plugins`, as (key, value):
  // what a reload reads again, since Mosquitto 2.0 hands plugins no options at RELOAD.
  std::vector<std::vector<std::pair<std::string, std::string>>> plugin_options;
  std::vector<ListenerConfig> listeners;
  bool persistence = false;          // persistence (or its alias retained_persistence)
  std::string persistence_location;  // empty: the broker's working directory
  std::string persistence_file = "mosquitto.db";
  // persistent_client_expiration in seconds; 0 when not set. The broker then expires an
  // offline session after this long at most (MQTT 3.1.1 sessions: exactly this long).
  std::int64_t persistent_client_expiration_s = 0;
  std::vector<BridgeConfig> bridges;  // in file order
  // The limits of the broker's per-client queues, as written (src/conf.c's defaults otherwise;
  // a negative value is 0, as the broker reads it): what decides a drop at a full queue
  // (broker/queue_drops.h).
  struct Queues {
    std::int64_t max_queued_messages = 1000;
    std::int64_t max_queued_bytes = 0;
    std::int64_t max_inflight_bytes = 0;
    bool queue_qos0_messages = false;
    bool upgrade_outgoing_qos = false;
  };
  Queues queues;

  // Mosquitto 2.0: true in local-only mode, else false unless set.
  bool EffectiveAllowAnonymous() const { return local_only || allow_anonymous.value_or(false); }
  // The file the broker restores at start and saves to, built as Mosquitto 2.0 builds it
  // (location + "/" + file); empty when persistence is off.
  std::string PersistenceFilePath() const;
};

// The client ids the broker gives bridges that name none (src/conf.c: config__check, 2.0 and
// 2.1): remote_clientid "<hostname>.<connection name>", local_clientid "local.<remote_clientid>".
void FillBridgeClientIds(std::string_view hostname, BrokerConfig* config);

// Parses one file's text into *config, adding to what earlier files set there. `path` names it
// in error messages; include_dir is followed when `follow_includes` (only the main file's are).
// A bad line is kInvalidArgument ("<path>:<line>: ..."); an include_dir or a file in it that
// cannot be read is kUnavailable. On failure *config holds the lines read before the bad one.
Status ParseBrokerConfig(std::string_view text, const std::string& path, bool follow_includes,
                         BrokerConfig* config);

// Reads and parses the file at `path` with its include_dir files. A file that cannot be read is
// kUnavailable; a bad line is kInvalidArgument, as in ParseBrokerConfig.
StatusOr<BrokerConfig> ReadBrokerConfig(const std::string& path);

// The configuration file named on the broker's command line (-c or --config-file), from the
// process's arguments; empty when there is none.
std::string ConfigPathFromArguments(const std::vector<std::string>& arguments);

// Whether the broker has an authentication (BASIC_AUTH) or ACL decision maker other than this
// plugin. `own_plugin` is the canonical path of this plugin's .so; any other plugin line counts,
// since the plugin cannot tell which events another plugin handles.
// Whether two paths name the same file (symbolic links and relative parts resolved).
bool IsSameFile(const std::string& a, const std::string& b);

// The options written for the plugin at `own_plugin` (the first plugin line naming that file);
// null when no plugin line names it.
const std::vector<std::pair<std::string, std::string>>* OptionsOfPlugin(
    const BrokerConfig& config, const std::string& own_plugin);

// The security settings that apply to the plugin at `own_plugin`: the whole file's, or with
// per_listener_settings true those of the listener block holding its plugin line (the
// listeners, persistence and the rest stay as they are).
BrokerConfig ScopeOf(const BrokerConfig& config, const std::string& own_plugin);

// The plugin files of `config` (as its lines name them) other than `own_plugin`.
std::vector<std::string> OtherPlugins(const BrokerConfig& config, const std::string& own_plugin);

bool HasOtherAuthSource(const BrokerConfig& config, const std::string& own_plugin);
bool HasOtherAclSource(const BrokerConfig& config, const std::string& own_plugin);

// Auth neutrality on Mosquitto 2.0 (docs/broker-versions.md): the plugin decides only where no
// other source does, and then as the broker itself would. One function for start and reload.
struct AuthDecisions {
  bool decide_basic_auth = false;  // no password_file and no other plugin
  bool allow_anonymous = false;    // what the broker then answers for a client without one
  bool decide_acl = false;         // no acl_file and no other plugin
  bool operator==(const AuthDecisions& other) const {
    return decide_basic_auth == other.decide_basic_auth &&
           allow_anonymous == other.allow_anonymous && decide_acl == other.decide_acl;
  }
};
// From the whole file, or with per_listener_settings the plugin's listener (ScopeOf).
AuthDecisions DecideAuth(const BrokerConfig& config, const std::string& own_plugin);

}  // namespace mqc
