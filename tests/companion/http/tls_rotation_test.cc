// SPDX-License-Identifier: BSD-3-Clause
// TlsRotation with real libmicrohttpd daemons on the loopback. Plain HTTP ones: the rotation
// does not look into the PEM text, so each test daemon answers with its "certificate" instead,
// which tells the daemon that served a request. HTTPS itself is tested by
// integration/test_security.py.
#include "companion/http/tls_rotation.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "companion/http/listen_socket.h"

namespace mqc {
namespace {

// Answers every request with the text in cls (the daemon's "certificate"), at the second call
// as MhdAdapter does: an answer at the first makes MHD close the connection.
MHD_Result AnswerName(void* cls, MHD_Connection* connection, const char* /*url*/,
                      const char* /*method*/, const char* /*version*/, const char* /*upload_data*/,
                      size_t* /*upload_data_size*/, void** req_cls) noexcept {
  static int headers_seen = 0;
  if (*req_cls == nullptr) {
    *req_cls = &headers_seen;
    return MHD_YES;
  }
  const auto* name = static_cast<const std::string*>(cls);
  MHD_Response* response = MHD_create_response_from_buffer(
      name->size(), const_cast<char*>(name->data()), MHD_RESPMEM_PERSISTENT);
  const MHD_Result queued = MHD_queue_response(connection, MHD_HTTP_OK, response);
  MHD_destroy_response(response);
  return queued;
}

// Starts a plain daemon answering its cert text, as MhdAdapter starts one (an internal thread
// pool and the ITC that MHD_quiesce_daemon needs). Refuses the cert text "bad".
StatusOr<MHD_Daemon*> StartNamed(int listen_fd, const std::string* cert_pem,
                                 const std::string* /*key_pem*/) {
  if (cert_pem != nullptr && *cert_pem == "bad") {
    close(listen_fd);
    return InvalidArgument("a certificate and key that are no pair");
  }
  static const std::string kPlain = "plain";
  const std::string* name = cert_pem != nullptr ? cert_pem : &kPlain;
  MHD_Daemon* daemon = MHD_start_daemon(
      MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC, 0, nullptr, nullptr,
      &AnswerName, const_cast<std::string*>(name), MHD_OPTION_LISTEN_SOCKET, listen_fd,
      MHD_OPTION_THREAD_POOL_SIZE, 2u, MHD_OPTION_END);
  if (daemon == nullptr) return Status(StatusCode::kUnavailable, "libmicrohttpd could not start");
  return daemon;
}

// A keep-alive client connection on 127.0.0.1.
class Client {
 public:
  explicit Client(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    timeval timeout{};
    timeout.tv_sec = 5;
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  }
  ~Client() { close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool Send(const std::string& bytes) {
    return connected_ && send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
                             static_cast<ssize_t>(bytes.size());
  }
  // The body of the next answer on this connection; empty when there is none.
  std::string ReadBody() {
    std::string data;
    char c = 0;
    while (data.find("\r\n\r\n") == std::string::npos && recv(fd_, &c, 1, 0) == 1) data += c;
    const std::size_t at = data.find("Content-Length: ");
    if (at == std::string::npos) return "";
    std::size_t length = std::stoul(data.substr(at + 16));
    std::string body;
    while (length > 0 && recv(fd_, &c, 1, 0) == 1) {
      body += c;
      --length;
    }
    return body;
  }
  // The body of a GET on this connection; empty when it failed.
  std::string Get() { return Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n") ? ReadBody() : ""; }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

struct Rotation {
  Rotation() : rotation(&StartNamed, [this](std::int64_t before) { stopped.push_back(before); }) {
    const StatusOr<ListeningSocket> listening = Listen("127.0.0.1", 0);
    EXPECT_TRUE(listening.ok()) << listening.status().message();
    if (!listening.ok()) return;
    fd = listening->fd;
    port = listening->port;
  }
  std::vector<std::int64_t> stopped;  // StopStreams' arguments
  TlsRotation rotation;
  int fd = -1;
  int port = 0;
};

TEST(TlsRotationTest, NewConnectionsGetTheNewDaemonOldOnesKeepTheirsUntilTheyEnd) {
  Rotation r;
  ASSERT_TRUE(r.rotation.Start(r.fd, "one", "key").ok());
  // A request under way when the certificate changes.
  auto kept = std::make_unique<Client>(r.port);
  EXPECT_EQ(kept->Get(), "one");
  ASSERT_TRUE(kept->Send("GET / HTTP/1.1\r\nHost: x\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the daemon has read it
  ASSERT_TRUE(r.rotation.Replace("two", "key").ok());
  EXPECT_EQ(r.rotation.retired_count(), 1u);
  EXPECT_EQ(Client(r.port).Get(), "two");
  r.rotation.StopRetired(30);
  EXPECT_EQ(r.rotation.retired_count(), 1u);  // still busy
  EXPECT_TRUE(r.stopped.empty());
  ASSERT_TRUE(kept->Send("\r\n"));
  EXPECT_EQ(kept->ReadBody(), "one");  // the retired daemon finishes what it has
  kept.reset();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (r.rotation.retired_count() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    r.rotation.StopRetired(30);
  }
  EXPECT_EQ(r.rotation.retired_count(), 0u);
  ASSERT_EQ(r.stopped.size(), 1u);  // its streams were stopped first
  EXPECT_GT(r.stopped[0], 0);
  EXPECT_EQ(Client(r.port).Get(), "two");  // the port stayed open throughout
}

TEST(TlsRotationTest, AfterTheGraceARetiredDaemonStopsWithConnectionsOpen) {
  Rotation r;
  ASSERT_TRUE(r.rotation.Start(r.fd, "one", "key").ok());
  Client kept(r.port);
  ASSERT_TRUE(kept.Send("GET / HTTP/1.1\r\nHost: x\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the daemon has read it
  ASSERT_TRUE(r.rotation.Replace("two", "key").ok());
  r.rotation.StopRetired(0);
  EXPECT_EQ(r.rotation.retired_count(), 0u);
  ASSERT_EQ(r.stopped.size(), 1u);
  kept.Send("\r\n");
  EXPECT_EQ(kept.ReadBody(), "");  // closed with its daemon
  EXPECT_EQ(Client(r.port).Get(), "two");
}

TEST(TlsRotationTest, AFailedReplacementKeepsTheRunningDaemon) {
  Rotation r;
  ASSERT_TRUE(r.rotation.Start(r.fd, "one", "key").ok());
  const Status replaced = r.rotation.Replace("bad", "key");
  EXPECT_EQ(replaced.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.rotation.retired_count(), 0u);
  EXPECT_EQ(Client(r.port).Get(), "one");
}

TEST(TlsRotationTest, WithoutHttpsThereIsNothingToReplace) {
  Rotation r;
  ASSERT_TRUE(r.rotation.Start(r.fd, "", "").ok());
  EXPECT_EQ(Client(r.port).Get(), "plain");
  const Status replaced = r.rotation.Replace("two", "key");
  EXPECT_EQ(replaced.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(replaced.message(), "this server was started without HTTPS");
  EXPECT_EQ(Client(r.port).Get(), "plain");
}

}  // namespace
}  // namespace mqc
