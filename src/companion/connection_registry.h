// SPDX-License-Identifier: BSD-3-Clause
// The companion's view of every connection: built from the events ring, read by HTTP threads.
//
// Open connections and offline sessions by their broker sequence number (one map: both carry
// subscriptions, and a resync stages both); recently closed ones in close order, at
// most closed_max of them and none older than closed_ttl. A resync (companion start, or events
// lost on a full ring) is staged and swapped in whole at its end, so a reader never sees half of
// it. Before the first resync has completed the registry is not `synced`: its view may lack
// connections that opened before this companion started.
//
// Traffic statistics of open connections live in the broker's shared slots: DetailedSnapshot
// reads them (a seqlock, no lock shared with the broker); RollStatisticsWindow keeps the
// previous complete minute of each (recentRequestStatistics). A connection opened during a
// minute counts that minute from its first byte (the broker zeroed its slot at the open),
// however late the companion reads its event, across a restart of the companion too; one
// opened before this companion first saw it and before the current minute began counts that
// minute from when it was first read, and whole minutes from the next boundary. A closed
// connection keeps what its close event carried, and its recent statistics follow the minutes
// too: when the minute it closed in ends they become its traffic of that minute (up to the
// close), a minute later zeros (it sent nothing). Only the closed connections whose figure
// changes at the next boundary are visited then (closed_minutes_, at most the closed list).
//
// A configuration reload changes default_pattern, closed_max and closed_ttl through a kSettings
// record: subscriptions are mapped again, the closed list is trimmed at once.
//
// Stored connections are shared immutable values (ConnectionPtr): a change (a subscription, a
// close) replaces the pointer, so a SharedSnapshot is a vector of pointers and a reader keeps
// what it took however long it holds it. What changes all the time stays beside them in the
// entry (the statistics slot, the minute window) and reaches copies through AddDetails. An index
// by client id covers the current view (open connections, offline sessions, closed ones; not a
// resync still being staged), so that a lookup by client id reads no other connection.
//
// Threads: the Apply methods, ExpireClosed and RollStatisticsWindow on the companion's event
// thread; snapshots, the accessors and the waits on any thread (a wait blocks its thread on a
// condition variable of the mutex, which the event thread notifies). One mutex guards everything;
// the first SharedSnapshot after a change copies pointers under it, later ones share that copy, and
// nothing slow runs there.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "companion/connection.h"
#include "companion/connection_changes.h"
#include "link/broker_config.h"
#include "link/event_records.h"
#include "link/shared_region.h"

namespace mqc {

// The number of Pattern values (topic_mapping.h), kNone through kQueries.
inline constexpr std::size_t kPatternCount = static_cast<std::size_t>(Pattern::kQueries) + 1;

struct ConnectionRegistryOptions {
  std::uint32_t node_id = 0;
  DefaultPattern default_pattern = DefaultPattern::kEvents;
  std::uint32_t closed_max = 1000;
  std::int64_t closed_ttl_ns = 300'000'000'000;
  std::vector<ListenerConfig> listeners;       // the broker's, to name a connection's listener
  StatsSlots stats;  // the shared statistics slots (may be none); only read
  // Where each change of the current view is published (under the lock), with a reset at the
  // end of every resync; null: nowhere. Must outlive the registry.
  ConnectionChanges* changes = nullptr;
  // The broker's bridges (client ids filled in: FillBridgeClientIds), to name its own bridge
  // connections.
  std::vector<BridgeConfig> bridges = {};
  // plugin_opt_flapping_max_count and _window_time: a client id that connects more than
  // flapping_max_count times within the window is handed to TakeFlappingOffenders (0: never).
  std::uint32_t flapping_max_count = 0;
  std::uint32_t flapping_window_s = 60;
};

class ConnectionRegistry : public ConnectionSource, public LiveConnections {
 public:
  explicit ConnectionRegistry(const ConnectionRegistryOptions& options);

  // One decoded record of the events ring each (ApplyEventRecord, companion_link.h, decodes
  // them outside the lock): a connection opened or refused, closed, an offline session kept
  // or ended, a subscription made or removed (`subscribe`), a bridge role learnt, the
  // registry's options changed, a resync begun and ended.
  void Apply(const ConnectionEvent& event);
  void Apply(const CloseEvent& event, std::int64_t now_ns);
  void Apply(const OfflineSessionEvent& event);
  void Apply(const OfflineSessionEndEvent& event);
  void ApplySubscription(bool subscribe, const SubscriptionEvent& event);
  void Apply(const BridgeEvent& event);
  void Apply(const SettingsEvent& event, std::int64_t now_ns);
  void BeginResync(const ResyncEvent& event);
  void EndResync(const ResyncEvent& event);

  // Forgets closed connections older than closed_ttl.
  void ExpireClosed(std::int64_t now_ns);

