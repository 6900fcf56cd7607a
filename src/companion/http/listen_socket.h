// SPDX-License-Identifier: BSD-3-Clause
// The HTTP server's listening socket, made here rather than by libmicrohttpd: a failure then has
// its errno for the message ("cannot listen on 127.0.0.1:8080: Address already in use"), which
// MHD_start_daemon's bare NULL does not give.
//
// Threads: Listen runs on the caller's thread and keeps no state.
#pragma once

#include <string>

#include "link/status.h"

namespace mqc {

struct ListeningSocket {
  int fd = -1;        // non-blocking, close-on-exec; the caller owns it
  int port = 0;       // the one asked for, or the one the system chose for port 0
  bool ipv6 = false;  // bound to an IPv6 address (`::` is dual-stack)
};

// Creates, binds and listens on a TCP socket for `bind_address` (an IPv4 or IPv6 literal) and
// `port` (0: any free port). A failure names address, port and reason: kInvalidArgument for an
// address or port that cannot be one, kUnavailable when the system refuses (port taken, address
// not of this machine).
StatusOr<ListeningSocket> Listen(const std::string& bind_address, int port);

}  // namespace mqc
