// SPDX-License-Identifier: BSD-3-Clause
// HttpServer over libmicrohttpd 0.9.75 (see http_server.h for which thread touches what).
//
// Why it looks like this:
// - We create, bind and listen on the socket ourselves and hand it to MHD: that way a failure
//   has its errno for the message ("cannot listen on 127.0.0.1:8080: Address already in use"),
//   which MHD_start_daemon's bare NULL does not give. SO_REUSEADDR lets a restarted companion
//   bind while old connections sit in TIME_WAIT; it does not let two servers share a port.
//   `::` is made dual-stack (IPV6_V6ONLY off) whatever the system default, so that it means
//   "every address" like 0.0.0.0 does for IPv4.
// - Once passed to MHD_start_daemon, the socket belongs to MHD: MHD_stop_daemon closes it, and
//   a failed start closes it on most paths but not all. We never close it after handing it
//   over: a rare leak on a failed start beats closing a number another thread may reuse.
// - Every request is answered from the access handler's last call, after the whole body is in:
//   answering earlier makes MHD close the connection (no keep-alive). The exceptions answer at
//   the headers on purpose: a declared Content-Length above the limit (413 before reading a
//   byte of it), and methods other than GET, HEAD, POST and DELETE (nothing we serve takes their
//   body; the router answers 404 or 405). A chunked body above the limit is read and dropped, then
//   answered 413 (MHD gives no way to answer while a body is still coming).
// - HEAD: MHD sends the headers of the GET answer, Content-Length included, without the body.
// - No exception crosses into C: every callback catches everything. An exception from the
//   handler is answered 500 (plain text: the router already answers its own errors in the
//   format of the path, so this is the last resort); failing even that, MHD_NO closes the
//   connection.
#include "companion/http/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "link/clock.h"
#include "link/host_names.h"
#include "link/text_util.h"

