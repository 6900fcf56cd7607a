// SPDX-License-Identifier: BSD-3-Clause
// The broker thread's records: the open connections (keyed by the broker's client pointer,
// never by client id), the offline sessions (by client id) and their subscriptions, and the
// events that announce each change to an EventSink (BrokerLink, or a test's). Which CONNECT is
// accepted, refused, a takeover or a resume is ConnectSettlement's to decide
// (connect_settlement.h); the paged full state is ResyncWriter's (resync_writer.h).
// docs/architecture.md ("The broker thread's view") has the long story.
//
// Threads: the broker thread only. Allocates per connection and per subscription, never per
// message.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "broker/client_facts.h"
#include "broker/event_sink.h"
#include "broker/offline_sessions.h"
#include "broker/persistence_file.h"
#include "broker/pointer_map.h"
#include "broker/stats_slot_pool.h"
#include "broker/subscription_list.h"
#include "link/event_records.h"
#include "link/shared_region.h"

namespace mqc {

// What becomes of a client's session when its connection closes.
enum class SessionAfterClose : std::uint8_t {
  kEnds,         // nothing outlives the connection (or nothing the registry lists)
  kKeptOffline,  // a listed offline session (the client asked for one)
  kTakenOver,    // a new connection of the same client id takes it over at once
};

// What the broker tells of a closing connection's session expiry interval: what the CONNECT
// asked for (MQTT 3.1.1: 0 for clean session true, 0xffffffff, never, for false), or what the
// client's DISCONNECT changed it to. Both versions read it at the connection's end
// (src/context.c: context__disconnect calls the plugins before session_expiry__add).
struct SessionExpiry {
  enum class Known : std::uint8_t {
    kNothing,   // the broker did not say (2.0 without a verified client layout)
    kEnds,      // 0: the session ends with its connection (2.1's DISCONNECT event)
    kOutlives,  // above 0, how far unknown (2.1's CLIENT_OFFLINE without the layout)
    kInterval,  // `interval_s`, above 0 (the client layout's session_expiry_interval)
  };
  Known known = Known::kNothing;
  std::uint32_t interval_s = 0;  // with kInterval; 0xffffffff never expires

  // An interval the layout read: 0 ends the session with its connection.
  static SessionExpiry Interval(std::uint32_t seconds) {
    return seconds == 0 ? SessionExpiry{Known::kEnds, 0} : SessionExpiry{Known::kInterval, seconds};
  }
};

// A connection as an observer sees it: views into the table's own record, valid during the
// call only (no copy per open or close).
struct ObservedConnection {
  std::string_view client_id;
  std::string_view username;
  std::string_view ip_address;
  std::int64_t open_time_ns = 0;
  std::uint16_t keep_alive = 0;
  std::uint16_t local_port = 0;
  std::uint8_t protocol_version = 0;
  bool clean_session = true;
};

// Who learns, besides the companion, when the table counts a connection as opened or closed
// (presence messages, broker/presence.h). Called on the broker thread, from inside the table's
// own decisions: exactly the moments its events are emitted.
class ConnectionObserver {
 public:
  virtual ~ConnectionObserver() = default;
  virtual void Opened(const ObservedConnection& connection) = 0;
  virtual void Closed(const ObservedConnection& connection, CloseReason reason,
                      std::int64_t close_ns, SessionAfterClose after) = 0;
  // A listed offline session that went offline here (not one restored at start) expired.
  virtual void OfflineSessionEnded(std::string_view client_id) = 0;
};

// Told when the table keeps an offline session while it kept none (2.1's offline watch,
// broker/offline_watch.h), from inside the call that keeps it.
class OfflineSessionsListener {
 public:
  virtual ~OfflineSessionsListener() = default;
  virtual void FirstOfflineSession() = 0;
};

class SessionTable {
 public:
  // Offline persistent sessions kept at most; the oldest is forgotten first.
  static constexpr std::size_t kMaxOfflineSessions = OfflineSessions::kDefaultMaxSessions;

  // `stats`: the per-connection statistics slots in the shared region (may be none);
  // `counters`: where connects, refusals and disconnects are counted (may be null).
  SessionTable(EventSink* sink, std::uint64_t uuid_seed, StatsSlots stats = {},
               BrokerCounters* counters = nullptr);

