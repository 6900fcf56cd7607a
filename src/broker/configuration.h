// SPDX-License-Identifier: BSD-3-Clause
// The broker's configuration applied to the plugin's state: the auth-neutrality decisions (at
// start and at every reload: one DecideAuth, broker/auth_decisions.h) and the broker's
// configuration reload (SIGHUP, the RELOAD event): what the plugin reads again and applies, and
// what it keeps. docs/reload.md has the broker's side, step by step.
//
// Mosquitto 2.0 hands a version 5 plugin no options at RELOAD (security__init_single sets
// options to NULL), so the plugin reads its own plugin_opt_ lines from the configuration file
// again, as it reads the rest of that file for auth neutrality.
//
// Threads: the broker thread.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "broker/acl_file.h"
#include "broker/broker.h"
#include "broker/rpc_tracker.h"
#include "link/broker_config.h"
#include "link/plugin_options.h"
#include "link/status.h"

namespace mqc {

// What the plugin knows of its own and the broker's configuration: read at start, applied
// again at every reload. Part of the broker core (broker_core.h).
struct BrokerSettings {
  PluginOptions options;
  BrokerConfig broker_config;
  std::string config_path;  // the broker's configuration file, read again at every reload
  std::string own_path;     // this plugin's .so, to find its own plugin line

  // Auth neutrality on 2.0: decide only where the broker has no other decision maker, and then
  // exactly as the broker itself would without this plugin (DecideAuth). 2.1 never decides.
  bool decide_basic_auth = false;
  bool allow_anonymous = false;
  bool decide_acl = false;
  // The broker's acl_file as the plugin reads it, where it needs it (ApplyAuthDecisions).
  std::unique_ptr<AclFile> acl_file;
  // 2.1: whether the plugin watches ACL checks (no other ACL source: its IGNORE is neutral).
  // Fixed at start: the callbacks are registered once.
  bool watch_acl_21 = false;
  bool settings_pending = false;  // reloaded options the running companion has not been sent
};

// Sets the auth-neutrality decisions from the configuration, and reads the acl_file where the
// plugin needs it; the plugin decides nothing on 2.1. Returns whether the decisions changed.
bool ApplyAuthDecisions(Broker& broker, BrokerSettings* settings, const BrokerConfig& config);

// The broker's configuration file as the plugin needs it: read, and refused where this broker
// cannot serve its per_listener_settings. The error names the file or the setting.
StatusOr<BrokerConfig> ReadUsableBrokerConfig(const std::string& path,
                                              const BrokerCapabilities& capabilities);

// The broker's RELOAD: reads settings->config_path again and applies what a running plugin can
// change (the auth decisions, the registry's and the RPC tracker's options), keeping the rest
// with one warning each. Every outcome is one log line; a file that cannot be read, a
// per_listener_settings this broker cannot serve, or options that do not parse change nothing.
// `http_port`: where the companion serves, for the log. Returns whether the registry's or the
// RPC tracker's options changed (the caller hands them on: BrokerCore::Reload).
bool ReloadConfiguration(Broker& broker, BrokerSettings* settings, int http_port);

// The options the companion is restarted with after a reload changed them.
OptionPairs CompanionOverrides(const PluginOptions& options);

// What the plugin answers RELOAD. 2.0: DEFER, since any other answer stops the broker from
// calling the next plugin's RELOAD (security__init_single returns at the first non-DEFER).
// 2.1: success, since any other answer is an error that ends the broker's main loop
// (src/plugin_reload.c).
inline int ReloadAnswer(bool api_2_1) { return api_2_1 ? kBrokerSuccess : kBrokerErrPluginDefer; }

// The RPC tracker's options as the plugin options set them (at init and at a reload).
RpcTracker::Options RpcOptionsOf(const PluginOptions& options);
// The log line that refuses per_listener_settings on a broker that sends no TICK with it.
std::string PerListenerSettingsRefusal(const BrokerCapabilities& capabilities);
// "http://<bind>:<port>", an IPv6 bind address in brackets: where the API is served.
std::string ServingUrl(const PluginOptions& options, int port);

}  // namespace mqc
