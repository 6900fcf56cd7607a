#include "registry.h"

#include <algorithm>
#include <utility>

namespace mqc {

Registry::Registry(const RegistryOptions& options) : options_(options) {}

Connection Registry::FromEvent(const ConnectionEvent& event) const {
  Connection c;
  c.seq = event.seq;
  c.uid = FormatUuid(event.uid);
  c.node_id = options_.node_id;
  c.state = event.close_time_ns != 0 ? ConnectionState::kClosed : ConnectionState::kOpen;
  c.open_time_ns = event.open_time_ns;
  c.close_time_ns = event.close_time_ns;
  c.close_reason = event.close_reason;
  c.client_id = event.client_id;
  c.username = event.username;
  c.protocol_version = event.protocol_version;
  c.clean_session = event.clean_session;
  c.keep_alive = event.keep_alive;
  c.ip_address = event.ip_address;
  c.port = event.port;
  c.authentication.mechanism = event.auth_mechanism;
  c.authentication.state = event.auth_state;
  c.authentication.user_principal = event.username;
  c.authentication.method = event.auth_method;
  return c;
}

bool Registry::Apply(EventType type, std::string_view payload, std::int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  switch (type) {
    case EventType::kConnection: {
      ConnectionEvent event;
      if (!Decode(payload, &event)) return false;
      Connection connection = FromEvent(event);
      if (connection.state == ConnectionState::kClosed) {
        AddClosed(std::move(connection));
      } else {
        Target()[event.seq] = std::move(connection);
      }
      return true;
    }
    case EventType::kClose: {
      CloseEvent event;
      if (!Decode(payload, &event)) return false;
      // During a resync the connection may be in the staged set, the current one, or both.
      std::optional<Connection> closing;
      for (OpenMap* map : {staging_ ? &*staging_ : nullptr, &open_}) {
        if (map == nullptr) continue;
        auto it = map->find(event.seq);
        if (it == map->end()) continue;
        if (!closing) closing = std::move(it->second);
        map->erase(it);
      }
      if (!closing) return true;  // opened before this companion knew of it
      Connection connection = std::move(*closing);
      connection.state = ConnectionState::kClosed;
      connection.close_time_ns = event.close_time_ns;
      connection.close_reason = event.reason;
      connection.total_statistics = event.totals;
      AddClosed(std::move(connection));
      ExpireClosedLocked(now_ns);
      return true;
    }
    case EventType::kSubscribe:
    case EventType::kUnsubscribe: {
      SubscriptionEvent event;
      if (!Decode(payload, &event)) return false;
      OpenMap& target = Target();
      auto it = target.find(event.seq);
      if (it == target.end()) return true;
      auto& subscriptions = it->second.subscriptions;
      auto entry = std::find_if(subscriptions.begin(), subscriptions.end(),
                                [&](const Subscription& s) { return s.filter == event.filter; });
      if (type == EventType::kUnsubscribe) {
        if (entry != subscriptions.end()) subscriptions.erase(entry);
      } else if (entry != subscriptions.end()) {
        entry->qos = event.qos;
      } else {
        subscriptions.push_back(
            Subscription{event.filter, event.qos,
                         MapTopicFilter(event.filter, options_.default_pattern)});
      }
      return true;
    }
    case EventType::kResyncBegin: {
      ResyncEvent event;
      if (!Decode(payload, &event)) return false;
      staging_.emplace();
      staging_generation_ = event.generation;
      return true;
    }
    case EventType::kResyncEnd: {
      ResyncEvent event;
      if (!Decode(payload, &event)) return false;
      if (!staging_ || staging_generation_ != event.generation) return true;
      open_ = std::move(*staging_);
      staging_.reset();
      staging_generation_.reset();
      synced_ = true;
      synced_changed_.notify_all();
      return true;
    }
  }
  return false;
}

void Registry::AddClosed(Connection connection) {
  if (options_.closed_max == 0) return;
  closed_.push_back(std::move(connection));
  while (closed_.size() > options_.closed_max) closed_.pop_front();
}

void Registry::ExpireClosed(std::int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  ExpireClosedLocked(now_ns);
}

void Registry::ExpireClosedLocked(std::int64_t now_ns) {
  while (!closed_.empty() && closed_.front().close_time_ns + options_.closed_ttl_ns < now_ns) {
    closed_.pop_front();
  }
}

std::vector<Connection> Registry::Snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Connection> all;
  all.reserve(open_.size() + closed_.size());
  for (const auto& [seq, connection] : open_) all.push_back(connection);
  all.insert(all.end(), closed_.begin(), closed_.end());
  return all;
}

std::size_t Registry::open_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return open_.size();
}

std::array<std::size_t, kPatternCount> Registry::SubscriptionsByPattern() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::array<std::size_t, kPatternCount> counts{};
  for (const auto& [seq, connection] : open_) {
    for (const Subscription& subscription : connection.subscriptions) {
      ++counts[static_cast<std::size_t>(subscription.mapping.pattern)];
    }
  }
  return counts;
}

std::size_t Registry::closed_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return closed_.size();
}

bool Registry::synced() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return synced_;
}

}  // namespace mqc

namespace mqc {

bool Registry::WaitUntilSynced(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  return synced_changed_.wait_for(lock, timeout, [this] { return synced_; });
}

}  // namespace mqc
