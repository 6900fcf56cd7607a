// The companion's view of every connection: built from the events ring, read by HTTP threads.
//
// Open connections by their broker sequence number; recently closed ones in close order, at
// most closed_max of them and none older than closed_ttl. A resync (companion start, or events
// lost on a full ring) is staged and swapped in whole at its end, so a reader never sees half of
// it. Before the first resync has completed the registry is not `synced`: its view may lack
// connections that opened before this companion started.
//
// Threads: Apply and ExpireClosed on the companion's event thread; Snapshot and the accessors on
// any thread. One mutex guards everything; Snapshot copies under it and nothing slow runs there.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "connection.h"
#include "event_records.h"

namespace mqc {

// The number of Pattern values (topic_mapping.h), kNone through kQueries.
inline constexpr std::size_t kPatternCount = static_cast<std::size_t>(Pattern::kQueries) + 1;

struct RegistryOptions {
  std::uint32_t node_id = 0;
  DefaultPattern default_pattern = DefaultPattern::kEvents;
  std::uint32_t closed_max = 1000;
  std::int64_t closed_ttl_ns = 300'000'000'000;
};

class Registry : public ConnectionSource {
 public:
  explicit Registry(const RegistryOptions& options);

  // Applies one record of the events ring. Returns false for a malformed record or an unknown
  // type (it is then ignored).
  bool Apply(EventType type, std::string_view payload, std::int64_t now_ns);

  // Forgets closed connections older than closed_ttl.
  void ExpireClosed(std::int64_t now_ns);

  std::vector<Connection> Snapshot() const override;
  std::size_t open_count() const;
  // Subscriptions of open connections, indexed by Pattern (kNone first): the
  // kubemq_mqtt_subscriptions{pattern} gauge, counted under the lock rather than from a
  // Snapshot so that a scrape copies no connection.
  std::array<std::size_t, kPatternCount> SubscriptionsByPattern() const;
  std::size_t closed_count() const;
  bool synced() const;
  // Waits until the first resync has completed, or `timeout` has passed; returns synced().
  bool WaitUntilSynced(std::chrono::milliseconds timeout) const;

 private:
  using OpenMap = std::map<std::uint64_t, Connection>;

  Connection FromEvent(const ConnectionEvent& event) const;
  void AddClosed(Connection connection);
  void ExpireClosedLocked(std::int64_t now_ns);
  OpenMap& Target() { return staging_ ? *staging_ : open_; }

  const RegistryOptions options_;
  mutable std::mutex mutex_;
  mutable std::condition_variable synced_changed_;
  OpenMap open_;
  std::deque<Connection> closed_;  // oldest close first
  std::optional<OpenMap> staging_;
  std::optional<std::uint64_t> staging_generation_;
  bool synced_ = false;
};

}  // namespace mqc
