// SPDX-License-Identifier: BSD-3-Clause
#include "companion/connection_registry.h"

#include <algorithm>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "link/clock.h"
#include "link/kubemq_strict.h"

namespace mqc {

namespace {

constexpr std::int64_t kMinuteNs = 60'000'000'000;

// A subscription's KubeMQ mapping and KubeMQ's verdict on it (shown in every mode).
void MapSubscription(const Connection& connection, DefaultPattern default_pattern,
                     Subscription* subscription) {
  subscription->mapping = MapTopicFilter(subscription->filter, default_pattern);
  SetUnlessEmpty(&subscription->kubemq_error,
                 KubemqSubscribeRefusal(subscription->filter, subscription->mapping,
                                        subscription->qos, connection.protocol_version,
                                        connection.client_id));
}

std::string ListenerName(const ListenerConfig& listener) {
  const bool websockets = listener.protocol == "websockets";
  const char* scheme =
      websockets ? (listener.tls ? "wss" : "ws") : (listener.tls ? "mqtts" : "mqtt");
  return std::string(scheme) + ":" + std::to_string(listener.port);
}

RequestStatistics Minus(const RequestStatistics& a, const RequestStatistics& b) {
  const auto sub = [](std::uint64_t x, std::uint64_t y) { return x >= y ? x - y : 0; };
  return RequestStatistics{
      sub(a.publish_count, b.publish_count), sub(a.publish_bytes, b.publish_bytes),
      sub(a.deliver_count, b.deliver_count), sub(a.deliver_bytes, b.deliver_bytes),
      sub(a.request_count, b.request_count)};
}

bool IsZero(const RequestStatistics& s) {
  return s.publish_count == 0 && s.publish_bytes == 0 && s.deliver_count == 0 &&
         s.deliver_bytes == 0 && s.request_count == 0;
}

bool Same(const RequestStatistics& a, const RequestStatistics& b) {
  return a.publish_count == b.publish_count && a.publish_bytes == b.publish_bytes &&
         a.deliver_count == b.deliver_count && a.deliver_bytes == b.deliver_bytes &&
         a.request_count == b.request_count;
}

}  // namespace

ConnectionRegistry::ConnectionRegistry(const ConnectionRegistryOptions& options)
    : options_(options) {}

void ConnectionRegistry::ViewChanged() {
  shared_snapshot_.reset();
  // Cheap without waiters; with some, the first call moves them all to the mutex, so a resync's
  // many calls wake each waiter once.
  view_changed_.notify_all();
}

void ConnectionRegistry::Index(const ConnectionPtr* held) {
  ViewChanged();
  by_client_id_.emplace((*held)->client_id, held);
}

void ConnectionRegistry::Unindex(const Connection* connection) {
  ViewChanged();
  auto [it, end] = by_client_id_.equal_range(connection->client_id);
  for (; it != end; ++it) {
    if (it->second->get() == connection) {
      by_client_id_.erase(it);
      return;
    }
  }
}

void ConnectionRegistry::RebuildIndex() {
  ViewChanged();
  by_client_id_.clear();
  by_client_id_.reserve(open_.size() + closed_.size());
  // One ViewChanged for the whole rebuild, not one per connection (Index).
  for (const auto& [seq, entry] : open_) {
    by_client_id_.emplace(entry.connection->client_id, &entry.connection);
  }
  for (const ConnectionPtr& connection : closed_) {
    by_client_id_.emplace(connection->client_id, &connection);
  }
}

void ConnectionRegistry::Put(OpenMap* map, std::uint64_t seq, Entry entry) {
  const bool indexed = map == &open_;
  auto [it, inserted] = map->try_emplace(seq);
  if (!inserted && indexed) Unindex(it->second.connection.get());
  it->second = std::move(entry);
  if (indexed) Index(&it->second.connection);
}

ConnectionPtr ConnectionRegistry::Remove(OpenMap* map, std::uint64_t seq) {
  auto it = map->find(seq);
  if (it == map->end()) return nullptr;
  if (map == &open_) Unindex(it->second.connection.get());  // it finds the pointer in place
  ConnectionPtr removed = std::move(it->second.connection);
  map->erase(it);
  return removed;
}

template <typename EditFunction>
void ConnectionRegistry::Edit(OpenMap* map, Entry* entry, EditFunction edit) {
  auto copy = std::make_shared<Connection>(*entry->connection);
  edit(copy.get());
  const bool indexed = map == &open_;
  if (indexed) Unindex(entry->connection.get());
  entry->connection = std::move(copy);
  if (indexed) Index(&entry->connection);
}

ConnectionRegistry::Entry ConnectionRegistry::FromEvent(const ConnectionEvent& event) const {
  Entry entry;
  entry.stats_slot = event.stats_slot < options_.stats.count ? event.stats_slot : kNoStatsSlot;
  auto connection = std::make_shared<Connection>();
  Connection& c = *connection;
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
  c.local_port = event.local_port;
  SetUnlessEmpty(&c.proxy_address, event.proxy_address);
  c.proxy_port = event.proxy_port;
  c.will = event.will;
  for (const ListenerConfig& listener : options_.listeners) {
    if (event.local_port != 0 && listener.port == event.local_port) {
      c.listener_name = ListenerName(listener);
      // Behind a load balancer that ends TLS, the broker refuses a PROXY v2 header without TLS
      // facts where the listener says so; it keeps none of those facts for a client.
      // Written only when true: a connection without TLS holds no TlsInfo (Boxed).
      if (listener.tls || (listener.proxy_protocol == 2 && listener.proxy_v2_require_tls)) {
        c.tls->enabled = true;
      }
      break;
    }
  }
  if (!event.peer_certificate_subject.empty()) {
    c.tls->peer_certificate_subject = event.peer_certificate_subject;
  }
  c.authentication.mechanism = event.auth_mechanism;
  c.authentication.state = event.auth_state;
  c.authentication.user_principal =
      event.username.empty() ? event.peer_certificate_subject : event.username;
  SetUnlessEmpty(&c.authentication.method, event.auth_method);
  c.bridge = event.bridge;
  if (c.bridge == BridgeRole::kOutgoing) {
    for (const BridgeConfig& bridge : options_.bridges) {
      if (bridge.local_clientid != c.client_id) continue;
      c.bridge_name = bridge.name;
      // The socket's peer is the remote broker's address; the configuration's is what the
      // broker connects to when the socket could not tell (written as a host name or an IP).
      if (c.ip_address.empty()) {
        c.ip_address = bridge.host;
        c.port = bridge.port;
      }
      break;
    }
  }
  entry.connection = std::move(connection);
  return entry;
}

ConnectionRegistry::Entry ConnectionRegistry::FromEvent(const OfflineSessionEvent& event) const {
  Entry entry;
  auto connection = std::make_shared<Connection>();
  Connection& c = *connection;
  c.seq = event.seq;
  c.uid = FormatUuid(event.uid);
  c.node_id = options_.node_id;
  c.state = ConnectionState::kOffline;
  c.open_time_ns = event.since_ns;
  c.session_expiry_time_ns = event.expiry_time_ns;
  c.client_id = event.client_id;
  c.username = event.username;
  c.protocol_version = event.protocol_version;
  c.clean_session = false;
  c.authentication.user_principal = event.username;
  entry.connection = std::move(connection);
  return entry;
}

void ConnectionRegistry::Apply(const ConnectionEvent& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  Entry entry = FromEvent(event);
  if (entry.connection->state == ConnectionState::kClosed) {
    Publish(ChangeKind::kClosed, nullptr, entry.connection);  // refused at CONNECT
    AddClosed(std::move(entry.connection));
  } else {
    // A resync re-sends the open connections: only a connect seen as it happens counts.
    if (!staging_) {
      flapping_.Connected(event.client_id, event.ip_address, event.open_time_ns);
      CheckFlapping(event);
    }
    StartWindow(&entry);
    Publish(ChangeKind::kOpened, nullptr, entry.connection);
    Put(&Target(), event.seq, std::move(entry));
  }
}

void ConnectionRegistry::Apply(const CloseEvent& event, std::int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  // During a resync the connection may be in the staged set, the current one, or both.
  ConnectionPtr closing;
  Entry window;  // its minute window, as the registry kept it
  for (OpenMap* map : {staging_ ? &*staging_ : nullptr, &open_}) {
    if (map == nullptr) continue;
    auto it = map->find(event.seq);
    if (it == map->end()) continue;
    if (!closing) window = it->second;
    ConnectionPtr removed = Remove(map, event.seq);
    if (!closing) closing = std::move(removed);
  }
  if (!closing) return;  // opened before this companion knew of it
  if (event.reason == CloseReason::kSessionTakenOver) {
    flapping_.TakenOver(closing->client_id, event.close_time_ns);
  }
  auto connection = std::make_shared<Connection>(*closing);
  connection->state = ConnectionState::kClosed;
  connection->close_time_ns = event.close_time_ns;
  connection->close_reason = event.reason;
  connection->total_statistics = event.totals;
  connection->recent_statistics = window.recent;
  connection->idle_ns = event.idle_ns;
  // The broker writes no denial of a closed connection: read once, while its slot is still its
  // own (a slot taken by a later CONNECT leaves them not shown).
  ReadDenialsOf(window, event.seq, &*connection->denials);
  // Its traffic of the minute it closed in is shown once that minute has ended: now, when the
  // close is read after the boundary, else at the next roll (RollClosedMinutes).
  // The minute it closed in is the registry's current window for a close stamped in it or
  // later (the roll comes a few milliseconds after the boundary: as for open connections, the
  // window is the registry's), else the stamp's.
  ClosedMinute minute{0, std::min(event.close_time_ns / kMinuteNs, window_minute_), {}};
  bool pending = false;
  if (window_minute_ >= 0) {
    minute.traffic = LastMinuteTraffic(window, *connection, minute.minute);
    if (minute.minute < window_minute_) {
      connection->recent_statistics =
          minute.minute + 1 == window_minute_ ? minute.traffic : RequestStatistics{};
    } else {
      pending = !IsZero(minute.traffic);
    }
  }
  Publish(ChangeKind::kClosed, closing, connection);
  const bool visit = pending || !IsZero(connection->recent_statistics);
  AddClosed(std::move(connection), visit ? &minute : nullptr);
  ExpireClosedLocked(now_ns);
}

void ConnectionRegistry::Apply(const OfflineSessionEvent& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  Entry entry = FromEvent(event);
  Publish(ChangeKind::kWentOffline, nullptr, entry.connection);
  Put(&Target(), event.seq, std::move(entry));
}

void ConnectionRegistry::Apply(const OfflineSessionEndEvent& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (staging_) Remove(&*staging_, event.seq);
  ConnectionPtr ended = Remove(&open_, event.seq);
  if (ended) Publish(ChangeKind::kExpired, std::move(ended), nullptr);
}

void ConnectionRegistry::ApplySubscription(bool subscribe, const SubscriptionEvent& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  OpenMap& target = Target();
  auto it = target.find(event.seq);
  if (it == target.end()) return;
  const ConnectionPtr before = it->second.connection;
  Edit(&target, &it->second, [&](Connection* connection) {
    auto& subscriptions = connection->subscriptions;
    auto entry = std::find_if(subscriptions.begin(), subscriptions.end(),
                              [&](const Subscription& s) { return s.filter == event.filter; });
    if (!subscribe) {
      if (entry != subscriptions.end()) subscriptions.erase(entry);
    } else if (entry != subscriptions.end()) {
      entry->qos = event.qos;
      MapSubscription(*connection, options_.default_pattern, &*entry);
    } else {
      // Room for exactly one more: the copy Edit made holds as many as it had, and a vector
      // that grows doubles (a stored connection is never changed in place again).
      subscriptions.reserve(subscriptions.size() + 1);
      subscriptions.push_back(Subscription{event.filter, event.qos, {}, {}});
      MapSubscription(*connection, options_.default_pattern, &subscriptions.back());
    }
  });
  if (&target == &open_) {
    Subscription subscription{event.filter, event.qos, {}, {}};
    MapSubscription(*it->second.connection, options_.default_pattern, &subscription);
    Publish(subscribe ? ChangeKind::kSubscribed : ChangeKind::kUnsubscribed, before,
            it->second.connection, &subscription);
  }
}

void ConnectionRegistry::Apply(const BridgeEvent& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  // During a resync the connection may be in the staged set, the current one, or both.
  for (OpenMap* map : {staging_ ? &*staging_ : nullptr, &open_}) {
    if (map == nullptr) continue;
    if (event.seq != 0) {
      auto it = map->find(event.seq);
      if (it != map->end() && it->second.connection->state == ConnectionState::kOpen) {
        SetBridge(map, &it->second, event.role);
      }
      continue;
    }
    for (auto& [seq, entry] : *map) {
      if (entry.connection->state != ConnectionState::kOpen ||
          entry.connection->bridge != BridgeRole::kUnknown) {
        continue;
      }
      SetBridge(map, &entry, event.role);
    }
  }
}

void ConnectionRegistry::Apply(const SettingsEvent& settings, std::int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (settings.default_pattern != options_.default_pattern) {
    options_.default_pattern = settings.default_pattern;
    for (OpenMap* map : {staging_ ? &*staging_ : nullptr, &open_}) {
      if (map == nullptr) continue;
      for (auto& [seq, entry] : *map) {
        if (entry.connection->subscriptions.empty()) continue;
        Edit(map, &entry, [this](Connection* connection) {
          for (Subscription& s : connection->subscriptions) {
            MapSubscription(*connection, options_.default_pattern, &s);
          }
        });
      }
    }
  }
  options_.closed_max = settings.closed_max;
  options_.closed_ttl_ns = settings.closed_ttl_ns;
  while (closed_.size() > options_.closed_max) PopClosed();
  ExpireClosedLocked(now_ns);
}

void ConnectionRegistry::BeginResync(const ResyncEvent& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  staging_.emplace();
  staging_generation_ = event.generation;
}

void ConnectionRegistry::EndResync(const ResyncEvent& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!staging_ || staging_generation_ != event.generation) return;
  // A connection known before keeps its minute window across the resync.
  for (auto& [seq, entry] : *staging_) {
    auto old = open_.find(seq);
    if (old == open_.end()) continue;
    entry.window_start = old->second.window_start;
    entry.window_minute = old->second.window_minute;
    entry.recent = old->second.recent;
  }
  open_ = std::move(*staging_);
  staging_.reset();
  RebuildIndex();
  staging_generation_.reset();
  synced_ = true;
  Publish(ChangeKind::kReset, nullptr, nullptr);
  synced_changed_.notify_all();
}