  // What the per-message path needs to know of a client: one lookup in open_ (PointerMap), no
  // allocation.
  struct ClientView {
    bool open = false;
    ConnectionStatsSlot* stats = nullptr;  // null when open without a slot, or not open
  };
  ClientView View(const void* client) const {
    ConnectionStatsSlot* const* stats = OpenStats(client);
    if (stats == nullptr) return ClientView{};
    return ClientView{true, *stats};
  }
  // The same for the callbacks' fast paths, as one pointer (fewer instructions than a
  // ClientView): null when the client is not open, else where its statistics slot is kept
  // (itself null for a connection without one).
  ConnectionStatsSlot* const* OpenStats(const void* client) const {
    const OpenEntry* entry = open_.Find(client);
    return entry != nullptr ? &entry->stats : nullptr;
  }
  // The rare part of a slot of this table (its message counts and denials): never per message.
  ConnectionRareSlot& Rare(const ConnectionStatsSlot& slot) const { return stats_.Rare(slot); }
  // For a message queued to an offline session: the highest QoS of that session's
  // subscriptions matching `topic` (the broker throws the message away when it is 0), or 2
  // when the plugin does not know the session.
  std::uint8_t OfflineQos(const void* client, std::string_view client_id,
                          std::string_view topic) const;
  // The subscriptions of an open connection, or of the offline session of `client_id` held by
  // `client`; null when the plugin knows neither (broker/queue_drops.h asks, at a full queue).
  const SubscriptionList* SubscriptionsOf(const void* client, std::string_view client_id) const;

  // A CONNECT ConnectSettlement accepted (begun at `begin_ns`): the connection opens and is
  // announced; an offline session of its id ends first, and hands its subscriptions over when
  // the client asked to resume it and the broker did (`resumes_session`).
  void Open(const void* client, const ClientFacts& facts, std::int64_t begin_ns,
            bool resumes_session);
  // A CONNECT the broker refused: announced as a connection closed before it opened.
  void RecordRefused(const ClientFacts& facts, std::int64_t begin_ns, std::int64_t now_ns);

  // The connection of `client` closes (nothing when it is not open). `connecting_id`: the client
  // id of the CONNECT being handled, if any; `reloading`: a reload's re-check is under way
  // (the close is then a revocation). What the broker tells of the session's expiry decides
  // what is kept (docs/architecture.md). Returns whether this close hands a session to that
  // CONNECT: a takeover of an open connection of its id, or the broker dropping the offline
  // client object of the session it resumes.
  bool Close(const void* client, CloseReason reason, std::int64_t now_ns, std::int64_t idle_ns,
             SessionExpiry expiry, const std::string* connecting_id, bool reloading);

  // At start, before the first client: the sessions the broker restored from its persistence
  // file become offline sessions with their subscriptions (at most kMaxOfflineSessions). Not
  // announced one by one: called before the companion starts, whose first full resync carries
  // them (events written before it would be skipped, and could fill the ring).
  void RestoreOffline(const std::vector<PersistedSession>& sessions, std::int64_t now_ns);

  // The broker's persistent_client_expiration (0: none): the longest an offline session is
  // kept (docs/how-it-works.md has how each version applies it).
  void SetPersistentClientExpiration(std::int64_t seconds) { persistent_expiration_s_ = seconds; }
  // At TICK: ends the offline sessions the broker has expired by now. Nothing to do costs one
  // comparison.
  void ExpireOffline(std::int64_t now_ns);

  // Whether the broker can be asked which client object it holds under an id
  // (BrokerCapabilities::client_lookup): then offline sessions of unknown expiry are followed
  // with EndGoneOffline. Set before the first client.
  void SetUnknownExpiryFollowed(bool followed) { follow_unknown_expiry_ = followed; }
  // A PUBLISH or SUBSCRIBE filter of `client` an ACL source refused at `now_ns` (wall clock):
  // the broker's total, and the connection's denials where it is open with a slot
  // (RecordDenial). Called at a denial only.
  void Denied(const void* client, AclAccess access, std::string_view topic, std::int64_t now_ns) {
    if (counters_ != nullptr) Bump(counters_->acl_denials[static_cast<std::size_t>(access)]);
    ConnectionStatsSlot* const* stats = OpenStats(client);
    if (stats != nullptr && *stats != nullptr) {
      RecordDenial(stats_.Rare(**stats), access, topic, now_ns);
    }
  }
  // Whether connections opened from now on show their ACL denials (StatsSlotPool), and the
  // broker's totals are exact (BrokerCounters::acl_denials_shown).
  void SetDenialsShown(bool shown) {
    stats_.set_denials_shown(shown);
    if (counters_ != nullptr) counters_->acl_denials_shown.store(shown ? 1 : 0);
  }
  // The offline sessions EndGoneOffline follows.
  std::size_t unknown_expiry_count() const { return offline_.unknown_expiry_count(); }
  // At TICK: asks `held_by(id)` (the broker's client object of that id, null for none) about at
  // most `count` of the sessions of unknown expiry, going round, and ends as expired each one
  // the broker holds no object for any more: 2.1 expires a session without a plugin event
  // (docs/broker-versions.md, "How 2.1 shows a session's expiry"). A different object is a new
  // connection of the id, left to its CONNECT. No allocation once `gone_ids_` has grown.
  template <typename HeldBy>
  void EndGoneOffline(std::size_t count, HeldBy held_by) {
    gone_ids_.clear();
    offline_.SweepUnknownExpiry(
        count, [&](const std::string& id, const OfflineSession&) { return held_by(id) == nullptr; },
        &gone_ids_);
    for (const std::string& id : gone_ids_) {
      if (std::optional<OfflineSession> gone = offline_.Take(id)) EndExpired(id, *gone);
    }
  }