namespace mqc {
namespace {

// Per request, owned by MHD's *req_cls between the first call of the access handler and the
// completion callback; only the MHD thread serving the connection touches it.
struct RequestState {
  std::string body;
  bool body_too_large = false;
};

std::string ErrnoMessage(int error_number) { return std::system_category().message(error_number); }

// Closes a socket unless released (handed to MHD).
class SocketCloser {
 public:
  explicit SocketCloser(int fd) : fd_(fd) {}
  SocketCloser(const SocketCloser&) = delete;
  SocketCloser& operator=(const SocketCloser&) = delete;
  ~SocketCloser() {
    if (fd_ >= 0) (void)close(fd_);  // nothing to do about a failed close of an unused socket
  }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

struct ListenResult {
  int fd = -1;
  int port = 0;
  bool ipv6 = false;
};

// Creates a listening socket. A failure names address, port and reason: kInvalidArgument for
// an address or port that cannot be one, kUnavailable when the system refuses (port taken,
// address not of this machine).
StatusOr<ListenResult> Listen(const HttpServerOptions& options) {
  const std::string where = "cannot listen on " + HostPort(options.bind_address, options.port);
  if (options.port < 0 || options.port > 65535) {
    return InvalidArgument(where + ": port out of range (0 to 65535)");
  }
  ListenResult result;
  sockaddr_storage storage{};
  socklen_t length = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
  const auto port = htons(static_cast<std::uint16_t>(options.port));
  if (inet_pton(AF_INET, options.bind_address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = port;
    length = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, options.bind_address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = port;
    length = sizeof(sockaddr_in6);
    result.ipv6 = true;
  } else {
    return InvalidArgument(where + ": not an IPv4 or IPv6 address");
  }

  const auto fail = [&](const char* step) {
    return Status(StatusCode::kUnavailable, where + ": " + step + ErrnoMessage(errno));
  };
  const int fd = socket(storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  SocketCloser closer(fd);
  if (fd < 0) return fail("socket: ");
  const int on = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0) {
    return fail("SO_REUSEADDR: ");
  }
  const int off = 0;
  if (result.ipv6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) != 0) {
    return fail("IPV6_V6ONLY: ");
  }
  if (bind(fd, reinterpret_cast<const sockaddr*>(&storage), length) != 0) return fail("");
  if (listen(fd, SOMAXCONN) != 0) return fail("");
  sockaddr_storage bound{};
  socklen_t bound_length = sizeof(bound);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_length) != 0) {
    return fail("getsockname: ");
  }
  result.port = ntohs(result.ipv6 ? reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port
                                  : reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
  result.fd = closer.release();
  return result;
}

HttpResponse InternalError() {
  HttpResponse response;
  response.status = MHD_HTTP_INTERNAL_SERVER_ERROR;
  response.content_type = "text/plain; charset=utf-8";
  response.body = "internal error\n";
  return response;
}

// Bodies at least this big give their memory back to the system once sent (malloc_trim): a
// list of every connection can be tens of megabytes, which glibc would otherwise keep.
constexpr std::size_t kTrimAfterBytes = 1 << 20;

// Frees a body MHD has finished sending (MHD's free callback; runs on an MHD thread).
void FreeBody(void* cls) noexcept {
  auto* body = static_cast<std::string*>(cls);
  const bool big = body->capacity() >= kTrimAfterBytes;
  delete body;
  if (big) malloc_trim(0);
}

// Adds `response`'s content type and headers to `mhd_response` (owned from here on) and queues
// it with `response`'s status. MHD_NO (close the connection) if MHD refuses any part.
MHD_Result QueueWithHeaders(MHD_Connection* connection, MHD_Response* mhd_response,
                            const HttpResponse& response) {
  const CSmartPtr<MHD_Response, MHD_destroy_response> owner(mhd_response);
  if (!response.content_type.empty() &&
      MHD_add_response_header(mhd_response, MHD_HTTP_HEADER_CONTENT_TYPE,
                              response.content_type.c_str()) != MHD_YES) {
    return MHD_NO;
  }
  for (const auto& [name, value] : response.headers) {
    // MHD refuses names and values with CR or LF, which keeps header injection out.
    if (MHD_add_response_header(mhd_response, name.c_str(), value.c_str()) != MHD_YES) {
      return MHD_NO;
    }
  }
  if (response.status < 100 || response.status > 999) return MHD_NO;
  return MHD_queue_response(connection, static_cast<unsigned>(response.status), mhd_response);
}

// Queues `response` on `connection`. MHD_NO (close the connection) if MHD refuses any part.
MHD_Result Queue(MHD_Connection* connection, HttpResponse response) {
  // The body moves to the heap and MHD sends it from there, without a copy; FreeBody frees it.
  auto* body = new std::string(std::move(response.body));
  MHD_Response* mhd_response = MHD_create_response_from_buffer_with_free_callback_cls(
      body->size(), body->data(), &FreeBody, body);
  if (mhd_response == nullptr) {
    FreeBody(body);
    return MHD_NO;
  }
  return QueueWithHeaders(connection, mhd_response, response);
}

MHD_Result AppendPair(void* cls, MHD_ValueKind /*kind*/, const char* key, size_t key_size,
                      const char* value, size_t value_size) noexcept {
  try {
    static_cast<std::vector<std::pair<std::string, std::string>>*>(cls)->emplace_back(
        std::string(key, key_size),
        value == nullptr ? std::string() : std::string(value, value_size));
    return MHD_YES;
  } catch (...) {
    return MHD_NO;
  }
}

// Appends the request's values of one kind (query arguments, headers) in the order sent.
bool Collect(MHD_Connection* connection, MHD_ValueKind kind,
             std::vector<std::pair<std::string, std::string>>* pairs) {
  const std::size_t before = pairs->size();
  const int count = MHD_get_connection_values_n(connection, kind, &AppendPair, pairs);
  // Fewer pairs than MHD counted: AppendPair ran out of memory.
  return count >= 0 && pairs->size() - before == static_cast<std::size_t>(count);
}

bool IsServedMethod(std::string_view method) {
  return method == MHD_HTTP_METHOD_GET || method == MHD_HTTP_METHOD_HEAD ||
         method == MHD_HTTP_METHOD_POST || method == MHD_HTTP_METHOD_DELETE;
}

// "127.0.0.1:41234" or "[::1]:41234"; empty when MHD does not know.
std::string PeerAddress(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (info == nullptr || info->client_addr == nullptr) return "";
  char text[INET6_ADDRSTRLEN] = {};
  const sockaddr* address = info->client_addr;
  if (address->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(address);
    if (inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text)) == nullptr) return "";
    return HostPort(text, ntohs(v4->sin_port));
  }
  if (address->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(address);
    if (inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text)) == nullptr) return "";
    return HostPort(text, ntohs(v6->sin6_port));
  }
  return "";
}

