// SPDX-License-Identifier: BSD-3-Clause
// RequestClock with socket pairs: an overdue request's socket is shut down (its peer reads the
// end), an answered one is left alone until the next request is due, and the tick comes while
// a connection is open.
#include "companion/http/request_clock.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace mqc {
namespace {

// A connected pair: `server` is the one the clock watches, `peer` the client's end, whose reads
// give up after `timeout_s`.
struct SocketPair {
  explicit SocketPair(int timeout_s) {
    int fds[2] = {-1, -1};
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    server = fds[0];
    peer = fds[1];
    timeval timeout{};
    timeout.tv_sec = timeout_s;
    EXPECT_EQ(setsockopt(peer, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)), 0);
  }
  void SetTimeout(int timeout_s) const {
    timeval timeout{};
    timeout.tv_sec = timeout_s;
    EXPECT_EQ(setsockopt(peer, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)), 0);
  }
  ~SocketPair() {
    close(server);
    close(peer);
  }
  SocketPair(const SocketPair&) = delete;
  SocketPair& operator=(const SocketPair&) = delete;
  // 0: the server side was shut down; -1: the read timed out (still open).
  ssize_t PeerRead() const {
    char byte = 0;
    return recv(peer, &byte, 1, 0);
  }
  int server = -1;
  int peer = -1;
};

TEST(RequestClockTest, AnOverdueRequestIsShutDown) {
  RequestClock clock(1, nullptr);
  SocketPair pair(8);
  const auto start = std::chrono::steady_clock::now();
  ConnectionClock* connection = clock.Started(pair.server);
  EXPECT_EQ(pair.PeerRead(), 0);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, std::chrono::milliseconds(900));
  EXPECT_LT(took, std::chrono::seconds(5));  // 1.5 s at most on an idle machine
  clock.Closed(connection);
}

TEST(RequestClockTest, AnAnsweredRequestWaitsForTheNextOne) {
  RequestClock clock(1, nullptr);
  SocketPair pair(2);
  ConnectionClock* connection = clock.Started(pair.server);
  clock.Answered(connection);
  EXPECT_EQ(pair.PeerRead(), -1) << "shut down while the answer was being sent";
  clock.Completed(connection);  // the next request is due within the limit again
  pair.SetTimeout(8);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(pair.PeerRead(), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  clock.Closed(connection);
}

TEST(RequestClockTest, AClosedConnectionIsForgotten) {
  RequestClock clock(1, nullptr);
  SocketPair pair(2);
  clock.Closed(clock.Started(pair.server));
  EXPECT_EQ(pair.PeerRead(), -1) << "a closed connection's socket was shut down";
  clock.Answered(nullptr);  // a connection without a clock (out of memory at its start)
  clock.Completed(nullptr);
}

// The tick wakes the streams, which are open connections: with none open the clock's thread
// sleeps (an idle companion does not wake for it); the first connection starts the ticks.
TEST(RequestClockTest, TicksEverySecondOnlyWhileAConnectionIsOpen) {
  std::atomic<int> ticks{0};
  {
    RequestClock clock(10, [&ticks] { ++ticks; });
    std::this_thread::sleep_for(std::chrono::milliseconds(1300));
    EXPECT_EQ(ticks.load(), 0) << "ticked without a connection";
    SocketPair pair(2);
    ConnectionClock* connection = clock.Started(pair.server);
    std::this_thread::sleep_for(std::chrono::milliseconds(2300));
    clock.Closed(connection);
  }
  EXPECT_GE(ticks.load(), 1);
  EXPECT_LE(ticks.load(), 3);
}

// Short requests one after another (a list polled, a load balancer's health check): the
// clock's thread, already on its rounds, is not woken again for each new connection, and still
// ends the request that comes after them too late.
TEST(RequestClockTest, ConnectionsOneAfterAnotherWakeTheClockOnce) {
  RequestClock clock(1, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // asleep until a connection
  SocketPair quick(1);
  for (int i = 0; i < 20; ++i) clock.Closed(clock.Started(quick.server));
  EXPECT_EQ(clock.wakes(), 1u);
  SocketPair slow(8);
  const auto start = std::chrono::steady_clock::now();
  ConnectionClock* connection = clock.Started(slow.server);
  EXPECT_EQ(slow.PeerRead(), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  clock.Closed(connection);
  // Back to its sleep once a round finds nothing open; the next connection wakes it again.
  const std::uint64_t wakes = clock.wakes();
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  clock.Closed(clock.Started(quick.server));
  EXPECT_EQ(clock.wakes(), wakes + 1);
}

}  // namespace
}  // namespace mqc
