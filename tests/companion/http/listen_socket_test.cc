// SPDX-License-Identifier: BSD-3-Clause
// Listen against the real loopback: a chosen port that accepts, and each failure's message.
#include "companion/http/listen_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace mqc {
namespace {

// A client socket connected to 127.0.0.1:`port`, or -1.
int ConnectTo(int port) {
  const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (client < 0) return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  if (connect(client, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(client);
    return -1;
  }
  return client;
}

TEST(ListenSocketTest, PortZeroGetsAPortThatAccepts) {
  const StatusOr<ListeningSocket> listening = Listen("127.0.0.1", 0);
  ASSERT_TRUE(listening.ok()) << listening.status().message();
  EXPECT_GT(listening->port, 0);
  EXPECT_FALSE(listening->ipv6);
  EXPECT_NE(fcntl(listening->fd, F_GETFL) & O_NONBLOCK, 0);
  EXPECT_NE(fcntl(listening->fd, F_GETFD) & FD_CLOEXEC, 0);
  const int client = ConnectTo(listening->port);
  EXPECT_GE(client, 0);
  close(client);
  close(listening->fd);
}

// Each accepted connection sends from a bounded buffer (docs/benchmarks.md, "The broker's
// ping while the API is hammered"): one send(2) never copies a whole big answer.
TEST(ListenSocketTest, AcceptedConnectionsSendFromABoundedBuffer) {
  const StatusOr<ListeningSocket> listening = Listen("127.0.0.1", 0);
  ASSERT_TRUE(listening.ok()) << listening.status().message();
  const int client = ConnectTo(listening->port);
  ASSERT_GE(client, 0);
  const int accepted = accept4(listening->fd, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(accepted, 0);
  int size = 0;
  socklen_t length = sizeof(size);
  ASSERT_EQ(getsockopt(accepted, SOL_SOCKET, SO_SNDBUF, &size, &length), 0);
  // Linux keeps twice what was asked for (its bookkeeping), and no longer grows it.
  EXPECT_EQ(size, 2 * static_cast<int>(kHttpSendBufferBytes));
  const std::string big(4 << 20, 'x');
  const ssize_t sent = send(accepted, big.data(), big.size(), MSG_DONTWAIT);
  EXPECT_GT(sent, 0);
  EXPECT_LT(sent, static_cast<ssize_t>(big.size()));
  close(accepted);
  close(client);
  close(listening->fd);
}

TEST(ListenSocketTest, PortTakenGivesAddressPortAndReason) {
  const StatusOr<ListeningSocket> first = Listen("127.0.0.1", 0);
  ASSERT_TRUE(first.ok()) << first.status().message();
  const StatusOr<ListeningSocket> second = Listen("127.0.0.1", first->port);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(second.status().message(), "cannot listen on 127.0.0.1:" + std::to_string(first->port) +
                                           ": Address already in use");
  close(first->fd);
}

TEST(ListenSocketTest, BadAddressOrPortIsRefused) {
  StatusOr<ListeningSocket> listening = Listen("localhost", 8080);
  ASSERT_FALSE(listening.ok());
  EXPECT_EQ(listening.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(listening.status().message(),
            "cannot listen on localhost:8080: not an IPv4 or IPv6 address");
  listening = Listen("::1", 65536);
  ASSERT_FALSE(listening.ok());
  EXPECT_EQ(listening.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(listening.status().message(),
            "cannot listen on [::1]:65536: port out of range (0 to 65535)");
  listening = Listen("127.0.0.1", -1);
  ASSERT_FALSE(listening.ok());
  EXPECT_EQ(listening.status().code(), StatusCode::kInvalidArgument);
  listening = Listen("192.0.2.1", 0);  // TEST-NET-1: not an address of this machine
  ASSERT_FALSE(listening.ok());
  EXPECT_EQ(listening.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(listening.status().message(),
            "cannot listen on 192.0.2.1:0: Cannot assign requested address");
}

TEST(ListenSocketTest, AnyIpv6AddressIsDualStack) {
  const StatusOr<ListeningSocket> listening = Listen("::", 0);
  if (!listening.ok()) GTEST_SKIP() << "no IPv6 here: " << listening.status().message();
  EXPECT_TRUE(listening->ipv6);
  int v6only = 1;
  socklen_t length = sizeof(v6only);
  ASSERT_EQ(getsockopt(listening->fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &length), 0);
  EXPECT_EQ(v6only, 0);
  close(listening->fd);
}

}  // namespace
}  // namespace mqc
