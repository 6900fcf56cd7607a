// SPDX-License-Identifier: BSD-3-Clause
// DumpTcpSockets against real loopback TCP connections this test opens.
#include "companion/sock_diag.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "link/unique_fd.h"

namespace mqc {
namespace {

std::uint16_t LocalPort(int fd) {
  sockaddr_storage address;
  socklen_t length = sizeof address;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return 0;
  if (address.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
}

// A listener on the loopback address of `family` and connections to it, both ends open.
struct Loopback {
  int family;
  UniqueFd listener;
  std::vector<UniqueFd> clients;
  std::vector<UniqueFd> servers;
  std::uint16_t port = 0;

  explicit Loopback(int f) : family(f), listener(socket(f, SOCK_STREAM, 0)) {}

  bool Listen() {
    sockaddr_storage address;
    std::memset(&address, 0, sizeof address);
    socklen_t length;
    if (family == AF_INET) {
      auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
      v4->sin_family = AF_INET;
      v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      length = sizeof *v4;
    } else {
      auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
      v6->sin6_family = AF_INET6;
      v6->sin6_addr = in6addr_loopback;
      length = sizeof *v6;
    }
    if (listener.get() < 0 ||
        bind(listener.get(), reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        listen(listener.get(), 16) != 0) {
      return false;
    }
    // Where it listens, with the port the kernel chose.
    length_ = sizeof address_;
    if (getsockname(listener.get(), reinterpret_cast<sockaddr*>(&address_), &length_) != 0) {
      return false;
    }
    port = LocalPort(listener.get());
    return port != 0;
  }

  bool Connect() {
    UniqueFd client(socket(family, SOCK_STREAM, 0));
    if (client.get() < 0 ||
        connect(client.get(), reinterpret_cast<sockaddr*>(&address_), length_) != 0) {
      return false;
    }
    UniqueFd server(accept(listener.get(), nullptr, nullptr));
    if (server.get() < 0) return false;
    clients.push_back(std::move(client));
    servers.push_back(std::move(server));
    return true;
  }

 private:
  sockaddr_storage address_{};
  socklen_t length_ = 0;
};

SockDiagResult Dump(std::uint16_t port) {
  SockDiagOptions options;
  options.local_ports = {port};
  return DumpTcpSockets(options);
}

std::optional<TcpSocketInfo> Find(const SockDiagResult& result, std::uint16_t local_port,
                                  std::uint16_t remote_port) {
  for (const auto& s : result.sockets) {
    if (s.local_port == local_port && s.remote_port == remote_port) return s;
  }
  return std::nullopt;
}

void ExpectFindsServerEnds(int family, const char* address) {
  Loopback loopback(family);
  if (!loopback.Listen()) GTEST_SKIP() << "no loopback address for family " << family;
  ASSERT_TRUE(loopback.Connect());
  ASSERT_TRUE(loopback.Connect());
  const SockDiagResult result = Dump(loopback.port);
  ASSERT_TRUE(result.ok()) << result.error;
  EXPECT_FALSE(result.truncated);
  // The two accepted ends, and neither the listener nor the clients' ends (other local ports).
  ASSERT_EQ(result.sockets.size(), 2u);
  for (const auto& client : loopback.clients) {
    const auto found = Find(result, loopback.port, LocalPort(client.get()));
    ASSERT_TRUE(found.has_value()) << "client port " << LocalPort(client.get());
    EXPECT_EQ(found->family, family);
    EXPECT_EQ(found->local_address, address);
    EXPECT_EQ(found->remote_address, address);
    EXPECT_EQ(found->state, 1);  // ESTABLISHED
  }
}

TEST(SockDiagTest, FindsIpv4ConnectionsOnTheListeningPort) {
  ExpectFindsServerEnds(AF_INET, "127.0.0.1");
}

TEST(SockDiagTest, FindsIpv6ConnectionsOnTheListeningPort) {
  ExpectFindsServerEnds(AF_INET6, "::1");
}

// The server end of the client on `client_port` once its receive queue holds `bytes`: loopback
// delivers at once, but the kernel gets a moment (bounded); the last record seen otherwise.
std::optional<TcpSocketInfo> WaitForReceiveQueue(std::uint16_t port, std::uint16_t client_port,
                                                 std::uint32_t bytes) {
  std::optional<TcpSocketInfo> found;
  for (int i = 0; i < 100; ++i) {
    const SockDiagResult result = Dump(port);
    if (!result.ok()) {
      ADD_FAILURE() << result.error;
      return std::nullopt;
    }
    found = Find(result, port, client_port);
    if (!found.has_value() || found->receive_queue_bytes == bytes) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return found;
}

TEST(SockDiagTest, ReportsQueuedBytesAndLastReceivedTime) {
  Loopback loopback(AF_INET);
  ASSERT_TRUE(loopback.Listen());
  ASSERT_TRUE(loopback.Connect());
  const int client = loopback.clients[0].get();
  const std::uint16_t client_port = LocalPort(client);
  const std::string data(1000, 'x');
  ASSERT_EQ(send(client, data.data(), data.size(), 0), 1000);

  const std::optional<TcpSocketInfo> fresh = WaitForReceiveQueue(loopback.port, client_port, 1000);
  ASSERT_TRUE(fresh.has_value());
  EXPECT_EQ(fresh->receive_queue_bytes, 1000u);  // unread by the server end
  EXPECT_EQ(fresh->send_queue_bytes, 0u);
  EXPECT_GT(fresh->rtt_us, 0u);

  // Nothing arrives for 300 ms: the time since data was received grows by about that much.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const SockDiagResult later = Dump(loopback.port);
  ASSERT_TRUE(later.ok()) << later.error;
  const auto quiet = Find(later, loopback.port, client_port);
  ASSERT_TRUE(quiet.has_value());
  EXPECT_GE(quiet->last_received_ms, fresh->last_received_ms + 250);

  // Data arrives again: it drops back.
  ASSERT_EQ(send(client, "y", 1, 0), 1);
  const std::optional<TcpSocketInfo> again = WaitForReceiveQueue(loopback.port, client_port, 1001);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->receive_queue_bytes, 1001u);
  EXPECT_LT(again->last_received_ms, quiet->last_received_ms);
}

TEST(SockDiagTest, KeepsEveryPortAskedForAndNoOther) {
  Loopback first(AF_INET);
  Loopback second(AF_INET);
  Loopback third(AF_INET);
  ASSERT_TRUE(first.Listen() && second.Listen() && third.Listen());
  ASSERT_TRUE(first.Connect() && second.Connect() && second.Connect() && third.Connect());
  SockDiagOptions options;
  options.local_ports = {first.port, second.port};
  const SockDiagResult result = DumpTcpSockets(options);
  ASSERT_TRUE(result.ok()) << result.error;
  ASSERT_EQ(result.sockets.size(), 3u);
  EXPECT_TRUE(Find(result, first.port, LocalPort(first.clients[0].get())).has_value());
  EXPECT_TRUE(Find(result, second.port, LocalPort(second.clients[0].get())).has_value());
  EXPECT_TRUE(Find(result, second.port, LocalPort(second.clients[1].get())).has_value());
}

TEST(SockDiagTest, RefusesTooManyPorts) {
  SockDiagOptions options;
  options.local_ports.assign(1001, 1883);
  const SockDiagResult result = DumpTcpSockets(options);
  EXPECT_FALSE(result.ok());
  EXPECT_NE(result.error.find("1001 local ports"), std::string::npos) << result.error;
}

TEST(SockDiagTest, StopsAtMaxSockets) {
  Loopback loopback(AF_INET);
  ASSERT_TRUE(loopback.Listen());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(loopback.Connect());
  SockDiagOptions options;
  options.local_ports = {loopback.port};
  options.max_sockets = 2;
  const SockDiagResult result = DumpTcpSockets(options);
  ASSERT_TRUE(result.ok()) << result.error;
  EXPECT_TRUE(result.truncated);
  EXPECT_EQ(result.sockets.size(), 2u);
}

TEST(SockDiagTest, WithoutPortsListsBothEnds) {
  Loopback loopback(AF_INET);
  ASSERT_TRUE(loopback.Listen());
  ASSERT_TRUE(loopback.Connect());
  const std::uint16_t client_port = LocalPort(loopback.clients[0].get());
  const SockDiagResult result = DumpTcpSockets(SockDiagOptions{});
  ASSERT_TRUE(result.ok()) << result.error;
  EXPECT_TRUE(Find(result, loopback.port, client_port).has_value());
  EXPECT_TRUE(Find(result, client_port, loopback.port).has_value());
}

TEST(SockDiagTest, NamesNoPortAfterTheConnectionsClose) {
  std::uint16_t port;
  {
    Loopback loopback(AF_INET);
    ASSERT_TRUE(loopback.Listen());
    ASSERT_TRUE(loopback.Connect());
    port = loopback.port;
  }
  // The server ends closed first go through FIN_WAIT to TIME_WAIT, which has no tcp_info.
  SockDiagResult result;
  for (int i = 0; i < 100; ++i) {
    result = Dump(port);
    ASSERT_TRUE(result.ok()) << result.error;
    if (result.sockets.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(result.sockets.empty());
}

}  // namespace
}  // namespace mqc
