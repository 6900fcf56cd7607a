// SPDX-License-Identifier: BSD-3-Clause
// The broker thread's own record of connections, and the events it sends to the companion.
//
// Mosquitto 2.0 has no connect, subscribe or unsubscribe event (docs/broker-versions.md,
// "Mosquitto 2.0"). So:
//   - a CONNECT is seen at BASIC_AUTH (or EXT_AUTH_START), before the broker's decision. It stays
//     pending until the next broker callback of any kind: by then the broker has finished
//     handling that CONNECT, and had it refused the client, the pending client's own DISCONNECT
//     (with its id already gone) would have come first.
//   - connections are keyed by the broker's client pointer, never by client id: in a takeover
//     the new CONNECT comes before the old connection's DISCONNECT, and a refused client has no
//     id any more at its DISCONNECT.
//   - a takeover's old connection is closed before the new one is announced, so a reader of the
//     events never sees two connections with one client id.
//   - a persistent session's subscriptions are kept by client id after its DISCONNECT and handed
//     to its next connection when the broker resumes that session (it then disconnects the old,
//     offline client inside the new CONNECT), since a resume sends no SUBSCRIBE.
//   - a config reload (SIGHUP) makes the broker re-run BASIC_AUTH for every client it holds,
//     connected or offline (docs/reload.md). That is a re-check, not a CONNECT: IsRecheck tells
//     them apart, and a connection the broker closes during the reload (from BeginReload to
//     EndReload) lost its right to stay: it closes as kAccessRevoked.
//   - sessions the broker restored from its persistence file are seeded at start
//     (RestoreOffline) and handed over the same way; the broker's client object of such a
//     session is unknown until it shows itself (an offline delivery or its resume).
//   - the offline sessions a client asked for (clean session / clean start false, and every
//     restored one) are announced as such (kOfflineSession) until they end.
// The table is the source of a full resync when the companion (re)starts or lost events.
// It hands its events to an EventSink as typed records (event_records.h); the sink encodes them
// (BrokerLink) or keeps them (tests).
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

class SessionTable {
 public:
  // Offline persistent sessions kept at most; the oldest is forgotten first.
  static constexpr std::size_t kMaxOfflineSessions = OfflineSessions::kDefaultMaxSessions;

  // `stats`: `stats_count` per-connection statistics slots in the shared region (may be 0);
  // `counters`: where connects, refusals and disconnects are counted (may be null).
  SessionTable(EventSink* sink, std::uint64_t uuid_seed, ConnectionStatsSlot* stats = nullptr,
               std::size_t stats_count = 0, BrokerCounters* counters = nullptr);

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
  // The client whose CONNECT is being handled (its resumed session is being re-checked).
  bool IsPending(const void* client) const { return pending_ && pending_->client == client; }
  // Whether Settle has anything to do: a CONNECT pending, or subscription checks held.
  bool has_unsettled() const { return pending_.has_value() || held_client_ != nullptr; }

  // For a message queued to an offline session: the highest QoS of that session's
  // subscriptions matching `topic` (the broker throws the message away when it is 0), or 2
  // when the plugin does not know the session.
  std::uint8_t OfflineQos(const void* client, std::string_view client_id,
                          std::string_view topic) const;

  // A CONNECT is being authenticated (BASIC_AUTH, EXT_AUTH_START). A client without a socket
  // is an offline session re-checked at a reload, not a CONNECT: it is ignored.
  void BeginConnect(const void* client, ClientFacts facts, std::int64_t now_ns);

  // Whether an authentication event for `client` re-checks a client the broker already holds
  // rather than starting a CONNECT: the client is open here, or has no socket (an offline
  // session; a CONNECT always arrives on a socket), or its CONNECT is pending (an MQTT 5
  // re-authentication, AUTH 0x19, is EXT_AUTH_START again). Settles a pending CONNECT of
  // another client when it is.
  bool IsRecheck(const void* client, bool has_socket);