  // At every whole minute of Unix time: each open connection's traffic in the minute that just
  // ended becomes its recent statistics. Call often; it acts once per minute. The first call
  // starts the clock (no minute ends); a gap of minutes leaves no complete window (zeros).
  // A closed connection's recent statistics become its traffic in the minute it closed in when
  // that minute ends, and zeros at the next boundary; the stored connection is replaced (a
  // new value, as any change), and no change is published: a WatchConnections connection
  // carries no figures of the minute (docs/api.md).
  void RollStatisticsWindow(std::int64_t now_ns);
  // When (Unix ns) the next minute begins after `now_ns`: the event loop wakes for it.
  static std::int64_t NextWindowNs(std::int64_t now_ns);

  // Every connection, open and recently closed, and every offline session, without traffic
  // totals (recent statistics included), as copies.
  std::vector<Connection> Snapshot() const override;
  // The same, with open connections' traffic read from the shared slots. Their idle time and
  // network figures come from the kernel (NetworkInfoCache), not from here.
  std::vector<Connection> DetailedSnapshot() const;
  // The stored connections without copying them: no details (traffic totals, recent
  // statistics) for open ones; closed ones keep what their close carried.
  // Built once after a change and shared by every reader until the next one.
  ConnectionList SharedSnapshot() const override;
  // Those of SharedSnapshot() with exactly this client id, from the index.
  std::vector<ConnectionPtr> FindByClientId(std::string_view client_id) const override;
  // Fills traffic totals and recent statistics of the open connections among `connections`
  // (copies from SharedSnapshot), found by seq; one that has closed since is left as it was.
  void AddDetails(std::vector<Connection>* connections) const override;

  // The open connections and offline sessions (not the closed ones) as stored, and the
  // sequence of the last change they include (taken together under the lock: a stream sends
  // this state, then the changes after *as_of). *as_of is 0 without a `changes` option.
  ConnectionList LiveSnapshot(std::uint64_t* as_of) const override;

