// SPDX-License-Identifier: BSD-3-Clause
// The offline sessions the broker thread keeps, by client id, with the two orders SessionTable
// needs of them: their age (when full, the oldest is forgotten first) and the time the broker
// expires them (the earliest first; sessions of one time in the order they were added).
//
// A third order holds the sessions whose expiry the broker did not tell (expiry_unknown), for
// SessionTable to ask the broker about a few at a time, going round (SweepUnknownExpiry).
//
// Bookkeeping only: the sessions come and go as SessionTable decides, which also announces
// them and tells its observer. Every way a session leaves (replaced, evicted, taken, expired)
// leaves all four indexes at once, and a stored session is only read through Find, so its
// expiry time cannot change under the expiry index.
//
// Threads: the broker thread only. Allocates per session added, never per message.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "broker/subscription_list.h"
#include "link/event_records.h"

namespace mqc {

// A session kept after its connection closed.
struct OfflineSession {
  // The broker keeps this client object while the session lives; null for a session
  // restored from the persistence file until the broker's object shows itself.
  const void* client = nullptr;
  SubscriptionList subscriptions;
  OfflineSessionEvent event;    // event.seq 0: not announced (no session asked for)
  std::int64_t gone_by_ns = 0;  // the broker has expired it by then; 0 never
  bool observed = false;        // went offline here with the observer told (not restored)
  // The broker did not tell when it expires this session (an MQTT 5 session on 2.1 without a
  // verified client layout): SessionTable asks the broker whether it still holds `client`.
  bool expiry_unknown = false;
};

class OfflineSessions {
 public:
  // Sessions kept at most by default (SessionTable::kMaxOfflineSessions).
  static constexpr std::size_t kDefaultMaxSessions = 100000;

  explicit OfflineSessions(std::size_t max_sessions = kDefaultMaxSessions)
      : max_sessions_(max_sessions == 0 ? 1 : max_sessions) {}

  struct Added {
    const OfflineSession& session;  // as stored
    // The session that left for it: the one of the same id, else the oldest when full.
    std::optional<OfflineSession> displaced;
  };
  // Adds `session` under `id` as the youngest. At most one session leaves for it: one of the
  // same id is replaced (then the count did not grow), else the oldest is forgotten when
  // max_sessions are kept.
  Added Add(const std::string& id, OfflineSession&& session);
  // The session of `id`; null when none.
  const OfflineSession* Find(const std::string& id) const;
  // Removes the session of `id` and hands it over; nothing when none.
  std::optional<OfflineSession> Take(const std::string& id);
  // Removes and hands over the session that expires first, if the broker has expired it by
  // `now_ns` (its gone_by_ns); sessions of one time in the order they were added. Call until
  // nothing is left. Nothing due costs one comparison.
  std::optional<std::pair<std::string, OfflineSession>> TakeExpired(std::int64_t now_ns);

  // Calls gone(id, session) for at most `count` of the sessions whose expiry is unknown, each
  // at most once, from where the last call stopped, in the order they were added and round
  // again from the oldest; appends the ids it returns true for to `*gone_ids` (the caller takes
  // them: nothing leaves during the walk). A round of calls whose counts add up to
  // unknown_expiry_count() visits every such session. No allocation but `*gone_ids`'s growth.
  template <typename Gone>
  void SweepUnknownExpiry(std::size_t count, Gone gone, std::vector<std::string>* gone_ids) {
    count = std::min(count, unknown_expiry_.size());
    auto at = unknown_expiry_.upper_bound(sweep_after_age_);
    for (std::size_t i = 0; i < count; ++i) {
      if (at == unknown_expiry_.end()) at = unknown_expiry_.begin();
      sweep_after_age_ = *at;
      const std::string& id = by_age_.find(*at)->second;
      if (gone(id, sessions_.find(id)->second.session)) gone_ids->push_back(id);
      ++at;
    }
  }
  std::size_t unknown_expiry_count() const { return unknown_expiry_.size(); }

  // Calls visit(id, session) for every session, in no particular order.
  template <typename Visit>
  void ForEach(Visit visit) const {
    for (const auto& [id, stored] : sessions_) visit(id, stored.session);
  }
  std::size_t size() const { return sessions_.size(); }
  std::size_t max_sessions() const { return max_sessions_; }

 private:
  struct Stored {
    Stored(OfflineSession&& moved, std::uint64_t added_age)
        : session(std::move(moved)), age(added_age) {}
    OfflineSession session;
    std::uint64_t age = 0;
  };
  using Map = std::unordered_map<std::string, Stored>;
  // Removes the session from the map and both orders; always returns it.
  std::optional<OfflineSession> Erase(Map::iterator it);

  std::size_t max_sessions_;
  std::uint64_t next_age_ = 0;
  Map sessions_;
  std::map<std::uint64_t, std::string> by_age_;
  std::multimap<std::int64_t, std::string> by_expiry_;  // gone_by_ns, client id
  std::set<std::uint64_t> unknown_expiry_;  // the ages of the sessions with expiry_unknown
  std::uint64_t sweep_after_age_ = 0;       // SweepUnknownExpiry goes on after this age
};

}  // namespace mqc