// The address the client connected to (getsockname of the connection), without the port; an
// IPv4-mapped IPv6 address (an IPv4 client of a dual-stack socket) as plain IPv4. Empty when
// unknown.
std::string LocalAddress(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (info == nullptr) return "";
  sockaddr_storage local{};
  socklen_t length = sizeof(local);
  if (getsockname(info->connect_fd, reinterpret_cast<sockaddr*>(&local), &length) != 0) return "";
  char text[INET6_ADDRSTRLEN] = {};
  if (local.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&local);
    return inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text)) == nullptr ? "" : text;
  }
  if (local.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&local);
    if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr)) {
      return inet_ntop(AF_INET, &v6->sin6_addr.s6_addr[12], text, sizeof(text)) == nullptr ? ""
                                                                                           : text;
    }
    return inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text)) == nullptr ? "" : text;
  }
  return "";
}

// The declared Content-Length exceeds `limit` (a malformed value is MHD's to refuse).
bool DeclaresMoreThan(MHD_Connection* connection, std::size_t limit) {
  const char* value =
      MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  if (value == nullptr) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long length = std::strtoull(value, &end, 10);
  if (end == value) return false;
  return errno == ERANGE || length > limit;
}

// One connection's request deadline, from MHD's NOTIFY_STARTED to NOTIFY_CLOSED (its
// socket_context). Written by the MHD thread serving the connection, read by the request clock,
// both under RequestClock's mutex.
struct ConnectionClock {
  int fd = -1;
  std::int64_t deadline_ns = 0;  // 0: no request under way (answer being sent)
  bool shut = false;
};

// TLS 1.2 and 1.3 only, GnuTLS's NORMAL set otherwise.
constexpr char kTlsPriorities[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";

}  // namespace

// Ends requests that take longer than request_time_limit_s to arrive (trickling clients): a
// thread wakes twice a second and shuts down each overdue socket, which MHD then sees as closed
// by the peer and cleans up on its own thread. The socket is never closed here: MHD sends
// NOTIFY_CLOSED (which removes it, under the same mutex) before it closes the descriptor, so a
// number shut down here is always still the connection's own.
class RequestClock {
 public:
  // `tick` runs on the clock's thread every second, outside its lock.
  RequestClock(unsigned limit_s, std::function<void()> tick)
      : limit_ns_(std::int64_t{limit_s} * 1000000000),
        tick_(std::move(tick)),
        thread_([this] { Run(); }) {}
  ~RequestClock() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  RequestClock(const RequestClock&) = delete;
  RequestClock& operator=(const RequestClock&) = delete;

