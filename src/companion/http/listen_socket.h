// SPDX-License-Identifier: BSD-3-Clause
// The HTTP server's listening socket, made here rather than by libmicrohttpd: a failure then has
// its errno for the message ("cannot listen on 127.0.0.1:8080: Address already in use"), which
// MHD_start_daemon's bare NULL does not give.
//
// Threads: Listen runs on the caller's thread and keeps no state.
#pragma once

#include <cstddef>
#include <string>

#include "link/status.h"

namespace mqc {

// The send buffer of every accepted connection (SO_SNDBUF, set on the listening socket, which
// accepted sockets inherit). One send(2) copies at most about this much: a kernel built without
// preemption (CONFIG_PREEMPT_NONE) runs nothing else on that core while it copies, the broker
// thread included, and a big answer in one send (a page of 1000 is 1.3 MB, the full list 5 MB
// at 15,000 connections) held the broker's ping p99 at 1.4 to 2.1 ms while such answers were
// hammered (0.5 to 1.3 ms with this; docs/benchmarks.md, "The broker's ping while the API is
// hammered"). The cost: at most about twice this in flight per connection, so about 5 MB/s to
// a client 100 ms away.
inline constexpr std::size_t kHttpSendBufferBytes = 256 * 1024;

struct ListeningSocket {
  int fd = -1;        // non-blocking, close-on-exec; the caller owns it
  int port = 0;       // the one asked for, or the one the system chose for port 0
  bool ipv6 = false;  // bound to an IPv6 address (`::` is dual-stack)
};

// Creates, binds and listens on a TCP socket for `bind_address` (an IPv4 or IPv6 literal) and
// `port` (0: any free port), its connections with a send buffer of kHttpSendBufferBytes. A
// failure names address, port and reason: kInvalidArgument for an address or port that cannot
// be one, kUnavailable when the system refuses (port taken, address not of this machine).
StatusOr<ListeningSocket> Listen(const std::string& bind_address, int port);

}  // namespace mqc
