#include "broker/session_table.h"

#include <algorithm>
#include <utility>

namespace mqc {

namespace {

// A session outlives its connection when the client asked for one (MQTT 3.1/3.1.1 clean session
// false). MQTT 5 clients set a session expiry the plugin API does not show, so theirs are kept
// too; the broker's own behaviour at the next CONNECT decides whether they are handed over.
bool MayOutliveConnection(const ConnectionEvent& event) {
  return !event.clean_session || event.protocol_version == 5;
}

}  // namespace

SessionTable::SessionTable(EventSink* sink, std::uint64_t uuid_seed, ConnectionStatsSlot* stats,
                           std::size_t stats_count, BrokerCounters* counters)
    : sink_(sink), counters_(counters), stats_(stats), random_(uuid_seed) {
  free_stats_.reserve(stats_count);
  // Lowest slot on top: the first connections use the first (already touched) pages.
  for (std::size_t i = stats_count; i > 0; --i) {
    free_stats_.push_back(static_cast<std::uint32_t>(i - 1));
  }
}

void SessionTable::BeginConnect(const void* client, ClientFacts facts, std::int64_t now_ns) {
  Settle();
  pending_ = Pending{client, std::move(facts), now_ns, false};
}

bool SessionTable::IsRecheck(const void* client, bool has_socket) {
  if (open_.count(client) == 0 && has_socket) return false;
  Settle();
  return true;
}

ConnectionEvent SessionTable::MakeEvent(const ClientFacts& facts, std::int64_t now_ns) {
  ConnectionEvent event;
  event.seq = ++next_seq_;
  const std::uint64_t high = random_();
  const std::uint64_t low = random_();
  for (int i = 0; i < 8; ++i) {
    event.uid[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(high >> (56 - 8 * i));
    event.uid[static_cast<std::size_t>(8 + i)] = static_cast<std::uint8_t>(low >> (56 - 8 * i));
  }
  event.uid[6] = static_cast<std::uint8_t>((event.uid[6] & 0x0f) | 0x40);  // version 4
  event.uid[8] = static_cast<std::uint8_t>((event.uid[8] & 0x3f) | 0x80);  // RFC 4122 variant
  event.open_time_ns = now_ns;
  event.protocol_version = facts.protocol_version;
  event.clean_session = facts.clean_session;
  event.auth_mechanism = facts.mechanism;
  event.keep_alive = facts.keep_alive;
  event.port = facts.port;
  event.local_port = facts.local_port;
  event.client_id = facts.client_id;
  event.username = facts.username;
  event.ip_address = facts.ip_address;
  event.auth_method = facts.auth_method;
  event.peer_certificate_subject = facts.peer_certificate_subject;
  return event;
}

void SessionTable::Accept() {
  Pending pending = std::move(*pending_);
  pending_.reset();
  OpenConnection connection;
  connection.event = MakeEvent(pending.facts, pending.begin_ns);
  connection.event.auth_state =
      pending.facts.mechanism == AuthMechanism::kAnonymous || !pending.facts.credentials_checked
          ? AuthState::kUnauthenticated
          : AuthState::kSuccess;
  if (!free_stats_.empty()) {
    const std::uint32_t slot = free_stats_.back();
    free_stats_.pop_back();
    ConnectionStatsSlot& stats = stats_[slot];
    // A seqlock: a reader that saw the old owner's seq before and after its reads knows that
    // none of them saw this reset. The exchange (acquire) keeps the resets after it.
    stats.seq.exchange(0, std::memory_order_acq_rel);
    for (auto* counter :
         {&stats.publish_count, &stats.publish_bytes, &stats.deliver_count, &stats.deliver_bytes,
          &stats.request_count, &stats.idle_ms, &stats.idle_sampled_ns}) {
      counter->store(0, std::memory_order_relaxed);
    }
    stats.seq.store(connection.event.seq, std::memory_order_release);
    connection.event.stats_slot = slot;
  }
  auto offline = offline_.find(pending.facts.client_id);
  if (offline != offline_.end()) {
    if (!pending.facts.clean_session && pending.resumes_session) {
      connection.subscriptions = std::move(offline->second.subscriptions);
    }
    offline_by_age_.erase(offline->second.age);
    offline_.erase(offline);
  }
  if (counters_ != nullptr) Bump(counters_->connects);
  EmitConnection(connection.event);
  for (const auto& entry : connection.subscriptions) {
    EmitSubscription(EventType::kSubscribe, connection.event.seq, entry);
  }
  open_[pending.client] = std::move(connection);
}

void SessionTable::Disconnect(const void* client, bool has_client_id, CloseReason reason,
                              std::int64_t now_ns, std::int64_t idle_ns) {
  if (pending_ && pending_->client == client) {
    if (!has_client_id) {
      ConnectionEvent refused = MakeEvent(pending_->facts, pending_->begin_ns);
      refused.auth_state = AuthState::kFailure;
      refused.close_time_ns = now_ns;
      refused.close_reason = CloseReason::kAuthenticationFailed;
      pending_.reset();
      if (counters_ != nullptr) Bump(counters_->connects_refused);
      EmitConnection(refused);
      return;
    }
    Accept();  // accepted, and gone again before any other callback
  }
  // A pending CONNECT stays pending: when this DISCONNECT is its takeover of the old client,
  // the broker re-checks the resumed session's queued messages next, and those checks must
  // still be recognised as happening inside that CONNECT (IsPending).
  CloseOpen(client, reason, now_ns, idle_ns);
}

void SessionTable::CloseOpen(const void* client, CloseReason reason, std::int64_t now_ns,
                             std::int64_t idle_ns) {
  auto it = open_.find(client);
  if (it == open_.end()) {
    // The offline client object of a session that a pending CONNECT resumes.
    if (pending_) {
      auto offline = offline_.find(pending_->facts.client_id);
      if (offline != offline_.end() && offline->second.client == client) {
        pending_->resumes_session = true;
      }
    }
    return;
  }
  OpenConnection& connection = it->second;
  if (pending_ && pending_->facts.client_id == connection.event.client_id) {
    reason = CloseReason::kSessionTakenOver;
    pending_->resumes_session = true;
  } else if (reloading_) {
    reason = CloseReason::kAccessRevoked;
  }
  CloseEvent close;
  close.seq = connection.event.seq;
  close.close_time_ns = now_ns;
  close.reason = reason;
  close.idle_ns = idle_ns;
  if (counters_ != nullptr) Bump(counters_->disconnects[static_cast<std::size_t>(reason)]);
  const std::uint32_t slot = connection.event.stats_slot;
  if (slot != kNoStatsSlot) {
    const ConnectionStatsSlot& stats = stats_[slot];
    close.totals.publish_count = stats.publish_count.load(std::memory_order_relaxed);
    close.totals.publish_bytes = stats.publish_bytes.load(std::memory_order_relaxed);
    close.totals.deliver_count = stats.deliver_count.load(std::memory_order_relaxed);
    close.totals.deliver_bytes = stats.deliver_bytes.load(std::memory_order_relaxed);
    close.totals.request_count = stats.request_count.load(std::memory_order_relaxed);
    free_stats_.push_back(slot);
  }
  Encode(close, &buffer_);
  sink_->Emit(EventType::kClose, buffer_);
  if (MayOutliveConnection(connection.event) && !connection.subscriptions.empty()) {
    KeepOffline(connection, client);
  }
  open_.erase(it);
}

void SessionTable::KeepOffline(const OpenConnection& connection, const void* client) {
  const std::string& id = connection.event.client_id;
  auto existing = offline_.find(id);
  if (existing != offline_.end()) {
    offline_by_age_.erase(existing->second.age);
    offline_.erase(existing);
  }
  if (offline_.size() >= kMaxOfflineSessions) {
    auto oldest = offline_by_age_.begin();
    offline_.erase(oldest->second);
    offline_by_age_.erase(oldest);
  }
  const std::uint64_t age = ++next_offline_age_;
  offline_[id] = OfflineSession{client, age, connection.subscriptions};
  offline_by_age_[age] = id;
}

void SessionTable::Subscribe(const void* client, std::string_view filter, std::uint8_t qos) {
  auto it = open_.find(client);
  if (it == open_.end()) return;
  auto& subscriptions = it->second.subscriptions;
  auto entry = std::find_if(subscriptions.begin(), subscriptions.end(),
                            [&](const SubscriptionEntry& e) { return e.filter == filter; });
  if (entry == subscriptions.end()) {
    subscriptions.push_back(SubscriptionEntry{std::string(filter), qos});
    entry = subscriptions.end() - 1;
  } else if (entry->qos == qos) {
    return;
  } else {
    entry->qos = qos;
  }
  EmitSubscription(EventType::kSubscribe, it->second.event.seq, *entry);
}

void SessionTable::Unsubscribe(const void* client, std::string_view filter) {
  auto it = open_.find(client);
  if (it == open_.end()) return;
  auto& subscriptions = it->second.subscriptions;
  auto entry = std::find_if(subscriptions.begin(), subscriptions.end(),
                            [&](const SubscriptionEntry& e) { return e.filter == filter; });
  if (entry == subscriptions.end()) return;
  const SubscriptionEntry removed = std::move(*entry);
  subscriptions.erase(entry);
  EmitSubscription(EventType::kUnsubscribe, it->second.event.seq, removed);
}

std::uint8_t SessionTable::OfflineQos(const void* client, std::string_view client_id,
                                      std::string_view topic) const {
  // The key string is built only on this path (messages for offline sessions), never per
  // message to a connected client.
  auto it = offline_.find(std::string(client_id));
  if (it == offline_.end() || it->second.client != client) return 2;
  std::uint8_t qos = 0;
  bool matched = false;
  for (const auto& entry : it->second.subscriptions) {
    if (TopicMatchesFilter(entry.filter, topic)) {
      matched = true;
      qos = std::max(qos, entry.qos);
    }
  }
  return matched ? qos : 2;
}

bool SessionTable::EmitConnection(const ConnectionEvent& event) {
  Encode(event, &buffer_);
  return sink_->Emit(EventType::kConnection, buffer_);
}

bool SessionTable::EmitSubscription(EventType type, std::uint64_t seq,
                                    const SubscriptionEntry& entry) {
  SubscriptionEvent event;
  event.seq = seq;
  event.qos = entry.qos;
  event.filter = entry.filter;
  Encode(event, &buffer_);
  return sink_->Emit(type, buffer_);
}

bool SessionTable::BeginFullState(std::uint64_t generation) {
  resync_active_ = false;
  Encode(ResyncEvent{generation}, &buffer_);
  if (!sink_->Emit(EventType::kResyncBegin, buffer_)) return false;
  resync_generation_ = generation;
  resync_queue_.clear();
  resync_queue_.reserve(open_.size());
  for (const auto& entry : open_) resync_queue_.push_back(entry.first);
  resync_next_ = 0;
  resync_active_ = true;
  return true;
}

bool SessionTable::EmitOneInFull(const void* client) {
  auto it = open_.find(client);
  if (it == open_.end()) return true;  // closed since the resync began
  const OpenConnection& connection = it->second;
  std::vector<std::string> payloads;
  payloads.reserve(1 + connection.subscriptions.size());
  Encode(connection.event, &buffer_);
  payloads.push_back(buffer_);
  for (const auto& entry : connection.subscriptions) {
    Encode(SubscriptionEvent{connection.event.seq, entry.qos, entry.filter}, &buffer_);
    payloads.push_back(buffer_);
  }
  std::vector<std::size_t> sizes;
  for (const auto& payload : payloads) sizes.push_back(payload.size());
  if (!sink_->Fits(sizes)) return false;
  bool ok = sink_->Emit(EventType::kConnection, payloads[0]);
  for (std::size_t i = 1; ok && i < payloads.size(); ++i) {
    ok = sink_->Emit(EventType::kSubscribe, payloads[i]);
  }
  if (!ok) resync_active_ = false;
  return ok;
}

bool SessionTable::ContinueFullState() {
  if (!resync_active_) return false;
  while (resync_next_ < resync_queue_.size()) {
    if (!EmitOneInFull(resync_queue_[resync_next_])) return false;
    ++resync_next_;
  }
  Encode(ResyncEvent{resync_generation_}, &buffer_);
  if (!sink_->Fits({buffer_.size()}) || !sink_->Emit(EventType::kResyncEnd, buffer_)) {
    return false;
  }
  resync_active_ = false;
  resync_queue_.clear();
  return true;
}

}  // namespace mqc
