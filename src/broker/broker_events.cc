// SPDX-License-Identifier: BSD-3-Clause
#include "broker/broker_events.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mqc {

std::vector<BrokerEventKind> WantedEvents(const BrokerCore& core) {
  using K = BrokerEventKind;
  if (!core.broker().api_2_1()) {
    return {K::kBasicAuth,  K::kExtAuthStart, K::kAclCheck, K::kMessageIn,
            K::kDisconnect, K::kTick,         K::kReload};
  }
  std::vector<K> wanted = {K::kBasicAuth,   K::kExtAuthStart, K::kConnect,   K::kSubscribe,
                           K::kUnsubscribe, K::kMessageIn,    K::kMessageOut};
  if (core.settings().watch_acl_21 || core.options().kubemq_strict) wanted.push_back(K::kAclCheck);
  for (K kind : {K::kDisconnect, K::kClientOffline, K::kTick, K::kReload}) wanted.push_back(kind);
  return wanted;
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
  if (rc == kBrokerSuccess) return "mosquitto_connections: disconnected " + who;
  return "mosquitto_connections: cannot disconnect " + who + ": " + error_text;
}

}  // namespace mqc
