// SPDX-License-Identifier: BSD-3-Clause
// The broker's activity over the last hour, for the console's charts (GetActivity,
// http/activity_view.h): every `interval` the companion reads the broker's counters (the shared
// region's, the ones /metrics shows) and keeps what changed in that interval, in a ring of
// `samples` (an hour of 10 s intervals by default: about 30 KB). An operator sees a storm or a
// slow leak without a Prometheus. Empty after a companion start; a sample whose interval the
// companion slept through covers the longer span (`seconds`).
//
// Threads: Sample on the companion's loop; Samples on any thread (a mutex).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "link/shared_region.h"

namespace mqc {

// The running totals one sample is the difference of (open_connections: the level itself).
struct ActivityTotals {
  std::uint64_t open_connections = 0;
  std::uint64_t connects = 0;
  std::uint64_t connects_refused = 0;
  std::uint64_t disconnects[8] = {};  // by CloseReason
  std::uint64_t messages_received = 0;
  std::uint64_t messages_delivered = 0;
  std::uint64_t subscribes_refused = 0;  // strict mode's and the ACL's (where shown)
  std::uint64_t publishes_refused = 0;   // the ACL's (where shown)
  bool acl_denials_shown = false;        // BrokerCounters::acl_denials_shown
  std::uint64_t flapping_clients = 0;    // a level: client ids flapping now
};

// The broker's counters as they are now, `open_connections` and `flapping_clients`
// (ConnectionRegistry::FlappingClients).
ActivityTotals ReadActivityTotals(const BrokerCounters& counters, std::size_t open_connections,
                                  std::size_t flapping_clients = 0);

struct ActivitySample {
  std::int64_t end_ns = 0;      // Unix time the interval ended
  std::uint32_t seconds = 0;    // its length
  std::uint64_t open_connections = 0;  // at its end
  std::uint64_t connects = 0;
  std::uint64_t connects_refused = 0;
  std::uint64_t disconnects[8] = {};
  std::uint64_t messages_received = 0;
  std::uint64_t messages_delivered = 0;
  std::uint64_t subscribes_refused = 0;
  std::uint64_t publishes_refused = 0;
  std::uint64_t flapping_clients = 0;  // at its end
};

// A sample's count as the API's uint32 carries it (saturated).
inline std::uint32_t ActivityCount(std::uint64_t value) {
  return value > 0xffffffffu ? 0xffffffffu : static_cast<std::uint32_t>(value);
}

struct ActivityHistoryOptions {
  std::int64_t interval_ns = 10'000'000'000;
  std::size_t samples = 360;
};

class ActivityHistory {
 public:
  explicit ActivityHistory(const ActivityHistoryOptions& options = {});

  // Keeps a sample when `now_ns` (Unix time) has reached the end of the current interval
  // (intervals are aligned to multiples of `interval_ns`); the first call only sets the
  // baseline. Counters that went back (a broker restart behind the companion) count from zero.
  void Sample(std::int64_t now_ns, const ActivityTotals& totals);

  // The kept samples, oldest first.
  std::vector<ActivitySample> Samples() const;
  // Nanoseconds from `now_ns` to the end of the current interval (when Sample wants the loop).
  std::int64_t DueInNs(std::int64_t now_ns) const;
  std::int64_t interval_ns() const { return options_.interval_ns; }
  // Whether the broker showed ACL denials at the last sample (publishes_refused then counts
  // them, and subscribes_refused too; docs/api.md, "Denials").
  bool acl_denials_shown() const;

 private:
  const ActivityHistoryOptions options_;
  mutable std::mutex mutex_;
  bool started_ = false;
  std::int64_t last_ns_ = 0;   // when the baseline was read
  std::int64_t next_ns_ = 0;   // the end of the current interval
  ActivityTotals last_;
  bool acl_denials_shown_ = false;
  std::vector<ActivitySample> ring_;  // at most options_.samples
  std::size_t oldest_ = 0;
};

}  // namespace mqc
