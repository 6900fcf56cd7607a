// SPDX-License-Identifier: BSD-3-Clause
// MhdAdapter over libmicrohttpd 0.9.75 (see mhd_adapter.h for which thread touches what).
//
// Why it looks like this:
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
#include "companion/http/mhd_adapter.h"

#include <arpa/inet.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "companion/http/request_clock.h"
#include "companion/http/stream_sender.h"
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

// Lets go of a shared body MHD has finished sending (MHD's free callback; an MHD thread).
void ReleaseSharedBody(void* cls) noexcept {
  delete static_cast<std::shared_ptr<const std::string>*>(cls);
}

// Queues `response` with `bytes` as its body, sent from where they are (MHD only reads them);
// `release(cls)` runs once MHD is done with them, or here if MHD refuses.
MHD_Result QueueBytes(MHD_Connection* connection, const HttpResponse& response,
                      std::string_view bytes, MHD_ContentReaderFreeCallback release, void* cls) {
  MHD_Response* mhd_response = MHD_create_response_from_buffer_with_free_callback_cls(
      bytes.size(), const_cast<char*>(bytes.data()), release, cls);
  if (mhd_response == nullptr) {
    release(cls);
    return MHD_NO;
  }
  return QueueWithHeaders(connection, mhd_response, response);
}