  // The broker reloads its configuration (RELOAD event) and re-checks every client; until
  // EndReload (the next TICK), a DISCONNECT of an open connection is the reload revoking it.
  void BeginReload() {
    Settle();
    reloading_ = true;
  }
  void EndReload() { reloading_ = false; }
  bool reloading() const { return reloading_; }

  // Call at the start of every broker callback but DISCONNECT: settles a pending CONNECT as
  // accepted, since the broker has finished handling it, and applies held subscription checks
  // (Subscribe), since no DISCONNECT followed them.
  void Settle() {
    if (pending_) SettlePending();
    if (held_client_ != nullptr) ResolveHeld(/*disconnecting=*/false);
  }
  // Settle for a SUBSCRIBE check of `client`: its own held checks stay held (a kick re-checks
  // every subscription in a row).
  void SettleExceptHeldOf(const void* client) {
    if (pending_) SettlePending();
    if (held_client_ != nullptr && held_client_ != client) ResolveHeld(/*disconnecting=*/false);
  }
  // Mosquitto 2.1 confirms every CONNECT it accepts (its CONNECT event, Confirm), and frees the
  // id of a client it refuses in enhanced authentication before that client's DISCONNECT would
  // fire, so none does. With confirmed connects, Settle refuses a pending enhanced-
  // authentication CONNECT that was not confirmed (a password CONNECT that is refused still
  // gets its DISCONNECT first).
  void SetConnectsConfirmed(bool confirmed) { connects_confirmed_ = confirmed; }
  // The broker accepted `client`'s CONNECT.
  void Confirm(const void* client) {
    if (IsPending(client)) Accept();
  }

  // DISCONNECT. `has_client_id` is false for a client the broker refused. `reason` is what the
  // caller could tell (client disconnect or connection lost); a takeover is recognised here.
  // A DISCONNECT of another client while a CONNECT is pending happens inside that CONNECT (a
  // takeover or a session resume): the old connection is closed, and the new one stays pending
  // until the next callback settles it.
  // `expiry`: what the broker tells of the session's expiry interval. kEnds: nothing is kept
  // (neither listed offline nor kept for a resume); an interval: the session is kept until the
  // broker expires it (ExpireOffline), and listed with that time when it is listed at all;
  // kNothing and kOutlives: kept as the client asked (clean session / clean start false), with
  // no time unless persistent_client_expiration bounds it. A takeover's old connection hands
  // its session over whatever it says (the broker zeroes the old client's interval for it).
  void Disconnect(const void* client, bool has_client_id, CloseReason reason, std::int64_t now_ns,
                  std::int64_t idle_ns = -1, SessionExpiry expiry = {});

  // At start, before the first client: the sessions the broker restored from its persistence
  // file become offline sessions with their subscriptions (at most kMaxOfflineSessions). Not
  // announced one by one: called before the companion starts, whose first full resync carries
  // them (events written before it would be skipped, and could fill the ring).
  void RestoreOffline(const std::vector<PersistedSession>& sessions, std::int64_t now_ns);

  // The broker's persistent_client_expiration (0: none). With it, the broker expires a session
  // that goes offline after that long at most (an MQTT 3.1.1 one after exactly that long; an
  // MQTT 5 one sooner when its own interval is shorter, visible only through the client
  // layout). Sessions restored from the persistence file are never expired by Mosquitto 2.0.11.
  void SetPersistentClientExpiration(std::int64_t seconds) { persistent_expiration_s_ = seconds; }
  // At TICK: ends the offline sessions the broker has expired by now. Nothing to do costs one
  // comparison.
  void ExpireOffline(std::int64_t now_ns);

