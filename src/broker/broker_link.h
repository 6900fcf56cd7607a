// SPDX-License-Identifier: BSD-3-Clause
// The broker thread's end of the shared region: writes events, reads the companion's commands,
// runs resyncs. Every exchange with the companion goes through it. No API request reaches it:
// the companion answers those from its registry, the statistics slots and the kernel.
// It encodes every event it is handed (the only encoder of the events ring's records) into one
// reused buffer: no lock, no syscall, and once the buffer has grown to the largest record, no
// allocation on the event path.
//
// Threads: the broker thread only.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "broker/event_sink.h"
#include "broker/subscription_list.h"
#include "link/event_records.h"
#include "link/shared_region.h"

namespace mqc {

class BrokerLink : public EventSink {
 public:
  explicit BrokerLink(SharedRegion* region);

  // EventSink: a full ring counts the event as lost and schedules a resync.
  bool Emit(const ConnectionEvent& event) override;
  bool Emit(const CloseEvent& event) override;
  bool Emit(EventType type, const SubscriptionEvent& event) override;
  bool Emit(const OfflineSessionEvent& event) override;
  bool Emit(const OfflineSessionEndEvent& event) override;
  bool Emit(EventType type, const ResyncEvent& event) override;
  bool Emit(const SettingsEvent& event) override;
  bool Emit(const BridgeEvent& event) override;
  // EventSink: encodes each record to learn its size (reading the consumer's tail).
  bool Fits(const ConnectionEvent& head, const SubscriptionList& subscriptions) override;
  bool Fits(const OfflineSessionEvent& head, const SubscriptionList& subscriptions) override;
  bool Fits(const ResyncEvent& event) override;

  // Hands every pending log command to `log`, every disconnect request to `kick` (at TICK;
  // without `kick`, at init and cleanup, requests are dropped) and every ban list to `bans`
  // (at TICK and while the companion starts; without it dropped). A malformed request is not
  // acted on: `log` gets a warning instead. Returns how many commands were read.
  std::size_t DrainCommands(const std::function<void(const LogCommand&)>& log,
                            const std::function<void(const KickCommand&)>& kick = nullptr,
                            const std::function<void(BansCommand&&)>& bans = nullptr);

  // Whether the companion wrote commands not read yet (its head against the read position):
  // TICK's work drains them only then, without building the handlers for an empty ring.
  bool CommandsPending() const {
    const RingIndices& ring = region_->header()->commands;
    return ring.head.load(std::memory_order_acquire) != ring.tail.load(std::memory_order_relaxed);
  }

  // At TICK: whether a resync is due (the companion asked for one, or events were lost since
  // the last began): then the new resync's generation, published to the companion as started;
  // else nothing. The tick has the session table run it (ResyncStep, broker_events.h).
  std::optional<std::uint64_t> TakeResyncDue();

  // At TICK: gives back the memory of the event ring's pages the companion has read, once at
  // least kReleaseStep bytes of them have gathered (one syscall, SharedRegion::
  // ReleaseEventBytes). Without it every page of the ring stays resident in the broker once
  // written, up to the ring's whole capacity, whatever the number of connections. A page the
  // writer has unread records on (positions p and p + capacity share a page) is never given
  // back. Returns the bytes given back.
  std::uint64_t ReleaseReadPages();
  // At every TICK (2.0: every turn of the broker's loop): wakes the companion if events were
  // written since the last call, it waits and they are unread (WakeWaitingCompanion). With
  // nothing written it is a load and a compare: no fence, no syscall. Only new events need the
  // check: for those already checked, either this side saw the companion wait (and woke it) or
  // the companion's check before its sleep sees them.
  bool WakeCompanion() {
    const std::uint64_t head = events_.head();
    if (head == checked_head_) return false;
    checked_head_ = head;
    return WakeWaitingCompanion(region_->header());
  }
  static constexpr std::uint64_t kReleaseStep = 64 * 1024;

  std::uint64_t events_lost() const;

 private:
  template <typename Event>
  bool Write(EventType type, const Event& event);
  template <typename Head>
  bool FitsWhole(const Head& head, const SubscriptionList& subscriptions);

  SharedRegion* region_;
  RingWriter events_;
  // Reused by every event and Fits: they keep the capacity of the largest record seen.
  std::string buffer_;
  std::vector<std::size_t> sizes_;
  SubscriptionEvent subscription_;
  RingReader commands_;
  bool resync_due_ = false;
  std::uint64_t handled_request_ = 0;
  std::uint64_t generation_ = 0;
  std::uint64_t released_ = 0;  // ring position (page-aligned) up to which pages are given back
  std::uint64_t checked_head_ = 0;  // the events ring's head at the last WakeCompanion
};

}  // namespace mqc
