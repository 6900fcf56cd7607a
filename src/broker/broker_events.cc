// SPDX-License-Identifier: BSD-3-Clause
#include "broker/broker_events.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mqc {

bool SendSettingsIfPending(BrokerEventsState* state) {
  if (!state->settings_pending) return true;
  SettingsEvent settings;
  settings.default_pattern = state->options.default_pattern;
  settings.closed_max = state->options.closed_max;
  settings.closed_ttl_ns = std::int64_t{state->options.closed_ttl_s} * 1000000000;
  if (state->link->Emit(settings)) state->settings_pending = false;
  return !state->settings_pending;
}

bool ResyncStep(BrokerLink* link, SessionTable* table) {
  if (const std::optional<std::uint64_t> generation = link->TakeResyncDue()) {
    if (!table->BeginFullState(*generation)) return false;  // Emit made it due again
  }
  if (!table->full_state_active()) return true;
  return table->ContinueFullState();
}

std::vector<BrokerEventKind> WantedEvents(const BrokerEventsState& state) {
  using K = BrokerEventKind;
  if (!state.broker->api_2_1()) {
    return {K::kBasicAuth,  K::kExtAuthStart, K::kAclCheck, K::kMessageIn,
            K::kDisconnect, K::kTick,         K::kReload};
  }
  std::vector<K> wanted = {K::kBasicAuth,   K::kExtAuthStart, K::kConnect,   K::kSubscribe,
                           K::kUnsubscribe, K::kMessageIn,    K::kMessageOut};
  if (state.watch_acl_21 || state.options.kubemq_strict) wanted.push_back(K::kAclCheck);
  for (K kind : {K::kDisconnect, K::kClientOffline, K::kTick, K::kReload}) wanted.push_back(kind);
  return wanted;
}

namespace {

class BrokerPresencePublisher : public PresencePublisher {
 public:
  explicit BrokerPresencePublisher(Broker* broker) : broker_(broker) {}
  bool Publish(const std::string& topic, const std::string& payload, bool retain) override {
    return broker_->Publish(topic, payload, retain);
  }

 private:
  Broker* broker_;
};

}  // namespace

void SetUpPresence(BrokerEventsState* state) {
  const PluginOptions& options = state->options;
  if (!options.presence_events && !options.presence_retained) return;
  PresenceOptions presence;
  presence.events = options.presence_events;
  presence.retained = options.presence_retained;
  presence.node = options.presence_node;
  state->presence_publisher = std::make_unique<BrokerPresencePublisher>(state->broker);
  state->presence = std::make_unique<Presence>(presence, state->presence_publisher.get());
  state->presence->SetPersistentClientExpiration(
      state->broker_config.persistent_client_expiration_s);
  state->sessions->SetObserver(state->presence.get());
  state->broker->Log(LogLevel::kNotice,
                     std::string("mosquitto_connections: presence messages on ") +
                         state->presence->prefix() + "<client id>/" +
                         (presence.events ? "connected, disconnected" : "") +
                         (presence.events && presence.retained ? " and " : "") +
                         (presence.retained ? "state (retained)" : ""));
}

std::string Printable(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

std::string KickLogLine(const KickCommand& command, int rc, const std::string& error_text) {
  const std::string who = "client '" + Printable(command.client_id) + "' at the request of " +
                          (command.caller.empty() ? "an unknown address" : command.caller) + " (" +
                          (command.token_line.empty() ? "no token" : command.token_line) + ")";
  if (rc == kBrokerSuccess) {
    return "mosquitto_connections: disconnected " + who +
           (command.with_will ? "" : ", without publishing its will");
  }
  return "mosquitto_connections: cannot disconnect " + who + ": " + error_text;
}

}  // namespace mqc