void ConnectionRegistry::SetBridge(OpenMap* map, Entry* entry, BridgeRole role) {
  if (entry->connection->bridge == role) return;
  ConnectionPtr before = entry->connection;
  Edit(map, entry, [&](Connection* c) { c->bridge = role; });
  if (map == &open_) Publish(ChangeKind::kUpdated, std::move(before), entry->connection);
}

void ConnectionRegistry::Publish(ChangeKind kind, ConnectionPtr before, ConnectionPtr after,
                                 const Subscription* subscription) {
  if (options_.changes == nullptr || (staging_ && kind != ChangeKind::kReset)) return;
  ConnectionChange change;
  change.kind = kind;
  change.before = std::move(before);
  change.after = std::move(after);
  if (subscription != nullptr) change.subscription = *subscription;
  options_.changes->Publish(std::move(change));
}

ConnectionList ConnectionRegistry::LiveSnapshot(std::uint64_t* as_of) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto live = std::make_shared<std::vector<ConnectionPtr>>();
  live->reserve(open_.size());
  for (const auto& [seq, entry] : open_) live->push_back(entry.connection);
  *as_of = options_.changes != nullptr ? options_.changes->last_sequence() : 0;
  return live;
}

std::optional<RequestStatistics> ConnectionRegistry::ReadTotals(const Entry& entry,
                                                                MessageCounts* messages,
                                                                MessageDrops* drops) const {
  if (options_.stats.count == 0 || entry.stats_slot == kNoStatsSlot) return std::nullopt;
  const ConnectionStatsSlot& slot = options_.stats.hot[entry.stats_slot];
  RequestStatistics totals;
  if (!ReadStatsSlot(slot, entry.connection->seq, &totals, drops)) return std::nullopt;
  // The rare part only where asked (a connection's details): the walks over every connection
  // read the traffic alone, one line of each.
  if (messages != nullptr &&
      !ReadMessageCounts(slot, options_.stats.rare[entry.stats_slot], entry.connection->seq,
                         messages)) {
    return std::nullopt;
  }
  return totals;
}