  // Whether the broker can be asked which client object it holds under an id (2.1's
  // mosquitto_client, BrokerCapabilities::client_lookup): then an offline session whose expiry
  // the broker did not tell (an MQTT 5 one without a verified client layout) is followed with
  // EndGoneOffline. Set before the first client.
  void SetUnknownExpiryFollowed(bool followed) { follow_unknown_expiry_ = followed; }
  // The offline sessions EndGoneOffline follows.
  std::size_t unknown_expiry_count() const { return offline_.unknown_expiry_count(); }
  // At TICK: asks `held_by(id)` (the broker's client object of that id, null for none) about at
  // most `count` of the sessions of unknown expiry, going round (OfflineSessions::
  // SweepUnknownExpiry), and ends each one the broker holds no object for any more, as
  // ExpireOffline ends an expired one. Mosquitto 2.1 expires a session without a plugin event
  // (src/session_expiry.c: session_expiry__check, v2.1.2 and master): it takes the client out
  // of its by-id table (context__add_to_disused), and frees it later. A different object is a
  // new connection of the id: its CONNECT resumes or ends the session (Accept), so it is left
  // alone here. No allocation once `gone_ids_` has grown.
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
  // expiry interval, as src/session_expiry.c (2.0.11 to 2.1.2) does: its session_expiry_time
  // is the loop's whole second (db.now_real_s) plus the interval, or plus
  // persistent_client_expiration when that is set and shorter; an interval of 0xffffffff
  // without persistent_client_expiration never expires (nothing). `gone_by_ns`: the broker
  // drops the session at the first second past that time (session_expiry__check compares
  // whole seconds, once a second), so by the start of the next second.
  struct ExpiryTimes {
    std::int64_t expiry_time_ns = 0;  // session_expiry_time, in nanoseconds
    std::int64_t gone_by_ns = 0;
  };
  static std::optional<ExpiryTimes> BrokerExpiry(std::int64_t now_ns, std::uint32_t interval_s,
                                                 std::int64_t persistent_expiration_s);

  // A subscription the broker allowed. Mosquitto 2.0.12 on (and Debian's 2.0.11) re-checks
  // each subscription of a persistent client it kicks as a SUBSCRIBE ACL check with QoS 0, right
  // before the client's DISCONNECT (src/plugin_public.c: check_subscription_acls), and removes
  // the ones denied. So where such checks reach the plugin (`may_be_recheck`, 2.0's ACL_CHECK),
  // a QoS 0 check of a filter held at a higher QoS is held: a DISCONNECT of that client next
  // drops it, any other event applies it (Settle). A real downgrade followed at once by a
  // dropped connection is then not applied: the one case this cannot tell apart.
  void Subscribe(const void* client, std::string_view filter, std::uint8_t qos,
                 bool may_be_recheck = true);
  // A SUBSCRIBE check that another ACL source denied: when the client holds the filter, that
  // was a kick's re-check if the client's DISCONNECT follows, and the broker removed it.
  void SubscribeDenied(const void* client, std::string_view filter);
  // Whether the open client holds `filter`: a SUBSCRIBE check of it is then a re-check (a kick's,
  // 2.0.12 on) or a renewal, not a new subscription.
  bool HoldsSubscription(const void* client, std::string_view filter) const;
  void Unsubscribe(const void* client, std::string_view filter);

  // A full resync, spread over as many calls as the sink needs: BeginFullState emits
  // ResyncBegin and notes which connections are open; each ContinueFullState emits as many of
  // them (each with its subscriptions) as fit, then ResyncEnd, and returns true once done.
  // Events of the connections meanwhile go out as usual. A refused Emit abandons the resync
  // (start again with a new generation).
  bool BeginFullState(std::uint64_t generation);
  bool ContinueFullState();
  bool full_state_active() const { return resync_active_; }

