// SPDX-License-Identifier: BSD-3-Clause
// What the companion holds per connection, and what one KubeMQ list costs, in one process and
// in figures that do not depend on the machine's load (docs/benchmarks.md, "Memory and the
// full list"). N connections of two subscriptions each go through the real event path into a
// registry wired as companion/main.cc wires it (the change history for WatchConnections, the
// client history fed by it, the flapping tracker inside the registry); then the KubeMQ list is
// answered through the HttpRouter.
//
//   mqc_list_bench [--connections N] [--repeat R] [--history H]
//       defaults 15000, 20 and 8192 (the companion's change history, companion/main.cc)
//
// Prints one "name value" line per figure:
//   heap_registry_bytes (the registry with its index and flapping tracker, no history),
//   heap_flapping_tracker_bytes (the registry's bytes less those of the same connections
//   received as a resync, which the flapping tracker does not count),
//   heap_changes_bytes (what the change history adds: its ring and the connection versions it
//   keeps alive), heap_client_history_bytes (what the client history adds), each also per
//   connection; heap_total_bytes; kubemq_full_bytes and kubemq_100_bytes (the answers' sizes);
//   kubemq_full_cpu_ms, kubemq_full_cached_cpu_ms (the same request again, the registry
//   unchanged) and kubemq_100_cpu_ms (the whole list of a registry of 100 connections, as the wrk
//   comparison asks it): CPU medians of R requests.
// Heap bytes are glibc's bytes in use (mallinfo2: uordblks + hblkhd), exact and load
// independent. Instruction counts: run it under callgrind with
//   --toggle-collect='mqc::(anonymous namespace)::FullList(*'   (or FullListAfterChange*,
//   ListOf100*, Feed*)
// and divide by 2R (each is called R times timed, then R times alone) for one request.
#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench_args.h"
#include "bench_registry.h"
#include "companion/client_history.h"
#include "companion/companion_link.h"
#include "companion/connection_changes.h"
#include "companion/connection_registry.h"
#include "companion/http/http_router.h"
#include "link/clock.h"
#include "link/event_records.h"