void ConnectionRegistry::ReadDenialsOf(const Entry& entry, std::uint64_t seq,
                                       Denials* denials) const {
  if (options_.stats.count == 0 || entry.stats_slot == kNoStatsSlot) return;
  ReadDenials(options_.stats.hot[entry.stats_slot], options_.stats.rare[entry.stats_slot], seq,
              denials);
}

bool ConnectionRegistry::OpenedInWindow(const Entry& entry) const {
  return window_minute_ >= 0 && entry.connection->open_time_ns >= window_minute_ * kMinuteNs;
}

RequestStatistics ConnectionRegistry::LastMinuteTraffic(const Entry& entry,
                                                        const Connection& closed,
                                                        std::int64_t minute) {
  // Opened in that minute: its whole life (the broker zeroed its slot at the open), however
  // late the registry read its events.
  if (closed.open_time_ns >= minute * kMinuteNs) return closed.total_statistics;
  // The window began in that minute: from its start (or from when it was first read, a lower
  // bound after a restart of the companion) to the close.
  if (entry.window_minute == minute) return Minus(closed.total_statistics, entry.window_start);
  // A roll read the slot's final figures after the close, before the close event was read: the
  // minute it closed in is the recent figure that roll made.
  if (entry.window_minute == minute + 1) return entry.recent;
  return RequestStatistics{};  // the registry cannot split its traffic by minute
}

