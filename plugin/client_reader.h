// SPDX-License-Identifier: BSD-3-Clause
// Reads what the plugin learns about one client (ClientFacts, broker/client_facts.h), beyond the
// broker's accessors: the socket's ports and TCP_INFO, the listener it came in on, its
// certificate, why it disconnected.
//
// Threads: the broker thread only (the socket belongs to it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "broker/client_facts.h"
#include "link/broker_config.h"
#include "link/connection.h"

struct mosquitto;

namespace mqc {

// The client's socket, or -1 (offline session, WebSockets client). Debian builds Mosquitto
// with epoll, so struct mosquitto starts with `int ident; int sock;` (its source says ident
// must stay first). Inline: 2.1's watched ACL check asks it at every delivery.
inline int ClientSocket(const mosquitto* client) {
  int sock = -1;
  std::memcpy(&sock, reinterpret_cast<const char*>(client) + sizeof(int), sizeof(sock));
  return sock;
}

// The usable size of the client's allocation (glibc's malloc_usable_size; ASan intercepts it):
// the broker allocates each client with calloc (src/context.c: context__init).
std::size_t ClientAllocationSize(const mosquitto* client);

// Copies bytes of the client's struct at `offset`, only inside its allocation (broker.h:
// Broker::ReadClientBytes). Never follows a pointer, never writes.
bool ReadClientBytes(const mosquitto* client, std::size_t offset, std::size_t size, void* out);

// Everything known at CONNECT (BASIC_AUTH / EXT_AUTH_START), or when a client is first seen.
ClientFacts ReadFacts(const mosquitto* client, const BrokerConfig& config);

// The IP and port of the socket's peer (getpeername); false without a socket or an IP peer.
bool PeerAddress(const mosquitto* client, std::string* ip, std::uint16_t* port);

// Milliseconds since the client last sent data (TCP_INFO), or -1 when the socket cannot tell.
std::int64_t IdleMs(const mosquitto* client);

}  // namespace mqc