namespace mqc {
namespace {

using bench::Fail;
using bench::Feed;
using bench::Get;
using bench::kStart;
using bench::ParseOptions;
using bench::ThreadCpuMs;

std::size_t HeapBytes() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

// N connections as bench/mqtt_load.py opens them: client id bench-NNNNNN, two subscriptions.
__attribute__((noinline)) bool Feed(ConnectionRegistry* registry, long count) {
  std::string bytes;
  for (long i = 0; i < count; ++i) {
    ConnectionEvent open;
    open.seq = static_cast<std::uint64_t>(i + 1);
    for (std::size_t b = 0; b < open.uid.size(); ++b) {
      open.uid[b] = static_cast<std::uint8_t>((i >> (8 * (b % 4))) + b);
    }
    open.open_time_ns = kStart + i * 1'000'000;  // a thousand a second
    open.protocol_version = 4;
    open.port = static_cast<std::uint16_t>(10000 + i % 50000);
    open.local_port = 1883;
    char id[32];
    std::snprintf(id, sizeof(id), "bench-%06ld", i);
    open.client_id = id;
    open.ip_address = "127.0.0.1";
    open.auth_mechanism = AuthMechanism::kAnonymous;
    open.auth_state = AuthState::kSuccess;
    if (!Feed(registry, EventType::kConnection, open, &bytes)) return false;
    for (const std::string& filter :
         {"events/bench/" + std::to_string(i), "queues/bench." + std::to_string(i)}) {
      SubscriptionEvent subscribe{open.seq, 0, filter};
      if (!Feed(registry, EventType::kSubscribe, subscribe, &bytes)) return false;
    }
  }
  return true;
}

// The bytes of the whole KubeMQ list as the router answers it, kept or encoded anew.
std::size_t ListBytes(const HttpRouter& router) {
  return router.Handle(Get("/api/mqtt/connections")).Body().size();
}

__attribute__((noinline)) std::size_t FullList(const HttpRouter& router, int repeat) {
  std::size_t bytes = 0;
  for (int i = 0; i < repeat; ++i) bytes = ListBytes(router);
  return bytes;
}

// The whole list of a registry of 100 connections (the request of the wrk comparison).
__attribute__((noinline)) std::size_t ListOf100(const HttpRouter& router, int repeat) {
  std::size_t bytes = 0;
  for (int i = 0; i < repeat; ++i) bytes = ListBytes(router);
  return bytes;
}

// The whole list right after a change of the registry (a subscription come and gone): the
// answer is encoded again.
__attribute__((noinline)) std::size_t FullListAfterChange(ConnectionRegistry* registry,
                                                          const HttpRouter& router, int repeat) {
  std::size_t bytes = 0;
  std::string record;
  for (int i = 0; i < repeat; ++i) {
    SubscriptionEvent touch{1, 0, "events/touch"};
    (void)Feed(registry, EventType::kSubscribe, touch, &record);
    (void)Feed(registry, EventType::kUnsubscribe, touch, &record);
    bytes = ListBytes(router);
  }
  return bytes;
}

// Median CPU milliseconds of one call of `run` (each call `repeat`s nothing itself).
template <typename Run>
double MedianCpuMs(int repeat, Run run) {
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    const double start = ThreadCpuMs();
    run();
    times.push_back(ThreadCpuMs() - start);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int Run(int argc, char** argv) {
  long count = 15000;
  int repeat = 20;
  long history = 8192;
  const std::string error = ParseOptions(argc, argv,
                                         {{"--connections", 100L, 10'000'000L, &count},
                                          {"--repeat", 1, 1'000'000, &repeat},
                                          {"--history", 1L, 100'000'000L, &history}});
  if (!error.empty()) return Fail(error + "; usage: [--connections N] [--repeat R] [--history H]");
  mallopt(M_ARENA_MAX, 2);  // as the companion (companion/main.cc)
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);

  ConnectionRegistryOptions options;
  ListenerConfig listener;
  listener.port = 1883;
  options.listeners.push_back(listener);

  // 1. The registry alone.
  std::size_t registry_bytes = 0;
  {
    const std::size_t before = HeapBytes();
    ConnectionRegistry registry(options);
    if (!Feed(&registry, count)) return Fail("the registry did not take every event");
    registry_bytes = HeapBytes() - before;
  }
  // 1b. The same connections as a resync sends them: the flapping tracker counts none of them.
  std::size_t resync_bytes = 0;
  {
    const std::size_t before = HeapBytes();
    ConnectionRegistry registry(options);
    std::string bytes;
    if (!Feed(&registry, EventType::kResyncBegin, ResyncEvent{1}, &bytes) ||
        !Feed(&registry, count) ||
        !Feed(&registry, EventType::kResyncEnd, ResyncEvent{1}, &bytes)) {
      return Fail("the registry did not take every event of the resync");
    }
    resync_bytes = HeapBytes() - before;
  }
  // 2. With the change history, then 3. with the client history fed by it, as the companion.
  ConnectionChangesOptions changes_options;
  changes_options.history = static_cast<std::size_t>(history);
  std::size_t changes_bytes = 0;
  {
    const std::size_t before = HeapBytes();
    ConnectionChanges changes(changes_options);
    options.changes = &changes;
    ConnectionRegistry registry(options);
    if (!Feed(&registry, count)) return Fail("the registry did not take every event");
    changes_bytes = HeapBytes() - before - registry_bytes;
  }
  const std::size_t before = HeapBytes();
  ConnectionChanges changes(changes_options);
  ClientHistory client_history{ClientHistoryOptions()};
  changes.SetListener([&client_history](const ConnectionChange& change) {
    client_history.Record(change, NowNs());
  });
  options.changes = &changes;
  ConnectionRegistry registry(options);
  if (!Feed(&registry, count) || registry.open_count() != static_cast<std::size_t>(count)) {
    return Fail("the registry did not take every event");
  }
  const std::size_t total_bytes = HeapBytes() - before;
  const std::size_t client_history_bytes = total_bytes - registry_bytes - changes_bytes;

  const HttpRouter router(registry, nullptr, nullptr);
  std::size_t full_bytes = 0;
  const double full_ms = MedianCpuMs(repeat, [&] {
    (void)registry.SharedSnapshot();  // as in the companion: built by the first reader
    full_bytes = FullList(router, 1);
  });
  // The first request after a change encodes; the others find the answer unchanged.
  const double changed_ms =
      MedianCpuMs(repeat, [&] { full_bytes = FullListAfterChange(&registry, router, 1); });
  ConnectionChanges small_changes(changes_options);
  options.changes = &small_changes;
  ConnectionRegistry small(options);
  if (!Feed(&small, 100)) return Fail("the small registry did not take every event");
  const HttpRouter small_router(small, nullptr, nullptr);
  std::size_t small_bytes = 0;
  const double small_ms = MedianCpuMs(repeat, [&] { small_bytes = ListOf100(small_router, 1); });
  if (full_bytes < static_cast<std::size_t>(count) * 100 || small_bytes == 0) {
    return Fail("the lists are shorter than their connections");
  }
  // For callgrind: the loops alone.
  (void)FullList(router, repeat);
  (void)FullListAfterChange(&registry, router, repeat);
  (void)ListOf100(small_router, repeat);

  const auto per = [count](std::size_t heap) {
    return static_cast<double>(heap) / static_cast<double>(count);
  };
  std::printf("connections %ld\nchange_history %ld\n", count, history);
  std::printf("heap_registry_bytes %zu\nheap_registry_per_connection %.0f\n", registry_bytes,
              per(registry_bytes));
  std::printf("heap_flapping_tracker_bytes %zd\n", static_cast<std::ptrdiff_t>(registry_bytes) -
                                                       static_cast<std::ptrdiff_t>(resync_bytes));
  std::printf("heap_changes_bytes %zu\nheap_changes_per_connection %.0f\n", changes_bytes,
              per(changes_bytes));
  std::printf("heap_client_history_bytes %zu\nheap_client_history_per_connection %.0f\n",
              client_history_bytes, per(client_history_bytes));
  std::printf("heap_total_bytes %zu\nheap_total_mib %.1f\n", total_bytes,
              static_cast<double>(total_bytes) / (1 << 20));
  std::printf("kubemq_full_bytes %zu\nkubemq_100_bytes %zu\n", full_bytes, small_bytes);
  std::printf("kubemq_full_cpu_ms %.2f\nkubemq_full_after_change_cpu_ms %.2f\n", full_ms,
              changed_ms);
  std::printf("kubemq_100_cpu_ms %.3f\n", small_ms);
  return 0;
}

}  // namespace
}  // namespace mqc

int main(int argc, char** argv) { return mqc::Run(argc, argv); }
