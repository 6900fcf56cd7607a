// The broker thread's end of the shared region: writes events, reads the companion's commands,
// runs resyncs and answers idle-time requests. Every exchange with the companion goes through it.
// No lock, no syscall, no allocation on the event path (the encoding buffer of the caller is
// reused).
//
// Threads: the broker thread only.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "broker/session_table.h"
#include "link/event_records.h"
#include "link/shared_region.h"

namespace mqc {

class BrokerLink : public EventSink {
 public:
  explicit BrokerLink(SharedRegion* region);

  // EventSink: a full ring counts the event as lost and schedules a resync.
  bool Emit(EventType type, const std::string& payload) override;
  bool Fits(const std::vector<std::size_t>& payload_sizes) const override;

  // Hands every pending log command to `log` and every disconnect request to `kick` (at TICK;
  // without `kick`, at init and cleanup, requests are dropped). A malformed request is not
  // acted on: `log` gets a warning instead. Returns how many commands were read.
  std::size_t DrainCommands(const std::function<void(const LogCommand&)>& log,
                            const std::function<void(const KickCommand&)>& kick = nullptr);

  // At TICK: starts a resync if the companion asked for one or events were lost since the
  // last, and carries an unfinished one on as far as the ring has room. Returns true when no
  // resync is due or under way any more.
  bool ResyncStep(SessionTable* table);

  // At TICK: answers the companion's request for fresh idle times (CompanionLink::
  // RequestIdleTimes), at most once per TICK and only when asked. For every open connection
  // with a statistics slot, `idle_ms(client)` gives milliseconds since the client last sent
  // data (negative: unknown, the slot keeps its last sample); the slot records it as of
  // `now_ns()` (Unix time), then the answer is published (release). Returns true if it answered.
  template <typename IdleMs, typename NowNs>
  bool AnswerIdleRequest(const SessionTable& table, IdleMs idle_ms, NowNs now_ns) {
    const std::uint64_t request =
        region_->header()->companion.idle_requested.load(std::memory_order_acquire);
    if (request == idle_answered_) return false;
    const std::uint64_t now = static_cast<std::uint64_t>(now_ns());
    table.ForEachOpenWithStats([&idle_ms, now](const void* client, ConnectionStatsSlot* stats) {
      const std::int64_t idle = idle_ms(client);
      if (idle < 0) return;
      stats->idle_ms.store(static_cast<std::uint64_t>(idle), std::memory_order_relaxed);
      stats->idle_sampled_ns.store(now, std::memory_order_relaxed);
    });
    idle_answered_ = request;
    region_->header()->broker.idle_sampled.store(request, std::memory_order_release);
    return true;
  }

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
  std::uint64_t idle_answered_ = 0;  // the companion's last idle request answered
  std::uint64_t released_ = 0;  // ring position (page-aligned) up to which pages are given back
};

}  // namespace mqc
