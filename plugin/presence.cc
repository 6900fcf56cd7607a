// SPDX-License-Identifier: BSD-3-Clause
// Presence messages (broker/presence.h) handed to the broker: the publisher, and the set-up from
// the options. The decisions (when, what payload) are all in src/broker/presence.cc.
//
// Threads: the broker thread.

#include <string>

#include "plugin_state.h"

namespace mqc {

namespace {

// Presence messages go out through the broker's publish (MosquittoBroker::Publish).
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

void SetUpPresence(PluginState* state) {
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
  LogToBroker(LogLevel::kNotice, std::string("mosquitto_connections: presence messages on ") +
                                     state->presence->prefix() + "<client id>/" +
                                     (presence.events ? "connected, disconnected" : "") +
                                     (presence.events && presence.retained ? " and " : "") +
                                     (presence.retained ? "state (retained)" : ""));
}

}  // namespace mqc