// Queues `response` on `connection`, its body without a copy: a shared body is held until sent,
// an own body moves to the heap (FreeBody frees it). MHD_NO (close the connection) if MHD
// refuses any part.
MHD_Result Queue(MHD_Connection* connection, HttpResponse response) {
  if (response.shared_body != nullptr) {
    auto* hold = new std::shared_ptr<const std::string>(std::move(response.shared_body));
    return QueueBytes(connection, response, **hold, &ReleaseSharedBody, hold);
  }
  auto* body = new std::string(std::move(response.body));
  return QueueBytes(connection, response, *body, &FreeBody, body);
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

ConnectionClock* ClockOf(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info == nullptr ? nullptr : static_cast<ConnectionClock*>(info->socket_context);
}

// TLS 1.2 and 1.3 only, GnuTLS's NORMAL set otherwise.
constexpr char kTlsPriorities[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";

}  // namespace

// The C callbacks, befriended by MhdAdapter. None lets an exception out.
struct MhdCallbacks {
  static MHD_Result OnRequest(void* cls, MHD_Connection* connection, const char* url,
                              const char* method, const char* version, const char* upload_data,
                              size_t* upload_data_size, void** req_cls) noexcept {
    try {
      const auto* adapter = static_cast<const MhdAdapter*>(cls);
      auto* state = static_cast<RequestState*>(*req_cls);
      if (state == nullptr) {  // first call: headers are in, no body yet
        *req_cls = state = new RequestState();
        const bool answer_now = !IsServedMethod(method);
        state->body_too_large = DeclaresMoreThan(connection, adapter->options_.max_body_bytes);
        if (!answer_now && !state->body_too_large) return MHD_YES;
      } else if (*upload_data_size > 0) {  // a piece of the body
        if (!state->body_too_large &&
            state->body.size() + *upload_data_size <= adapter->options_.max_body_bytes) {
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
      adapter->clock_->Answered(ClockOf(connection));
      HttpResponse response = adapter->Dispatch(request);
      if (response.stream) {
        return QueueStream(adapter->streams_, connection, std::move(response));
      }
      return Queue(connection, std::move(response));
    } catch (...) {
      return MHD_NO;  // out of memory: closing the connection is all that is left
    }
  }

  // What MHD holds of a stream while it sends it (its content reader's cls).
  struct StreamHolder {
    std::shared_ptr<StreamSender> sender;
    StreamSet* streams;
  };

  static ssize_t OnStreamRead(void* cls, uint64_t /*position*/, char* buffer, size_t max) noexcept {
    static_assert(StreamSender::kEndOfStream == MHD_CONTENT_READER_END_OF_STREAM);
    try {
      return static_cast<StreamHolder*>(cls)->sender->Read(buffer, max);
    } catch (...) {
      return MHD_CONTENT_READER_END_WITH_ERROR;
    }
  }

  static void OnStreamFree(void* cls) noexcept {
    const std::unique_ptr<StreamHolder> holder(static_cast<StreamHolder*>(cls));
    holder->streams->Finished(holder->sender);
  }

  static MHD_Result QueueStream(StreamSet* streams, MHD_Connection* connection,
                                HttpResponse response) {
    const MHD_ConnectionInfo* info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    // Parked from inside the content reader, as MHD allows; resumed from any thread.
    auto* holder =
        new StreamHolder{streams->Add(
                             std::move(response.stream), info == nullptr ? -1 : info->connect_fd,
                             [connection] { MHD_suspend_connection(connection); },
                             [connection] { MHD_resume_connection(connection); }),
                         streams};
    constexpr std::size_t kBlockSize = 32 * 1024;
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
    static_cast<const MhdAdapter*>(cls)->clock_->Completed(ClockOf(connection));
  }

  static void OnConnection(void* cls, MHD_Connection* connection, void** socket_context,
                           MHD_ConnectionNotificationCode code) noexcept {
    try {
      RequestClock& clock = *static_cast<const MhdAdapter*>(cls)->clock_;
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
    static_cast<const MhdAdapter*>(cls)->Log(message);
  }
};

MhdAdapter::MhdAdapter(const HttpServerOptions& options, HttpServer::Handler handler,
                       RequestClock* clock, StreamSet* streams)
    : options_(options), handler_(std::move(handler)), clock_(clock), streams_(streams) {}

StatusOr<MHD_Daemon*> MhdAdapter::StartDaemon(int listen_fd, int port, bool ipv6,
                                              const std::string* cert_pem,
                                              const std::string* key_pem) {
  // epoll where MHD has it (Debian's does), else poll; MHD's own threads. With epoll a silent
  // connection costs no thread and no poll slot, so floods of them do not delay the others.
  // MHD_USE_ITC: MHD_quiesce_daemon needs it with a thread pool (TlsRotation).
  // MHD_ALLOW_SUSPEND_RESUME: a response stream with nothing to send parks its connection.
  unsigned flags =
      MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME;
  if (ipv6) flags |= MHD_USE_IPv6;
  if (options_.log) flags |= MHD_USE_ERROR_LOG;
  const bool tls = cert_pem != nullptr && key_pem != nullptr;
  if (tls) flags |= MHD_USE_TLS;
  const auto function = [](auto* callback) { return reinterpret_cast<intptr_t>(callback); };
  std::vector<MHD_OptionItem> items = {
      // The logger goes first so that start-up messages reach it too.
      {MHD_OPTION_EXTERNAL_LOGGER, function(&MhdCallbacks::OnLog), this},
      {MHD_OPTION_LISTEN_SOCKET, listen_fd, nullptr},
      {MHD_OPTION_THREAD_POOL_SIZE, options_.thread_pool_size, nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT, options_.connection_timeout_s, nullptr},
      {MHD_OPTION_CONNECTION_LIMIT, options_.connection_limit, nullptr},
      {MHD_OPTION_NOTIFY_COMPLETED, function(&MhdCallbacks::OnCompleted), this},
      {MHD_OPTION_NOTIFY_CONNECTION, function(&MhdCallbacks::OnConnection), this},
  };
  if (tls) {
    // MHD keeps the pointers: the strings live as long as the daemon (Daemon).
    items.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(cert_pem->c_str())});
    items.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(key_pem->c_str())});
    items.push_back({MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(kTlsPriorities)});
  }
  items.push_back({MHD_OPTION_END, 0, nullptr});
  MHD_Daemon* daemon = MHD_start_daemon(flags, static_cast<std::uint16_t>(port), nullptr, nullptr,
                                        &MhdCallbacks::OnRequest, this, MHD_OPTION_ARRAY,
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

HttpResponse MhdAdapter::Dispatch(const HttpRequest& request) const {
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

void MhdAdapter::Log(const std::string& message) const noexcept {
  try {
    if (options_.log) options_.log(message);
  } catch (...) {
    // Nothing sensible to do: logging the failure to log would go to the same place.
  }
}

}  // namespace mqc