  ConnectionClock* Started(int fd) {
    auto clock = std::make_unique<ConnectionClock>();
    clock->fd = fd;
    clock->deadline_ns = MonotonicNs() + limit_ns_;
    std::lock_guard<std::mutex> lock(mutex_);
    live_.insert(clock.get());
    return clock.release();
  }
  void Closed(ConnectionClock* clock) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      live_.erase(clock);
    }
    delete clock;
  }
  // The request is in and answered: sending is bounded by the idle timeout.
  void Answered(ConnectionClock* clock) { Set(clock, 0); }
  // The next request on this connection must arrive in time too.
  void Completed(ConnectionClock* clock) { Set(clock, MonotonicNs() + limit_ns_); }

 private:
  void Set(ConnectionClock* clock, std::int64_t deadline_ns) {
    if (clock == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    clock->deadline_ns = deadline_ns;
  }
  void Run() {
    std::unique_lock<std::mutex> lock(mutex_);
    unsigned rounds = 0;
    while (!stop_) {
      wake_.wait_for(lock, std::chrono::milliseconds(500));
      if (++rounds % 2 == 0 && tick_ && !stop_) {
        // Outside the lock: a tick resumes parked connections, which takes MHD's own locks,
        // and MHD's threads call Closed with those held.
        lock.unlock();
        tick_();
        lock.lock();
      }
      const std::int64_t now = MonotonicNs();
      for (ConnectionClock* clock : live_) {
        if (clock->shut || clock->deadline_ns == 0 || now < clock->deadline_ns) continue;
        (void)shutdown(clock->fd, SHUT_RDWR);  // MHD closes it; nothing to do if it is gone
        clock->shut = true;
      }
    }
  }

  const std::int64_t limit_ns_;
  const std::function<void()> tick_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;                          // guarded by mutex_
  std::unordered_set<ConnectionClock*> live_;  // guarded by mutex_
  std::thread thread_;                         // last: starts once the rest is built
};

namespace {

ConnectionClock* ClockOf(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info == nullptr ? nullptr : static_cast<ConnectionClock*>(info->socket_context);
}

}  // namespace

// A response stream being sent on one connection (HttpBodyStream, http_server.h). MHD pulls
// bytes through Read on the thread serving the connection; when the stream has nothing, the
// connection is parked (MHD_suspend_connection, from inside the content reader as MHD
// allows) until Wake resumes it. `parked` is flipped under `mutex` so that exactly one Wake
// resumes a parked connection; a parked connection is never freed by MHD (it does not even see a
// hang-up), so the resume outside the lock still reaches a live connection. The daemon must not
// stop with a parked connection (MHD's rule): HttpServer::StopStreams wakes them all first.
// Parked connections have no idle timeout (MHD's rule too): the request clock's tick wakes
// them every second to look for a hung-up peer and a passed deadline.
struct StreamSender {
  HttpServer* server = nullptr;
  std::shared_ptr<HttpBodyStream> stream;
  MHD_Connection* connection = nullptr;
  int fd = -1;
  std::int64_t started_ns = 0;

  std::mutex mutex;
  bool parked = false;    // guarded by mutex
  bool woken = false;     // a Wake came while running; guarded by mutex
  bool stopping = false;  // guarded by mutex
  bool done = false;      // MHD freed the response; guarded by mutex
  // Only the MHD thread serving the connection:
  std::string pending;
  std::size_t sent = 0;
  bool ended = false;

  void Wake() {
    bool resume = false;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (done) return;
      if (parked) {
        parked = false;
        resume = true;
      } else {
        woken = true;
      }
    }
    if (resume) MHD_resume_connection(connection);
  }

  void Stop() {
    stream->Stop();
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    Wake();
  }

  // The peer hung up (end of file or a reset), seen without reading its data.
  bool PeerGone() const {
    if (fd < 0) return false;
    char byte = 0;
    const ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return true;
    return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
  }

  ssize_t Read(char* buffer, std::size_t max) {
    if (sent == pending.size() && !ended) {
      pending.clear();
      sent = 0;
      // The end, not an error: MHD logs an error as a failure of ours, and the peer is gone.
      if (PeerGone()) return MHD_CONTENT_READER_END_OF_STREAM;
      constexpr int kMaxRounds = 16;  // each further round follows a Wake during the last
      for (int round = 0; round < kMaxRounds && pending.empty() && !ended; ++round) {
        {
          std::lock_guard<std::mutex> lock(mutex);
          woken = false;
        }
        const HttpBodyStream::Pull pull = stream->Read(max, &pending);
        if (pull == HttpBodyStream::Pull::kEnd) ended = true;
        if (pull != HttpBodyStream::Pull::kWait || !pending.empty()) break;
        std::lock_guard<std::mutex> lock(mutex);
        if (stopping) {
          ended = true;  // a stopped stream that has nothing more: end it here
          break;
        }
        if (woken) continue;
        parked = true;
        MHD_suspend_connection(connection);
        return 0;
      }
    }
    if (sent == pending.size()) return ended ? MHD_CONTENT_READER_END_OF_STREAM : 0;
    const std::size_t n = std::min(max, pending.size() - sent);
    std::memcpy(buffer, pending.data() + sent, n);
    sent += n;
    return static_cast<ssize_t>(n);
  }
};

