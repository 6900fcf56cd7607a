// SPDX-License-Identifier: BSD-3-Clause
// The messages the broker holds per connection (MessageCounts: queued and in flight, to and
// from the client), kept fresh in the connection's statistics slot for the companion to read.
//
// The broker keeps these counts in its client struct (msgs_out, msgs_in), readable once the
// client layout is verified (broker_layout.h). No API request makes the broker thread read
// them: the broker thread copies them into the slot (StoreMessageCounts) where it touches the
// client anyway (2.1's CONNECT, every SUBSCRIBE and UNSUBSCRIBE) and walks the open
// connections in bounded slices at TICK (MessageCountSweep), so that every open connection's
// figures are refreshed once per kRoundNs while TICKs come at least every
// kRoundNs / (kMaxSlots / slots) (docs/api.md, "Queued and in-flight messages", says how
// fresh they are). Nothing is done per message.
//
// Threads: the broker thread only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "broker/broker.h"
#include "broker/broker_layout.h"
#include "link/shared_region.h"

namespace mqc {

// Copies a client's message counts into its slot's rare part (`rare`, of `slot`); nothing (the
// slot keeps "unknown", or the figures of its last refresh) when the layout cannot tell them.
// One bounds-checked read of the client, two relaxed stores.
// `drops_known`: the slot also says that drops at a full queue are seen (QueueDrops armed).
inline void RefreshMessageCounts(const BrokerLayoutVerifier* layout, const Broker& broker,
                                 const BrokerClient* client, ConnectionStatsSlot* slot,
                                 ConnectionRareSlot* rare, bool drops_known = false) {
  if (layout == nullptr || slot == nullptr || !layout->verified()) return;
  if (drops_known) MarkDropsKnown(*slot);
  const std::optional<MessageCounts> counts = layout->ReadMessageCounts(broker, client);
  if (counts) StoreMessageCounts(*rare, *counts);
}

// How many slots of the open connections' table one TICK walks: the share of a round
// (kRoundNs) that passed since the last walk, rounded up (at least one slot: a round never
// takes longer than kRoundNs while it is not capped), at most kMaxSlots (a bound on the broker
// thread's pause: about 40 ns a connection). A small table is not walked more often than
// that: 16 slots take 16 TICKs, not one. At 100,000 connections the table
// has 262,144 slots: a round takes kRoundNs while TICKs come at least every 31 ms (kMaxSlots
// slots each), and 3.2 s when an idle 2.0 broker turns its loop every 100 ms.
class MessageCountSweep {
 public:
  static constexpr std::int64_t kRoundNs = 1000000000;  // 1 s
  static constexpr std::size_t kMinSlots = 1;
  static constexpr std::size_t kMaxSlots = 8192;

  // The slots to walk at a TICK at `now_ns` for a table of `table_slots`.
  std::size_t SlotsNow(std::int64_t now_ns, std::size_t table_slots) {
    const std::int64_t elapsed = last_ns_ == 0 ? 0 : std::max<std::int64_t>(0, now_ns - last_ns_);
    last_ns_ = now_ns;
    // At most 2^40 slots times 10^9 ns would overflow; tables hold a few million slots at most.
    const auto slots = static_cast<std::size_t>(
        static_cast<std::uint64_t>(table_slots) *
            static_cast<std::uint64_t>(std::min(elapsed, kRoundNs)) / kRoundNs +
        1);
    return std::clamp(slots, kMinSlots, kMaxSlots);
  }

 private:
  std::int64_t last_ns_ = 0;
};

}  // namespace mqc
