// SPDX-License-Identifier: BSD-3-Clause
// sock_diag dump of TCP sockets (see sock_diag.h).
//
// The netlink messages are read with memcpy at computed offsets rather than through the
// NLMSG_*/RTA_* macros: the buffer is plain bytes, and the macros' mixed signed/unsigned
// arithmetic does not pass this project's warnings. inet_diag's attributes have nlattr's layout.
#include "companion/sock_diag.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/tcp.h>  // struct tcp_info and the TCP state numbers
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "link/unique_fd.h"

namespace mqc {
namespace {

constexpr std::size_t kReceiveBufferBytes = 64 * 1024;
constexpr std::size_t kMaxPorts = 1000;  // the kernel filter's jumps are 16-bit

// TCP states that carry tcp_info: all but SYN_RECV, TIME_WAIT, LISTEN and NEW_SYN_RECV,
// which the kernel keeps as small request or time-wait sockets (or which are listeners).
constexpr std::uint32_t kStatesWithInfo =
    (1u << TCP_ESTABLISHED) | (1u << TCP_SYN_SENT) | (1u << TCP_FIN_WAIT1) | (1u << TCP_FIN_WAIT2) |
    (1u << TCP_CLOSE) | (1u << TCP_CLOSE_WAIT) | (1u << TCP_LAST_ACK) | (1u << TCP_CLOSING);

constexpr std::size_t Align4(std::size_t n) { return (n + 3) & ~std::size_t{3}; }

std::string ErrnoText(const char* what, int error) {
  return std::string(what) + ": " + std::strerror(error);
}

std::string AddressText(int family, const std::uint32_t (&words)[4]) {
  char text[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(family, words, text, sizeof text) == nullptr) return std::string();
  return text;
}

// Reads one inet_diag_msg and its attributes; false when it is cut short.
bool ParseSocket(const unsigned char* data, std::size_t length, TcpSocketInfo* out) {
  inet_diag_msg message;
  if (length < sizeof message) return false;
  std::memcpy(&message, data, sizeof message);
  out->family = message.idiag_family;
  out->state = message.idiag_state;
  out->local_address = AddressText(message.idiag_family, message.id.idiag_src);
  out->remote_address = AddressText(message.idiag_family, message.id.idiag_dst);
  out->local_port = ntohs(message.id.idiag_sport);
  out->remote_port = ntohs(message.id.idiag_dport);
  out->send_queue_bytes = message.idiag_wqueue;
  out->receive_queue_bytes = message.idiag_rqueue;
  std::size_t offset = Align4(sizeof message);
  while (offset + sizeof(nlattr) <= length) {
    nlattr attribute;
    std::memcpy(&attribute, data + offset, sizeof attribute);
    if (attribute.nla_len < sizeof attribute || offset + attribute.nla_len > length) break;
    if (attribute.nla_type == INET_DIAG_INFO) {
      // The kernel's tcp_info may be shorter (older kernel) or longer (newer) than this
      // header's: copy what both know, leave the rest zero.
      tcp_info info;
      std::memset(&info, 0, sizeof info);
      const std::size_t payload = attribute.nla_len - Align4(sizeof attribute);
      std::memcpy(&info, data + offset + Align4(sizeof attribute), std::min(payload, sizeof info));
      out->rtt_us = info.tcpi_rtt;
      out->rtt_var_us = info.tcpi_rttvar;
      out->retransmits = info.tcpi_total_retrans;
      out->last_received_ms = info.tcpi_last_data_recv;
      out->last_sent_ms = info.tcpi_last_data_sent;
    }
    offset += Align4(attribute.nla_len);
  }
  return true;
}

// The kernel's filter for "local port is one of `ports`" (INET_DIAG_REQ_BYTECODE), so that it
// copies out only those sockets. The kernel checks the program by walking each op's `yes`
// offset, and accepts a socket when the program ends exactly at its end (a jump 4 bytes past
// it refuses). Each port before the last is [S_EQ port: yes to the JMP, no past it to the next
// port] [JMP: always to the end, accept]; the last is [S_EQ port: yes to the end, no refuse].
// No ports, no filter.
std::vector<unsigned char> PortFilter(const std::vector<std::uint16_t>& ports) {
  if (ports.empty()) return {};
  constexpr std::size_t kOp = sizeof(inet_diag_bc_op);
  std::vector<inet_diag_bc_op> ops;
  const std::size_t total = (ports.size() * 3 - 1) * kOp;
  for (std::size_t i = 0; i < ports.size(); ++i) {
    const bool last = i + 1 == ports.size();
    const std::size_t remaining = total - ops.size() * kOp;
    inet_diag_bc_op compare{};
    compare.code = INET_DIAG_BC_S_EQ;
    compare.yes = static_cast<unsigned char>(2 * kOp);
    compare.no = static_cast<unsigned short>(last ? remaining + 4 : 3 * kOp);
    inet_diag_bc_op port{};
    port.no = ports[i];
    ops.push_back(compare);
    ops.push_back(port);
    if (!last) {
      inet_diag_bc_op jump{};
      jump.code = INET_DIAG_BC_JMP;
      jump.yes = static_cast<unsigned char>(kOp);
      jump.no = static_cast<unsigned short>(remaining - 2 * kOp);
      ops.push_back(jump);
    }
  }
  std::vector<unsigned char> bytes(ops.size() * kOp);
  std::memcpy(bytes.data(), ops.data(), bytes.size());
  return bytes;
}

// One family's dump into *result; an error message, or empty.
std::string DumpFamily(int fd, std::uint8_t family, std::uint32_t sequence,
                       const SockDiagOptions& options, SockDiagResult* result) {
  nlmsghdr request_header;
  std::memset(&request_header, 0, sizeof request_header);
  request_header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  request_header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  request_header.nlmsg_seq = sequence;
  inet_diag_req_v2 request;
  std::memset(&request, 0, sizeof request);
  request.sdiag_family = family;
  request.sdiag_protocol = IPPROTO_TCP;
  request.idiag_ext = 1u << (INET_DIAG_INFO - 1);
  request.idiag_states = kStatesWithInfo;
  const std::vector<unsigned char> filter = PortFilter(options.local_ports);
  nlattr attribute;
  attribute.nla_type = INET_DIAG_REQ_BYTECODE;
  attribute.nla_len = static_cast<std::uint16_t>(sizeof attribute + filter.size());
  // header, request, then the filter as an attribute (every part a multiple of 4 bytes)
  std::vector<unsigned char> message(Align4(sizeof request_header) + Align4(sizeof request) +
                                     (filter.empty() ? 0 : attribute.nla_len));
  request_header.nlmsg_len = static_cast<std::uint32_t>(message.size());
  std::memcpy(message.data(), &request_header, sizeof request_header);
  std::memcpy(message.data() + Align4(sizeof request_header), &request, sizeof request);
  if (!filter.empty()) {
    unsigned char* at = message.data() + Align4(sizeof request_header) + Align4(sizeof request);
    std::memcpy(at, &attribute, sizeof attribute);
    std::memcpy(at + sizeof attribute, filter.data(), filter.size());
  }
  sockaddr_nl kernel;
  std::memset(&kernel, 0, sizeof kernel);
  kernel.nl_family = AF_NETLINK;
  if (sendto(fd, message.data(), message.size(), 0, reinterpret_cast<const sockaddr*>(&kernel),
             sizeof kernel) < 0) {
    return ErrnoText("sock_diag request", errno);
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(2 * std::max(options.timeout_ms, 1));
  std::vector<unsigned char> buffer(kReceiveBufferBytes);
  while (true) {
    if (std::chrono::steady_clock::now() > deadline) return "sock_diag dump timed out";
    const ssize_t received = recv(fd, buffer.data(), buffer.size(), 0);
    if (received < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return "sock_diag dump timed out";
      return ErrnoText("sock_diag receive", errno);
    }
    if (received == 0) return "sock_diag socket closed during the dump";
    const std::size_t length = static_cast<std::size_t>(received);
    std::size_t offset = 0;
    while (offset + sizeof(nlmsghdr) <= length) {
      nlmsghdr header;
      std::memcpy(&header, buffer.data() + offset, sizeof header);
      if (header.nlmsg_len < sizeof header || offset + header.nlmsg_len > length) {
        return "sock_diag answer cut short";
      }
      const unsigned char* payload = buffer.data() + offset + Align4(sizeof header);
      const std::size_t payload_length = header.nlmsg_len - Align4(sizeof header);
      offset += Align4(header.nlmsg_len);
      if (header.nlmsg_seq != sequence) continue;  // not an answer to this request
      if (header.nlmsg_type == NLMSG_DONE) return std::string();
      if (header.nlmsg_type == NLMSG_ERROR) {
        nlmsgerr error;
        if (payload_length < sizeof error) return "sock_diag error cut short";
        std::memcpy(&error, payload, sizeof error);
        return ErrnoText("sock_diag", -error.error);
      }
      if (header.nlmsg_type != SOCK_DIAG_BY_FAMILY) continue;
      TcpSocketInfo info;
      if (!ParseSocket(payload, payload_length, &info)) return "sock_diag socket cut short";
      if (result->sockets.size() >= options.max_sockets) {
        result->truncated = true;
        return std::string();  // the rest of the dump goes with the socket
      }
      result->sockets.push_back(std::move(info));
    }
  }
}

}  // namespace

SockDiagResult DumpTcpSockets(const SockDiagOptions& options) {
  SockDiagResult result;
  if (options.local_ports.size() > kMaxPorts) {
    result.error = "sock_diag: " + std::to_string(options.local_ports.size()) +
                   " local ports, at most " + std::to_string(kMaxPorts);
    return result;
  }
  const UniqueFd netlink(socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (netlink.get() < 0) {
    result.error = ErrnoText("sock_diag socket", errno);
    return result;
  }
  timeval timeout;
  timeout.tv_sec = std::max(options.timeout_ms, 1) / 1000;
  timeout.tv_usec = (std::max(options.timeout_ms, 1) % 1000) * 1000;
  if (setsockopt(netlink.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout) != 0) {
    result.error = ErrnoText("sock_diag receive timeout", errno);
    return result;
  }
  std::uint32_t sequence = 1;
  for (const std::uint8_t family : {std::uint8_t{AF_INET}, std::uint8_t{AF_INET6}}) {
    std::string error = DumpFamily(netlink.get(), family, sequence++, options, &result);
    if (!error.empty()) {
      result.error = std::move(error);
      return result;
    }
    if (result.truncated) break;
  }
  return result;
}

}  // namespace mqc
