// SPDX-License-Identifier: BSD-3-Clause
#include "broker/session_table.h"

#include <algorithm>
#include <utility>

namespace mqc {

namespace {

// A session outlives its connection when the client asked for one (MQTT 3.1/3.1.1 clean session
// false). MQTT 5 clients set a session expiry the plugin API does not show, so theirs are kept
// too, unless the broker says their interval is 0 (SessionExpiry); the broker's own behaviour at
// the next CONNECT decides whether they are handed over.
template <typename Connection>
bool MayOutliveConnection(const Connection& event) {
  return !event.clean_session || event.protocol_version == 5;
}

// Whether the client asked for a session to resume: clean session false (MQTT 3.1/3.1.1), clean
// start false (MQTT 5). These are the sessions Mosquitto 2.0 writes to its persistence file,
// and the ones listed as offline (but for an MQTT 5 one whose interval the broker says is 0).
// An MQTT 5 clean start client may have a session expiry too: its session is kept for a resume,
// not listed.
template <typename Connection>
bool AskedForSession(const Connection& event) {
  return !event.clean_session;
}

}  // namespace

SessionTable::OpenConnection::OpenConnection(const ConnectionEvent& event)
    : seq(event.seq),
      uid(event.uid),
      open_time_ns(event.open_time_ns),
      stats_slot(event.stats_slot),
      keep_alive(event.keep_alive),
      port(event.port),
      local_port(event.local_port),
      proxy_port(event.proxy_port),
      protocol_version(event.protocol_version),
      clean_session(event.clean_session),
      auth_mechanism(event.auth_mechanism),
      auth_state(event.auth_state),
      bridge(event.bridge),
      will(event.will) {
  const std::string* strings[kStrings] = {&event.client_id,
                                          &event.username,
                                          &event.ip_address,
                                          &event.auth_method,
                                          &event.peer_certificate_subject,
                                          &event.proxy_address};
  std::uint32_t end = 0;
  for (std::size_t i = 0; i < kStrings; ++i) {
    end += static_cast<std::uint32_t>(strings[i]->size());
    ends[i] = end;
  }
  if (end == 0) return;
  text = std::make_unique<char[]>(end);
  char* at = text.get();
  for (const std::string* string : strings) {
    string->copy(at, string->size());
    at += string->size();
  }
}

ObservedConnection SessionTable::OpenConnection::Observed() const {
  ObservedConnection observed;
  observed.client_id = String(0);
  observed.username = String(1);
  observed.ip_address = String(2);
  observed.open_time_ns = open_time_ns;
  observed.keep_alive = keep_alive;
  observed.local_port = local_port;
  observed.protocol_version = protocol_version;
  observed.clean_session = clean_session;
  return observed;
}

ConnectionEvent SessionTable::OpenConnection::Event() const {
  ConnectionEvent event;
  event.seq = seq;
  event.uid = uid;
  event.open_time_ns = open_time_ns;
  event.protocol_version = protocol_version;
  event.clean_session = clean_session;
  event.auth_mechanism = auth_mechanism;
  event.auth_state = auth_state;
  event.keep_alive = keep_alive;
  event.port = port;
  event.local_port = local_port;
  event.stats_slot = stats_slot;
  event.client_id = String(0);
  event.username = String(1);
  event.ip_address = String(2);
  event.auth_method = String(3);
  event.peer_certificate_subject = String(4);
  event.proxy_address = String(5);
  event.proxy_port = proxy_port;
  event.bridge = bridge;
  event.will = will;
  return event;
}

SessionTable::SessionTable(EventSink* sink, std::uint64_t uuid_seed, StatsSlots stats,
                           BrokerCounters* counters)
    : sink_(sink), counters_(counters), stats_(stats), random_(uuid_seed) {}

Uuid SessionTable::NewUuid() {
  Uuid uid{};
  const std::uint64_t high = random_();
  const std::uint64_t low = random_();
  for (int i = 0; i < 8; ++i) {
    uid[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(high >> (56 - 8 * i));
    uid[static_cast<std::size_t>(8 + i)] = static_cast<std::uint8_t>(low >> (56 - 8 * i));
  }
  uid[6] = static_cast<std::uint8_t>((uid[6] & 0x0f) | 0x40);  // version 4
  uid[8] = static_cast<std::uint8_t>((uid[8] & 0x3f) | 0x80);  // RFC 4122 variant
  return uid;
}

ConnectionEvent SessionTable::MakeEvent(const ClientFacts& facts, std::int64_t now_ns) {
  ConnectionEvent event;
  event.seq = ++next_seq_;
  event.uid = NewUuid();
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
  event.proxy_address = facts.proxy_ip;
  event.proxy_port = facts.proxy_port;
  event.bridge = facts.bridge;
  event.will = facts.will;
  return event;
}

void SessionTable::Open(const void* client, const ClientFacts& facts, std::int64_t begin_ns,
                        bool resumes_session) {
  ConnectionEvent event = MakeEvent(facts, begin_ns);
  event.auth_state = facts.mechanism == AuthMechanism::kAnonymous || !facts.credentials_checked
                         ? AuthState::kUnauthenticated
                         : AuthState::kSuccess;
  event.stats_slot = stats_.Take(event.seq);
  OpenConnection connection(event);
  if (std::optional<OfflineSession> offline = offline_.Take(facts.client_id)) {
    if (!facts.clean_session && resumes_session) {
      connection.subscriptions = std::move(offline->subscriptions);
    }
    EmitOfflineEnd(*offline);  // announced gone before the connection that replaces it
  }
  if (counters_ != nullptr) Bump(counters_->connects);
  EmitConnection(event);
  connection.subscriptions.ForEach([&](const SubscriptionList::Entry& entry) {
    EmitSubscription(EventType::kSubscribe, event.seq, entry.filter, entry.qos);
  });
  ConnectionStatsSlot* const stats = stats_.At(connection.stats_slot);
  auto owned = std::make_unique<OpenConnection>(std::move(connection));
  if (observer_ != nullptr) observer_->Opened(owned->Observed());
  open_.Insert(client, OpenEntry{stats, std::move(owned)});
}

void SessionTable::RecordRefused(const ClientFacts& facts, std::int64_t begin_ns,
                                 std::int64_t now_ns) {
  ConnectionEvent refused = MakeEvent(facts, begin_ns);
  refused.auth_state = AuthState::kFailure;
  refused.close_time_ns = now_ns;
  refused.close_reason = CloseReason::kAuthenticationFailed;
  if (counters_ != nullptr) Bump(counters_->connects_refused);
  EmitConnection(refused);
}

bool SessionTable::Close(const void* client, CloseReason reason, std::int64_t now_ns,
                         std::int64_t idle_ns, SessionExpiry expiry,
                         const std::string* connecting_id, bool reloading) {
  OpenEntry* const entry = open_.Find(client);
  if (entry == nullptr) {
    // The offline client object of a session that the CONNECT being handled resumes.
    if (connecting_id == nullptr) return false;
    const OfflineSession* offline = offline_.Find(*connecting_id);
    // A session restored from the persistence file has no known client object yet: the
    // broker disconnects that session's object inside this CONNECT, and no other.
    return offline != nullptr && (offline->client == client || offline->client == nullptr);
  }
  OpenConnection& connection = *entry->connection;
  const bool taken_over = connecting_id != nullptr && *connecting_id == connection.client_id();
  if (taken_over) {
    reason = CloseReason::kSessionTakenOver;
  } else if (reloading) {
    reason = CloseReason::kAccessRevoked;
  }
  CloseEvent close;
  close.seq = connection.seq;
  close.close_time_ns = now_ns;
  close.reason = reason;
  close.idle_ns = idle_ns;
  if (counters_ != nullptr) Bump(counters_->disconnects[static_cast<std::size_t>(reason)]);
  const std::uint32_t slot = connection.stats_slot;
  if (slot != kNoStatsSlot) close.totals = stats_.GiveBack(slot);
  sink_->Emit(close);
  // A takeover's old client: the broker zeroed its interval to hand its session over.
  if (taken_over) expiry = SessionExpiry{};
  const bool keep = MayOutliveConnection(connection) &&
                    (AskedForSession(connection) || !connection.subscriptions.empty()) &&
                    expiry.known != SessionExpiry::Known::kEnds;
  if (observer_ != nullptr) {
    SessionAfterClose after = SessionAfterClose::kEnds;
    if (taken_over) {
      after = SessionAfterClose::kTakenOver;
    } else if (keep && AskedForSession(connection)) {
      after = SessionAfterClose::kKeptOffline;
    }
    observer_->Closed(connection.Observed(), reason, now_ns, after);
  }
  if (keep) KeepOffline(connection, client, now_ns, expiry, taken_over);
  open_.Erase(client);
  return taken_over;
}

void SessionTable::KeepOffline(const OpenConnection& connection, const void* client,
                               std::int64_t now_ns, SessionExpiry expiry, bool taken_over) {
  OfflineSession session;
  session.client = client;
  session.subscriptions = connection.subscriptions;
  // A takeover's old connection: its session passes to the new one at once, not offline.
  if (AskedForSession(connection) && !taken_over) {
    session.event.seq = ++next_seq_;
    session.event.uid = NewUuid();
    session.event.since_ns = now_ns;
    session.event.protocol_version = connection.protocol_version;
    session.event.client_id = connection.client_id();
    session.event.username = connection.username();
    session.observed = observer_ != nullptr;
  }
  // The interval the broker holds, where known: the broker's word, else MQTT 3.1/3.1.1's
  // "never" (0xffffffff, src/handle_connect.c). An MQTT 5 session's unknown interval is bounded
  // by persistent_client_expiration alone, and its time stays unknown.
  std::optional<std::uint32_t> interval;
  if (expiry.known == SessionExpiry::Known::kInterval) {
    interval = expiry.interval_s;
  } else if (connection.protocol_version < 5) {
    interval = 0xffffffff;
  }
  if (interval) {
    if (const std::optional<ExpiryTimes> times =
            BrokerExpiry(now_ns, *interval, persistent_expiration_s_)) {
      session.gone_by_ns = times->gone_by_ns;
      session.event.expiry_time_ns = times->expiry_time_ns;
    }
  } else if (persistent_expiration_s_ > 0) {
    session.gone_by_ns = BrokerExpiry(now_ns, 0xffffffff, persistent_expiration_s_)->gone_by_ns;
  }
  // Where the broker can be asked, it tells when it dropped a session of unknown time
  // (EndGoneOffline). A takeover's session passes to its new connection at once.
  session.expiry_unknown = follow_unknown_expiry_ && !interval && !taken_over;
  AddOffline(std::string(connection.client_id()), std::move(session));
}

void SessionTable::RestoreOffline(const std::vector<PersistedSession>& sessions,
                                  std::int64_t now_ns) {
  for (const PersistedSession& persisted : sessions) {
    OfflineSession session;
    for (const PersistedSubscription& subscription : persisted.subscriptions) {
      session.subscriptions.Append(subscription.filter, subscription.qos);
    }
    session.subscriptions.ShrinkToFit();
    session.event.seq = ++next_seq_;
    session.event.uid = NewUuid();
    session.event.since_ns = now_ns;
    // 0xffffffff never expires; 0 with no time is a session the broker never set one for.
    if (persisted.session_expiry_interval != 0xffffffff && persisted.session_expiry_time > 0 &&
        persisted.session_expiry_time < std::int64_t{1} << 32) {
      session.event.expiry_time_ns = persisted.session_expiry_time * 1000000000;
    }
    session.event.client_id = persisted.client_id;
    session.event.username = persisted.username;
    AddOffline(persisted.client_id, std::move(session), /*announce=*/false);
  }
}

void SessionTable::AddOffline(const std::string& id, OfflineSession&& session, bool announce) {
  OfflineSessions::Added added = offline_.Add(id, std::move(session));
  if (added.displaced) EmitOfflineEnd(*added.displaced);
  if (announce && added.session.event.seq != 0) EmitOffline(added.session);
  if (offline_.size() == 1 && offline_listener_ != nullptr) {
    offline_listener_->FirstOfflineSession();
  }
}

void SessionTable::EmitOfflineEnd(const OfflineSession& session) {
  if (session.event.seq == 0) return;
  sink_->Emit(OfflineSessionEndEvent{session.event.seq});
}

std::optional<SessionTable::ExpiryTimes> SessionTable::BrokerExpiry(
    std::int64_t now_ns, std::uint32_t interval_s, std::int64_t persistent_expiration_s) {
  constexpr std::int64_t kSecond = 1000000000;
  std::int64_t seconds = interval_s;
  if (persistent_expiration_s > 0) {
    seconds = std::min(seconds, persistent_expiration_s);
  } else if (interval_s == 0xffffffff) {
    return std::nullopt;  // never
  }
  const std::int64_t expiry_s = now_ns / kSecond + seconds;
  return ExpiryTimes{expiry_s * kSecond, (expiry_s + 1) * kSecond};
}

void SessionTable::ExpireOffline(std::int64_t now_ns) {
  // The broker expires a session in the first second past its expiry time (BrokerExpiry).
  while (std::optional<std::pair<std::string, OfflineSession>> due = offline_.TakeExpired(now_ns)) {
    EndExpired(due->first, due->second);
  }
}

void SessionTable::EndExpired(const std::string& id, const OfflineSession& session) {
  if (observer_ != nullptr && session.observed) observer_->OfflineSessionEnded(id);
  EmitOfflineEnd(session);
}

bool SessionTable::EmitOffline(const OfflineSession& session) {
  bool ok = sink_->Emit(session.event);
  session.subscriptions.ForEach([&](const SubscriptionList::Entry& entry) {
    ok = EmitSubscription(EventType::kSubscribe, session.event.seq, entry.filter, entry.qos) && ok;
  });
  return ok;
}

void SessionTable::Subscribe(const void* client, std::string_view filter, std::uint8_t qos) {
  OpenEntry* const entry = open_.Find(client);
  if (entry == nullptr) return;
  OpenConnection& connection = *entry->connection;
  if (!connection.subscriptions.Set(filter, qos)) return;
  EmitSubscription(EventType::kSubscribe, connection.seq, filter, qos);
}

bool SessionTable::SubscribedQos(const void* client, std::string_view filter,
                                 std::uint8_t* qos) const {
  const OpenEntry* const entry = open_.Find(client);
  return entry != nullptr && entry->connection->subscriptions.Get(filter, qos);
}

bool SessionTable::HoldsSubscription(const void* client, std::string_view filter) const {
  std::uint8_t qos = 0;
  return SubscribedQos(client, filter, &qos);
}

void SessionTable::Unsubscribe(const void* client, std::string_view filter) {
  OpenEntry* const entry = open_.Find(client);
  if (entry == nullptr) return;
  OpenConnection& connection = *entry->connection;
  std::uint8_t qos = 0;
  if (!connection.subscriptions.Remove(filter, &qos)) return;
  EmitSubscription(EventType::kUnsubscribe, connection.seq, filter, qos);
}

std::uint8_t SessionTable::OfflineQos(const void* client, std::string_view client_id,
                                      std::string_view topic) const {
  // The key string is built only on this path (messages for offline sessions), never per
  // message to a connected client.
  const OfflineSession* session = offline_.Find(std::string(client_id));
  if (session == nullptr || (session->client != client && session->client != nullptr)) {
    return 2;
  }
  std::uint8_t qos = 0;
  return session->subscriptions.MaxMatchingQos(topic, &qos) ? qos : 2;
}

const SubscriptionList* SessionTable::SubscriptionsOf(const void* client,
                                                      std::string_view client_id) const {
  if (const OpenEntry* entry = open_.Find(client)) return &entry->connection->subscriptions;
  // As OfflineQos: the key string is built only for a message to an offline session.
  const OfflineSession* session = offline_.Find(std::string(client_id));
  if (session == nullptr || (session->client != client && session->client != nullptr)) {
    return nullptr;
  }
  return &session->subscriptions;
}

bool SessionTable::EmitConnection(const ConnectionEvent& event) { return sink_->Emit(event); }

bool SessionTable::EmitSubscription(EventType type, std::uint64_t seq, std::string_view filter,
                                    std::uint8_t qos) {
  subscription_.seq = seq;
  subscription_.qos = qos;
  subscription_.filter.assign(filter);  // within the capacity of earlier filters: no allocation
  return sink_->Emit(type, subscription_);
}

bool SessionTable::EmitBridge(std::uint64_t seq, BridgeRole role) {
  // A refused record is a lost event as any other: the next resync sends every connection's
  // role in its kConnection.
  return sink_->Emit(BridgeEvent{seq, role});
}

const SubscriptionList* SessionTable::OpenRecord(const void* client, ConnectionEvent* event) const {
  const OpenEntry* const entry = open_.Find(client);
  if (entry == nullptr) return nullptr;
  *event = entry->connection->Event();
  return &entry->connection->subscriptions;
}

const OfflineSession* SessionTable::ListedOffline(const std::string& id) const {
  const OfflineSession* const found = offline_.Find(id);
  return found != nullptr && found->event.seq != 0 ? found : nullptr;
}

}  // namespace mqc