struct HttpServer::Streams {
  std::mutex mutex;
  std::condition_variable changed;
  std::unordered_set<std::shared_ptr<StreamSender>> live;  // guarded by mutex
  // The server is stopping: a stream that starts now is stopped at once (it must not park:
  // MHD stops next). Guarded by mutex.
  bool closing = false;
};

// The C callbacks, befriended by HttpServer. None lets an exception out.
struct HttpServerCallbacks {
  static MHD_Result OnRequest(void* cls, MHD_Connection* connection, const char* url,
                              const char* method, const char* version, const char* upload_data,
                              size_t* upload_data_size, void** req_cls) noexcept {
    try {
      const auto* server = static_cast<const HttpServer*>(cls);
      auto* state = static_cast<RequestState*>(*req_cls);
      if (state == nullptr) {  // first call: headers are in, no body yet
        *req_cls = state = new RequestState();
        const bool answer_now = !IsServedMethod(method);
        state->body_too_large = DeclaresMoreThan(connection, server->options_.max_body_bytes);
        if (!answer_now && !state->body_too_large) return MHD_YES;
      } else if (*upload_data_size > 0) {  // a piece of the body
        if (!state->body_too_large &&
            state->body.size() + *upload_data_size <= server->options_.max_body_bytes) {
          state->body.append(upload_data, *upload_data_size);
        } else {
          state->body_too_large = true;
          state->body = std::string();  // free what was kept
        }
        *upload_data_size = 0;
        return MHD_YES;
      }
      HttpRequest request;
      request.method = method;
      request.path = url;
      if (!Collect(connection, MHD_GET_ARGUMENT_KIND, &request.query) ||
          !Collect(connection, MHD_HEADER_KIND, &request.headers)) {
        return MHD_NO;
      }
      request.body = std::move(state->body);
      request.body_too_large = state->body_too_large;
      request.remote_address = PeerAddress(connection);
      request.local_address = LocalAddress(connection);
      if (version != nullptr) request.version = version;
      server->request_clock_->Answered(ClockOf(connection));
      HttpResponse response = server->Dispatch(request);
      if (response.stream) {
        return QueueStream(const_cast<HttpServer*>(server), connection, std::move(response));
      }
      return Queue(connection, std::move(response));
    } catch (...) {
      return MHD_NO;  // out of memory: closing the connection is all that is left
    }
  }

  static ssize_t OnStreamRead(void* cls, uint64_t /*position*/, char* buffer, size_t max) noexcept {
    try {
      return (*static_cast<std::shared_ptr<StreamSender>*>(cls))->Read(buffer, max);
    } catch (...) {
      return MHD_CONTENT_READER_END_WITH_ERROR;
    }
  }

  static void OnStreamFree(void* cls) noexcept {
    auto* holder = static_cast<std::shared_ptr<StreamSender>*>(cls);
    std::shared_ptr<StreamSender> sender = std::move(*holder);
    delete holder;
    {
      std::lock_guard<std::mutex> lock(sender->mutex);
      sender->done = true;
    }
    HttpServer::Streams& streams = *sender->server->streams_;
    {
      std::lock_guard<std::mutex> lock(streams.mutex);
      streams.live.erase(sender);
    }
    streams.changed.notify_all();
  }

