// SPDX-License-Identifier: BSD-3-Clause
#include "companion/http/tls_rotation.h"

#include <fcntl.h>
#include <microhttpd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

#include "link/clock.h"

namespace mqc {

void StopMhdDaemon(MHD_Daemon* daemon) noexcept { MHD_stop_daemon(daemon); }

TlsRotation::TlsRotation(StartDaemon start, StopStreams stop_streams)
    : start_(std::move(start)), stop_streams_(std::move(stop_streams)) {}

TlsRotation::~TlsRotation() { StopAll(); }

Status TlsRotation::Start(int listen_fd, std::string cert_pem, std::string key_pem) {
  Daemon first;
  if (!cert_pem.empty() && !key_pem.empty()) {
    first.cert_pem = std::make_unique<std::string>(std::move(cert_pem));
    first.key_pem = std::make_unique<std::string>(std::move(key_pem));
  }
  const StatusOr<MHD_Daemon*> daemon = start_(listen_fd, first.cert_pem.get(), first.key_pem.get());
  if (!daemon.ok()) return daemon.status();
  first.daemon.reset(*daemon);
  current_ = std::move(first);
  return Status();
}

Status TlsRotation::Replace(std::string cert_pem, std::string key_pem) {
  if (!current_.cert_pem) return InvalidArgument("this server was started without HTTPS");
  const MHD_DaemonInfo* info =
      MHD_get_daemon_info(current_.daemon.get(), MHD_DAEMON_INFO_LISTEN_FD);
  if (info == nullptr) {
    return Status(StatusCode::kInternal, "libmicrohttpd does not name its listening socket");
  }
  // The new daemon gets its own descriptor of the same socket: a failed start may close the
  // one it was given, and the running daemon must keep its own.
  const int listen_fd = fcntl(info->listen_fd, F_DUPFD_CLOEXEC, 0);
  if (listen_fd < 0) {
    return Status(StatusCode::kUnavailable, "cannot duplicate the listening socket: " +
                                                std::system_category().message(errno));
  }
  Daemon next;
  next.cert_pem = std::make_unique<std::string>(std::move(cert_pem));
  next.key_pem = std::make_unique<std::string>(std::move(key_pem));
  const StatusOr<MHD_Daemon*> daemon = start_(listen_fd, next.cert_pem.get(), next.key_pem.get());
  if (!daemon.ok()) return daemon.status();  // never close a descriptor MHD was given
  next.daemon.reset(*daemon);
  // Both accept for a moment, either answers; then the old one stops accepting and keeps the
  // connections it has until they end (StopRetired).
  current_.quiesced_fd = MHD_quiesce_daemon(current_.daemon.get());
  current_.retired_ns = MonotonicNs();
  retired_.push_back(std::move(current_));
  current_ = std::move(next);
  return Status();
}

void TlsRotation::Stop(Daemon* daemon) {
  daemon->daemon.reset();  // MHD_stop_daemon: a quiesced daemon leaves its socket open
  if (daemon->quiesced_fd >= 0) (void)close(daemon->quiesced_fd);  // another descriptor stays
  daemon->quiesced_fd = -1;
}

void TlsRotation::StopRetired(unsigned grace_s) {
  const std::int64_t now = MonotonicNs();
  for (auto it = retired_.begin(); it != retired_.end();) {
    const MHD_DaemonInfo* info =
        MHD_get_daemon_info(it->daemon.get(), MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    const bool idle = info != nullptr && info->num_connections == 0;
    if (idle || now - it->retired_ns >= std::int64_t{grace_s} * 1000000000) {
      // Its streams started before it was retired (a later one is the new daemon's, or, in
      // the moment both accepted, ends early and its client resumes).
      stop_streams_(it->retired_ns);
      Stop(&*it);
      it = retired_.erase(it);
    } else {
      ++it;
    }
  }
}

void TlsRotation::StopAll() {
  // A retired daemon's socket is closed after the serving one stopped.
  Stop(&current_);
  for (Daemon& daemon : retired_) Stop(&daemon);
  retired_.clear();
}

}  // namespace mqc
