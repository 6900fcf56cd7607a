// SPDX-License-Identifier: BSD-3-Clause
// The per-connection request deadline: ends requests that take longer than a limit to arrive
// (trickling clients), which the idle timeout alone never ends for a client that sends a byte
// every few seconds. While connections are open, a thread wakes twice a second and shuts down
// each overdue socket, which libmicrohttpd then sees as closed by the peer and cleans up on its
// own thread. With none open it sleeps until one opens: only then does a connection wake it
// (short requests one after another cost it no wake each). The socket is never closed here:
// MHD calls Closed (under the same mutex) before it closes the descriptor, so a number shut
// down here is always still the connection's own.
//
// Threads: Started, Answered, Completed and Closed run on the MHD thread serving the connection;
// the clock's own thread reads the deadlines and runs `tick`; both under the clock's mutex (the
// tick outside it). The destructor stops and joins the thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_set>

namespace mqc {

// One connection's request deadline, from Started to Closed (MHD's socket_context). Written by
// the MHD thread serving the connection, read by the clock's thread, both under its mutex.
struct ConnectionClock {
  int fd = -1;
  std::int64_t deadline_ns = 0;  // monotonic; 0: no request under way (answer being sent)
  bool shut = false;
};

class RequestClock {
 public:
  // `limit_s`: the seconds a request may take to arrive whole. `tick` runs on the clock's
  // thread every second, outside its lock (the HTTP server wakes its streams with it).
  RequestClock(unsigned limit_s, std::function<void()> tick);
  ~RequestClock();
  RequestClock(const RequestClock&) = delete;
  RequestClock& operator=(const RequestClock&) = delete;

  // A connection on socket `fd` opened: its first request must arrive within the limit.
  // The result is the connection's until Closed.
  ConnectionClock* Started(int fd);
  void Closed(ConnectionClock* clock);
  // The request is in and answered: sending is bounded by the idle timeout. Null is ignored.
  void Answered(ConnectionClock* clock);
  // The next request on this connection must arrive in time too. Null is ignored.
  void Completed(ConnectionClock* clock);

  // How often a connection's start woke the clock's thread (for tests).
  std::uint64_t wakes() const;

 private:
  void Set(ConnectionClock* clock, std::int64_t deadline_ns);
  void Run();

  const std::int64_t limit_ns_;
  const std::function<void()> tick_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;                          // guarded by mutex_
  std::unordered_set<ConnectionClock*> live_;  // guarded by mutex_
  bool asleep_ = false;                        // guarded by mutex_: waits for a connection
  std::uint64_t wakes_ = 0;                    // guarded by mutex_
  std::thread thread_;                         // last: starts once the rest is built
};

}  // namespace mqc