  std::size_t open_count() const;
  // The client ids flapping now (FlappingTracker::FlappingNow), for the activity charts.
  std::size_t FlappingClients(std::int64_t now_ns) const;
  std::size_t offline_count() const;
  // For the views of /metrics (metrics_views.h), in one hold of the lock so that a scrape
  // copies no connection: `closed(const ConnectionPtr&)` gets each closed connection that may
  // have figures for the previous complete minute (its recent_statistics; those closed about
  // then), then `live(const ConnectionPtr&, const RequestStatistics& recent)` each open
  // connection and offline session. Neither may call the registry. A template, so that the
  // pass over every connection makes no indirect call.
  template <typename ClosedVisitor, typename LiveVisitor>
  void VisitForMetrics(ClosedVisitor&& closed, LiveVisitor&& live) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const ClosedMinute& minute : closed_minutes_) {
      closed(closed_[minute.position - closed_popped_]);
    }
    for (const auto& [seq, entry] : open_) live(entry.connection, entry.recent);
  }
  std::size_t closed_count() const;
  bool synced() const override;
  // Synced, and no resync under way (one follows events lost on a full ring): the view is the
  // broker's as of the last event read. /healthz answers 503 while this is false.
  bool current() const;
  // Waits until the first resync has completed, or `timeout` has passed; returns synced().
  bool WaitUntilSynced(std::chrono::milliseconds timeout) const;
  // Waits until connection `seq` is no longer open in the current view (closed, an offline
  // session now, or gone), or `deadline` has passed; returns whether it is no longer open.
  // Woken by every change of the view, it answers as soon as the close is applied.
  bool WaitUntilNotOpen(std::uint64_t seq, std::chrono::steady_clock::time_point deadline) const;

  // The client ids that went over plugin_opt_flapping_max_count since the last call, each once
  // (the caller bans them: BrokerBans::Sweep). Empty while the automatic ban is off.
  std::vector<std::string> TakeFlappingOffenders();

 private:
  struct Entry {
    ConnectionPtr connection;  // never null once stored
    std::uint32_t stats_slot = kNoStatsSlot;
    // Totals at the start of the current minute, or at the open of a connection opened in it
    // (zero); what the slot held when first read for one opened before (see StartWindow).
    RequestStatistics window_start;
    // The Unix minute window_start belongs to: the current one once a roll read the slot or the
    // connection was first seen in it; older when the slot was no longer the connection's at a
    // boundary (it had closed, the close not read yet). -1 before the clock started.
    std::int64_t window_minute = -1;
    RequestStatistics recent;  // the previous complete minute
  };
  // A closed connection whose recent statistics are not zeros, or change at the next boundary:
  // its traffic in the minute it closed in, shown once that minute ends.
  struct ClosedMinute {
    std::uint64_t position;  // closed_popped_ + its index in closed_
    std::int64_t minute;     // the Unix minute it closed in
    RequestStatistics traffic;
  };
  using OpenMap = std::map<std::uint64_t, Entry>;
  // Client id -> where a stored connection of the current view is held: its entry's pointer in
  // open_ or its place in closed_ (neither moves while it is there: a map's node, a deque's
  // element between pushes and pops at its ends). The key views the connection's own
  // client_id. A node is 48 bytes, not 64 with a shared pointer of its own.
  using ClientIdIndex = std::unordered_multimap<std::string_view, const ConnectionPtr*>;

  Entry FromEvent(const ConnectionEvent& event) const;
  // Whether the connection opened during the current minute window (the clock has started).
  bool OpenedInWindow(const Entry& entry) const;
  // The totals an open connection's current window starts from, when the registry first sees
  // it: zero traffic if it opened in the window (its slot was zeroed at the open), else what
  // the slot holds now.
  void StartWindow(Entry* entry) const;
  Entry FromEvent(const OfflineSessionEvent& event) const;
  std::size_t CountLocked(ConnectionState state) const;
  // Snapshot and DetailedSnapshot: a copy of every connection, with open ones' traffic totals
  // read from the shared slots when `with_totals`.
  std::vector<Connection> CopyAll(bool with_totals) const;
  // Fills a connection's flapping counts as of now (a detail, like the totals).
  void AddFlapping(Connection* connection, std::int64_t now_ns) const;
  // After a connect of `event.client_id`: notes it as an offender when it connected more than
  // flapping_max_count times within the window.
  void CheckFlapping(const ConnectionEvent& event);
  // The slot's counters if it still belongs to `seq` (seqlock read); `messages`, when not null,
  // gets the message counts read under the same check (left as it was when the read fails),
  // `drops` the messages dropped at a full queue.
  std::optional<RequestStatistics> ReadTotals(const Entry& entry, MessageCounts* messages = nullptr,
                                              MessageDrops* drops = nullptr) const;
  // The connection's ACL denials into *denials if its slot still belongs to `seq` (left as it
  // was otherwise: not shown).
  void ReadDenialsOf(const Entry& entry, std::uint64_t seq, Denials* denials) const;
  // Appends to the closed list (nothing with closed_max 0); `minute`, when not null, is the
  // connection's figure of its last minute (its position is filled in).
  void AddClosed(ConnectionPtr connection, ClosedMinute* minute = nullptr);
  void PopClosed();
  // A closing connection's traffic in `minute`, the one it closed in, from its open entry and
  // the totals of its close; zeros when the registry cannot split it by minute.
  static RequestStatistics LastMinuteTraffic(const Entry& entry, const Connection& closed,
                                             std::int64_t minute);
  // The closed connections' figures at the boundary that starts `minute`.
  void RollClosedMinutes(std::int64_t minute);
  // Stores `entry` under `seq` in `map`, replacing (and unindexing) what was there.
  void Put(OpenMap* map, std::uint64_t seq, Entry entry);
  // Removes `seq` from `map`; returns what was stored (null when nothing was).
  ConnectionPtr Remove(OpenMap* map, std::uint64_t seq);
  // Replaces an entry's connection by an edited copy, keeping the index right.
  template <typename Edit>
  void Edit(OpenMap* map, Entry* entry, Edit edit);
  // Every change of the current view (Index, Unindex, RebuildIndex): drops the shared
  // snapshot and wakes WaitUntilNotOpen.
  void ViewChanged();
  // `held` is the pointer's place in open_ or closed_, stored already.
  void Index(const ConnectionPtr* held);
  void Unindex(const Connection* connection);
  void RebuildIndex();
  // Sets an open connection's bridge role; a change of the current view is published (kUpdated).
  void SetBridge(OpenMap* map, Entry* entry, BridgeRole role);
  void ExpireClosedLocked(std::int64_t now_ns);
  OpenMap& Target() { return staging_ ? *staging_ : open_; }
  // Publishes a change of the current view (none while a resync is staged: its end is a reset).
  void Publish(ChangeKind kind, ConnectionPtr before, ConnectionPtr after,
               const Subscription* subscription = nullptr);

  ConnectionRegistryOptions
      options_;  // default_pattern, closed_max and closed_ttl_ns change (kSettings)
  mutable std::mutex mutex_;
  mutable std::condition_variable synced_changed_;
  mutable std::condition_variable view_changed_;  // see ViewChanged
  OpenMap open_;
  std::deque<ConnectionPtr> closed_;  // oldest close first
  std::uint64_t closed_popped_ = 0;   // closed connections ever dropped from closed_'s front
  // Positions ascending; only ones still in closed_ (PopClosed drops the others): at most
  // closed_.size() entries, and in practice the closes of the last two minutes.
  std::deque<ClosedMinute> closed_minutes_;
  ClientIdIndex by_client_id_;  // open_ and closed_
  // The last SharedSnapshot; reset by every change of open_ or closed_ (they all pass through
  // Index, Unindex or RebuildIndex).
  mutable ConnectionList shared_snapshot_;
  std::optional<OpenMap> staging_;
  std::optional<std::uint64_t> staging_generation_;
  bool synced_ = false;
  std::int64_t window_minute_ = -1;  // the Unix minute the current window started in
  // Connects and takeovers per client id, counted as the events come (not from a resync).
  FlappingTracker flapping_;
  // Client ids over the flapping limit, not yet taken (TakeFlappingOffenders); each once, at
  // most kMaxFlappingOffenders (more wait for their next connect).
  static constexpr std::size_t kMaxFlappingOffenders = 1024;
  std::vector<std::string> flapping_offenders_;
};

}  // namespace mqc
