// SPDX-License-Identifier: BSD-3-Clause
#include "client_reader.h"

#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/x509.h>
#include <sys/socket.h>

#include <cstring>
#include <memory>
#include <string>

// clang-format off
#include <mosquitto.h>
#include <mosquitto_broker.h>
// clang-format on

#include "link/text_util.h"

namespace mqc {

namespace {

std::string OrEmpty(const char* s) { return s != nullptr ? std::string(s) : std::string(); }

// The IP of a socket address as text, and its port.
bool AddressOf(const sockaddr_storage& address, std::string* ip, std::uint16_t* port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    if (inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text)) == nullptr) return false;
    *port = ntohs(v4->sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    if (inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text)) == nullptr) return false;
    *port = ntohs(v6->sin6_port);
  } else {
    return false;
  }
  *ip = text;
  return true;
}

const ListenerConfig* ListenerOn(const BrokerConfig& config, int port) {
  for (const auto& listener : config.listeners) {
    if (listener.port == port) return &listener;
  }
  return nullptr;
}

// The socket's ports: the remote one trusted only if the peer's IP is the one the broker
// reports, and the local one, which names the listener (a socket whose peer is someone else,
// such as a bridge's own connection, gets neither). Behind a load balancer (a PROXY protocol
// listener) the peer is the balancer, whatever its address: the client's own port comes from
// the broker (BrokerEvents), and the peer is kept as the proxy.
void ReadSocketPorts(const mosquitto* client, const BrokerConfig& config, ClientFacts* facts) {
  const int sock = ClientSocket(client);
  if (sock < 0) return;
  sockaddr_storage peer{};
  socklen_t length = sizeof(peer);
  std::string peer_ip;
  std::uint16_t peer_port = 0;
  sockaddr_storage local{};
  std::string local_ip;
  std::uint16_t local_port = 0;
  if (getpeername(sock, reinterpret_cast<sockaddr*>(&peer), &length) != 0 ||
      !AddressOf(peer, &peer_ip, &peer_port)) {
    return;
  }
  length = sizeof(local);
  if (getsockname(sock, reinterpret_cast<sockaddr*>(&local), &length) != 0 ||
      !AddressOf(local, &local_ip, &local_port)) {
    local_port = 0;
  }
  const ListenerConfig* listener = local_port != 0 ? ListenerOn(config, local_port) : nullptr;
  if (listener != nullptr && listener->proxy_protocol != 0) {
    facts->local_port = local_port;
    facts->proxied = true;
    facts->proxy_ip = std::move(peer_ip);
    facts->proxy_port = peer_port;
    return;
  }
  if (peer_ip != facts->ip_address) return;
  facts->port = peer_port;
  facts->local_port = local_port;
}

// OPENSSL_free is a macro; this gives CSmartPtr a function to call.
void FreeOpensslText(char* text) noexcept { OPENSSL_free(text); }

// The broker hands out its client certificate only on require_certificate listeners.
std::string CertificateSubject(const mosquitto* client) {
  const CSmartPtr<X509, X509_free> certificate(
      static_cast<X509*>(mosquitto_client_certificate(client)));
  if (!certificate) return "";
  const X509_NAME* name = X509_get_subject_name(certificate.get());
  if (name == nullptr) return "";
  const CSmartPtr<char, FreeOpensslText> text(X509_NAME_oneline(name, nullptr, 0));
  if (text == nullptr) return "";
  return std::string(text.get());
}

}  // namespace

std::size_t ClientAllocationSize(const mosquitto* client) {
  if (client == nullptr) return 0;
  // The function takes a non-const pointer but only reads the allocator's header.
  return malloc_usable_size(const_cast<mosquitto*>(client));
}

bool ReadClientBytes(const mosquitto* client, std::size_t offset, std::size_t size, void* out) {
  const std::size_t allocation = ClientAllocationSize(client);
  if (size == 0 || offset > allocation || size > allocation - offset) return false;
  std::memcpy(out, reinterpret_cast<const char*>(client) + offset, size);
  return true;
}

ClientFacts ReadFacts(const mosquitto* client, const BrokerConfig& config) {
  ClientFacts facts;
  facts.client_id = OrEmpty(mosquitto_client_id(client));
  facts.username = OrEmpty(mosquitto_client_username(client));
  facts.ip_address = OrEmpty(mosquitto_client_address(client));
  facts.protocol_version = static_cast<std::uint8_t>(mosquitto_client_protocol_version(client));
  facts.clean_session = mosquitto_client_clean_session(client);
  facts.keep_alive = static_cast<std::uint16_t>(mosquitto_client_keepalive(client));
  facts.has_socket = ClientSocket(client) >= 0;
  ReadSocketPorts(client, config, &facts);
  const ListenerConfig* listener = ListenerOn(config, facts.local_port);
  if (listener != nullptr && listener->require_certificate) {
    facts.peer_certificate_subject = CertificateSubject(client);
  }
  if (listener != nullptr && listener->psk) {
    facts.mechanism = AuthMechanism::kPsk;
  } else if (listener != nullptr && listener->proxy_protocol == 2 &&
             listener->require_certificate) {
    // TLS ended at the balancer: the broker refuses a PROXY v2 header without a certificate the
    // balancer verified (src/proxy_v2.c of 2.1), and keeps no certificate of its own.
    facts.mechanism = AuthMechanism::kMtls;
  } else if (!facts.peer_certificate_subject.empty()) {
    facts.mechanism = AuthMechanism::kMtls;
  } else {
    facts.mechanism = facts.username.empty() ? AuthMechanism::kAnonymous : AuthMechanism::kPassword;
  }
  return facts;
}

bool PeerAddress(const mosquitto* client, std::string* ip, std::uint16_t* port) {
  const int sock = ClientSocket(client);
  if (sock < 0) return false;
  sockaddr_storage peer{};
  socklen_t length = sizeof(peer);
  return getpeername(sock, reinterpret_cast<sockaddr*>(&peer), &length) == 0 &&
         AddressOf(peer, ip, port);
}

std::int64_t IdleMs(const mosquitto* client) {
  const int sock = ClientSocket(client);
  if (sock < 0) return -1;
  tcp_info info{};
  socklen_t length = sizeof(info);
  if (getsockopt(sock, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return -1;
  return info.tcpi_last_data_recv;
}

}  // namespace mqc
