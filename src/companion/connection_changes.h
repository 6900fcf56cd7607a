// SPDX-License-Identifier: BSD-3-Clause
// What happened to the registry's connections, one numbered change at a time, kept for a while
// so that a WatchConnections stream can read them at its own pace and a client that reconnects
// can resume where it left off.
//
// Sequence numbers: the first change of a companion is numbered one more than the
// microseconds of Unix time at its start, and each later change one more than the one before.
// So numbers only grow across companion restarts (a companion would have to publish more than
// a million changes a second to catch up with the next one's start), and a number from an
// earlier companion is always older than anything this one holds: it can never be mistaken
// for one of this companion's changes.
//
// The last `history` changes are kept (a ring of shared immutable values; a stream's own
// buffer is its distance behind the newest, see watch_stream.h). A resync of the registry
// (companion start, or events lost on a full ring) cannot say what changed: it is published as
// a reset, and a reader that meets one starts again from a fresh state.
//
// Memory: each change holds the connection as it was and as it is, and a connection that opens
// and subscribes leaves a version per subscription. In a run of subscriptions of one connection
// (each adds one at the end), only the newest version is kept: the earlier ones are the newer
// without their last subscriptions, made again when a reader reads those changes (at most
// kMaxMadeVersions steps each). At 15,000 connections with two subscriptions each, this keeps
// about 5.7 MB fewer (bench/list_bench.cc, docs/benchmarks.md). A change itself is kept in 48
// bytes (Kept) and made again as published for each read: about 2 MB fewer at 8,192 changes.
//
// Threads: Publish on the companion's event thread, under the registry's lock (it takes this
// class's own mutex for a push and nothing more: it never waits for a reader, and never calls
// one). ReadAfter, last_sequence and the waiter calls on any thread. WakeWaiters on the event
// thread, outside the registry's lock and its own: it calls each waiter (a stream's wake-up,
// which only takes that stream's lock and asks libmicrohttpd to resume its connection). A waiter
// may be called once more just after RemoveWaiter: it must stay safe to call (a stream's holds a
// weak reference).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <unordered_map>
#include <mutex>
#include <utility>
#include <vector>

#include "companion/connection.h"

namespace mqc {

// Numbers as the proto's ConnectionChangeKind; 1..3 (RESET, CURRENT, SYNCED) are what a stream
// sends around a fresh state and never published here.
enum class ChangeKind : std::uint8_t {
  kUnspecified = 0,
  kReset = 1,
  kCurrent = 2,
  kSynced = 3,
  kOpened = 4,
  kClosed = 5,
  kSubscribed = 6,
  kUnsubscribed = 7,
  kWentOffline = 8,
  kExpired = 9,   // an offline session ended (expired, cleaned or taken up by a new connection)
  kUpdated = 10,  // an open connection's field learnt after it opened (its bridge role)
  // Never in the registry's changes: a fleet stream's message that one peer's stream broke.
  kPeerLost = 11,
};

struct ConnectionChange {
  std::uint64_t sequence = 0;
  ChangeKind kind = ChangeKind::kUnspecified;  // kReset: a resync replaced the whole view
  ConnectionPtr before;       // as it was (null for kOpened, kWentOffline and kReset)
  ConnectionPtr after;        // as it is now (null for kExpired and kReset)
  Subscription subscription;  // kSubscribed, kUnsubscribed: the filter concerned
};
using ConnectionChangePtr = std::shared_ptr<const ConnectionChange>;

// The live part of a registry, for WatchConnections (ConnectionRegistry implements it).
class LiveConnections {
 public:
  virtual ~LiveConnections() = default;
  // Open connections and offline sessions, and the sequence of the last change they include.
  virtual ConnectionList LiveSnapshot(std::uint64_t* as_of) const = 0;
  // The first resync has completed: the view holds every connection of the broker.
  virtual bool synced() const = 0;
};

struct ConnectionChangesOptions {
  std::size_t history = 8192;  // changes kept for slow readers and resumption (at least 1)
  // The number before the first change; 0: the microseconds of Unix time now.
  std::uint64_t start_sequence = 0;
};

class ConnectionChanges {
 public:
  explicit ConnectionChanges(const ConnectionChangesOptions& options = {});

