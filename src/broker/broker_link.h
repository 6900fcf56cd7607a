// SPDX-License-Identifier: BSD-3-Clause
// The broker thread's end of the shared region: writes events, reads the companion's commands,
// runs resyncs. Every exchange with the companion goes through it. No API request reaches it:
// the companion answers those from its registry, the statistics slots and the kernel.
// No lock, no syscall, no allocation on the event path (the encoding buffer of the caller is
// reused).
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
#include "link/event_records.h"
#include "link/shared_region.h"

namespace mqc {

class BrokerLink : public EventSink {
 public:
  explicit BrokerLink(SharedRegion* region);

  // EventSink: a full ring counts the event as lost and schedules a resync.
  bool Emit(EventType type, const std::string& payload) override;
  bool Fits(const std::vector<std::size_t>& payload_sizes) const override;

  // Hands every pending log command to `log`, every disconnect request to `kick` (at TICK;
  // without `kick`, at init and cleanup, requests are dropped) and every ban list to `bans`
  // (at TICK and while the companion starts; without it dropped). A malformed request is not
  // acted on: `log` gets a warning instead. Returns how many commands were read.
  std::size_t DrainCommands(const std::function<void(const LogCommand&)>& log,
                            const std::function<void(const KickCommand&)>& kick = nullptr,
                            const std::function<void(BansCommand&&)>& bans = nullptr);

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
  static constexpr std::uint64_t kReleaseStep = 64 * 1024;

  std::uint64_t events_lost() const;

 private:
  SharedRegion* region_;
  mutable RingWriter events_;  // Fits() reads the consumer's tail into its cache
  RingReader commands_;
  bool resync_due_ = false;
  std::uint64_t handled_request_ = 0;
  std::uint64_t generation_ = 0;
  std::uint64_t released_ = 0;  // ring position (page-aligned) up to which pages are given back
};

}  // namespace mqc