  // When the broker expires a session that goes offline at `now_ns` (Unix time) with this
  // interval, as src/session_expiry.c (2.0.11 to 2.1.2) computes it in whole seconds
  // (docs/how-it-works.md); nothing for one that never expires. `gone_by_ns`: the start of the
  // second by which the broker has dropped it.
  struct ExpiryTimes {
    std::int64_t expiry_time_ns = 0;  // session_expiry_time, in nanoseconds
    std::int64_t gone_by_ns = 0;
  };
  static std::optional<ExpiryTimes> BrokerExpiry(std::int64_t now_ns, std::uint32_t interval_s,
                                                 std::int64_t persistent_expiration_s);

  // A subscription the broker allowed (ConnectSettlement holds a kick's re-checks first).
  void Subscribe(const void* client, std::string_view filter, std::uint8_t qos);
  // The QoS the open client holds `filter` at; false when it does not hold it.
  bool SubscribedQos(const void* client, std::string_view filter, std::uint8_t* qos) const;
  // Whether the open client holds `filter`: a SUBSCRIBE check of it is then a re-check (a kick's,
  // 2.0.12 on) or a renewal, not a new subscription.
  bool HoldsSubscription(const void* client, std::string_view filter) const;
  void Unsubscribe(const void* client, std::string_view filter);

  // What ResyncWriter reads: the open clients and listed offline sessions (by id) now, and each
  // one's record as it is when written. Null: closed or gone since.
  template <typename Visit>
  void ForEachOpenClient(Visit visit) {
    open_.ForEach([&](const void* client, OpenEntry&) { visit(client); });
  }
  template <typename Visit>
  void ForEachListedOffline(Visit visit) const {
    offline_.ForEach([&](const std::string& id, const OfflineSession& session) {
      if (session.event.seq != 0) visit(id);
    });
  }
  const SubscriptionList* OpenRecord(const void* client, ConnectionEvent* event) const;
  const OfflineSession* ListedOffline(const std::string& id) const;

  // The client layout was verified (broker_layout.h): `role(client)` tells the bridge role of
  // each open connection still unknown (ConnectSettlement asks it for the pending CONNECT). One
  // kBridge of seq 0 says that the open connections still unknown are no bridges, then one kBridge
  // per exception: each bridge found, and each one whose role could not be read (still unknown).
  // Once per broker run: it visits every open connection.
  template <typename RoleOf>
  void ResolveBridges(RoleOf role) {
    std::vector<std::pair<std::uint64_t, BridgeRole>> exceptions;
    open_.ForEach([&](const void* client, OpenEntry& entry) {
      OpenConnection& connection = *entry.connection;
      if (connection.bridge != BridgeRole::kUnknown) return;
      connection.bridge = role(client);
      if (connection.bridge != BridgeRole::kNone) {
        exceptions.emplace_back(connection.seq, connection.bridge);
      }
    });
    EmitBridge(0, BridgeRole::kNone);
    for (const auto& [seq, bridge] : exceptions) EmitBridge(seq, bridge);
  }

  // Presence (may be null: none). Not owned.
  void SetObserver(ConnectionObserver* observer) { observer_ = observer; }
  // 2.1's offline watch (may be null: none). Not owned.
  void SetOfflineListener(OfflineSessionsListener* listener) { offline_listener_ = listener; }

