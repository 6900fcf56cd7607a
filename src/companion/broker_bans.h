// SPDX-License-Identifier: BSD-3-Clause
// Bans as the companion carries them out (the BanAdmin of the HTTP views, admin_actions.h): a
// change goes to the BanStore (file, then the broker's copy through the commands ring,
// BansCommand), is logged in the broker's log with the caller, and a new ban disconnects the open
// clients it concerns: the companion finds them in its registry (its own thread's work, never the
// broker's) and asks the broker to kick each by client id (KickCommand, the path of DELETE
// /api/mqtt/connections/{id}: one lookup in the broker's client id index per client). Once a second
// the event loop calls Sweep: bans that expired are dropped (and logged), and an open client a ban
// concerns (one that connected before the broker had the list) is kicked, at most once per
// connection.
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
  BrokerBans(BanStore* store, const ConnectionRegistry* registry, CompanionLink* link,
             const BrokerCounters* counters);

  BanAdmin Admin();
  void Sweep(std::int64_t now_ns);

 private:
  void InForce();
  BanOutcome Add(Ban ban, const Caller& caller);
  BanOutcome Remove(const Ban& target, const Caller& caller);
  // Asks the broker to kick every open connection `matcher` matches (not asked before).
  // `matching` (may be null) gets the uid of every open connection it matches.
  std::size_t KickMatching(const BanMatcher& matcher, const std::string& caller,
                           const std::string& token_line, std::int64_t now_ns,
                           std::unordered_set<std::string>* matching = nullptr);

  BanStore* store_;
  const ConnectionRegistry* registry_;
  CompanionLink* link_;
  const BrokerCounters* counters_;
  std::mutex kicked_mutex_;
  std::unordered_set<std::string> kicked_;  // uids asked to disconnect; guarded
};

}  // namespace mqc
