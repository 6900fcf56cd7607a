// SPDX-License-Identifier: BSD-3-Clause
// Everything the plugin keeps in the broker process, in one struct passed to every callback as
// userdata (no globals). Touched by the broker thread only: the plugin starts no thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "broker/broker_events.h"
#include "broker_api.h"
#include "client_reader.h"
#include "link/broker_config.h"
#include "link/plugin_options.h"
#include "mosquitto_adapter.h"

struct mosquitto_plugin_id_t;

namespace mqc {

// BrokerEventsState (broker/broker_events.h) holds everything the decisions touch, in the order
// it is torn down in; what only the entry points need is added here.
struct PluginState : BrokerEventsState {
  PluginState() { broker = &mosquitto; }
  PluginState(const PluginState&) = delete;
  PluginState& operator=(const PluginState&) = delete;

  mosquitto_plugin_id_t* identifier = nullptr;
  BrokerApi api;                    // the broker's plugin API (2.0 or 2.1) and the names it exports
  MosquittoBroker mosquitto{&api};  // the decisions' Broker (BrokerEventsState::broker)

  std::vector<BrokerEventKind> registered_events;  // in the order they were registered
};

// broker_events.cc
bool RegisterBrokerEvents(PluginState* state);
void UnregisterBrokerEvents(PluginState* state);
void LogToBroker(LogLevel level, const std::string& text);
// Puts a ban list from the companion in force (at TICK, and while the companion starts).
void ApplyBans(PluginState* state, BansCommand&& command);

}  // namespace mqc