  std::size_t open_count() const { return open_.size(); }
  // The slots of the open connections' table (its capacity: what one round of SweepOpen walks).
  std::size_t open_table_slots() const { return open_.capacity(); }
  // Calls visit(client, stats slot) for the open connections with a statistics slot found in
  // the next `slots` slots of the open table, going on where the last call stopped: a round of
  // calls covering open_table_slots() slots visits every open connection (PointerMap::
  // ForEachInSlots says what a concurrent change may do). No allocation.
  template <typename Visit>
  void SweepOpen(std::size_t slots, Visit visit) {
    sweep_at_ = open_.ForEachInSlots(sweep_at_, slots, [&](const void* client, OpenEntry& entry) {
      if (entry.stats != nullptr) visit(client, entry.stats);
    });
  }
  std::size_t offline_count() const { return offline_.size(); }
  bool IsOpen(const void* client) const { return open_.Find(client) != nullptr; }

 private:
  // What a connection keeps while open: the fields of its ConnectionEvent, its strings in one
  // allocation (client id, username, IP address, auth method, certificate subject, proxy
  // address), and its subscriptions. Event() rebuilds the whole event, for a resync.
  struct OpenConnection {
    std::uint64_t seq = 0;
    Uuid uid{};
    std::int64_t open_time_ns = 0;
    std::uint32_t stats_slot = kNoStatsSlot;
    std::uint16_t keep_alive = 0;
    std::uint16_t port = 0;
    std::uint16_t local_port = 0;
    std::uint16_t proxy_port = 0;
    std::uint8_t protocol_version = 0;
    bool clean_session = true;
    AuthMechanism auth_mechanism = AuthMechanism::kUnspecified;
    AuthState auth_state = AuthState::kUnspecified;
    BridgeRole bridge = BridgeRole::kUnknown;
    WillState will = WillState::kUnknown;
    static constexpr std::size_t kStrings = 6;
    std::uint32_t ends[kStrings] = {};  // where each string ends in `text`
    std::unique_ptr<char[]> text;
    SubscriptionList subscriptions;

    explicit OpenConnection(const ConnectionEvent& event);
    ConnectionEvent Event() const;
    ObservedConnection Observed() const;
    std::string_view String(std::size_t i) const {
      const std::uint32_t begin = i == 0 ? 0 : ends[i - 1];
      return std::string_view(text.get() + begin, ends[i] - begin);
    }
    std::string_view client_id() const { return String(0); }
    std::string_view username() const { return String(1); }
  };
  // An open connection in open_: its statistics slot, for the per-message path to reach
  // without going through the connection (the same slot as connection->stats_slot; null for
  // none), and the connection.
  struct OpenEntry {
    ConnectionStatsSlot* stats = nullptr;
    std::unique_ptr<OpenConnection> connection;
  };
  ConnectionEvent MakeEvent(const ClientFacts& facts, std::int64_t now_ns);
  bool EmitConnection(const ConnectionEvent& event);
  bool EmitBridge(std::uint64_t seq, BridgeRole role);
  bool EmitSubscription(EventType type, std::uint64_t seq, std::string_view filter,
                        std::uint8_t qos);
  void KeepOffline(const OpenConnection& connection, const void* client, std::int64_t now_ns,
                   SessionExpiry expiry, bool taken_over);
  // Adds an offline session (replacing one of that id, forgetting the oldest when full),
  // announcing the end of the one it displaced and, when it is listed, itself.
  void AddOffline(const std::string& id, OfflineSession&& session, bool announce = true);
  // Announces the end of an offline session that left offline_, when it was listed.
  void EmitOfflineEnd(const OfflineSession& session);
  // The end of a session the broker expired (it left offline_): the observer, then the event.
  void EndExpired(const std::string& id, const OfflineSession& session);
  bool EmitOffline(const OfflineSession& session);
  Uuid NewUuid();

  EventSink* sink_;
  ConnectionObserver* observer_ = nullptr;
  OfflineSessionsListener* offline_listener_ = nullptr;
  BrokerCounters* counters_;
  StatsSlotPool stats_;
  std::mt19937_64 random_;
  std::uint64_t next_seq_ = 0;
  PointerMap<OpenEntry> open_;  // by the broker's client object
  std::size_t sweep_at_ = 0;    // SweepOpen's cursor in open_
  OfflineSessions offline_;     // by client id, with their age and expiry orders
  std::int64_t persistent_expiration_s_ = 0;
  bool follow_unknown_expiry_ = false;
  std::vector<std::string> gone_ids_;  // EndGoneOffline's, kept for its capacity
  SubscriptionEvent subscription_;  // reused for every subscription emitted (its filter's capacity)
};

}  // namespace mqc
