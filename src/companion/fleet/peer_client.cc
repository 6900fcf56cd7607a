// SPDX-License-Identifier: BSD-3-Clause
// PeerClient (see peer_client.h).
#include "companion/fleet/peer_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>

#include "link/text_util.h"
#include "link/unique_fd.h"

namespace mqc {

struct PeerClient::Tls {
  CSmartPtr<gnutls_certificate_credentials_st, gnutls_certificate_free_credentials> credentials;
};

namespace {

using Clock = std::chrono::steady_clock;

// TLS 1.2 and 1.3 only, as a peer's libmicrohttpd serves them.
constexpr const char* kTlsPriorities = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";

// Whether a GnuTLS call that returned `result` is to be called again once the socket is ready
// (a non-blocking socket that would block, a signal, a warning alert).
bool TlsAgain(int result) {
  return result == GNUTLS_E_AGAIN || result == GNUTLS_E_INTERRUPTED ||
         gnutls_error_is_fatal(result) == 0;
}

// Waits until `fd` is ready for `events` or the deadline passes (false).
bool WaitFor(int fd, short events, Clock::time_point deadline) {  // NOLINT(google-runtime-int)
  for (int round = 0; round < 1000000; ++round) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return true;  // the next call reports the error
  }
  return false;
}

Status Late(std::string_view what) {
  return Status(StatusCode::kDeadlineExceeded, "no answer in time (" + std::string(what) + ")");
}

StatusOr<int> ConnectTcp(const PeerUrl& peer, Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(peer.port);
  const int resolved = getaddrinfo(peer.host.text.c_str(), port.c_str(), &hints, &found);
  if (resolved != 0) {
    return Status(StatusCode::kUnavailable,
                  "cannot resolve " + peer.host.text + ": " + gai_strerror(resolved));
  }
  std::string last_error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd =
        socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      freeaddrinfo(found);
      return fd;
    }
    if (errno == EINPROGRESS) {
      if (!WaitFor(fd, POLLOUT, deadline)) {
        close(fd);
        freeaddrinfo(found);
        return Late("connecting");
      }
      int error = 0;
      socklen_t length = sizeof(error);
      if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0) {
        freeaddrinfo(found);
        return fd;
      }
      last_error = std::strerror(error != 0 ? error : errno);
    } else {
      last_error = std::strerror(errno);
    }
    close(fd);
  }
  freeaddrinfo(found);
  return Status(StatusCode::kUnavailable, "cannot connect: " + last_error);
}

// Plain or TLS I/O over a non-blocking socket, each call bounded by the deadline.
class Channel {
 public:
  Channel(int fd, gnutls_session_t tls, Clock::time_point deadline)
      : fd_(fd), tls_(tls), deadline_(deadline) {}

  Status Handshake() {
    if (tls_ == nullptr) return Status();
    for (int round = 0; round < 100000; ++round) {
      const int done = gnutls_handshake(tls_);
      if (done == GNUTLS_E_SUCCESS) return Status();
      const Status waited = WaitTls(done, "TLS handshake");
      if (!waited.ok()) return waited;
    }
    return Late("TLS handshake");
  }

  Status WriteAll(std::string_view bytes) {
    std::size_t sent = 0;
    for (int round = 0; sent < bytes.size() && round < 1000000; ++round) {
      if (tls_ != nullptr) {
        // After GNUTLS_E_AGAIN, called again with the same bytes, as GnuTLS asks.
        const ssize_t n = gnutls_record_send(tls_, bytes.data() + sent, bytes.size() - sent);
        if (n > 0) {
          sent += static_cast<std::size_t>(n);
          continue;
        }
        const Status waited = WaitTls(static_cast<int>(n), "sending");
        if (!waited.ok()) return waited;
        continue;
      }
      const ssize_t n = send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<std::size_t>(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        if (!WaitFor(fd_, POLLOUT, deadline_)) return Late("sending");
      } else {
        return Status(StatusCode::kUnavailable,
                      std::string("send failed: ") + std::strerror(errno));
      }
    }
    return sent == bytes.size() ? Status() : Late("sending");
  }

