// SPDX-License-Identifier: BSD-3-Clause
// One peer's part of a fleet WatchConnections stream (docs/fleet.md, "Watching the fleet"): a
// thread that watches the peer with node scope (binary codec, the fleet token, the caller's
// filter) and keeps what it reads, decoded, in a bounded buffer for the merged stream.
//
// Position: the thread resumes the peer after the last message it read after a SYNCED (so
// that nothing buffered is lost or read twice across a reconnect); until its first message, from
// the client's resume token, which the peer reads for its own node's position.
// Loss: a peer that cannot be reached, answers something else, or ends its stream with an
// error, gives one PEER_LOST event (PeerFailure naming it), then is watched again after a
// backoff (kPeerWatchFirstBackoff doubling up to kPeerWatchMaxBackoff); after
// kPeerWatchMaxAttempts failures in a row without a message in between, a last PEER_LOST says
// the stream gave up on it. A planned end of one peer call (kPeerWatchSegment, so that no call
// lives for ever) is resumed without a loss.
// Bounds: connect within kPeerWatchConnectTimeout, and the first answer too when a fresh state
// is asked for (a resumed peer may rightly say nothing); one message at most
// kMaxPeerWatchMessage bytes; at most `max_buffered` events waiting (more: overflowed(), and
// the peer is no longer read).
//
// Threads: built and Start()ed on an HTTP thread; Run on its own thread; Take, overflowed and
// Stop on the merged stream's thread (Read); the destructor stops and joins the thread (at most
// about kStreamPoll, or the connect timeout while connecting). `wake` is called from the
// thread after each event and must stay callable until the destructor returns.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "companion/fleet/peer_client.h"
#include "companion/http/connect_protocol.h"
#include "link/peer_url.h"
#include "link/status.h"

namespace mqc {

inline constexpr std::chrono::milliseconds kPeerWatchConnectTimeout{5000};
inline constexpr std::chrono::milliseconds kPeerWatchFirstBackoff{250};
inline constexpr std::chrono::milliseconds kPeerWatchMaxBackoff{4000};
inline constexpr int kPeerWatchMaxAttempts = 30;
inline constexpr std::chrono::minutes kPeerWatchSegment{10};
inline constexpr std::size_t kMaxPeerWatchMessage = 16u << 20;

struct PeerWatchEvent {
  bool lost = false;    // PEER_LOST: `failure` says why, `message` is empty
  PeerFailure failure;  // lost only
  DecodedWatchMessage message;
};

struct PeerWatchOptions {
  PeerUrl peer;
  std::string token;  // the fleet's read token; empty: none
  std::shared_ptr<const PeerClient> client;
  std::string filter;
  // Where the peer starts: the client's resume token, from which the peer takes its own node's
  // position (only the peer knows its node id); empty: a fresh state.
  std::string resume_token;
  // The merged stream's end (Connect-Timeout-Ms); none: until stopped.
  std::optional<std::chrono::steady_clock::time_point> end;
  std::size_t max_buffered = 4096;
};

class PeerWatch {
 public:
  PeerWatch(PeerWatchOptions options, std::function<void()> wake);
  ~PeerWatch();
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

  void Start();
  void Stop();
  // Appends the events read since the last call to *out.
  void Take(std::deque<PeerWatchEvent>* out);
  // More than max_buffered events waited: the merged stream's client reads too slowly.
  bool overflowed() const { return overflowed_.load(); }
  const PeerUrl& peer() const { return options_.peer; }

 private:
  void Run();
  // One call to the peer: ok when it ended as planned (the segment's deadline), else why not.
  // *progressed: a message was read.
  Status Watch(bool* progressed);
  bool Push(PeerWatchEvent event);  // false: overflowed
  void Lost(const Status& why, bool giving_up);

  const PeerWatchOptions options_;
  const std::function<void()> wake_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> overflowed_{false};
  std::mutex mutex_;
  std::condition_variable stopped_;   // wakes a backoff wait; with mutex_
  std::deque<PeerWatchEvent> events_;  // guarded by mutex_
  std::thread thread_;
  // Only the thread (Run):
  std::uint64_t position_ = 0;
  bool position_known_ = false;  // a message came: position_ holds, the token no longer
  std::uint32_t node_id_ = 0;
};

// Takes the next whole envelope of `buffer` (Connect's streaming framing) into *flags and
// *payload, removing it: 1; 0 when the envelope is not complete yet; -1 when it says more than
// `max_payload` bytes.
int TakeEnvelope(std::string* buffer, std::size_t max_payload, std::uint8_t* flags,
                 std::string* payload);

// The Connect error of an end-of-stream envelope's JSON: ok for `{}`, the error otherwise
// (kInternal when the bytes are not one).
Status EndOfStreamStatus(std::string_view json);

}  // namespace mqc
