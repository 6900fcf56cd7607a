// SPDX-License-Identifier: BSD-3-Clause
// Auth neutrality, decided once from the broker's configuration and what the broker can do: one
// function for init and for every reload (ApplyAuthDecisions, broker/configuration.h, applies it),
// so that both decide alike. docs/broker-versions.md says why each answer is neutral.
//
// Threads: a pure function.
#pragma once

#include <string>

#include "broker/broker_capabilities.h"
#include "link/broker_config.h"

namespace mqc {

struct BrokerAuth {
  // Whether the plugin answers authentication and ACL checks itself, and how (2.0 only: on 2.1
  // the handlers answer IGNORE whatever these say, BrokerEvents). Computed on 2.1 too: whether
  // anything checks a username tells an authenticated connection from an unauthenticated one.
  AuthDecisions decisions;
  // The acl_file the plugin reads itself (broker/acl_file.h) to know which deliveries the
  // broker allowed: on 2.0 without mosquitto_acl_check, where the acl_file is the only ACL
  // source besides this plugin (another plugin decides first otherwise). Empty: none.
  std::string acl_file_to_read;
  bool read_acl_file = false;
};

// From the whole file, or with per_listener_settings the plugin's listener (ScopeOf);
// `own_plugin` is this plugin's path, as its plugin line names it.
BrokerAuth DecideAuth(const BrokerConfig& config, const std::string& own_plugin,
                      const BrokerCapabilities& capabilities);

}  // namespace mqc
