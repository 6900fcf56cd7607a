// SPDX-License-Identifier: BSD-3-Clause
// A client id's history: the last events of each client id (connected, refused, subscribed,
// unsubscribed, kicked, taken over, closed, gone offline, session ended), kept after the
// closed list has let the connection go, in bounded memory. GetClientHistory serves it
// (http/history_view.h); docs/api.md, "A client's history".
//
// It is fed every change of the registry as it is published (ConnectionChanges' listener), so a
// burst of changes cannot pass it by. Bounds: `per_client` events per client id (the oldest
// dropped first), and `max_events` in all: beyond that, the client id whose last event is the
// oldest loses its whole history. A run of subscriptions (or unsubscriptions) of one connection
// is one event with its count and the last filter.
//
// Memory: an event is kept in 72 bytes and at most one allocation (the uid as its 16 bytes, its
// strings in one), not as a ClientEvent (152 bytes and up to three); a client id costs its map
// node, with the recency order linked through the nodes themselves (bench/list_bench.cc,
// docs/benchmarks.md).
//
// Threads: Record on the companion's event thread (under the registry's lock: it takes only its
// own mutex), Find and the counts on any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "companion/connection_changes.h"
#include "link/connection.h"
#include "link/event_records.h"

namespace mqc {

// Numbers as the proto's ClientEventKind.
enum class ClientEventKind : std::uint8_t {
  kUnspecified = 0,
  kConnected = 1,
  kRefused = 2,  // the CONNECT was refused (close_reason: why)
  kSubscribed = 3,
  kUnsubscribed = 4,
  kKicked = 5,     // closed by the broker on request (the API, a ban, a reload's revocation)
  kTakenOver = 6,  // closed because another connection took its client id
  kClosed = 7,     // closed otherwise (close_reason: how)
  kWentOffline = 8,
  kSessionEnded = 9,  // its offline session ended (expired, cleaned or taken up)
};

// Whether `kind` ends a connection (kRefused, kKicked, kTakenOver, kClosed): it has a reason.
bool ClosesAConnection(ClientEventKind kind) noexcept;

struct ClientEvent {
  std::int64_t time_ns = 0;  // Unix time
  ClientEventKind kind = ClientEventKind::kUnspecified;
  CloseReason close_reason = CloseReason::kUnspecified;  // kinds that close
  std::uint8_t protocol_version = 0;                     // kConnected, kRefused
  std::uint16_t port = 0;
  std::uint32_t count = 0;  // kSubscribed, kUnsubscribed: filters in the run
  std::string uid;          // the connection's
  std::string ip_address;   // the client's
  std::string username;     // kConnected, kRefused
  std::string filter;       // kSubscribed, kUnsubscribed: the last filter of the run
};

struct ClientHistoryOptions {
  std::size_t per_client = 32;     // events kept per client id (0: the history is off)
  std::size_t max_events = 20000;  // events kept in all
};

class ClientHistory {
 public:
  explicit ClientHistory(const ClientHistoryOptions& options = {});

  // What `change` means for its client id's history (nothing for a reset or an update).
  // `now_ns` (Unix time) dates the events whose connection carries no time of its own
  // (subscriptions, a session's end).
  void Record(const ConnectionChange& change, std::int64_t now_ns);

  // The client id's events, oldest first; false when it has none kept. *dropped: its events
  // dropped for the per-client bound since the id was first kept.
  bool Find(std::string_view client_id, std::vector<ClientEvent>* events,
            std::uint64_t* dropped) const;

  bool enabled() const { return options_.per_client > 0; }
  const ClientHistoryOptions& options() const { return options_; }
  std::size_t client_count() const;
  std::size_t event_count() const;

 private:
  // A ClientEvent as kept: `text` holds the uid when it is not one FormatUuid wrote
  // (uid_in_text; else the uid is in `uid`), then the address, the user name and the filter.
  struct StoredEvent {
    std::int64_t time_ns = 0;
    std::uint32_t count = 0;
    std::uint16_t port = 0;
    ClientEventKind kind = ClientEventKind::kUnspecified;
    CloseReason close_reason = CloseReason::kUnspecified;
    std::uint8_t protocol_version = 0;
    bool uid_in_text = false;
    std::uint16_t uid_length = 0;
    std::uint16_t ip_length = 0;
    std::uint16_t username_length = 0;
    Uuid uid{};
    std::string text;

    static StoredEvent From(const ClientEvent& event);
    ClientEvent ToEvent() const;
    bool SameConnection(const StoredEvent& other) const;
    // Replaces the filter (the rest of `text`).
    void SetFilter(std::string_view filter);
  };
  struct Entry;
  using Node = std::pair<const std::string, Entry>;  // unordered_map nodes never move
  struct Entry {
    std::vector<StoredEvent> events;  // a ring of at most per_client once full
    std::size_t oldest = 0;           // index of the oldest once the ring is full
    std::uint64_t dropped = 0;
    // The recency order, the least recently changed first (oldest_, newest_).
    Node* older = nullptr;
    Node* newer = nullptr;
  };

  // Keeps `event` for `client_id`, or adds it to the newest event when both are of one run
  // (the same subscription kind and connection: count set).
  void Add(const std::string& client_id, const ClientEvent& event);
  // The newest event of `entry` (it has one).
  StoredEvent& Newest(Entry& entry);
  void Unlink(Node* node);
  void LinkNewest(Node* node);
  void EvictOldest();

  const ClientHistoryOptions options_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
  Node* oldest_ = nullptr;  // the client id changed least recently
  Node* newest_ = nullptr;
  std::size_t events_ = 0;
};

}  // namespace mqc
