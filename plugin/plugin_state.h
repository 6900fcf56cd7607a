// SPDX-License-Identifier: BSD-3-Clause
// Everything the plugin keeps in the broker process, in one struct passed to every callback as
// userdata (no globals). Touched by the broker thread only: the plugin starts no thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "broker/acl_file.h"
#include "broker/ban_gate.h"
#include "broker/broker_link.h"
#include "broker/companion_supervisor.h"
#include "broker/presence.h"
#include "broker/session_table.h"
#include "broker/traffic_meter.h"
#include "broker_api.h"
#include "client_reader.h"
#include "link/broker_config.h"
#include "link/plugin_options.h"
#include "link/shared_region.h"

struct mosquitto_plugin_id_t;

namespace mqc {

struct PluginState {
  mosquitto_plugin_id_t* identifier = nullptr;
  PluginOptions options;
  BrokerConfig broker_config;
  std::string config_path;        // the broker's configuration file, read again at every reload
  std::string own_path;           // this plugin's .so, to find its own plugin line
  bool settings_pending = false;  // reloaded options the running companion has not been sent
  BrokerApi api;  // the broker's plugin API (2.0 or 2.1) and the names it exports

  // Auth neutrality on 2.0: decide only where the broker has no other decision maker, and then
  // exactly as the broker itself would without this plugin (DecideAuth). 2.1 never decides.
  bool decide_basic_auth = false;
  bool allow_anonymous = false;
  bool decide_acl = false;
  // The broker's acl_file as the plugin reads it, where it needs it (plugin.cc: ReadAclFile).
  std::unique_ptr<AclFile> acl_file;
  // Set while the ACL_CHECK callback asks the broker for the later sources' answer: the nested
  // call reaches this plugin's callback again, which must then defer (broker_events.cc).
  bool acl_check_nested = false;
  // Set while the plugin kicks a client for an admin (broker_events.cc): the broker sends that
  // client's DISCONNECT from inside mosquitto_kick_client_by_clientid, and it closes as KICKED.
  bool kicking = false;

  std::unique_ptr<SharedRegion> region;
  std::unique_ptr<BrokerLink> link;
  std::unique_ptr<SessionTable> sessions;
  std::unique_ptr<TrafficMeter> traffic;
  std::unique_ptr<CompanionSupervisor> companion;
  // Presence messages (presence.cc); null when off.
  std::unique_ptr<PresencePublisher> presence_publisher;
  std::unique_ptr<Presence> presence;
  std::unique_ptr<BanGate> bans;  // the companion's ban list, asked at CONNECT (broker_events.cc)

  std::vector<std::size_t> registered_events;  // indexes into the API's handler table

  // 2.1: whether the plugin watches ACL checks (no other ACL source: its IGNORE is neutral).
  bool watch_acl_21 = false;

  // The last TICK that did the periodic work (MonotonicNs); see OnTick.
  std::int64_t tick_work_ns = 0;
  static constexpr std::int64_t kTickWorkIntervalNs = 1000000;
};

// plugin.cc
// The RPC tracker's options as the plugin options set them (at init and at a reload).
RpcTracker::Options RpcOptionsOf(const PluginOptions& options);
// The log line that refuses per_listener_settings on a broker that sends no TICK with it.
std::string PerListenerSettingsRefusal(const BrokerCapabilities& capabilities);
// "http://<bind>:<port>", an IPv6 bind address in brackets: where the API is served.
std::string ServingUrl(const PluginOptions& options, int port);

// broker_events.cc
bool RegisterBrokerEvents(PluginState* state);
void UnregisterBrokerEvents(PluginState* state);
void LogToBroker(LogLevel level, const std::string& text);
// Puts a ban list from the companion in force (at TICK, and while the companion starts).
void ApplyBans(PluginState* state, BansCommand&& command);

// Sets the auth-neutrality decisions from the configuration (at init and at a reload); the
// plugin decides nothing on 2.1. Returns whether they changed.
bool ApplyAuthDecisions(PluginState* state, const BrokerConfig& config);
// Whether an ACL source after the plugin decides what the plugin cannot learn (2.0 without
// mosquitto_acl_check, and an ACL plugin other than the acl_file).
inline bool UnreadAclSource(const PluginState& state) {
  return !state.api.api_2_1() && !state.decide_acl && !state.api.capabilities().acl_check &&
         state.acl_file == nullptr;
}

// presence.cc
// Presence messages, when an option asks for them (after the session table exists).
void SetUpPresence(PluginState* state);
// A delivery of a presence message: counted nowhere (README, "Presence messages").
inline bool IsPresenceDelivery(const PluginState& state, const char* topic) {
  return state.presence != nullptr && topic[0] == '$' && state.presence->IsPresenceTopic(topic);
}

// reload.cc
int OnReload(int event, void* event_data, void* userdata);
// Sends reloaded registry options to the running companion; false while the ring is full.
bool SendSettingsIfPending(PluginState* state);

}  // namespace mqc
