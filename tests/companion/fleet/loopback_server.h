// SPDX-License-Identifier: BSD-3-Clause
// A loopback HTTP server for the fleet tests: it answers each request on 127.0.0.1 with what a
// handler returns for the raw request bytes (or with nothing, to be slow), one thread, bounded
// waits, stopped and joined by its destructor. It closes each connection after one answer, or
// with keep_alive serves one connection's requests until the client closes it (an empty answer
// then closes it without answering), one connection at a time.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mqc {

class LoopbackServer {
 public:
  // handler: the raw request (headers and body) -> the raw response bytes to write.
  using Handler = std::function<std::string(const std::string& request)>;

  struct Options {
    bool keep_alive = false;
    int port = 0;  // 0: any free one
  };

  explicit LoopbackServer(Handler handler) : LoopbackServer(std::move(handler), Options()) {}
  LoopbackServer(Handler handler, Options options)
      : handler_(std::move(handler)), keep_alive_(options.keep_alive) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int yes = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(options.port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    listen(fd_, 16);
    socklen_t length = sizeof(address);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~LoopbackServer() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  int port() const { return port_; }
  int requests() const { return requests_; }
  int connections() const { return connections_; }  // accepted
  int closed_by_client() const { return closed_by_client_; }
  std::string last_request() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_log_.empty() ? std::string() : requests_log_.back();
  }
  std::vector<std::string> all_requests() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_log_;
  }

  // A whole HTTP response with `content_type` and `body`.
  static std::string Response(int status, const std::string& content_type,
                              const std::string& body) {
    return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: " + content_type +
           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  }

 private:
  void Serve() {
    for (int round = 0; round < 100000 && !stop_; ++round) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      const int client = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      ++connections_;
      // One request, or with keep_alive every request of the connection (at most 1000).
      for (int served = 0; served < (keep_alive_ ? 1000 : 1) && !stop_; ++served) {
        std::string request;
        if (!ReadRequest(client, &request)) break;
        ++requests_;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          requests_log_.push_back(request);
        }
        const std::string answer = handler_(request);
        if (keep_alive_ && answer.empty()) break;
        std::size_t sent = 0;
        while (sent < answer.size()) {
          const ssize_t n =
              send(client, answer.data() + sent, answer.size() - sent, MSG_NOSIGNAL);
          if (n <= 0) break;
          sent += static_cast<std::size_t>(n);
        }
        // As an HTTP/1.1 server does: `Connection: close` either way ends the connection.
        if (SaysClose(request) || SaysClose(answer)) break;
      }
      close(client);
    }
  }

  // Headers, then as much body as Content-Length says (bounded by 2 s of waiting once a request
  // starts; with keep_alive, a connection waits for its next request until the client closes it
  // or the server stops). False: the client closed before a request.
  bool ReadRequest(int client, std::string* request) {
    char buffer[65536];
    for (int reads = 0; reads < 1000000 && !stop_; ++reads) {
      pollfd c{client, POLLIN, 0};
      if (poll(&c, 1, 20) <= 0) {
        if (Complete(*request)) return true;
        if (!keep_alive_ && reads >= 100) return true;
        if (!request->empty() && reads >= 100) return true;
        continue;
      }
      const ssize_t n = recv(client, buffer, sizeof(buffer), 0);
      if (n <= 0) {
        if (request->empty()) ++closed_by_client_;
        return !request->empty();
      }
      request->append(buffer, static_cast<std::size_t>(n));
      if (Complete(*request)) return true;
    }
    return !request->empty();
  }

  static bool SaysClose(const std::string& message) {
    const std::size_t end = message.find("\r\n\r\n");
    return message.substr(0, end).find("\r\nConnection: close\r\n") != std::string::npos;
  }

  static bool Complete(const std::string& request) {
    const std::size_t end = request.find("\r\n\r\n");
    if (end == std::string::npos) return false;
    const std::size_t at = request.find("Content-Length: ");
    if (at == std::string::npos || at > end) return true;
    const std::size_t length = std::stoul(request.substr(at + 16));
    return request.size() >= end + 4 + length;
  }

  Handler handler_;
  const bool keep_alive_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::atomic<int> connections_{0};
  std::atomic<int> closed_by_client_{0};
  mutable std::mutex mutex_;
  std::vector<std::string> requests_log_;
  std::thread thread_;
};

}  // namespace mqc