  static MHD_Result QueueStream(HttpServer* server, MHD_Connection* connection,
                                HttpResponse response) {
    auto sender = std::make_shared<StreamSender>();
    sender->server = server;
    sender->stream = std::move(response.stream);
    sender->connection = connection;
    sender->started_ns = MonotonicNs();
    const MHD_ConnectionInfo* info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (info != nullptr) sender->fd = info->connect_fd;
    const std::weak_ptr<StreamSender> weak = sender;
    sender->stream->SetWake([weak] {
      if (const auto alive = weak.lock()) alive->Wake();
    });
    bool closing = false;
    {
      std::lock_guard<std::mutex> lock(server->streams_->mutex);
      server->streams_->live.insert(sender);
      closing = server->streams_->closing;
    }
    if (closing) sender->Stop();
    constexpr std::size_t kBlockSize = 32 * 1024;
    auto* holder = new std::shared_ptr<StreamSender>(sender);
    MHD_Response* mhd_response = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, kBlockSize, &OnStreamRead, holder, &OnStreamFree);
    if (mhd_response == nullptr) {
      OnStreamFree(holder);
      return MHD_NO;
    }
    return QueueWithHeaders(connection, mhd_response, response);
  }

  static void OnCompleted(void* cls, MHD_Connection* connection, void** req_cls,
                          MHD_RequestTerminationCode /*code*/) noexcept {
    delete static_cast<RequestState*>(*req_cls);
    *req_cls = nullptr;
    static_cast<const HttpServer*>(cls)->request_clock_->Completed(ClockOf(connection));
  }

  static void OnConnection(void* cls, MHD_Connection* connection, void** socket_context,
                           MHD_ConnectionNotificationCode code) noexcept {
    try {
      RequestClock& clock = *static_cast<const HttpServer*>(cls)->request_clock_;
      if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const MHD_ConnectionInfo* info =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (info != nullptr) *socket_context = clock.Started(info->connect_fd);
      } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context != nullptr) {
        clock.Closed(static_cast<ConnectionClock*>(*socket_context));
        *socket_context = nullptr;
      }
    } catch (...) {
      // Out of memory: this connection goes without a request deadline (the idle timeout stays).
    }
  }

  static void OnLog(void* cls, const char* format, va_list arguments) noexcept {
    char line[512];
    const int length = std::vsnprintf(line, sizeof(line), format, arguments);
    if (length < 0) return;
    std::string message(line);  // cut at 511 bytes: MHD's messages are short
    while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) {
      message.pop_back();
    }
    static_cast<const HttpServer*>(cls)->Log(message);
  }
};

const std::string* HttpRequest::FindHeader(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (EqualsIgnoreAsciiCase(key, name)) return &value;
  }
  return nullptr;
}

void StopMhdDaemon(MHD_Daemon* daemon) noexcept { MHD_stop_daemon(daemon); }

HttpServer::HttpServer(const HttpServerOptions& options, Handler handler)
    : streams_(std::make_unique<Streams>()), options_(options), handler_(std::move(handler)) {}

HttpServer::~HttpServer() {
  // Streams end with a last message (MHD must not stop with a parked connection); then MHD's
  // threads stop before what they use; a retired daemon's socket is closed after it.
  StopStreams(0, 2000);
  StopDaemon(&current_);
  for (Daemon& daemon : retired_) StopDaemon(&daemon);
}

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                        Handler handler) {
  const StatusOr<ListenResult> listen_result = Listen(options);
  if (!listen_result.ok()) return listen_result.status();
  const ListenResult& listening = *listen_result;
  // Private constructor: no make_unique.
  std::unique_ptr<HttpServer> server(new HttpServer(options, std::move(handler)));
  server->port_ = listening.port;
  server->ipv6_ = listening.ipv6;

  HttpServer* raw = server.get();
  server->request_clock_ =
      std::make_unique<RequestClock>(options.request_time_limit_s, [raw] { raw->TickStreams(); });

  const bool tls = !options.tls_cert_pem.empty() && !options.tls_key_pem.empty();
  if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
    (void)close(listening.fd);  // not handed to MHD yet
    return Status(StatusCode::kUnimplemented,
                  "plugin_opt_http_tls_cert: this libmicrohttpd is built without TLS support");
  }
  if (tls) {
    server->current_.cert_pem = std::make_unique<std::string>(options.tls_cert_pem);
    server->current_.key_pem = std::make_unique<std::string>(options.tls_key_pem);
  }
  const StatusOr<MHD_Daemon*> daemon = server->StartDaemon(
      listening.fd, server->current_.cert_pem.get(), server->current_.key_pem.get());
  if (!daemon.ok()) {
    return Status(daemon.status().code(), "cannot listen on " +
                                              HostPort(options.bind_address, listening.port) +
                                              ": " + daemon.status().message());
  }
  server->current_.daemon.reset(*daemon);
  return server;
}

