// SPDX-License-Identifier: BSD-3-Clause
// Presence messages (broker/presence.h) handed to the broker: the publisher, and the set-up from
// the options. The decisions (when, what payload) are all in src/broker/presence.cc.
//
// Threads: the broker thread.

#include <string>

#include "plugin_state.h"

// clang-format off
#include <mosquitto.h>
#include <mosquitto_broker.h>
// clang-format on

namespace mqc {

namespace {

// mosquitto_broker_publish_copy: exported by every supported broker (src/linker.syms of v2.0.11,
// v2.0.21 and v2.1.2; tests/check_broker_symbols.py checks the binaries). It copies the payload
// and appends the message to the broker's plugin message list, queued to subscribers at the
// start of the main loop's next turn: safe from any callback (broker/presence.h).
class BrokerPresencePublisher : public PresencePublisher {
 public:
  bool Publish(const std::string& topic, const std::string& payload, bool retain) override {
    return mosquitto_broker_publish_copy(nullptr, topic.c_str(), static_cast<int>(payload.size()),
                                         payload.data(), 0, retain, nullptr) == MOSQ_ERR_SUCCESS;
  }
};

}  // namespace

void SetUpPresence(PluginState* state) {
  const PluginOptions& options = state->options;
  if (!options.presence_events && !options.presence_retained) return;
  PresenceOptions presence;
  presence.events = options.presence_events;
  presence.retained = options.presence_retained;
  presence.node = options.presence_node;
  state->presence_publisher = std::make_unique<BrokerPresencePublisher>();
  state->presence = std::make_unique<Presence>(presence, state->presence_publisher.get());
  state->presence->SetPersistentClientExpiration(
      state->broker_config.persistent_client_expiration_s);
  state->sessions->SetObserver(state->presence.get());
  LogToBroker(LogLevel::kNotice,
              std::string("mosquitto_connections: presence messages on ") +
                  state->presence->prefix() + "<client id>/" +
                  (presence.events ? "connected, disconnected" : "") +
                  (presence.events && presence.retained ? " and " : "") +
                  (presence.retained ? "state (retained)" : ""));
}

}  // namespace mqc
