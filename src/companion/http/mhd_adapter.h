// SPDX-License-Identifier: BSD-3-Clause
// The libmicrohttpd (MHD) adapter: starts daemons whose C callbacks turn MHD's connections into
// HttpRequest values for the handler and queue its HttpResponse (a body, or a stream through
// the stream pump), keep each connection's request deadline (RequestClock) and MHD's log lines.
//
// Threads: StartDaemon runs on the owner's thread. MHD's own threads (a small pool) call the
// callbacks, the handler and the log function, several requests at a time: both must be safe to
// call concurrently. The adapter's own state is set before the first daemon starts and only read
// afterwards; each request's state belongs to the one MHD thread serving that connection.
#pragma once

#include <string>

#include "companion/http/http_message.h"
#include "companion/http/http_server.h"
#include "link/status.h"

struct MHD_Daemon;

namespace mqc {

class RequestClock;
class StreamSet;

class MhdAdapter {
 public:
  // `clock` and `streams` outlive the adapter, which outlives every daemon it starts.
  MhdAdapter(const HttpServerOptions& options, HttpServer::Handler handler, RequestClock* clock,
             StreamSet* streams);
  MhdAdapter(const MhdAdapter&) = delete;
  MhdAdapter& operator=(const MhdAdapter&) = delete;

  // Starts a daemon on `listen_fd` (which MHD then owns, even when it fails), with HTTPS when
  // both PEM texts are given (they must outlive the daemon: MHD keeps pointers into them).
  // Fails with HTTPS as kInvalidArgument (a certificate and key that are no pair, as the message
  // says), else kUnavailable.
  StatusOr<MHD_Daemon*> StartDaemon(int listen_fd, int port, bool ipv6, const std::string* cert_pem,
                                    const std::string* key_pem);

 private:
  friend struct MhdCallbacks;

  // Called on MHD threads only. The handler's answer; its exception a fixed 500 and a log line.
  HttpResponse Dispatch(const HttpRequest& request) const;
  void Log(const std::string& message) const noexcept;

  const HttpServerOptions options_;
  const HttpServer::Handler handler_;
  RequestClock* const clock_;
  StreamSet* const streams_;
};

}  // namespace mqc