  // Reads one answer, at most `max` bytes (more: kInternal): with `by_length`, its head and
  // then Content-Length bytes of body; otherwise, or without a length, to the end of the
  // stream. *reusable: the connection ended exactly after an answer it may carry another after
  // (by_length, a length, no `Connection: close`).
  Status ReadAnswer(std::size_t max, bool by_length, std::string* out, bool* reusable) {
    *reusable = false;
    std::size_t head_end = std::string::npos;
    std::size_t want = 0;  // the whole answer's size, once the head says it
    char buffer[16384];
    for (int round = 0; round < 10000000; ++round) {
      if (want != 0 && out->size() >= want) {
        *reusable = out->size() == want;
        return Status();
      }
      bool ended = false;
      if (tls_ != nullptr) {
        const ssize_t n = gnutls_record_recv(tls_, buffer, sizeof(buffer));
        if (n > 0) {
          out->append(buffer, static_cast<std::size_t>(n));
        } else if (n == 0 || !TlsAgain(static_cast<int>(n))) {
          ended = true;  // closed, cleanly or not: the body's own length decides
        } else {
          const Status waited = WaitTls(static_cast<int>(n), "reading");
          if (!waited.ok()) return waited;
        }
      } else {
        const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
        if (n > 0) {
          out->append(buffer, static_cast<std::size_t>(n));
        } else if (n == 0) {
          ended = true;
        } else if (errno == EAGAIN || errno == EINTR) {
          if (!WaitFor(fd_, POLLIN, deadline_)) return Late("reading");
        } else if (out->empty()) {
          return Status(StatusCode::kUnavailable,
                        std::string("receive failed: ") + std::strerror(errno));
        } else {
          ended = true;  // the body's own length decides
        }
      }
      if (ended) return Status();
      if (out->size() > max) {
        return Status(StatusCode::kInternal,
                      "answer larger than " + std::to_string(max) + " bytes");
      }
      if (by_length && head_end == std::string::npos) {
        head_end = out->find("\r\n\r\n");
        if (head_end != std::string::npos) {
          const StatusOr<HttpHead> head = ParseHttpHead(std::string_view(*out).substr(0, head_end));
          // A head the client refuses (a chunked answer) ends the read at once: the peer may
          // keep the connection open, and ParseHttpResponse names what is wrong.
          if (!head.ok()) return Status();
          if (head->has_length && !head->close) want = head_end + 4 + head->length;
        }
      }
    }
    return Late("reading");
  }

  // Hands every byte to `sink` until the end of the stream, the deadline, or the sink's false
  // (also asked with no bytes every kStreamPoll while nothing comes).
  Status Stream(const std::function<bool(std::string_view)>& sink) {
    char buffer[16384];
    for (;;) {  // bounded by the deadline: every turn reads, or waits at most kStreamPoll
      if (Clock::now() >= deadline_) return Late("reading the stream");
      if (tls_ != nullptr) {
        const ssize_t n = gnutls_record_recv(tls_, buffer, sizeof(buffer));
        if (n > 0) {
          if (!sink(std::string_view(buffer, static_cast<std::size_t>(n)))) return Status();
          continue;
        }
        if (n == 0) return Status();
        if (!TlsAgain(static_cast<int>(n))) {
          return Status(StatusCode::kUnavailable, "the stream was cut off");
        }
        WaitFor(fd_, gnutls_record_get_direction(tls_) == 0 ? POLLIN : POLLOUT,
                std::min(deadline_, Clock::now() + kStreamPoll));
      } else {
        const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
        if (n == 0) return Status();
        if (n > 0) {
          if (!sink(std::string_view(buffer, static_cast<std::size_t>(n)))) return Status();
          continue;
        }
        if (errno != EAGAIN && errno != EINTR) {
          return Status(StatusCode::kUnavailable,
                        std::string("receive failed: ") + std::strerror(errno));
        }
        WaitFor(fd_, POLLIN, std::min(deadline_, Clock::now() + kStreamPoll));
      }
      if (!sink(std::string_view())) return Status();
    }
  }

 private:
  // After a GnuTLS call returned `result` (not data): waits for the socket in the direction the
  // session asks where the call is to be made again; else the failure, with the certificate's
  // verdict where the check of the peer's certificate failed.
  Status WaitTls(int result, std::string_view what) {
    if (TlsAgain(result)) {
      const short events = gnutls_record_get_direction(tls_) == 0 ? POLLIN : POLLOUT;
      return WaitFor(fd_, events, deadline_) ? Status() : Late(what);
    }
    std::string why = gnutls_strerror(result);
    if (result == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
      gnutls_datum_t verdict{};
      if (gnutls_certificate_verification_status_print(
              gnutls_session_get_verify_cert_status(tls_), GNUTLS_CRT_X509, &verdict, 0) ==
          GNUTLS_E_SUCCESS) {
        why = std::string(reinterpret_cast<const char*>(verdict.data), verdict.size);
        gnutls_free(verdict.data);
      }
    }
    return Status(StatusCode::kUnavailable, std::string(what) + " failed: " + why);
  }

  int fd_;
  gnutls_session_t tls_;
  Clock::time_point deadline_;
};

std::string_view Lower(std::string_view text, std::string* storage) {
  storage->assign(text);
  for (char& c : *storage) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return *storage;
}

}  // namespace

