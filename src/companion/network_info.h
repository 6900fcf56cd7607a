// SPDX-License-Identifier: BSD-3-Clause
// The kernel's view of each open connection's TCP socket (Connection::network and idle_ns),
// read by the companion through sock_diag (sock_diag.h), never by the broker thread.
//
// Matching: the plugin records, per connection, the client's address and port (from the
// broker and getpeername) and the listener's local port (getsockname). A socket of the dump is
// the connection's when those three agree. Behind a load balancer (Connection::proxy_address)
// the socket's remote end is the balancer's, so its address and port are matched instead, and
// the figures are marked as the proxy's (NetworkInfo::proxy_socket). Addresses are compared as 16-byte IPv6 addresses,
// IPv4 ones written as IPv4-mapped (::ffff:a.b.c.d), since a client on a dual-stack listener is
// an IPv6 socket with a mapped address to the kernel, and the broker may write it either way.
// Nothing is matched for a connection whose remote or local port is unknown (0), whose address
// is not an IP (a Unix socket listener), or whose key two sockets share and neither alone is
// ESTABLISHED: no value rather than another connection's.
//
// NetworkInfoCache keeps one dump for a short time (1 s by default), so that a burst of
// requests costs one dump: each request that needs the figures reuses a dump younger than that,
// and the durations (since last receive, since last send) are advanced by the dump's age. While
// requests keep coming (within 10 s), the companion's event loop takes the next dump before
// the last is a second old (RefreshIfDue), so that only the first request after a quiet spell
// waits for one.
//
// Threads: SocketIndex and FillNetworkInfo are plain values. NetworkInfoCache::Fill from any
// thread, several at once: one dumps, the others wait for its result; RefreshIfDue from one
// thread, dumping without the lock.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "companion/connection.h"
#include "companion/sock_diag.h"

namespace mqc {

// The sockets of one dump, sorted by (remote address, remote port, local port).
class SocketIndex {
 public:
  SocketIndex() = default;
  explicit SocketIndex(const std::vector<TcpSocketInfo>& sockets);

  // An IP address as 16 bytes, IPv4 as IPv4-mapped IPv6; false when `text` is not one.
  using Address = std::array<std::uint8_t, 16>;
  static bool ParseAddress(std::string_view text, Address* out);

  // The kernel's figures for the socket from `remote`:`remote_port` to local port
  // `local_port`, as of the dump (durations not advanced); `known` false when there is none
  // or the key is ambiguous.
  NetworkInfo Find(const Address& remote, int remote_port, int local_port) const;
  NetworkInfo Find(std::string_view remote_ip, int remote_port, int local_port) const;

  std::size_t size() const { return rows_.size(); }

 private:
  struct Key {
    Address address{};
    std::uint16_t remote_port = 0;
    std::uint16_t local_port = 0;
    bool operator<(const Key& other) const;
    bool operator==(const Key& other) const;
  };
  struct Row {
    Key key;
    NetworkInfo info;  // `known` false: two sockets share this key
  };

  std::vector<Row> rows_;
};

// Fills `network` and `idle_ns` (time since data last arrived) of every open connection in
// *connections that `index` has a socket for, the durations advanced by `age_ns` (how long ago
// the dump was taken). Other connections are left as they are.
void FillNetworkInfo(const SocketIndex& index, std::int64_t age_ns,
                     std::vector<Connection>* connections);

struct NetworkInfoCacheOptions {
  // A dump younger than this serves every request; an older one is taken again.
  std::int64_t max_age_ns = 1'000'000'000;
  // While requests came within this time, RefreshIfDue keeps the dump fresh in the background
  // (at three quarters of max_age_ns), so that those requests wait for no dump.
  std::int64_t keep_fresh_ns = 10'000'000'000;
  // Empty: DumpTcpSockets. Tests give a stand-in.
  std::function<SockDiagResult(const SockDiagOptions&)> dump;
  // A connection opened after the last dump began makes a request take a new one, once the
  // last is this old (so that churn costs at most one dump per this time).
  std::int64_t new_connection_min_age_ns = 250'000'000;
  // Steady clock in nanoseconds. Empty: std::chrono::steady_clock.
  std::function<std::int64_t()> clock;
  // Unix time in nanoseconds, the clock of Connection::open_time_ns. Empty: NowNs.
  std::function<std::int64_t()> wall_clock;
  // Where trouble is told, once per kind (a failed dump, a truncated one). May be empty.
  std::function<void(const std::string&)> log;
};

class NetworkInfoCache {
 public:
  explicit NetworkInfoCache(NetworkInfoCacheOptions options = {});

  // Fills `network` and `idle_ns` of the open connections of *connections from a dump at most
  // max_age_ns old, taking a new one when the last is older or did not cover their local ports
  // (a new one covers those and every port covered before), or when one of them opened after
  // the last began and that is new_connection_min_age_ns old. No open connection with a known port:
  // no dump. A failed dump leaves the fields unknown, is told once, and is not tried again before
  // max_age_ns has passed; it never fails the caller.
  void Fill(std::vector<Connection>* connections);

  // Called often from one thread (the companion's event loop): while requests keep coming
  // (within keep_fresh_ns), takes the next dump before the last is max_age_ns old, of the ports
  // the last covered, without holding up the requests meanwhile. Otherwise does nothing.
  void RefreshIfDue();
  // Nanoseconds until RefreshIfDue will have work (0: now); kNoRefreshDue while requests are
  // not coming. The event loop waits no longer than this.
  std::int64_t RefreshDueInNs();
  static constexpr std::int64_t kNoRefreshDue = INT64_MAX;

  // Dumps taken so far (successful or not).
  std::uint64_t dumps() const;
  // Sockets of the dump held now (0: none, or the last failed).
  std::size_t held_sockets() const;

 private:
  struct Dump {
    std::shared_ptr<const SocketIndex> index;  // null: the dump failed
    std::int64_t taken_ns = 0;
    std::int64_t began_wall_ns = 0;    // Unix time when the dump began
    std::vector<std::uint16_t> ports;  // sorted local ports it covered
  };
  std::int64_t Now() const;
  std::int64_t WallNow() const;
  // The dump itself: reads only options_, so it may run without the lock.
  SockDiagResult RunDump(const std::vector<std::uint16_t>& ports, std::size_t open_connections,
                         std::size_t* max_sockets) const;
  // Under the lock: counts the dump, tells trouble once, and returns what it serves.
  Dump Record(const SockDiagResult& result, std::vector<std::uint16_t> ports,
              std::size_t max_sockets, std::int64_t taken_ns, std::int64_t began_wall_ns);
  void LogOnce(bool* told, const std::string& line);

  const NetworkInfoCacheOptions options_;
  mutable std::mutex mutex_;  // guards everything below; held during a request's own dump
  bool have_dump_ = false;
  Dump last_;
  std::int64_t last_request_ns_ = 0;
  std::size_t last_open_ = 0;  // open TCP connections of the last request
  std::uint64_t dumps_ = 0;
  bool told_failure_ = false;
  bool told_truncated_ = false;
};

}  // namespace mqc
