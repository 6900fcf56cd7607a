// SPDX-License-Identifier: BSD-3-Clause
#include "broker/offline_sessions.h"

namespace mqc {

OfflineSessions::Added OfflineSessions::Add(const std::string& id, OfflineSession&& session) {
  std::optional<OfflineSession> displaced;
  auto existing = sessions_.find(id);
  if (existing != sessions_.end()) {
    displaced = Erase(existing);
  } else if (sessions_.size() >= max_sessions_) {
    displaced = Erase(sessions_.find(by_age_.begin()->second));  // the oldest
  }
  const std::uint64_t age = ++next_age_;
  by_age_.emplace(age, id);
  if (session.gone_by_ns != 0) by_expiry_.emplace(session.gone_by_ns, id);
  if (session.expiry_unknown) unknown_expiry_.insert(age);
  // Moved in once, constructed in its node (the id is not in the map any more).
  auto it = sessions_
                .emplace(std::piecewise_construct, std::forward_as_tuple(id),
                         std::forward_as_tuple(std::move(session), age))
                .first;
  return Added{it->second.session, std::move(displaced)};
}

const OfflineSession* OfflineSessions::Find(const std::string& id) const {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : &it->second.session;
}

std::optional<OfflineSession> OfflineSessions::Take(const std::string& id) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  return Erase(it);
}

std::optional<std::pair<std::string, OfflineSession>> OfflineSessions::TakeExpired(
    std::int64_t now_ns) {
  if (by_expiry_.empty() || by_expiry_.begin()->first > now_ns) return std::nullopt;
  // Copied first: Erase removes the index entry that holds it.
  std::string id = by_expiry_.begin()->second;
  std::optional<OfflineSession> session = Erase(sessions_.find(id));
  return std::make_pair(std::move(id), std::move(*session));
}

std::optional<OfflineSession> OfflineSessions::Erase(Map::iterator it) {
  by_age_.erase(it->second.age);
  unknown_expiry_.erase(it->second.age);
  const std::int64_t gone_by_ns = it->second.session.gone_by_ns;
  if (gone_by_ns != 0) {
    auto [first, last] = by_expiry_.equal_range(gone_by_ns);
    for (auto entry = first; entry != last; ++entry) {
      if (entry->second == it->first) {
        by_expiry_.erase(entry);
        break;
      }
    }
  }
  std::optional<OfflineSession> session(std::move(it->second.session));  // moved out once
  sessions_.erase(it);
  return session;
}

}  // namespace mqc
