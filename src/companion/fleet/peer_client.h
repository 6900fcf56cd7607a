// SPDX-License-Identifier: BSD-3-Clause
// A small HTTP/1.1 client for the fleet's peers (docs/fleet.md): a POST on a connection of its
// own (`Connection: close`), or for a fleet list's reads on a kept-open one (PeerPool); plain
// TCP or TLS (GnuTLS, TLS 1.2 or 1.3, the peer's certificate checked against
// plugin_opt_fleet_ca_file or the system's CAs, and its host name or IP address), bounded in
// time (one deadline covers connect, send and read; names are resolved first, as getaddrinfo
// has no deadline: give peers as addresses where a slow resolver matters) and in size (an
// answer over the cap is an error, never a partial read). Only what the companion's own API
// sends back is understood: a Content-Length body or one that ends at close; a chunked answer
// is refused.
//
// Threads: Post() runs on the calling thread (a fleet query's thread per peer) and may run on
// several threads at once; the TLS credentials are made in Create() and only read afterwards,
// the pool has its own lock.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "companion/fleet/peer_pool.h"
#include "link/peer_url.h"
#include "link/status.h"

namespace mqc {

struct PeerResponse {
  int status = 0;
  std::string content_type;  // empty when the peer sent none
  std::string body;
};

struct PeerRequest {
  std::string path;  // "/mqtt.connections.v1.ConnectionsService/ListConnections"
  std::vector<std::pair<std::string, std::string>> headers;  // besides Host, Length, Connection
  std::string body;
  std::chrono::steady_clock::time_point deadline;
  // Connecting and the TLS handshake end by this time too, when it is earlier (unset: deadline
  // alone): a stream's deadline is far off, its connect must not be.
  std::chrono::steady_clock::time_point connect_deadline{};
  std::size_t max_response_bytes = 64 << 20;  // headers and body
  // A read that may be sent twice: it goes on a kept-open connection to the peer when the pool
  // has one, and its connection is kept after a whole answer (read by Content-Length). When a
  // kept-open connection ends before any byte of the answer (the peer closed it meanwhile: its
  // idle timeout, a restart), the request is sent once more on a new connection. Unset (a
  // disconnect, a ban, which must not be sent twice): a connection of its own, closed after.
  bool keep_alive = false;
  // A stream (a fleet watch): when set, the request goes out as HTTP/1.0, so that the answer is
  // the raw body up to the close (no chunks), and every byte read, status line and headers
  // included, goes to the sink as it comes instead of into the answer, which Post then returns
  // empty. The sink is also called with no bytes at least every kStreamPoll, so that its caller
  // can stop; it returns false to stop reading (Post then returns ok). `deadline` still bounds
  // the whole call; max_response_bytes does not apply (the sink bounds what it keeps).
  std::function<bool(std::string_view bytes)> stream_sink;
};

inline constexpr std::chrono::milliseconds kStreamPoll{200};

class PeerClient {
 public:
  // `ca_file` empty: the system's CA certificates. `tls`: whether any peer is https (the
  // credentials are only made then). kInvalidArgument naming plugin_opt_fleet_ca_file when the
  // file cannot be read as PEM certificates.
  static StatusOr<std::unique_ptr<PeerClient>> Create(const std::string& ca_file, bool tls,
                                                      PeerPoolOptions pool = {});
  ~PeerClient();
  PeerClient(const PeerClient&) = delete;
  PeerClient& operator=(const PeerClient&) = delete;

  // The peer's answer, whatever its HTTP status. Errors name what failed, without the URL (the
  // caller names the peer): kDeadlineExceeded when the deadline passed first, kUnavailable when
  // the peer cannot be reached or closes early, kInternal for an answer that is not HTTP/1.x or
  // is over the size cap.
  StatusOr<PeerResponse> Post(const PeerUrl& peer, const PeerRequest& request) const;

  // Kept-open connections idle now (tests, docs/fleet.md).
  std::size_t IdleConnections() const { return pool_->Idle(); }

 private:
  struct Tls;
  PeerClient(std::unique_ptr<Tls> tls, PeerPoolOptions pool);
  // A new connection to `peer`, TLS handshake done, by the request's connect deadline.
  StatusOr<PeerLink> Open(const PeerUrl& peer, const PeerRequest& request) const;
  // Sends the request on `link` and reads its answer; a keep_alive request's link goes back to
  // the pool after a whole answer. *nothing_back: the link ended before any byte of the answer.
  StatusOr<PeerResponse> Exchange(PeerLink link, const PeerUrl& peer, const PeerRequest& request,
                                  bool* nothing_back) const;

  std::unique_ptr<Tls> tls_;
  std::unique_ptr<PeerPool> pool_;  // its own lock: Post() stays const and concurrent
};

// Parses an HTTP/1.x response (status line, headers, body by Content-Length or to the end).
// kInternal naming what is wrong; exposed for tests.
StatusOr<PeerResponse> ParseHttpResponse(std::string_view bytes);

// An answer's status line and headers (up to, not including, the empty line), as far as the
// client reads them.
struct HttpHead {
  int status = 0;
  std::string content_type;
  bool has_length = false;
  std::size_t length = 0;
  bool close = false;  // `Connection: close`: the peer ends the connection after this answer
};
// kInternal naming what is wrong (ParseHttpResponse's messages).
StatusOr<HttpHead> ParseHttpHead(std::string_view head);

}  // namespace mqc
