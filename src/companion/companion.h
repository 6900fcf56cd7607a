// SPDX-License-Identifier: BSD-3-Clause
// The companion's event loop, one step at a time (the companion's TICK): what a turn does with
// the broker's events, a configuration reload, closed connections and bans that expire, the
// statistics window and the network figures, and how long it may then wait. companion/main.cc
// assembles the parts and calls Step and Wait until it stops.
//
// Threads: every method on the companion's main thread. What it drives says which other
// threads read it (ConnectionRegistry, ConnectionChanges, BrokerBans, NetworkInfoCache).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace mqc {

class ActivityHistory;
class BrokerBans;
struct BrokerCounters;
class CompanionLink;
class ConnectionChanges;
class ConnectionRegistry;
class NetworkInfoCache;

struct CompanionParts {
  CompanionLink* link = nullptr;
  ConnectionRegistry* registry = nullptr;
  ConnectionChanges* changes = nullptr;  // its waiting streams are woken after events
  BrokerBans* broker_bans = nullptr;
  NetworkInfoCache* network = nullptr;
  // The console's last hour, sampled from the broker's counters with the expiries. May be null.
  ActivityHistory* activity = nullptr;
  const BrokerCounters* counters = nullptr;
  // At a configuration reload (a settings record from the broker): the HTTP layer reads its
  // secrets again (HttpSecrets::Reread). May be empty.
  std::function<void()> on_reload;
  // Every step: the HTTP server's own upkeep (HttpServer::StopRetired). May be empty.
  std::function<void()> upkeep;
};

// How long the loop may wait for the broker when nothing came (the broker wakes it at the TICK
// after it wrote): until the next expiry of closed connections, the next statistics window,
// or the next refresh of the network figures (each in ns from now), and a second at most: the
// heartbeat the plugin watches for stalls (5 s), and stop signals. 1 ms at least.
std::int64_t IdleWaitNs(std::int64_t expiry_in_ns, std::int64_t window_in_ns,
                        std::int64_t refresh_in_ns);

class Companion {
 public:
  // Closed connections and bans are expired once a second at most.
  static constexpr std::int64_t kExpiryPeriodNs = 1'000'000'000;
  // After events, a short pause rather than a wait: more are likely on their way.
  static constexpr std::int64_t kBusyPauseNs = 1'000'000;

  struct Wake {
    std::int64_t wait_ns = 0;  // how long to wait before the next Step
    bool busy = false;         // events came: pause (kBusyPauseNs) without waiting for more
    std::size_t applied = 0;   // events applied by this step
  };

  explicit Companion(CompanionParts parts);

  // One turn at `now_ns` (Unix ns, NowNs()): applies the broker's events (and wakes the
  // streams waiting for changes), beats the heartbeat, rereads the secrets at a reload, runs
  // the HTTP upkeep, says once that the registry is synchronised, expires closed connections
  // and bans, rolls the statistics window and refreshes the network figures when due.
  Wake Step(std::int64_t now_ns);
  // Sleeps as `wake` says: a pause when busy, else until the broker writes or wait_ns passes.
  void Wait(const Wake& wake);

 private:
  const CompanionParts parts_;
  std::int64_t next_expiry_ns_ = 0;
  bool announced_sync_ = false;
  std::uint64_t settings_seen_ = 0;
};

}  // namespace mqc
