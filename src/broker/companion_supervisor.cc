// SPDX-License-Identifier: BSD-3-Clause
#include "broker/companion_supervisor.h"

#include <algorithm>
#include <utility>

#include "link/clock.h"
#include "link/companion_arguments.h"

namespace mqc {

namespace {

constexpr int kMaxRestartDelayMs = 5000;

}  // namespace

CompanionSupervisor::CompanionSupervisor(SharedRegion* region, std::string executable,
                                         std::vector<std::string> arguments, Logger log)
    : region_(region),
      process_(std::move(executable), std::move(arguments), region->fd()),
      log_(std::move(log)) {}

CompanionState CompanionSupervisor::ReadState() const {
  return static_cast<CompanionState>(
      region_->header()->companion.state.load(std::memory_order_acquire));
}

void CompanionSupervisor::SetOptionOverrides(OptionPairs overrides) {
  overrides_ = std::move(overrides);
  OptionPairs extra = overrides_;
  // The last plugin option wins: restarts keep this port.
  if (kept_http_port_ >= 0) extra.emplace_back("http_port", std::to_string(kept_http_port_));
  process_.SetExtraArguments(WriteOptionArguments(extra));
}

int CompanionSupervisor::http_port() const {
  return region_->header()->companion.http_port.load(std::memory_order_relaxed);
}

Status CompanionSupervisor::Launch() {
  serving_ = false;
  last_heartbeat_ns_ = 0;  // the stall clock starts with the new process
  region_->header()->companion.state.store(static_cast<std::uint32_t>(CompanionState::kStarting),
                                           std::memory_order_release);
  return process_.Start();
}

Status CompanionSupervisor::StartAndWait(int timeout_ms, const std::function<void()>& pump) {
  Status launched = Launch();
  if (!launched.ok()) return launched;
  for (int waited = 0; waited <= timeout_ms; waited += 5) {
    pump();
    switch (ReadState()) {
      case CompanionState::kServing:
        // What the companion sent before it reported serving (its ban list) is read now, so
        // that it is in force before the broker accepts its first client.
        pump();
        serving_ = true;
        kept_http_port_ = http_port();
        SetOptionOverrides(overrides_);
        return Status();
      case CompanionState::kFailed: {
        Status failed(StatusCode::kUnavailable, region_->header()->companion.failure);
        process_.Stop(2000);
        return failed;
      }
      case CompanionState::kStarting:
        break;
    }
    std::string how;
    if (process_.Exited(&how)) {
      pump();
      return Status(StatusCode::kUnavailable, "the companion " + how + " before it was ready");
    }
    SleepMs(5);
  }
  process_.Stop(2000);
  return Status(StatusCode::kDeadlineExceeded,
                "the companion did not report ready within " + std::to_string(timeout_ms) + " ms");
}

void CompanionSupervisor::ScheduleRestart(std::int64_t now_ns) {
  next_start_ns_ = now_ns + std::int64_t{restart_delay_ms_} * 1000000;
  restart_delay_ms_ = std::min(kMaxRestartDelayMs, std::max(100, restart_delay_ms_ * 2));
}

void CompanionSupervisor::Tick(std::int64_t now_ns) {
  if (process_.running()) {
    std::string how;
    if (process_.Exited(&how)) {
      log_(LogLevel::kWarning, "mosquitto_connections: companion " + how + "; restarting it");
      ScheduleRestart(now_ns);
      return;
    }
    const std::uint64_t heartbeat =
        region_->header()->companion.heartbeat.load(std::memory_order_relaxed);
    if (heartbeat != last_heartbeat_ || last_heartbeat_ns_ == 0) {
      last_heartbeat_ = heartbeat;
      last_heartbeat_ns_ = now_ns;
    } else if (serving_ && now_ns - last_heartbeat_ns_ > kStallTimeoutNs) {
      log_(LogLevel::kWarning, "mosquitto_connections: companion stopped answering for " +
                                   std::to_string(kStallTimeoutNs / 1000000000) +
                                   " s; restarting it");
      process_.Kill();
      ScheduleRestart(now_ns);
      return;
    }
    if (serving_) return;
    const CompanionState state = ReadState();
    if (state == CompanionState::kServing) {
      serving_ = true;
      restart_delay_ms_ = 0;
      log_(LogLevel::kNotice, "mosquitto_connections: companion restarted, serving on port " +
                                  std::to_string(http_port()));
    } else if (state == CompanionState::kFailed) {
      log_(LogLevel::kError, std::string("mosquitto_connections: companion failed: ") +
                                 region_->header()->companion.failure);
      process_.Kill();
      ScheduleRestart(now_ns);
    }
    return;
  }
  if (now_ns < next_start_ns_) return;
  const Status launched = Launch();
  if (!launched.ok()) {
    log_(LogLevel::kError, "mosquitto_connections: " + launched.message());
    ScheduleRestart(now_ns);
  }
}

void CompanionSupervisor::Stop() {
  process_.Stop(2000);
  serving_ = false;
}

}  // namespace mqc
