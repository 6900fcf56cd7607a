// SPDX-License-Identifier: BSD-3-Clause
// SO_REUSEADDR lets a restarted companion bind while old connections sit in TIME_WAIT; it does
// not let two servers share a port. `::` is made dual-stack (IPV6_V6ONLY off) whatever the
// system default, so that it means "every address" like 0.0.0.0 does for IPv4.
#include "companion/http/listen_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <system_error>
#include <utility>

#include "link/host_names.h"
#include "link/unique_fd.h"

namespace mqc {
namespace {

std::string ErrnoMessage(int error_number) { return std::system_category().message(error_number); }

}  // namespace

StatusOr<ListeningSocket> Listen(const std::string& bind_address, int port) {
  const std::string where = "cannot listen on " + HostPort(bind_address, port);
  if (port < 0 || port > 65535) {
    return InvalidArgument(where + ": port out of range (0 to 65535)");
  }
  ListeningSocket result;
  sockaddr_storage storage{};
  socklen_t length = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
  const auto network_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, bind_address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = network_port;
    length = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, bind_address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = network_port;
    length = sizeof(sockaddr_in6);
    result.ipv6 = true;
  } else {
    return InvalidArgument(where + ": not an IPv4 or IPv6 address");
  }

  const auto fail = [&](const char* step) {
    return Status(StatusCode::kUnavailable, where + ": " + step + ErrnoMessage(errno));
  };
  const int fd = socket(storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  UniqueFd closer(fd);
  if (fd < 0) return fail("socket: ");
  const int on = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0) {
    return fail("SO_REUSEADDR: ");
  }
  const int off = 0;
  if (result.ipv6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) != 0) {
    return fail("IPV6_V6ONLY: ");
  }
  const int send_buffer = static_cast<int>(kHttpSendBufferBytes);
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &send_buffer, sizeof(send_buffer)) != 0) {
    return fail("SO_SNDBUF: ");
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

}  // namespace mqc