void ConnectionRegistry::StartWindow(Entry* entry) const {
  // The broker zeroed the slot when the connection opened, and the companion reads the event
  // some time later (a moment, or a whole restart): what the slot counted in between belongs
  // to this window when the connection opened in it. Of one opened before the window began,
  // the figures at its start are lost: the window counts from here (a lower bound), and the
  // next one is whole.
  entry->window_start = OpenedInWindow(*entry) ? RequestStatistics{}
                                               : ReadTotals(*entry).value_or(RequestStatistics{});
  entry->window_minute = window_minute_;
}

std::int64_t ConnectionRegistry::NextWindowNs(std::int64_t now_ns) {
  return (now_ns / kMinuteNs + 1) * kMinuteNs;
}

void ConnectionRegistry::RollStatisticsWindow(std::int64_t now_ns) {
  const std::int64_t minute = now_ns / kMinuteNs;
  std::lock_guard<std::mutex> lock(mutex_);
  if (minute == window_minute_) return;
  const bool first = window_minute_ < 0;
  const bool complete = window_minute_ + 1 == minute;  // else minutes were missed
  window_minute_ = minute;
  // A staged connection (a resync under way) is one of the broker's too: its minute ends now.
  for (OpenMap* map : {&open_, staging_ ? &*staging_ : nullptr}) {
    if (map == nullptr) continue;
    for (auto& [seq, entry] : *map) {
      if (first) {
        // The clock starts: the connections seen before it learn when their window began.
        if (OpenedInWindow(entry)) entry.window_start = RequestStatistics{};
        entry.window_minute = minute;
        continue;
      }
      const std::optional<RequestStatistics> totals = ReadTotals(entry);
      if (!totals) continue;
      entry.recent = complete ? Minus(*totals, entry.window_start) : RequestStatistics{};
      entry.window_start = *totals;
      entry.window_minute = minute;
    }
  }
  RollClosedMinutes(minute);
}