StatusOr<MHD_Daemon*> HttpServer::StartDaemon(int listen_fd, const std::string* cert_pem,
                                              const std::string* key_pem) {
  // epoll where MHD has it (Debian's does), else poll; MHD's own threads. With epoll a silent
  // connection costs no thread and no poll slot, so floods of them do not delay the others.
  // MHD_USE_ITC: MHD_quiesce_daemon needs it with a thread pool (ReplaceTls).
  // MHD_ALLOW_SUSPEND_RESUME: a response stream with nothing to send parks its connection.
  unsigned flags =
      MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME;
  if (ipv6_) flags |= MHD_USE_IPv6;
  if (options_.log) flags |= MHD_USE_ERROR_LOG;
  const bool tls = cert_pem != nullptr && key_pem != nullptr;
  if (tls) flags |= MHD_USE_TLS;
  const auto function = [](auto* callback) { return reinterpret_cast<intptr_t>(callback); };
  std::vector<MHD_OptionItem> items = {
      // The logger goes first so that start-up messages reach it too.
      {MHD_OPTION_EXTERNAL_LOGGER, function(&HttpServerCallbacks::OnLog), this},
      {MHD_OPTION_LISTEN_SOCKET, listen_fd, nullptr},
      {MHD_OPTION_THREAD_POOL_SIZE, options_.thread_pool_size, nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT, options_.connection_timeout_s, nullptr},
      {MHD_OPTION_CONNECTION_LIMIT, options_.connection_limit, nullptr},
      {MHD_OPTION_NOTIFY_COMPLETED, function(&HttpServerCallbacks::OnCompleted), this},
      {MHD_OPTION_NOTIFY_CONNECTION, function(&HttpServerCallbacks::OnConnection), this},
  };
  if (tls) {
    // MHD keeps the pointers: the strings live as long as the daemon (Daemon).
    items.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(cert_pem->c_str())});
    items.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(key_pem->c_str())});
    items.push_back({MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(kTlsPriorities)});
  }
  items.push_back({MHD_OPTION_END, 0, nullptr});
  MHD_Daemon* daemon = MHD_start_daemon(flags, static_cast<std::uint16_t>(port_), nullptr, nullptr,
                                        &HttpServerCallbacks::OnRequest, this, MHD_OPTION_ARRAY,
                                        items.data(), MHD_OPTION_END);
  if (daemon == nullptr) {
    // MHD says no more than that it failed: with HTTPS, a certificate and key that are no
    // matching pair are what an operator can fix, and what is then assumed.
    if (tls) {
      return InvalidArgument(
          "libmicrohttpd could not start HTTPS: check that plugin_opt_http_tls_cert "
          "and plugin_opt_http_tls_key are a matching PEM certificate and key");
    }
    return Status(StatusCode::kUnavailable, "libmicrohttpd could not start");
  }
  return daemon;
}

