// SPDX-License-Identifier: BSD-3-Clause
// One WatchConnections call (proto/mqtt/connections/v1/connections.proto) as a Connect server
// stream: enveloped messages (a flags byte, a 4-byte big-endian length, the message in the
// call's codec), ending with the end-of-stream envelope (flags 0x02, JSON
// `{"error":{"code":...,"message":...}}`, or `{}` when the stream ends without an error).
//
// What it sends: a fresh state (RESET, one CURRENT per open connection or offline session the
// filter matches, SYNCED), taken with the sequence of the last change it includes; then each
// later change whose connection matches the filter before or after it. A resumption
// (resume_after) the companion can continue from skips the state; any other (too old, from
// another companion, past a resync) gets a fresh state, RESET first: never a silent gap. A
// resync of the registry mid-stream does the same.
//
// Bounded: the stream keeps no copy of the changes; it reads them from ConnectionChanges at its
// own pace, and is cut off (resource_exhausted) when the oldest change it still has to send (one
// its filter matches) is more than `buffer` changes behind the newest one: changes the filter
// skips never count. The state is encoded a block at a time, as the server asks for bytes. The
// number of streams at once is counted by a WatchSlots given to each.
//
// Threads: built on an HTTP thread; Read on the server's threads, one at a time; Stop and the
// wake-up from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "companion/connection_changes.h"
#include "companion/http/connect_codec.h"
#include "companion/http/http_server.h"
#include "companion/query/connection_filter.h"
#include "link/status.h"

namespace mqc {

// How many streams may run at once; a stream holds one slot for its life.
class WatchSlots {
 public:
  explicit WatchSlots(std::size_t max) : max_(max) {}
  // A slot, or null when all `max` are taken.
  std::shared_ptr<void> TryTake();
  std::size_t in_use() const { return in_use_.load(); }
  std::size_t max() const { return max_; }

 private:
  const std::size_t max_;
  std::atomic<std::size_t> in_use_{0};
};

struct WatchStreamOptions {
  ConnectCodec codec = ConnectCodec::kJson;
  ConnectionFilter filter;
  std::uint64_t resume_after = 0;
  // Connect-Timeout-Ms: the stream ends with deadline_exceeded at this time.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  std::size_t buffer = 4096;  // changes the stream may fall behind before it is cut off
  std::uint32_t node_id = 0;  // plugin_opt_node_id, on every message (0: left out)
};

// The 5-byte envelope prefix and `payload`, appended to *out.
void AppendEnvelope(std::uint8_t flags, std::string_view payload, std::string* out);
// The end-of-stream envelope: `{}` for an ok status, else the Connect error.
void AppendEndOfStream(const Status& status, std::string* out);

class WatchStream : public HttpBodyStream {
 public:
  // `live` and `changes` must outlive the stream.
  WatchStream(const LiveConnections& live, ConnectionChanges* changes, WatchStreamOptions options,
              std::shared_ptr<void> slot);
  ~WatchStream() override;

  void SetWake(std::function<void()> wake) override;
  Pull Read(std::size_t max, std::string* out) override;
  void Stop() override { stop_.store(true); }

 private:
  enum class Phase : std::uint8_t { kStart, kState, kChanges, kFinished };
  void StartFresh(std::string* out);
  void Append(std::uint64_t sequence, ChangeKind kind, const Connection* connection,
              const Subscription* subscription, std::string* out);
  Pull Finish(const Status& status, std::string* out);

  const LiveConnections& live_;
  ConnectionChanges* const changes_;
  const WatchStreamOptions options_;
  const std::shared_ptr<void> slot_;
  std::atomic<bool> stop_{false};
  std::uint64_t waiter_ = 0;
  // Only the thread in Read:
  Phase phase_ = Phase::kStart;
  std::uint64_t cursor_ = 0;  // the last change this stream has dealt with
  ConnectionList state_;      // the fresh state being sent
  std::size_t state_index_ = 0;
  std::vector<ConnectionChangePtr> batch_;
};

}  // namespace mqc
