// SPDX-License-Identifier: BSD-3-Clause
#include "companion/companion.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <utility>

#include "companion/activity_history.h"
#include "companion/broker_bans.h"
#include "companion/companion_link.h"
#include "companion/connection_changes.h"
#include "companion/connection_registry.h"
#include "companion/network_info.h"

namespace mqc {

std::int64_t IdleWaitNs(std::int64_t expiry_in_ns, std::int64_t window_in_ns,
                        std::int64_t refresh_in_ns) {
  constexpr std::int64_t kMaxIdleWaitNs = 1'000'000'000;
  constexpr std::int64_t kMinIdleWaitNs = 1'000'000;
  return std::max(kMinIdleWaitNs,
                  std::min({kMaxIdleWaitNs, expiry_in_ns, window_in_ns, refresh_in_ns}));
}

Companion::Companion(CompanionParts parts) : parts_(std::move(parts)) {}

Companion::Wake Companion::Step(std::int64_t now_ns) {
  ConnectionRegistry& registry = *parts_.registry;
  CompanionLink& link = *parts_.link;
  Wake wake;
  wake.applied = link.Poll(&registry, now_ns);
  // Outside the registry's lock: the streams waiting for changes go on.
  if (wake.applied > 0) parts_.changes->WakeWaiters();
  link.Heartbeat();
  if (link.settings_seen() != settings_seen_) {
    settings_seen_ = link.settings_seen();
    if (parts_.on_reload) parts_.on_reload();
  }
  if (parts_.upkeep) parts_.upkeep();
  if (!announced_sync_ && registry.synced()) {
    // Tells the operator (and the tests) when a (re)started companion has the whole state.
    link.Log(LogLevel::kInfo, "registry synchronised with the broker: " +
                                  std::to_string(registry.open_count()) + " open connections, " +
                                  std::to_string(registry.offline_count()) + " offline sessions");
    announced_sync_ = true;
  }
  if (now_ns >= next_expiry_ns_) {
    registry.ExpireClosed(now_ns);
    if (registry.synced()) parts_.broker_bans->Sweep(now_ns);
    if (parts_.activity != nullptr) {
      parts_.activity->Sample(now_ns, ReadActivityTotals(*parts_.counters, registry.open_count(),
                                                         registry.FlappingClients(now_ns)));
    }
    next_expiry_ns_ = now_ns + kExpiryPeriodNs;
  }
  registry.RollStatisticsWindow(now_ns);
  // While the rich API is in use, the next sock_diag dump is taken here, ahead of requests.
  parts_.network->RefreshIfDue();
  if (wake.applied > 0) {
    wake.busy = true;
    wake.wait_ns = kBusyPauseNs;
  } else {
    wake.wait_ns =
        IdleWaitNs(next_expiry_ns_ - now_ns, ConnectionRegistry::NextWindowNs(now_ns) - now_ns,
                   parts_.network->RefreshDueInNs());
  }
  return wake;
}

void Companion::Wait(const Wake& wake) {
  if (wake.busy) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(wake.wait_ns));
  } else {
    parts_.link->WaitForEvents(wake.wait_ns);
  }
}

}  // namespace mqc
