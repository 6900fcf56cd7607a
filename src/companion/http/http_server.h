// SPDX-License-Identifier: BSD-3-Clause
// The companion's HTTP server: libmicrohttpd (MHD) behind plain request/response values, so that
// routing and views are testable without sockets.
//
// Threads: Start(), ReplaceTls(), StopRetired() and the destructor run on the owner's thread. MHD's
// own threads (a small pool) accept connections, parse requests and call the handler and the log
// function, several requests at a time: both must be safe to call concurrently. The server's own
// state is set before MHD starts and only read afterwards; each request's state belongs to the one
// MHD thread serving that connection. The destructor waits for MHD's threads to finish.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "link/status.h"
#include "link/text_util.h"

struct MHD_Daemon;

namespace mqc {

class RequestClock;

// MHD_stop_daemon, declared here so that this header needs no microhttpd.h.
void StopMhdDaemon(MHD_Daemon* daemon) noexcept;

// Query parameters in the order the client sent them, percent-decoded, duplicates kept (so
// that a view can refuse them). A parameter without '=' has an empty value.
using QueryParams = std::vector<std::pair<std::string, std::string>>;
using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // "GET", "HEAD", "POST", ... as sent
  std::string path;    // percent-decoded, without the query
  QueryParams query;
  HttpHeaders headers;  // as sent; look them up with FindHeader
  std::string body;
  std::string remote_address;  // the peer: "127.0.0.1:41234", "[::1]:41234"; empty if unknown
  // This side's address of the connection, without port or brackets ("127.0.0.1", "::1",
  // "192.0.2.10"; an IPv4 client of a dual-stack socket as IPv4); empty if unknown. The address
  // the client reached the server by, for the Host check.
  std::string local_address;
  std::string version;  // "HTTP/1.1", "HTTP/1.0" as sent; empty if unknown
  // The body was larger than HttpServerOptions::max_body_bytes: `body` is empty and the answer
  // should be 413. Set instead of answering in the server so that the router picks the error
  // format of the path.
  bool body_too_large = false;

  // The value of the first header called `name` (ASCII case-insensitive), or null.
  const std::string* FindHeader(std::string_view name) const;
};

// A response body produced as it goes (a Connect server stream), sent with chunked encoding.
// The server pulls from it on one of its threads at a time; Wake (given once, before the first
// Read) may be called from any thread, any number of times, also after the stream has ended.
class HttpBodyStream {
 public:
  enum class Pull : std::uint8_t {
    kData,  // *out has bytes to send (more may follow)
    kWait,  // nothing now: the server parks the connection until Wake is called
    kEnd,   // the body is complete (*out may hold its last bytes)
  };
  virtual ~HttpBodyStream() = default;
  virtual void SetWake(std::function<void()> wake) = 0;
  // Appends about `max` bytes to *out (a little more is fine: the server keeps the rest).
  virtual Pull Read(std::size_t max, std::string* out) = 0;
  // The server is stopping (or retiring the daemon serving this stream): end soon, with a last
  // message saying so. Any thread; Wake follows.
  virtual void Stop() = 0;
};

struct HttpResponse {
  int status = 200;
  std::string content_type;  // no Content-Type header when empty
  // MHD leaves it out for HEAD requests, Content-Length stays. Sent without a copy; a body of a
  // megabyte or more returns its memory to the system once sent (malloc_trim).
  std::string body;
  HttpHeaders headers;  // extra headers, e.g. Allow
  // When set, the body comes from here instead of `body` (no Content-Length; chunked).
  std::shared_ptr<HttpBodyStream> stream;
};

