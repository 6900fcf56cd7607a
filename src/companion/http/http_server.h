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
#include <functional>
#include <memory>
#include <string>

#include "companion/http/http_message.h"
#include "link/status.h"

namespace mqc {

class MhdAdapter;
class RequestClock;
class StreamSet;
class TlsRotation;

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
  explicit HttpServer(int port);

  int port_ = 0;
  // Declared in the order they are needed; the destructor stops the streams and the daemons
  // first, then the request clock's thread (whose tick wakes streams) stops before the set goes.
  std::unique_ptr<StreamSet> streams_;
  std::unique_ptr<RequestClock> request_clock_;
  std::unique_ptr<MhdAdapter> adapter_;
  std::unique_ptr<TlsRotation> daemons_;
};

}  // namespace mqc
