// SPDX-License-Identifier: BSD-3-Clause
#include "companion/http/request_clock.h"

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>

#include "link/clock.h"

namespace mqc {

RequestClock::RequestClock(unsigned limit_s, std::function<void()> tick)
    : limit_ns_(std::int64_t{limit_s} * 1000000000),
      tick_(std::move(tick)),
      thread_([this] { Run(); }) {}

RequestClock::~RequestClock() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

ConnectionClock* RequestClock::Started(int fd) {
  auto clock = std::make_unique<ConnectionClock>();
  clock->fd = fd;
  clock->deadline_ns = MonotonicNs() + limit_ns_;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.insert(clock.get());
    // Only a thread asleep without a timeout needs waking; on its rounds it sees this one at
    // the next (a notification would end its wait early for nothing, at every connection).
    wake = asleep_;
    asleep_ = false;
    if (wake) ++wakes_;
  }
  if (wake) wake_.notify_one();
  return clock.release();
}

void RequestClock::Closed(ConnectionClock* clock) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.erase(clock);
  }
  delete clock;
}

std::uint64_t RequestClock::wakes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return wakes_;
}

void RequestClock::Answered(ConnectionClock* clock) { Set(clock, 0); }

void RequestClock::Completed(ConnectionClock* clock) { Set(clock, MonotonicNs() + limit_ns_); }

void RequestClock::Set(ConnectionClock* clock, std::int64_t deadline_ns) {
  if (clock == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  clock->deadline_ns = deadline_ns;
}

void RequestClock::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  unsigned rounds = 0;
  while (!stop_) {
    // No connection, no deadline and no stream: nothing to do until one opens, so an idle
    // companion's clock does not wake at all.
    if (live_.empty()) {
      // Until a connection's start clears `asleep_`: the connection may have closed again by
      // the time this thread runs, and the next one would not wake it a second time.
      asleep_ = true;
      wake_.wait(lock, [this] { return stop_ || !asleep_; });
      if (stop_) break;
    }
    wake_.wait_for(lock, std::chrono::milliseconds(500), [this] { return stop_; });
    if (++rounds % 2 == 0 && tick_ && !stop_) {
      // Outside the lock: a tick resumes parked connections, which takes MHD's own locks, and
      // MHD's threads call Closed with those held.
      lock.unlock();
      tick_();
      lock.lock();
    }
    const std::int64_t now = MonotonicNs();
    for (ConnectionClock* clock : live_) {
      if (clock->shut || clock->deadline_ns == 0 || now < clock->deadline_ns) continue;
      (void)shutdown(clock->fd, SHUT_RDWR);  // MHD closes it; nothing to do if it is gone
      clock->shut = true;
    }
  }
}

}  // namespace mqc
