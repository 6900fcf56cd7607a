// SPDX-License-Identifier: BSD-3-Clause
// The companion's end of the shared region: reads the broker's events into the ConnectionRegistry,
// reports its own state, and sends log lines back for the broker's log.
// Every exchange with the broker goes through it.
//
// Threads: Poll and settings_seen on the companion's event thread; Log and RequestKick from any
// thread (a mutex makes the commands ring single-producer); the Report* calls on the
// main thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "companion/connection_registry.h"
#include "link/event_records.h"
#include "link/event_ring.h"
#include "link/shared_region.h"

namespace mqc {

// Decodes one record of the events ring and applies it to `registry` through its typed methods
// (the decoding happens before the registry's lock is taken). Returns false for a malformed
// record or an unknown type, which changes nothing.
bool ApplyEventRecord(ConnectionRegistry* registry, EventType type, std::string_view payload,
                      std::int64_t now_ns);

class CompanionLink {
 public:
  explicit CompanionLink(SharedRegion* region);

  // Forgets whatever an earlier companion left unread and asks the broker for its full state.
  void Begin();

  // Applies every waiting event to `registry`. Returns how many were read.
  std::size_t Poll(ConnectionRegistry* registry, std::int64_t now_ns);

  // Queues a line for the broker's log; false when the commands ring is full (line dropped).
  bool Log(LogLevel level, const std::string& text);

  // Asks the broker thread to disconnect a client (acted on at its next TICK); false when the
  // commands ring is full. Any thread.
  bool RequestKick(const KickCommand& command);

  // Sends the whole ban list to the broker thread (in force at its next TICK, or before it
  // accepts clients when sent before ReportServing). Returns the list's number
  // (BansCommand::sequence), or 0 when the commands ring is full. Any thread.
  std::uint64_t SendBans(const std::vector<Ban>& bans);
  // The number of the last list sent.
  std::uint64_t bans_sent() const;
  // Waits, at most `timeout_ns`, until the broker has put list `sequence` (or a later one) in
  // force; false on the timeout.
  bool WaitForBans(std::uint64_t sequence, std::int64_t timeout_ns);

  // How many settings records (sent at every configuration reload) Poll has read so far.
  std::uint64_t settings_seen() const { return settings_seen_; }

  void ReportServing(int port);
  // Tells the broker the event loop is alive (a stalled companion is restarted).
  void Heartbeat();
  // Sleeps until the broker has written events, or `timeout_ns` (WaitForBrokerEvents).
  void WaitForEvents(std::int64_t timeout_ns);
  void ReportFailed(const std::string& why);

  std::uint64_t malformed_events() const { return malformed_; }

 private:
  SharedRegion* region_;
  RingReader events_;
  std::mutex log_mutex_;
  RingWriter commands_;
  std::string buffer_;  // guarded by log_mutex_
  std::uint64_t malformed_ = 0;
  std::uint64_t settings_seen_ = 0;  // Poll's thread only
};

}  // namespace mqc
