// SPDX-License-Identifier: BSD-3-Clause
// What the in-process benchmarks (view_bench.cc, list_bench.cc) share: a registry fed with the
// broker's own event records, requests for the router, and this thread's CPU time.
#pragma once

#include <time.h>

#include <cstdint>
#include <string>
#include <utility>

#include "companion/companion_link.h"
#include "companion/connection_registry.h"
#include "companion/http/http_message.h"
#include "link/clock.h"
#include "link/event_records.h"

namespace mqc::bench {

constexpr std::int64_t kSecond = 1'000'000'000;
constexpr std::int64_t kStart = 1781260200 * kSecond;  // the benchmarks' connections open from here

// One event, encoded as the broker writes it and applied as the companion reads it.
template <typename Event>
bool Feed(ConnectionRegistry* registry, EventType type, const Event& event, std::string* bytes) {
  Encode(event, bytes);
  return ApplyEventRecord(registry, type, *bytes, NowNs());
}

inline HttpRequest Get(const std::string& path, QueryParams query = {}) {
  HttpRequest request;
  request.method = "GET";
  request.path = path;
  request.query = std::move(query);
  return request;
}

inline double ThreadCpuMs() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

}  // namespace mqc::bench
