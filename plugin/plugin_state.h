// SPDX-License-Identifier: BSD-3-Clause
// Everything the plugin keeps in the broker process, in one struct passed to every callback as
// userdata (no globals). Touched by the broker thread only: the plugin starts no thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "broker/broker_core.h"
#include "broker/broker_events.h"
#include "broker_api.h"
#include "client_reader.h"
#include "link/broker_config.h"
#include "link/plugin_options.h"
#include "mosquitto_adapter.h"

struct mosquitto_plugin_id_t;

namespace mqc {

// The broker core (broker/broker_core.h) holds everything the decisions touch; what only the
// entry points need is added here. The callbacks get the core as their userdata.
struct PluginState {
  PluginState() = default;
  PluginState(const PluginState&) = delete;
  PluginState& operator=(const PluginState&) = delete;

  mosquitto_plugin_id_t* identifier = nullptr;
  BrokerApi api;                    // the broker's plugin API (2.0 or 2.1) and the names it exports
  MosquittoBroker mosquitto{&api};  // the decisions' Broker (BrokerCore::broker)
  std::unique_ptr<BrokerCore> core;

  std::vector<BrokerEventKind> registered_events;  // in the order they were registered
};

// broker_events.cc
bool RegisterBrokerEvents(PluginState* state);
void UnregisterBrokerEvents(PluginState* state);
void LogToBroker(LogLevel level, const std::string& text);

}  // namespace mqc
