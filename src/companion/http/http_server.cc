// SPDX-License-Identifier: BSD-3-Clause
// HttpServer: the parts put together (see http_server.h for which thread touches what).
//
// Once passed to MHD_start_daemon, the listening socket belongs to MHD: MHD_stop_daemon closes
// it, and a failed start closes it on most paths but not all. We never close it after handing
// it over: a rare leak on a failed start beats closing a number another thread may reuse.
#include "companion/http/http_server.h"

#include <microhttpd.h>
#include <unistd.h>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "companion/http/listen_socket.h"
#include "companion/http/mhd_adapter.h"
#include "companion/http/request_clock.h"
#include "companion/http/stream_sender.h"
#include "companion/http/tls_rotation.h"
#include "link/host_names.h"

namespace mqc {
namespace {

// How long stopping waits for streams to send their last words.
constexpr int kStreamStopWaitMs = 2000;

}  // namespace

HttpServer::HttpServer(int port) : port_(port), streams_(std::make_unique<StreamSet>()) {}

HttpServer::~HttpServer() {
  // Streams end with a last message (MHD must not stop with a parked connection); then MHD's
  // threads stop before what they use; a retired daemon's socket is closed after it.
  streams_->Stop(0, kStreamStopWaitMs);
  if (daemons_) daemons_->StopAll();  // null only when Start ran out of memory
}

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                        Handler handler) {
  const StatusOr<ListeningSocket> listening = Listen(options.bind_address, options.port);
  if (!listening.ok()) return listening.status();
  const bool tls = !options.tls_cert_pem.empty() && !options.tls_key_pem.empty();
  if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
    (void)close(listening->fd);  // not handed to MHD yet
    return Status(StatusCode::kUnimplemented,
                  "plugin_opt_http_tls_cert: this libmicrohttpd is built without TLS support");
  }
  // Private constructor: no make_unique.
  std::unique_ptr<HttpServer> server(new HttpServer(listening->port));
  StreamSet* streams = server->streams_.get();
  server->request_clock_ =
      std::make_unique<RequestClock>(options.request_time_limit_s, [streams] { streams->Tick(); });
  server->adapter_ = std::make_unique<MhdAdapter>(options, std::move(handler),
                                                  server->request_clock_.get(), streams);
  MhdAdapter* adapter = server->adapter_.get();
  const int port = listening->port;
  const bool ipv6 = listening->ipv6;
  server->daemons_ = std::make_unique<TlsRotation>(
      [adapter, port, ipv6](int listen_fd, const std::string* cert_pem,
                            const std::string* key_pem) {
        return adapter->StartDaemon(listen_fd, port, ipv6, cert_pem, key_pem);
      },
      [streams](std::int64_t started_before_ns) {
        streams->Stop(started_before_ns, kStreamStopWaitMs);
      });
  const Status started =
      server->daemons_->Start(listening->fd, tls ? options.tls_cert_pem : std::string(),
                              tls ? options.tls_key_pem : std::string());
  if (!started.ok()) {
    return Status(started.code(), "cannot listen on " + HostPort(options.bind_address, port) +
                                      ": " + started.message());
  }
  return server;
}

Status HttpServer::ReplaceTls(std::string cert_pem, std::string key_pem) {
  return daemons_->Replace(std::move(cert_pem), std::move(key_pem));
}

void HttpServer::StopRetired(unsigned grace_s) { daemons_->StopRetired(grace_s); }

std::size_t HttpServer::stream_count() const { return streams_->size(); }

}  // namespace mqc
