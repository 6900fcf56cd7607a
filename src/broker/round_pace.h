// SPDX-License-Identifier: BSD-3-Clause
// How many items of a collection one TICK visits, so that a round over all of them takes about
// a given time however many there are, while no TICK does more than a fixed number: the share
// of a round that passed since the last TICK, rounded up (at least one item), at most
// `max_per_tick`. What a TICK costs then has a bound that does not grow with the collection;
// a collection too large for that bound at the TICKs' rate takes longer than a round.
//
// (MessageCountSweep, message_counts.h, paces its walk over the open connections the same way
// with its own constants.)
//
// Threads: the broker thread only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace mqc {

class RoundPace {
 public:
  RoundPace(std::int64_t round_ns, std::size_t max_per_tick)
      : round_ns_(round_ns > 0 ? round_ns : 1),
        max_per_tick_(std::max<std::size_t>(1, max_per_tick)) {}

  // The items to visit at a TICK at `now_ns` (a monotonic clock) of a collection of `total`.
  std::size_t ItemsNow(std::int64_t now_ns, std::size_t total) {
    const std::int64_t elapsed =
        last_ns_ == 0 ? round_ns_ : std::max<std::int64_t>(0, now_ns - last_ns_);
    last_ns_ = now_ns;
    // A collection of at most 2^40 items times 10^9 ns stays within 64 bits.
    const auto items =
        static_cast<std::size_t>(static_cast<std::uint64_t>(total) *
                                     static_cast<std::uint64_t>(std::min(elapsed, round_ns_)) /
                                     static_cast<std::uint64_t>(round_ns_) +
                                 1);
    return std::clamp<std::size_t>(items, 1, max_per_tick_);
  }

 private:
  std::int64_t round_ns_;
  std::size_t max_per_tick_;
  std::int64_t last_ns_ = 0;
};

}  // namespace mqc
