// SPDX-License-Identifier: BSD-3-Clause
// What the HTTP server hands the router and gets back: plain request and response values, so
// that routing and views are testable without sockets (http_server.h serves them).
//
// Threads: plain values, each owned by the one MHD thread serving its request; an
// HttpBodyStream's own note says which of its methods may be called from where.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mqc {

// Query parameters in the order the client sent them, percent-decoded, repeated names kept (so
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
  // Or a body kept by someone else for more answers (a cached answer): when set, the body is
  // these bytes and `body` stays empty. Sent without a copy, held until sent.
  std::shared_ptr<const std::string> shared_body;
  HttpHeaders headers;  // extra headers, e.g. Allow
  // When set, the body comes from here instead of `body` (no Content-Length; chunked).
  std::shared_ptr<HttpBodyStream> stream;

  // The body's bytes, wherever they are kept.
  std::string_view Body() const {
    return shared_body != nullptr ? std::string_view(*shared_body) : std::string_view(body);
  }
};

}  // namespace mqc
