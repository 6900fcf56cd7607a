// SPDX-License-Identifier: BSD-3-Clause
// The HTTP server's daemons over time: the one serving, and those a new certificate retired.
// HTTPS gets another certificate and key without closing the port: a second daemon starts on the
// same listening socket with them, then the first stops accepting and finishes the connections
// it has; StopRetired stops it once they are gone, or after a grace period.
//
// Threads: every method runs on the owner's thread (the companion's event loop and the HTTP
// server's constructor and destructor). The daemons' own threads touch nothing here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "link/status.h"
#include "link/text_util.h"

struct MHD_Daemon;

namespace mqc {

// MHD_stop_daemon, declared here so that this header needs no microhttpd.h.
void StopMhdDaemon(MHD_Daemon* daemon) noexcept;

class TlsRotation {
 public:
  // Starts a daemon on `listen_fd` (which MHD then owns, even when it fails), with HTTPS when
  // both PEM texts are given; they outlive the daemon. MhdAdapter::StartDaemon.
  using StartDaemon = std::function<StatusOr<MHD_Daemon*>(
      int listen_fd, const std::string* cert_pem, const std::string* key_pem)>;
  // Ends the response streams that started before `started_before_ns` (monotonic) and waits a
  // little for them: a daemon must not stop with a connection parked (StreamSet::Stop).
  using StopStreams = std::function<void(std::int64_t started_before_ns)>;

  TlsRotation(StartDaemon start, StopStreams stop_streams);
  TlsRotation(const TlsRotation&) = delete;
  TlsRotation& operator=(const TlsRotation&) = delete;
  ~TlsRotation();  // StopAll

  // The first daemon, on `listen_fd`, with HTTPS when both PEM texts are non-empty. Fails as
  // StartDaemon does.
  Status Start(int listen_fd, std::string cert_pem, std::string key_pem);
  // HTTPS with another certificate and key. On failure the running daemon serves on: a key
  // that does not match (as Start) or a server started without TLS is kInvalidArgument; a
  // listening socket that cannot be duplicated is kUnavailable, one MHD does not name kInternal.
  Status Replace(std::string cert_pem, std::string key_pem);
  // Stops the retired daemons whose last connection is gone, or `grace_s` after they were
  // retired, their streams first.
  void StopRetired(unsigned grace_s);
  // Stops every daemon, the serving one first (the caller stops their streams before).
  void StopAll();

  std::size_t retired_count() const { return retired_.size(); }

 private:
  // One MHD daemon with the TLS text it was given (MHD keeps pointers into it).
  struct Daemon {
    std::unique_ptr<std::string> cert_pem;
    std::unique_ptr<std::string> key_pem;
    CSmartPtr<MHD_Daemon, StopMhdDaemon> daemon;
    int quiesced_fd = -1;  // the listening socket, closed by us after the daemon stops
    std::int64_t retired_ns = 0;
  };

  static void Stop(Daemon* daemon);

  const StartDaemon start_;
  const StopStreams stop_streams_;
  // Destroyed first, so MHD's threads are gone before what they use.
  std::vector<Daemon> retired_;
  Daemon current_;
};

}  // namespace mqc
