// SPDX-License-Identifier: BSD-3-Clause
// Bans as the companion carries them out (the BanAdmin of the HTTP views, admin_actions.h): a
// change goes to the BanStore (file, then the broker's copy through the commands ring,
// BansCommand), is logged in the broker's log with the caller, and a new ban disconnects the open
// clients it concerns: the companion finds them in its registry (its own thread's work, never the
// broker's) and asks the broker to kick each by client id (KickCommand, the path of DELETE
// /api/mqtt/connections/{id}: one lookup in the broker's client id index per client). Once a second
// the event loop calls Sweep: bans that expired are dropped (and logged), the client ids that went
// over plugin_opt_flapping_max_count are banned for plugin_opt_flapping_ban_time (by "flapping",
// EMQX's flapping_detect), and an open client a ban concerns (one that connected before the
// broker had the list) is kicked, at most once per connection.
//
// Threads: the BanAdmin's functions on any HTTP thread, several at once; Sweep on the event
// loop. The store and the link are safe to call concurrently; `kicked_` has its own mutex.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_set>

#include "companion/admin_actions.h"
#include "companion/ban_store.h"
#include "companion/companion_link.h"
#include "companion/connection_registry.h"
#include "link/shared_region.h"

namespace mqc {

class BrokerBans {
 public:
  // All must outlive this object.
  BrokerBans(BanStore* store, ConnectionRegistry* registry, CompanionLink* link,
             const BrokerCounters* counters);
  // How long the automatic ban of a flapping client id lasts (plugin_opt_flapping_ban_time).
  void set_flapping_ban_ns(std::int64_t ns) { flapping_ban_ns_ = ns; }

  BanAdmin Admin();
  void Sweep(std::int64_t now_ns);

 private:
  void InForce();
  BanOutcome Add(Ban ban, const Caller& caller);
  BanOutcome Remove(const Ban& target, const Caller& caller);
  // Asks the broker to kick every open connection `matcher` matches (not asked before).
  // `matching` (may be null) gets the uid of every open connection it matches.
  // Bans each client id the registry found flapping (Sweep): added to the store and logged like
  // an admin's ban, without waiting for the broker to have the list (the event loop must not
  // wait): the kicks queue behind it on the commands ring.
  void BanFlapping(std::int64_t now_ns);
  std::size_t KickMatching(const BanMatcher& matcher, const std::string& caller,
                           const std::string& token_line, std::int64_t now_ns,
                           std::unordered_set<std::string>* matching = nullptr);

  BanStore* store_;
  ConnectionRegistry* registry_;
  CompanionLink* link_;
  std::int64_t flapping_ban_ns_ = 300'000'000'000;
  const BrokerCounters* counters_;
  std::mutex kicked_mutex_;
  std::unordered_set<std::string> kicked_;  // uids asked to disconnect; guarded
};

}  // namespace mqc
