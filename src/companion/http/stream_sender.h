// SPDX-License-Identifier: BSD-3-Clause
// The stream pump: response streams (HttpBodyStream) sent on their connections, and the set of
// those alive, so that the server can wake, stop and count them. Free of libmicrohttpd: the
// adapter (mhd_adapter.h) hands each sender how to park and resume its connection.
//
// A parked connection is never freed by MHD (it does not even see a hang-up), so a resume
// outside the sender's lock still reaches a live connection; `parked` is flipped under the lock
// so that exactly one Wake resumes it. The daemon must not stop with a parked connection (MHD's
// rule): StreamSet::Stop wakes them all first. Parked connections have no idle timeout (MHD's
// rule too): StreamSet::Tick, every second, wakes them to look for a hung-up peer. A wake holds
// the sender's parking state, never the sender: a sender is destroyed where MHD frees its
// response (or where StreamSet::Stop ends), never on a stream's own thread or the clock's.
//
// Threads: StreamSender::Read runs on the MHD thread serving the connection (and parks it from
// there, as MHD allows); Wake and Stop on any thread. StreamSet's methods on any thread, under
// its mutex; Stop waits (bounded) for MHD's threads to finish the streams it stopped.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>

#include "companion/http/http_message.h"

namespace mqc {

class StreamSender {
 public:
  // Read's answer at the end of the body, libmicrohttpd's MHD_CONTENT_READER_END_OF_STREAM (the
  // adapter checks that they agree). 0 is "nothing now" (parked or about to be resumed).
  static constexpr ssize_t kEndOfStream = -1;

  // `fd`: the connection's socket (to see a hung-up peer; -1: unknown). `park` suspends the
  // connection, `resume` resumes it; neither may throw.
  StreamSender(std::shared_ptr<HttpBodyStream> stream, int fd, std::function<void()> park,
               std::function<void()> resume);
  // Done(): a wake that outlives the sender never resumes.
  ~StreamSender();
  StreamSender(const StreamSender&) = delete;
  StreamSender& operator=(const StreamSender&) = delete;

  // Up to `max` bytes of the body into `buffer`: their count, 0 when the connection was parked
  // (or a Wake came meanwhile), kEndOfStream at the end or when the peer is gone.
  ssize_t Read(char* buffer, std::size_t max);
  // The stream has something new: resumes a parked connection (any thread).
  void Wake();
  // The stream's wake: Wake without keeping the sender alive. A wake that held the sender could
  // be left with the last reference once MHD freed the response, and then destroy the stream on
  // the stream's own thread (a fleet watch's peer), which joins itself there.
  std::function<void()> WakeFunction() const;
  // Asks the stream to end with its last words, and wakes it (any thread).
  void Stop();
  // The connection is gone: no resume after this.
  void Done();

  std::int64_t started_ns() const { return started_ns_; }

 private:
  bool PeerGone() const;

  // What a wake reaches, shared by the sender and the stream's wake (WakeFunction).
  struct WakeState {
    explicit WakeState(std::function<void()> resume_connection)
        : resume(std::move(resume_connection)) {}
    void Wake();

    const std::function<void()> resume;
    std::mutex mutex;
    bool parked = false;    // guarded by mutex
    bool woken = false;     // a Wake came while running; guarded by mutex
    bool stopping = false;  // guarded by mutex
    bool done = false;      // MHD freed the response; guarded by mutex
  };

  const std::shared_ptr<HttpBodyStream> stream_;
  const int fd_;
  const std::function<void()> park_;
  const std::shared_ptr<WakeState> wake_;
  const std::int64_t started_ns_;
  // Only the MHD thread serving the connection:
  std::string pending_;
  std::size_t sent_ = 0;
  bool ended_ = false;
};

class StreamSet {
 public:
  // A sender for `stream` (arguments as StreamSender's), in the set until Finished. The stream's
  // wake reaches the sender while it lives. Stopped at once when the set is closing.
  std::shared_ptr<StreamSender> Add(std::shared_ptr<HttpBodyStream> stream, int fd,
                                    std::function<void()> park, std::function<void()> resume);
  // MHD freed the sender's response.
  void Finished(const std::shared_ptr<StreamSender>& sender);
  // Stops the streams that started before `started_before_ns` (monotonic; all when 0, and then
  // every later one at once too), wakes them, and waits up to `wait_ms` for them to finish.
  void Stop(std::int64_t started_before_ns, int wait_ms);
  // Wakes every stream: a parked one checks its peer.
  void Tick();
  std::size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::unordered_set<std::shared_ptr<StreamSender>> live_;  // guarded by mutex_
  // Stopping for good: a stream that starts now is stopped at once (it must not park: MHD stops
  // next). Guarded by mutex_.
  bool closing_ = false;
};

}  // namespace mqc