StatusOr<HttpHead> ParseHttpHead(std::string_view head) {
  if (head.substr(0, 7) != "HTTP/1." || head.size() < 12) {
    return Status(StatusCode::kInternal, "the answer is not HTTP/1.x");
  }
  HttpHead parsed;
  const std::string_view code = head.substr(9, 3);
  for (const char c : code) {
    if (c < '0' || c > '9') return Status(StatusCode::kInternal, "a bad HTTP status line");
    parsed.status = parsed.status * 10 + (c - '0');
  }
  std::string_view headers = head;
  headers.remove_prefix(std::min(headers.size(), headers.find("\r\n") + 2));
  if (head.find("\r\n") == std::string_view::npos) headers = {};
  std::string name_storage;
  std::string value_storage;
  while (!headers.empty()) {
    std::size_t line_end = headers.find("\r\n");
    if (line_end == std::string_view::npos) line_end = headers.size();
    const std::string_view line = headers.substr(0, line_end);
    headers.remove_prefix(std::min(headers.size(), line_end + 2));
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return Status(StatusCode::kInternal, "a header line without ':'");
    }
    const std::string_view name = Lower(Trim(line.substr(0, colon)), &name_storage);
    const std::string_view value = Trim(line.substr(colon + 1));
    if (name == "content-type") parsed.content_type = std::string(value);
    if (name == "transfer-encoding") {
      return Status(StatusCode::kInternal, "a chunked answer (not supported from a peer)");
    }
    if (name == "connection" &&
        Lower(value, &value_storage).find("close") != std::string_view::npos) {
      parsed.close = true;
    }
    if (name == "content-length") {
      if (value.empty() || value.size() > 12) {
        return Status(StatusCode::kInternal, "a bad Content-Length");
      }
      parsed.length = 0;
      for (const char c : value) {
        if (c < '0' || c > '9') return Status(StatusCode::kInternal, "a bad Content-Length");
        parsed.length = parsed.length * 10 + static_cast<std::size_t>(c - '0');
      }
      parsed.has_length = true;
    }
  }
  return parsed;
}

StatusOr<PeerResponse> ParseHttpResponse(std::string_view bytes) {
  const std::size_t end = bytes.find("\r\n\r\n");
  if (bytes.substr(0, 7) != "HTTP/1." || bytes.size() < 12) {
    return Status(StatusCode::kInternal, "the answer is not HTTP/1.x");
  }
  if (end == std::string_view::npos) {
    return Status(StatusCode::kInternal, "the answer ends inside its headers");
  }
  StatusOr<HttpHead> head = ParseHttpHead(bytes.substr(0, end));
  if (!head.ok()) return head.status();
  PeerResponse response;
  response.status = head->status;
  response.content_type = std::move(head->content_type);
  const std::string_view body = bytes.substr(end + 4);
  if (head->has_length) {
    if (body.size() < head->length) {
      return Status(StatusCode::kUnavailable, "the answer ends after " +
                                                  std::to_string(body.size()) + " of " +
                                                  std::to_string(head->length) + " body bytes");
    }
    response.body = std::string(body.substr(0, head->length));
  } else {
    response.body = std::string(body);
  }
  return response;
}

PeerClient::PeerClient(std::unique_ptr<Tls> tls, PeerPoolOptions pool)
    : tls_(std::move(tls)), pool_(std::make_unique<PeerPool>(pool)) {}
PeerClient::~PeerClient() = default;

StatusOr<std::unique_ptr<PeerClient>> PeerClient::Create(const std::string& ca_file, bool tls,
                                                         PeerPoolOptions pool) {
  if (!tls) return std::unique_ptr<PeerClient>(new PeerClient(nullptr, pool));
  auto state = std::make_unique<Tls>();
  gnutls_certificate_credentials_t credentials = nullptr;
  const int made = gnutls_certificate_allocate_credentials(&credentials);
  if (made != GNUTLS_E_SUCCESS) {
    return Status(StatusCode::kInternal,
                  std::string("cannot make TLS credentials: ") + gnutls_strerror(made));
  }
  state->credentials.reset(credentials);
  if (ca_file.empty()) {
    // The system's CAs, as many as there are: a machine without them (no ca-certificates) still
    // starts, and each https peer's handshake then fails its check, named in the answer's
    // error details, as a peer signed by an unknown CA does.
    gnutls_certificate_set_x509_system_trust(credentials);
  } else {
    // The number of CA certificates read, or a negative error.
    const int loaded =
        gnutls_certificate_set_x509_trust_file(credentials, ca_file.c_str(), GNUTLS_X509_FMT_PEM);
    if (loaded <= 0) {
      return InvalidArgument("plugin_opt_fleet_ca_file " + ca_file +
                             " cannot be read as PEM CA certificates: " +
                             (loaded < 0 ? gnutls_strerror(loaded) : "no certificate in it"));
    }
  }
  return std::unique_ptr<PeerClient>(new PeerClient(std::move(state), pool));
}

