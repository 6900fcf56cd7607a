// SPDX-License-Identifier: BSD-3-Clause
// See ban_gate.h.
#include "broker/ban_gate.h"

#include <utility>

namespace mqc {

std::string BanGate::Replace(BansCommand command) {
  const std::size_t count = command.bans.size();
  matcher_ = BanMatcher(std::move(command.bans));
  return "mosquitto_connections: " + std::to_string(count) + (count == 1 ? " ban" : " bans") +
         " in force";
}

const Ban* BanGate::Refuses(const char* client_id, const char* username, const char* address,
                            std::int64_t now_ns) {
  if (matcher_.empty()) return nullptr;
  const Ban* ban = matcher_.Find(client_id, username, address, now_ns);
  if (ban != nullptr && counters_ != nullptr) Bump(counters_->connects_banned);
  return ban;
}

}  // namespace mqc
