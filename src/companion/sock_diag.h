// SPDX-License-Identifier: BSD-3-Clause
// TCP sockets' kernel state (tcp_info) read in one dump through the sock_diag netlink
// interface (NETLINK_SOCK_DIAG, inet_diag with INET_DIAG_INFO), the way `ss -ti` reads it.
// No privilege is needed, and no file descriptor of the sockets: the companion can see the
// broker's client sockets from outside the broker process, matched by address and port.
//
// One call asks the kernel for every IPv4 and IPv6 TCP socket that carries tcp_info (not the
// listening ones, not TIME_WAIT) whose local port is one of `local_ports` (at most 1000; the
// kernel filters, so that only those are copied out), and returns them. It is bounded: at most
// `max_sockets` are kept, and each receive waits at most `timeout_ms` (the whole call at most twice
// that per family). Errors are returned as values.
//
// Threads: any; a call owns its own netlink socket. Not called by the broker thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mqc {

struct TcpSocketInfo {
  int family = 0;             // AF_INET or AF_INET6
  std::string local_address;  // numeric text, as inet_ntop writes it ("127.0.0.1", "::1")
  std::uint16_t local_port = 0;
  std::string remote_address;
  std::uint16_t remote_port = 0;
  std::uint8_t state = 0;                 // the kernel's TCP state (1 = ESTABLISHED)
  std::uint32_t rtt_us = 0;               // smoothed round-trip time
  std::uint32_t rtt_var_us = 0;           // its mean deviation
  std::uint32_t retransmits = 0;          // segments retransmitted over the socket's life
  std::uint32_t send_queue_bytes = 0;     // written, not yet acknowledged by the peer
  std::uint32_t receive_queue_bytes = 0;  // received, not yet read by the application
  std::uint32_t last_received_ms = 0;     // since data last arrived (not counting pure ACKs)
  std::uint32_t last_sent_ms = 0;         // since data was last sent
};

struct SockDiagOptions {
  std::vector<std::uint16_t> local_ports;  // empty: every local port
  std::size_t max_sockets = 1000000;
  int timeout_ms = 1000;
};

struct SockDiagResult {
  std::vector<TcpSocketInfo> sockets;
  bool truncated = false;  // more sockets matched than max_sockets
  std::string error;       // empty when the dump succeeded
  bool ok() const { return error.empty(); }
};

SockDiagResult DumpTcpSockets(const SockDiagOptions& options);

}  // namespace mqc
