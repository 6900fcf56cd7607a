// SPDX-License-Identifier: BSD-3-Clause
// Connects and takeovers per client id in the last minute and the last hour, and the two most
// recent source addresses of the id: what tells a flapping client (EMQX's flapping_detect counts
// connects in a window) and a takeover ping-pong (two devices sharing one client id, taking
// turns from two addresses) apart from a client that connected once.
//
// Bounded: at most max_client_ids ids (kDefaultMaxClientIds unless told), each of a fixed size
// (about 420 bytes with the map's own: a ring of 60 one-second and 60 one-minute counters of
// connects, and two addresses; another 250 for the takeovers' ring, made at an id's first
// takeover only, since most ids are never taken over).
// An id with no event for an hour counts nothing and is dropped when room is needed; when every
// id is younger than that, the one idle longest goes (least recently active first), so a
// flapping id, active by definition, is never the one dropped. A dropped id reads as zeros.
//
// The minute is the current second and the 59 before it; the hour the current minute and the
// 59 before it (whole minutes, so up to 60 s more than an hour at the end of a minute). Times are
// the broker's event times (Unix nanoseconds); a time earlier than the latest event of an id
// (a clock step back) counts in the latest second.
//
// Threads: none of its own and no lock: its owner (ConnectionRegistry) calls it under its lock.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace mqc {

struct FlappingCounts {
  std::uint32_t connects_last_minute = 0;
  std::uint32_t connects_last_hour = 0;
  std::uint32_t takeovers_last_minute = 0;
  std::uint32_t takeovers_last_hour = 0;
  // The two most recent distinct source addresses the id connected from, newest first; empty
  // where unknown. Shown for a ping-pong: with a takeover in the last hour and two addresses.
  std::array<std::string, 2> addresses;

  bool ping_pong() const { return takeovers_last_hour > 0 && !addresses[1].empty(); }
};

class FlappingTracker {
 public:
  // 4096 ids: about 1.7 MiB when full (2.7 with a takeover each; bench/list_bench.cc).
  static constexpr std::size_t kDefaultMaxClientIds = 4096;

  explicit FlappingTracker(std::size_t max_client_ids = kDefaultMaxClientIds);

  // A connection of `client_id` from `address` (its IP) opened at `time_ns`.
  void Connected(std::string_view client_id, std::string_view address, std::int64_t time_ns);
  // A connection of `client_id` was taken over (a new connection of the id replaced it).
  void TakenOver(std::string_view client_id, std::int64_t time_ns);

  // The counts of `client_id` as of `now_ns`; zeros for an id not kept.
  FlappingCounts Read(std::string_view client_id, std::int64_t now_ns) const;
  // Connects of `client_id` in the last `window_s` seconds (1 to 3600) as of `now_ns`: exact
  // to the second up to 60 s, beyond that whole minutes (the current one and the
  // ceil(window_s / 60) - 1 before it).
  std::uint32_t ConnectsWithin(std::string_view client_id, std::uint32_t window_s,
                               std::int64_t now_ns) const;

  // The client ids flapping as of `now_ns`: kFlappingConnects connects or more, or a takeover,
  // in the last minute (the console's badge, docs/api.md "Flapping clients"). Walks only the
  // ids active in the last minute (most recently active first).
  static constexpr std::uint32_t kFlappingConnects = 3;
  std::size_t FlappingNow(std::int64_t now_ns) const;

  std::size_t size() const { return ids_.size(); }
  std::size_t max_client_ids() const { return max_client_ids_; }
  // Ids dropped to make room (since start), for /metrics.
  std::uint64_t dropped() const { return dropped_; }
  // Every takeover seen (since start), for /metrics.
  std::uint64_t takeovers_total() const { return takeovers_total_; }

 private:
  // Events per second for a minute and per minute for an hour, in rings indexed by time.
  class Rate {
   public:
    void Add(std::int64_t second);
    std::uint32_t LastMinute(std::int64_t now_second) const { return Seconds(now_second, 60); }
    std::uint32_t LastHour(std::int64_t now_second) const { return Minutes(now_second, 60); }
    // Events in the last `seconds` (1 to 60) seconds, and the last `minutes` (1 to 60) minutes.
    std::uint32_t Seconds(std::int64_t now_second, std::int64_t seconds) const;
    std::uint32_t Minutes(std::int64_t now_second, std::int64_t minutes) const;

   private:
    std::array<std::uint16_t, 60> per_second_{};
    std::array<std::uint16_t, 60> per_minute_{};
    std::int64_t latest_second_ = -1;  // -1: nothing yet
  };
  struct Entry {
    std::string client_id;
    Rate connects;
    std::unique_ptr<Rate> takeovers;  // null until the id's first takeover
    std::array<std::string, 2> addresses;
    std::int64_t latest_second = 0;
  };
  using List = std::list<Entry>;  // most recently active first

  // The entry of `client_id`, made (and moved to the front) when needed.
  Entry& Touch(std::string_view client_id, std::int64_t second);

  std::size_t max_client_ids_;
  List entries_;
  std::unordered_map<std::string_view, List::iterator> ids_;  // keys point into entries_
  std::uint64_t dropped_ = 0;
  std::uint64_t takeovers_total_ = 0;
};

}  // namespace mqc