struct HttpServerOptions {
  std::string bind_address = "127.0.0.1";  // an IPv4 or IPv6 literal: 0.0.0.0, ::, ::1, ...
  int port = 8080;                         // 0: any free port, see HttpServer::port()
  // Seconds before an idle connection is closed. Also what ends a request MHD cannot parse
  // and waits on forever (one starting with a NUL byte).
  unsigned connection_timeout_s = 10;
  // Seconds a request may take to arrive whole (headers and body), however steadily its bytes
  // trickle in: the idle timeout alone never ends a client that sends a byte every few seconds.
  // The next request on a kept-alive connection gets the same time from the previous answer on.
  unsigned request_time_limit_s = 20;
  // Connections at once (each an epoll registration and a descriptor; no thread each): floods
  // of silent connections cost memory, not service. The companion lowers it to its
  // descriptor budget.
  unsigned connection_limit = 8192;
  unsigned thread_pool_size = 2;
  std::size_t max_body_bytes = 1 << 20;
  // HTTPS with MHD's own TLS (GnuTLS), TLS 1.2 or later, when both are set (PEM text).
  std::string tls_cert_pem;
  std::string tls_key_pem;
  // MHD's own error messages (one line, no newline); none are asked for when empty.
  std::function<void(const std::string&)> log;
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  // Binds, listens and starts serving. A failure is a line that names address, port and
  // reason: "cannot listen on 127.0.0.1:8080: Address already in use". Its code:
  // kInvalidArgument for an address or port that cannot be one, or HTTPS that MHD would not
  // start (taken as a certificate and key that are no pair, as the message says);
  // kUnimplemented for HTTPS with an MHD built without TLS; kUnavailable when the system
  // refuses the socket (port taken, address not of this machine) or MHD does not start.
  static StatusOr<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options,
                                                     Handler handler);

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  ~HttpServer();  // stops MHD; waits for requests in progress

  // The port listened on: the one asked for, or the one the system chose for port 0.
  int port() const { return port_; }

  // HTTPS with another certificate and key (PEM), without closing the port: a second MHD
  // daemon starts on the same listening socket with them, then the first stops accepting and
  // finishes the connections it has (StopRetired). On failure the running one serves on: a key
  // that does not match (as Start) or a server started without TLS is kInvalidArgument; a
  // listening socket that cannot be duplicated is kUnavailable, one MHD does not name kInternal.
  Status ReplaceTls(std::string cert_pem, std::string key_pem);
  // Stops the daemons ReplaceTls retired once their last connection is gone, or `grace_s`
  // after they were retired. Call it now and then (the companion's event loop does).
  void StopRetired(unsigned grace_s = 30);

  // Response streams being sent now.
  std::size_t stream_count() const;

 private:
  // One MHD daemon with the TLS text it was given (MHD keeps pointers into it).
  struct Daemon {
    std::unique_ptr<std::string> cert_pem;
    std::unique_ptr<std::string> key_pem;
    CSmartPtr<MHD_Daemon, StopMhdDaemon> daemon;
    int quiesced_fd = -1;  // the listening socket, closed by us after the daemon stops
    std::int64_t retired_ns = 0;
  };

  HttpServer(const HttpServerOptions& options, Handler handler);
  // Starts a daemon on `listen_fd` (which MHD then owns). Fails as Start says of MHD: with
  // HTTPS kInvalidArgument, else kUnavailable.
  StatusOr<MHD_Daemon*> StartDaemon(int listen_fd, const std::string* cert_pem,
                                    const std::string* key_pem);
  void StopDaemon(Daemon* daemon);
  // Tells the streams that started before `started_before_ns` (monotonic; all when 0) to end,
  // wakes them, and waits up to `wait_ms` for them to finish: libmicrohttpd must not be stopped
  // with a connection parked.
  void StopStreams(std::int64_t started_before_ns, int wait_ms);
  // Wakes every stream: a parked one checks its peer and its deadline. The request clock's
  // thread calls it every second.
  void TickStreams();

  // Called on MHD threads only.
  HttpResponse Dispatch(const HttpRequest& request) const;
  void Log(const std::string& message) const noexcept;

  friend struct HttpServerCallbacks;
  friend class RequestClock;
  friend struct StreamSender;

  struct Streams;  // every StreamSender alive, under a mutex
  std::unique_ptr<Streams> streams_;

  const HttpServerOptions options_;
  const Handler handler_;
  int port_ = 0;
  // Closes connections whose request is overdue (request_time_limit_s); its thread stops before
  // MHD does.
  std::unique_ptr<RequestClock> request_clock_;
  bool ipv6_ = false;
  // Destroyed first, so MHD's threads are gone before what they use.
  std::vector<Daemon> retired_;
  Daemon current_;
};

}  // namespace mqc
