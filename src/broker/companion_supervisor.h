// SPDX-License-Identifier: BSD-3-Clause
// Keeps the companion process running, from the broker thread: starts it at init and waits for
// its first report (so that a port that cannot be bound fails the plugin's init), notices at
// TICK when it died or failed, and starts it again (at once the first time, then backing off up
// to 5 s while it keeps failing). A new companion asks the broker for a full resync by itself.
// A restarted companion serves on the port the first one got, also when that was chosen by
// the system (http_port 0): the address the operator was told stays right. A companion whose
// event loop stops beating for kStallTimeoutNs (deadlocked, or stopped) is killed and
// restarted too.
//
// Threads: the broker thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "broker/companion_process.h"
#include "link/event_records.h"
#include "link/plugin_options.h"
#include "link/shared_region.h"

namespace mqc {

class CompanionSupervisor {
 public:
  static constexpr std::int64_t kStallTimeoutNs = 5'000'000'000;

  using Logger = std::function<void(LogLevel, const std::string&)>;

  CompanionSupervisor(SharedRegion* region, std::string executable,
                      std::vector<std::string> arguments, Logger log);

  // Starts the companion and waits up to `timeout_ms` for it to serve. `pump` runs while
  // waiting (the plugin drains the companion's log lines there). A companion that reported a
  // failure (its message, as it reported it) or ended before it was ready is kUnavailable, as is
  // one that could not be started (CompanionProcess::Start's code otherwise); one that did not
  // report ready in time is kDeadlineExceeded.
  Status StartAndWait(int timeout_ms, const std::function<void()>& pump);

  // At TICK: notices an ended, failed or stalled companion and restarts it when its delay has
  // passed. `now_ns` is a monotonic clock.
  void Tick(std::int64_t now_ns);

  void Stop();

  // Options changed by a configuration reload ("key=value"), given to every later start of the
  // companion after its original ones (the last value of an option wins). The running companion
  // learns them from the events ring instead.
  void SetOptionOverrides(OptionPairs overrides);

  bool serving() const { return serving_; }
  int http_port() const;
  pid_t pid() const { return process_.pid(); }

 private:
  // Marks the companion starting and starts its process: CompanionProcess::Start's Status.
  Status Launch();
  void ScheduleRestart(std::int64_t now_ns);
  CompanionState ReadState() const;

  SharedRegion* region_;
  CompanionProcess process_;
  Logger log_;
  OptionPairs overrides_;
  int kept_http_port_ = -1;  // the port the first start bound: restarts keep it
  bool serving_ = false;
  std::int64_t next_start_ns_ = 0;
  int restart_delay_ms_ = 0;
  std::uint64_t last_heartbeat_ = 0;
  std::int64_t last_heartbeat_ns_ = 0;  // when the heartbeat last changed
};

}  // namespace mqc