  // The client layout was verified (broker_layout.h): `role(client)` tells the bridge role of
  // each open connection still unknown, and of the CONNECT being handled (announced later with
  // it). One kBridge of seq 0 says that the open connections still unknown are no bridges,
  // then one kBridge per exception: each bridge found, and each one whose role could not be
  // read (still unknown). Once per broker run: it visits every open connection.
  template <typename RoleOf>
  void ResolveBridges(RoleOf role) {
    if (pending_ && pending_->facts.bridge == BridgeRole::kUnknown) {
      pending_->facts.bridge = role(pending_->client);
    }
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
  struct Pending {
    const void* client = nullptr;
    ClientFacts facts;
    std::int64_t begin_ns = 0;
    bool resumes_session = false;  // the broker disconnected the old client of this id for it
  };
  void Accept();
  void Refuse(std::int64_t now_ns);
  void SettlePending() {
    if (connects_confirmed_ && pending_->facts.mechanism == AuthMechanism::kEnhanced) {
      Refuse(pending_->begin_ns);
    } else {
      Accept();
    }
  }
  // Applies (not `disconnecting`) or drops the held subscription checks; see Subscribe.
  void ResolveHeld(bool disconnecting);
  void Hold(const void* client, std::string_view filter, bool denied);
  bool EmitOneInFull(const void* client);
  // Emits `head` (a ConnectionEvent or an OfflineSessionEvent) and `subscriptions` of its seq,
  // all or none.
  template <typename Head>
  bool EmitWhole(const Head& head, const SubscriptionList& subscriptions);
  ConnectionEvent MakeEvent(const ClientFacts& facts, std::int64_t now_ns);
  bool EmitConnection(const ConnectionEvent& event);
  bool EmitBridge(std::uint64_t seq, BridgeRole role);
  bool EmitSubscription(EventType type, std::uint64_t seq, std::string_view filter,
                        std::uint8_t qos);
  void KeepOffline(const OpenConnection& connection, const void* client, std::int64_t now_ns,
                   SessionExpiry expiry);
  // Adds an offline session (replacing one of that id, forgetting the oldest when full),
  // announcing the end of the one it displaced and, when it is listed, itself.
  void AddOffline(const std::string& id, OfflineSession&& session, bool announce = true);
  // Announces the end of an offline session that left offline_, when it was listed.
  void EmitOfflineEnd(const OfflineSession& session);
  // The end of a session the broker expired (it left offline_): the observer, then the event.
  void EndExpired(const std::string& id, const OfflineSession& session);
  bool EmitOffline(const OfflineSession& session);
  bool EmitOfflineInFull(const std::string& id);
  Uuid NewUuid();
  void CloseOpen(const void* client, CloseReason reason, std::int64_t now_ns, std::int64_t idle_ns,
                 SessionExpiry expiry);

  EventSink* sink_;
  ConnectionObserver* observer_ = nullptr;
  BrokerCounters* counters_;
  StatsSlotPool stats_;
  std::mt19937_64 random_;
  std::uint64_t next_seq_ = 0;
  std::optional<Pending> pending_;
  // Subscription checks that may be a kick's re-check (Subscribe), of one client.
  struct HeldCheck {
    std::string filter;
    bool denied = false;  // else a downgrade to QoS 0
  };
  const void* held_client_ = nullptr;
  std::vector<HeldCheck> held_;
  PointerMap<OpenEntry> open_;  // by the broker's client object
  std::size_t sweep_at_ = 0;    // SweepOpen's cursor in open_
  OfflineSessions offline_;     // by client id, with their age and expiry orders
  std::int64_t persistent_expiration_s_ = 0;
  bool follow_unknown_expiry_ = false;
  std::vector<std::string> gone_ids_;  // EndGoneOffline's, kept for its capacity
  SubscriptionEvent subscription_;  // reused for every subscription emitted (its filter's capacity)

  bool reloading_ = false;
  bool connects_confirmed_ = false;
  bool resync_active_ = false;
  std::uint64_t resync_generation_ = 0;
  std::vector<const void*> resync_queue_;
  std::size_t resync_next_ = 0;
  std::vector<std::string> resync_offline_queue_;  // announced offline sessions, by client id
  std::size_t resync_offline_next_ = 0;
};

}  // namespace mqc
