// SPDX-License-Identifier: BSD-3-Clause
#include "broker/configuration.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "broker/acl_file.h"
#include "broker/auth_decisions.h"
#include "link/host_names.h"

namespace mqc {

std::string PerListenerSettingsRefusal(const BrokerCapabilities& capabilities) {
  return "per_listener_settings true is not supported on this broker (" +
         capabilities.version.Text() +
         "): Mosquitto sends plugins no TICK event with it before 2.0.15, and the plugin needs "
         "TICK to talk to its companion; upgrade the broker or set per_listener_settings false";
}

namespace {

// The acl_file the plugin reads itself, where DecideAuth says so (broker/auth_decisions.h).
// Read again at every reload, as the broker does.
void ReadAclFile(Broker& broker, BrokerSettings* state, const BrokerAuth& auth) {
  state->acl_file.reset();
  if (!auth.read_acl_file) return;
  auto file = std::make_unique<AclFile>();
  const Status status = AclFile::Read(auth.acl_file_to_read, file.get());
  if (!status.ok()) {
    broker.Log(LogLevel::kWarning,
               "mosquitto_connections: cannot read the acl_file to count deliveries exactly (" +
                   status.message() + "): a delivery it denies still counts as delivered");
    return;
  }
  state->acl_file = std::move(file);
}

}  // namespace

bool ApplyAuthDecisions(Broker& broker, BrokerSettings* state, const BrokerConfig& config) {
  const BrokerAuth auth = DecideAuth(config, state->own_path, broker.capabilities());
  ReadAclFile(broker, state, auth);
  const AuthDecisions& decisions = auth.decisions;
  const AuthDecisions before{state->decide_basic_auth, state->allow_anonymous, state->decide_acl};
  state->decide_basic_auth = decisions.decide_basic_auth;
  state->allow_anonymous = decisions.allow_anonymous;
  state->decide_acl = decisions.decide_acl;
  return !(before == decisions);
}

RpcTracker::Options RpcOptionsOf(const PluginOptions& options) {
  RpcTracker::Options rpc;
  rpc.timeout_ns = std::int64_t{options.rpc_timeout_s} * 1000000000;
  rpc.max_pending = options.rpc_max_pending;
  return rpc;
}

StatusOr<BrokerConfig> ReadUsableBrokerConfig(const std::string& path,
                                              const BrokerCapabilities& capabilities) {
  StatusOr<BrokerConfig> read = ReadBrokerConfig(path);
  if (!read.ok()) return read;
  if (read->per_listener_settings && !capabilities.SendsTickWithPerListenerSettings()) {
    return InvalidArgument(PerListenerSettingsRefusal(capabilities));
  }
  return read;
}

OptionPairs CompanionOverrides(const PluginOptions& options) {
  return {{"default_pattern", std::string(DefaultPatternName(options.default_pattern))},
          {"closed_max", std::to_string(options.closed_max)},
          {"closed_ttl", std::to_string(options.closed_ttl_s)}};
}

std::string ServingUrl(const PluginOptions& options, int port) {
  const char* scheme = options.http_tls_cert.empty() ? "http://" : "https://";
  return scheme + HostPort(options.http_bind, port);
}

namespace {

constexpr char kPrefix[] = "mosquitto_connections: reload: ";

// What a reload works on.
struct Reload {
  Broker& broker;
  BrokerSettings* settings;
  int http_port;
};

void Log(const Reload* state, LogLevel level, const std::string& text) {
  state->broker.Log(level, kPrefix + text);
}

const char* YesNo(bool value) { return value ? "yes" : "no"; }

// The auth-neutrality decisions from the configuration as it is now: the broker loads a
// password_file or acl_file added by the reload (and drops a removed one) right after RELOAD.
// It does not read listener or plugin lines again (src/conf.c skips them on reload) and keeps
// the local-only mode it started in: so the plugin keeps those from before.
void ApplyReloadedBrokerConfig(const Reload* reload, BrokerConfig config) {
  BrokerSettings* state = reload->settings;
  config.listeners = state->broker_config.listeners;
  config.local_only = state->broker_config.local_only;
  config.plugins = state->broker_config.plugins;
  config.plugin_options = state->broker_config.plugin_options;
  // Which plugin sits in which listener block is not read again either.
  for (std::size_t i = 0;
       i < config.listener_security.size() && i < state->broker_config.listener_security.size();
       ++i) {
    config.listener_security[i].plugins = state->broker_config.listener_security[i].plugins;
  }
  if (ApplyAuthDecisions(reload->broker, state, config) && !reload->broker.api_2_1()) {
    Log(reload, LogLevel::kNotice,
        std::string("the plugin now decides authentication: ") + YesNo(state->decide_basic_auth) +
            ", ACLs: " + YesNo(state->decide_acl) + "; allow_anonymous " +
            (state->allow_anonymous ? "true" : "false"));
  }
  state->broker_config = config;
}

// An option a running plugin cannot change: the old value stays, and the log says so.
template <typename T>
void Keep(const Reload* state, const char* name, T PluginOptions::*option, const std::string& why,
          PluginOptions* reloaded) {
  const T& old_value = state->settings->options.*option;
  if (old_value == reloaded->*option) return;
  Log(state, LogLevel::kWarning, std::string("plugin_opt_") + name + " changed; keeping " + why);
  reloaded->*option = old_value;
}

// A number the companion sizes itself by at start: the old one stays until the broker restarts.
template <typename T>
void KeepUntilRestart(const Reload* state, const char* name, T PluginOptions::*option,
                      PluginOptions* reloaded) {
  Keep(state, name, option,
       std::to_string(state->settings->options.*option) + " until the broker restarts", reloaded);
}

// Applies the options that can change at run time; keeps the others with a warning. Returns
// whether the registry's or the RPC tracker's options changed.
bool ApplyOptions(const Reload* state, PluginOptions reloaded) {
  const PluginOptions& old = state->settings->options;
  const std::string serving =
      "serving on " + ServingUrl(old, state->http_port) + " (restart the broker to move the API)";
  Keep(state, "http_port", &PluginOptions::http_port, serving, &reloaded);
  Keep(state, "http_bind", &PluginOptions::http_bind, serving, &reloaded);
  Keep(state, "node_id", &PluginOptions::node_id,
       std::to_string(old.node_id) + ": listed connections keep the node they were seen on",
       &reloaded);
  Keep(state, "companion_path", &PluginOptions::companion_path,
       "the running companion's path until the broker restarts", &reloaded);
  const std::string presence = "the value the broker was started with (restart the broker)";
  Keep(state, "presence_events", &PluginOptions::presence_events, presence, &reloaded);
  Keep(state, "presence_retained", &PluginOptions::presence_retained, presence, &reloaded);
  Keep(state, "presence_node", &PluginOptions::presence_node, presence, &reloaded);
  // The token files' contents are read again (below); which files, and the rest of the API's
  // security, stay as the companion was started with.
  const std::string restart = "the value the API was started with (restart the broker)";
  Keep(state, "http_token_file", &PluginOptions::http_token_file, restart, &reloaded);
  Keep(state, "http_admin_token_file", &PluginOptions::http_admin_token_file, restart, &reloaded);
  Keep(state, "metrics_public", &PluginOptions::metrics_public, restart, &reloaded);
  Keep(state, "http_tls_cert", &PluginOptions::http_tls_cert, restart, &reloaded);
  Keep(state, "http_tls_key", &PluginOptions::http_tls_key, restart, &reloaded);
  Keep(state, "http_allow_anonymous", &PluginOptions::http_allow_anonymous, restart, &reloaded);
  Keep(state, "http_allowed_hosts", &PluginOptions::http_allowed_hosts, restart, &reloaded);
  // The companion builds its fleet (peers, their token and CA) once, at start.
  Keep(state, "fleet_peers", &PluginOptions::fleet_peers, restart, &reloaded);
  Keep(state, "fleet_token_file", &PluginOptions::fleet_token_file, restart, &reloaded);
  Keep(state, "fleet_ca_file", &PluginOptions::fleet_ca_file, restart, &reloaded);
  // Strict mode decides which callbacks are registered on 2.1 (WantedEvents), and a
  // client should not see the broker's answers change under a reload: restart to change it.
  Keep(state, "kubemq_strict", &PluginOptions::kubemq_strict,
       std::string(old.kubemq_strict ? "true" : "false") + " until the broker restarts", &reloaded);
  // The layout is verified, or turned off, once per broker run (plugin.cc).
  Keep(state, "client_layout", &PluginOptions::client_layout,
       std::string(old.client_layout ? "verify" : "off") + " until the broker restarts", &reloaded);
  // The companion sizes its top-clients family at start.
  KeepUntilRestart(state, "metrics_top_clients", &PluginOptions::metrics_top_clients, &reloaded);
  // The companion sizes a client's history at start.
  KeepUntilRestart(state, "history_events", &PluginOptions::history_events, &reloaded);
  KeepUntilRestart(state, "history_max_events", &PluginOptions::history_max_events, &reloaded);
  KeepUntilRestart(state, "activity_interval", &PluginOptions::activity_interval_s, &reloaded);
  // The companion's registry and bans take the flapping ban's settings at start.
  KeepUntilRestart(state, "flapping_max_count", &PluginOptions::flapping_max_count, &reloaded);
  KeepUntilRestart(state, "flapping_window_time", &PluginOptions::flapping_window_time_s,
                   &reloaded);
  KeepUntilRestart(state, "flapping_ban_time", &PluginOptions::flapping_ban_time_s, &reloaded);
  // The companion reads the token files again when it gets the settings record, sent at every
  // reload (the tokens themselves never pass through the broker).
  state->settings->settings_pending = true;

  std::vector<std::string> changes;
  if (reloaded.default_pattern != old.default_pattern) {
    changes.push_back("default_pattern " +
                      std::string(DefaultPatternName(reloaded.default_pattern)));
  }
  if (reloaded.closed_max != old.closed_max) {
    changes.push_back("closed_max " + std::to_string(reloaded.closed_max));
  }
  if (reloaded.closed_ttl_s != old.closed_ttl_s) {
    changes.push_back("closed_ttl " + std::to_string(reloaded.closed_ttl_s));
  }
  if (reloaded.rpc_timeout_s != old.rpc_timeout_s) {
    changes.push_back("rpc_timeout " + std::to_string(reloaded.rpc_timeout_s));
  }
  if (reloaded.rpc_max_pending != old.rpc_max_pending) {
    changes.push_back("rpc_max_pending " + std::to_string(reloaded.rpc_max_pending));
  }
  if (changes.empty()) return false;

  // The running companion learns its part through the events ring (at the next TICK, where a
  // full ring is retried); a restarted one from its arguments (CompanionOverrides).
  state->settings->options = reloaded;
  std::string text = "applied";
  for (const auto& change : changes) text += " " + change + ",";
  text.pop_back();
  Log(state, LogLevel::kNotice, text);
  return true;
}

}  // namespace

bool ReloadConfiguration(Broker& broker, BrokerSettings* settings, int http_port) {
  const Reload reload{broker, settings, http_port};
  const Reload* state = &reload;
  StatusOr<BrokerConfig> read =
      ReadUsableBrokerConfig(settings->config_path, broker.capabilities());
  if (!read.ok()) {
    Log(state, LogLevel::kError,
        read.status().message() + "; keeping the configuration read before");
    return false;
  }
  const BrokerConfig config = std::move(read).value();
  ApplyReloadedBrokerConfig(state, config);

  const auto* pairs = OptionsOfPlugin(config, settings->own_path);
  if (pairs == nullptr) {
    Log(state, LogLevel::kWarning,
        "no plugin line names this plugin any more; keeping its options");
    return false;
  }
  const StatusOr<PluginOptions> reloaded = ParsePluginOptions(*pairs);
  if (!reloaded.ok()) {
    Log(state, LogLevel::kError, reloaded.status().message() + "; keeping every option as it was");
    return false;
  }
  return ApplyOptions(state, *reloaded);
}

}  // namespace mqc