  // Numbers `change` (its sequence is overwritten) and keeps it, dropping the oldest beyond
  // `history`; then hands it to the listener.
  void Publish(ConnectionChange change);

  // Called with every change Publish numbers, on the publishing thread (the registry's lock
  // held), outside this class's own lock: it must be quick and call nothing back. Set before
  // the first Publish (a client's history, client_history.h).
  void SetListener(std::function<void(const ConnectionChange&)> listener) {
    listener_ = std::move(listener);
  }

  enum class Read : std::uint8_t {
    kChanges,  // *out holds the next changes after `after` (at most `max`)
    kNothing,  // nothing after `after` yet
    kGap,      // `after` is not one this class can continue from: too old, from the future
               // or before a reset; start again from a fresh state
  };
  // The changes after sequence `after`, oldest first, stopping before a reset (which is
  // reported as kGap once the changes before it have been read).
  Read ReadAfter(std::uint64_t after, std::size_t max, std::vector<ConnectionChangePtr>* out) const;

  // The sequence of the newest change (the start sequence before any).
  std::uint64_t last_sequence() const;
  std::size_t history() const { return history_; }

  // A function WakeWaiters calls (a stream's wake-up); returns an id for RemoveWaiter.
  std::uint64_t AddWaiter(std::function<void()> wake);
  void RemoveWaiter(std::uint64_t id);
  // Calls every waiter if a change was published since the last call.
  void WakeWaiters();

 private:
  // A change as kept: 48 bytes in place, not a shared ConnectionChange (256 bytes with its
  // Subscription of 176, which most changes do not have). Its subscription is kept only where
  // it is not the one `after` ends with; ReadAfter makes each change it reads again.
  struct Kept {
    ChangeKind kind = ChangeKind::kUnspecified;
    // `before` is `after` without its last subscription (its `before` was dropped).
    bool before_made = false;
    // Versions made, one from the next, to reach this change's `before` from a kept one.
    std::uint8_t steps = 0;
    // The subscription is the last of `after`'s (as published): not kept twice.
    bool subscription_is_last = false;
    // Not 0: `after` is the `before` of the change this many later (its `after` was dropped).
    std::uint32_t after_from = 0;
    ConnectionPtr before;  // null where before_made
    ConnectionPtr after;   // null where after_from is not 0
    std::unique_ptr<const Subscription> subscription;  // null: none, or subscription_is_last
  };
  // Versions made again from a kept one, at most, for one change read.
  static constexpr std::uint8_t kMaxMadeVersions = 8;
  // How far back the newest change's `before` is looked for as an earlier change's `after`.
  static constexpr std::size_t kMaxLookBack = 64;
  // The changes of one ReadAfter, by position: the `before`s made again.
  using MadeVersions = std::unordered_map<std::size_t, ConnectionPtr>;

  // Under mutex_: drops the newest change's `before` (`change`, as published) and the same
  // version as an earlier change's `after`, where the newest adds one subscription at the end.
  void DropMadeVersion(const ConnectionChange& change);
  // Under mutex_: the change at `index` as published.
  ConnectionChangePtr AsPublished(std::size_t index, MadeVersions* made) const;
  ConnectionPtr BeforeOf(std::size_t index, MadeVersions* made) const;
  ConnectionPtr AfterOf(std::size_t index, MadeVersions* made) const;

  const std::size_t history_;
  mutable std::mutex mutex_;
  std::deque<Kept> changes_;  // oldest first, consecutive sequences (the newest is last_)
  std::uint64_t last_ = 0;
  std::function<void(const ConnectionChange&)> listener_;

  std::mutex waiters_mutex_;  // after mutex_ when both are taken (never are, today)
  std::map<std::uint64_t, std::function<void()>> waiters_;
  std::uint64_t next_waiter_ = 1;
  std::uint64_t woken_at_ = 0;  // last_ at the last WakeWaiters
};

}  // namespace mqc
