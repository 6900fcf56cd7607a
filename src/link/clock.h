// SPDX-License-Identifier: BSD-3-Clause
// The clocks and the sleep both processes use.
#pragma once

#include <time.h>

#include <cerrno>
#include <cstdint>

namespace mqc {

// Unix time in nanoseconds: what connections show as their open and close times.
inline std::int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return std::int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// For durations and deadlines: never jumps with the wall clock.
inline std::int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// Sleeps `ms` milliseconds, through signal interruptions.
inline void SleepMs(int ms) {
  timespec ts{ms / 1000, static_cast<long>(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

}  // namespace mqc
