// SPDX-License-Identifier: BSD-3-Clause
// The fleet's kept-open connections to its peers (docs/fleet.md, "Connections to peers"): a
// fleet request hands its connection back after a whole answer, and the next request to that
// peer takes it instead of connecting (and shaking hands) again. Bounded: at most
// max_idle_per_peer idle connections per peer (a fleet has at most 64 peers), each closed by a
// thread of the pool once idle for idle_timeout, shorter than the peers' own idle timeout
// (10 s, HttpServerOptions::connection_timeout_s) so that a peer seldom closes one under a
// request. A connection the peer has closed or written to while idle (its idle timeout, a
// restart) is dropped when taken.
//
// Threads: Take() and Put() run on any thread, several at once (a fleet request's thread per
// peer); the map is behind one mutex. The sweeping thread is started by the constructor and
// joined by the destructor.
#pragma once

#include <gnutls/gnutls.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "link/text_util.h"
#include "link/unique_fd.h"

namespace mqc {

// One connection to a peer: the socket and, for https, its TLS session (GnuTLS, the library
// libmicrohttpd serves TLS with: one TLS library in the companion; freed before the socket
// closes, by the members' order).
struct PeerLink {
  UniqueFd fd;
  CSmartPtr<gnutls_session_int, gnutls_deinit> tls;
  std::chrono::steady_clock::time_point idle_since{};
};

struct PeerPoolOptions {
  std::size_t max_idle_per_peer = 4;
  std::chrono::milliseconds idle_timeout{5000};
};

class PeerPool {
 public:
  explicit PeerPool(PeerPoolOptions options = {});
  ~PeerPool();
  PeerPool(const PeerPool&) = delete;
  PeerPool& operator=(const PeerPool&) = delete;

  // The most recently used idle connection to `peer` (its canonical URL) that is still open and
  // silent, or none.
  std::optional<PeerLink> Take(const std::string& peer);
  // Keeps `link` for the next request to `peer`; with max_idle_per_peer already idle there, the
  // one idle longest is closed.
  void Put(const std::string& peer, PeerLink link);
  // Idle connections kept now, over every peer.
  std::size_t Idle() const;

 private:
  void Sweep();

  const PeerPoolOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::map<std::string, std::vector<PeerLink>> idle_;  // per peer, oldest first
  std::thread sweeper_;
};

}  // namespace mqc