Status HttpServer::ReplaceTls(std::string cert_pem, std::string key_pem) {
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
    return Status(StatusCode::kUnavailable,
                  "cannot duplicate the listening socket: " + ErrnoMessage(errno));
  }
  Daemon next;
  next.cert_pem = std::make_unique<std::string>(std::move(cert_pem));
  next.key_pem = std::make_unique<std::string>(std::move(key_pem));
  const StatusOr<MHD_Daemon*> daemon =
      StartDaemon(listen_fd, next.cert_pem.get(), next.key_pem.get());
  if (!daemon.ok()) return daemon.status();  // like Start: never close a descriptor MHD was given
  next.daemon.reset(*daemon);
  // Both accept for a moment, either answers; then the old one stops accepting and keeps the
  // connections it has until they end (StopRetired).
  current_.quiesced_fd = MHD_quiesce_daemon(current_.daemon.get());
  current_.retired_ns = MonotonicNs();
  retired_.push_back(std::move(current_));
  current_ = std::move(next);
  return Status();
}

void HttpServer::StopDaemon(Daemon* daemon) {
  daemon->daemon.reset();  // MHD_stop_daemon: a quiesced daemon leaves its socket open
  if (daemon->quiesced_fd >= 0) (void)close(daemon->quiesced_fd);  // another descriptor stays
  daemon->quiesced_fd = -1;
}

void HttpServer::StopRetired(unsigned grace_s) {
  const std::int64_t now = MonotonicNs();
  for (auto it = retired_.begin(); it != retired_.end();) {
    const MHD_DaemonInfo* info =
        MHD_get_daemon_info(it->daemon.get(), MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    const bool idle = info != nullptr && info->num_connections == 0;
    if (idle || now - it->retired_ns >= std::int64_t{grace_s} * 1000000000) {
      // Its streams started before it was retired (a later one is the new daemon's, or, in
      // the moment both accepted, ends early and its client resumes).
      StopStreams(it->retired_ns, 2000);
      StopDaemon(&*it);
      it = retired_.erase(it);
    } else {
      ++it;
    }
  }
}

std::size_t HttpServer::stream_count() const {
  std::lock_guard<std::mutex> lock(streams_->mutex);
  return streams_->live.size();
}

void HttpServer::StopStreams(std::int64_t started_before_ns, int wait_ms) {
  const auto selected = [started_before_ns](const StreamSender& sender) {
    return started_before_ns == 0 || sender.started_ns < started_before_ns;
  };
  std::vector<std::shared_ptr<StreamSender>> stopping;
  {
    std::lock_guard<std::mutex> lock(streams_->mutex);
    if (started_before_ns == 0) streams_->closing = true;
    for (const auto& sender : streams_->live) {
      if (selected(*sender)) stopping.push_back(sender);
    }
  }
  for (const auto& sender : stopping) sender->Stop();
  stopping.clear();
  std::unique_lock<std::mutex> lock(streams_->mutex);
  streams_->changed.wait_for(lock, std::chrono::milliseconds(wait_ms), [&] {
    for (const auto& sender : streams_->live) {
      if (selected(*sender)) return false;
    }
    return true;
  });
  // A stream whose client reads nothing may still be sending: MHD closes it at stop. None is
  // parked: Stop's wake resumed it, and a stopping stream never parks again.
}

void HttpServer::TickStreams() {
  std::vector<std::shared_ptr<StreamSender>> live;
  {
    std::lock_guard<std::mutex> lock(streams_->mutex);
    live.assign(streams_->live.begin(), streams_->live.end());
  }
  for (const auto& sender : live) sender->Wake();
}

HttpResponse HttpServer::Dispatch(const HttpRequest& request) const {
  // The answer is a fixed text: an exception's message names the code's insides (an address,
  // a library's wording) and goes to the log only.
  try {
    return handler_(request);
  } catch (const std::exception& e) {
    Log("HTTP " + PrintableExcerpt(request.method) + " " + PrintableExcerpt(request.path) +
        " failed: " + e.what());
  } catch (...) {
    Log("HTTP " + PrintableExcerpt(request.method) + " " + PrintableExcerpt(request.path) +
        " failed: an exception of unknown type");
  }
  return InternalError();  // if even this throws, OnRequest closes the connection
}

void HttpServer::Log(const std::string& message) const noexcept {
  try {
    if (options_.log) options_.log(message);
  } catch (...) {
    // Nothing sensible to do: logging the failure to log would go to the same place.
  }
}

}  // namespace mqc
