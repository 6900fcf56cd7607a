// SPDX-License-Identifier: BSD-3-Clause
#include "broker/broker_events.h"

#include <string>

namespace mqc {

bool SendSettingsIfPending(BrokerEventsState* state) {
  if (!state->settings_pending) return true;
  SettingsEvent settings;
  settings.default_pattern = state->options.default_pattern;
  settings.closed_max = state->options.closed_max;
  settings.closed_ttl_ns = std::int64_t{state->options.closed_ttl_s} * 1000000000;
  std::string payload;
  Encode(settings, &payload);
  if (state->link->Emit(EventType::kSettings, payload)) state->settings_pending = false;
  return !state->settings_pending;
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