StatusOr<PeerLink> PeerClient::Open(const PeerUrl& peer, const PeerRequest& request) const {
  const Clock::time_point connect_deadline =
      request.connect_deadline == Clock::time_point{}
          ? request.deadline
          : std::min(request.deadline, request.connect_deadline);
  StatusOr<int> fd = ConnectTcp(peer, connect_deadline);
  if (!fd.ok()) return fd.status();
  PeerLink link;
  link.fd = UniqueFd(*fd);
  if (peer.https) {
    gnutls_session_t session = nullptr;
    int started = gnutls_init(&session, GNUTLS_CLIENT | GNUTLS_NONBLOCK);
    if (started == GNUTLS_E_SUCCESS) {
      link.tls.reset(session);
      started = gnutls_priority_set_direct(session, kTlsPriorities, nullptr);
    }
    if (started == GNUTLS_E_SUCCESS) {
      started = gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, tls_->credentials.get());
    }
    // The name for SNI (never an IP address); the certificate is checked against the name or
    // the IP address (its IP subjectAltName) by the handshake.
    if (started == GNUTLS_E_SUCCESS && peer.host.kind == HostKind::kName) {
      started = gnutls_server_name_set(session, GNUTLS_NAME_DNS, peer.host.text.data(),
                                       peer.host.text.size());
    }
    if (started != GNUTLS_E_SUCCESS) {
      return Status(StatusCode::kInternal,
                    std::string("cannot start TLS: ") + gnutls_strerror(started));
    }
    gnutls_session_set_verify_cert(session, peer.host.text.c_str(), 0);
    gnutls_transport_set_int(session, link.fd.get());
  }
  const Status status = Channel(link.fd.get(), link.tls.get(), connect_deadline).Handshake();
  if (!status.ok()) return status;
  return link;
}

StatusOr<PeerResponse> PeerClient::Exchange(PeerLink link, const PeerUrl& peer,
                                            const PeerRequest& request,
                                            bool* nothing_back) const {
  *nothing_back = false;
  Channel channel(link.fd.get(), link.tls.get(), request.deadline);
  const bool streaming = static_cast<bool>(request.stream_sink);
  const bool keep = request.keep_alive && !streaming;
  std::string head = "POST " + request.path + (streaming ? " HTTP/1.0" : " HTTP/1.1") +
                     "\r\nHost: " + peer.HostHeader() +
                     (keep ? "" : "\r\nConnection: close") +
                     "\r\nContent-Length: " + std::to_string(request.body.size()) + "\r\n";
  for (const auto& [name, value] : request.headers) head += name + ": " + value + "\r\n";
  head += "\r\n";
  Status status = channel.WriteAll(head + request.body);
  if (!status.ok()) {
    *nothing_back = status.code() == StatusCode::kUnavailable;
    return status;
  }
  if (streaming) {
    status = channel.Stream(request.stream_sink);
    if (!status.ok()) return status;
    return PeerResponse();
  }
  std::string answer;
  bool reusable = false;
  status = channel.ReadAnswer(request.max_response_bytes, keep, &answer, &reusable);
  if (!status.ok()) {
    *nothing_back = answer.empty() && status.code() == StatusCode::kUnavailable;
    return status;
  }
  if (answer.empty()) {
    *nothing_back = true;
    return Status(StatusCode::kUnavailable, "the peer closed without answering");
  }
  StatusOr<PeerResponse> response = ParseHttpResponse(answer);
  if (response.ok() && reusable) pool_->Put(peer.Text(), std::move(link));
  return response;
}

StatusOr<PeerResponse> PeerClient::Post(const PeerUrl& peer, const PeerRequest& request) const {
  if (peer.https && !tls_) {
    return Status(StatusCode::kInternal, "an https peer without TLS credentials");
  }
  bool nothing_back = false;
  if (request.keep_alive && !request.stream_sink) {
    std::optional<PeerLink> kept = pool_->Take(peer.Text());
    if (kept) {
      StatusOr<PeerResponse> response = Exchange(std::move(*kept), peer, request, &nothing_back);
      // Closed by the peer since its last answer (its idle timeout, a restart): the request
      // never reached it, or a read that may be sent again did; once more on a new connection.
      if (response.ok() || !nothing_back || Clock::now() >= request.deadline) return response;
    }
  }
  StatusOr<PeerLink> link = Open(peer, request);
  if (!link.ok()) return link.status();
  return Exchange(std::move(*link), peer, request, &nothing_back);
}

}  // namespace mqc