void ConnectionRegistry::RollClosedMinutes(std::int64_t minute) {
  // Only the closed connections with a figure to show or to end; each changed one is stored
  // anew (a reader's snapshot keeps the value it took), and no change is published.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < closed_minutes_.size(); ++i) {
    const ClosedMinute& closed = closed_minutes_[i];
    ConnectionPtr& stored = closed_[closed.position - closed_popped_];
    const RequestStatistics shown =
        closed.minute + 1 == minute ? closed.traffic : RequestStatistics{};
    if (!Same(stored->recent_statistics, shown)) {
      auto copy = std::make_shared<Connection>(*stored);
      copy->recent_statistics = shown;
      Unindex(stored.get());
      stored = std::move(copy);
      Index(&stored);
    }
    // Kept while its minute has not ended, or while it shows traffic (zeros at the next roll).
    if (closed.minute >= minute || !IsZero(shown)) closed_minutes_[kept++] = closed;
  }
  closed_minutes_.resize(kept);
}

void ConnectionRegistry::AddClosed(ConnectionPtr connection, ClosedMinute* minute) {
  if (options_.closed_max == 0) return;
  closed_.push_back(std::move(connection));
  Index(&closed_.back());
  while (closed_.size() > options_.closed_max) PopClosed();
  if (minute != nullptr) {
    minute->position = closed_popped_ + closed_.size() - 1;
    closed_minutes_.push_back(*minute);
  }
}

void ConnectionRegistry::PopClosed() {
  Unindex(closed_.front().get());
  closed_.pop_front();
  ++closed_popped_;
  while (!closed_minutes_.empty() && closed_minutes_.front().position < closed_popped_) {
    closed_minutes_.pop_front();
  }
}

void ConnectionRegistry::ExpireClosed(std::int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  ExpireClosedLocked(now_ns);
}

void ConnectionRegistry::ExpireClosedLocked(std::int64_t now_ns) {
  while (!closed_.empty() && closed_.front()->close_time_ns + options_.closed_ttl_ns < now_ns) {
    PopClosed();
  }
}

std::vector<Connection> ConnectionRegistry::Snapshot() const { return CopyAll(false); }

std::vector<Connection> ConnectionRegistry::DetailedSnapshot() const { return CopyAll(true); }

std::vector<Connection> ConnectionRegistry::CopyAll(bool with_totals) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Connection> all;
  all.reserve(open_.size() + closed_.size());
  const std::int64_t now_ns = NowNs();
  for (const auto& [seq, entry] : open_) {
    all.push_back(*entry.connection);
    all.back().recent_statistics = entry.recent;
    if (!with_totals) continue;
    if (auto totals = ReadTotals(entry, &*all.back().messages, &*all.back().drops)) {
      all.back().total_statistics = *totals;
    }
    ReadDenialsOf(entry, seq, &*all.back().denials);
    AddFlapping(&all.back(), now_ns);
  }
  for (const ConnectionPtr& connection : closed_) {
    all.push_back(*connection);
    if (with_totals) AddFlapping(&all.back(), now_ns);
  }
  return all;
}

void ConnectionRegistry::CheckFlapping(const ConnectionEvent& event) {
  if (options_.flapping_max_count == 0 || event.client_id.empty()) return;
  if (flapping_.ConnectsWithin(event.client_id, options_.flapping_window_s, event.open_time_ns) <=
      options_.flapping_max_count) {
    return;
  }
  if (flapping_offenders_.size() >= kMaxFlappingOffenders) return;
  if (std::find(flapping_offenders_.begin(), flapping_offenders_.end(), event.client_id) !=
      flapping_offenders_.end()) {
    return;
  }
  flapping_offenders_.push_back(event.client_id);
}

std::vector<std::string> ConnectionRegistry::TakeFlappingOffenders() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> taken;
  taken.swap(flapping_offenders_);
  return taken;
}

void ConnectionRegistry::AddFlapping(Connection* connection, std::int64_t now_ns) const {
  if (flapping_.size() == 0) return;
  connection->flapping = flapping_.Read(connection->client_id, now_ns);
}

ConnectionList ConnectionRegistry::SharedSnapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (shared_snapshot_) return shared_snapshot_;
  auto all = std::make_shared<std::vector<ConnectionPtr>>();
  all->reserve(open_.size() + closed_.size());
  for (const auto& [seq, entry] : open_) all->push_back(entry.connection);
  all->insert(all->end(), closed_.begin(), closed_.end());
  shared_snapshot_ = std::move(all);
  return shared_snapshot_;
}

std::vector<ConnectionPtr> ConnectionRegistry::FindByClientId(std::string_view client_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<ConnectionPtr> found;
  auto [it, end] = by_client_id_.equal_range(client_id);
  for (; it != end; ++it) found.push_back(*it->second);
  return found;
}

void ConnectionRegistry::AddDetails(std::vector<Connection>* connections) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::int64_t now_ns = NowNs();
  for (Connection& connection : *connections) {
    AddFlapping(&connection, now_ns);
    if (connection.state != ConnectionState::kOpen) continue;
    auto it = open_.find(connection.seq);
    if (it == open_.end()) continue;
    connection.recent_statistics = it->second.recent;
    if (auto totals = ReadTotals(it->second, &*connection.messages, &*connection.drops)) {
      connection.total_statistics = *totals;
    }
    ReadDenialsOf(it->second, connection.seq, &*connection.denials);
  }
}

std::size_t ConnectionRegistry::CountLocked(ConnectionState state) const {
  std::size_t count = 0;
  for (const auto& [seq, entry] : open_) count += entry.connection->state == state ? 1 : 0;
  return count;
}

std::size_t ConnectionRegistry::FlappingClients(std::int64_t now_ns) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return flapping_.FlappingNow(now_ns);
}

std::size_t ConnectionRegistry::open_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return CountLocked(ConnectionState::kOpen);
}

std::size_t ConnectionRegistry::offline_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return CountLocked(ConnectionState::kOffline);
}

std::size_t ConnectionRegistry::closed_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return closed_.size();
}

bool ConnectionRegistry::synced() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return synced_;
}

bool ConnectionRegistry::current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return synced_ && !staging_;
}

bool ConnectionRegistry::WaitUntilSynced(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  return synced_changed_.wait_for(lock, timeout, [this] { return synced_; });
}

bool ConnectionRegistry::WaitUntilNotOpen(std::uint64_t seq,
                                          std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock<std::mutex> lock(mutex_);
  return view_changed_.wait_until(lock, deadline, [this, seq] {
    const auto it = open_.find(seq);
    return it == open_.end() || it->second.connection->state != ConnectionState::kOpen;
  });
}

}  // namespace mqc
