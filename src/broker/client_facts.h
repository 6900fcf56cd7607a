// SPDX-License-Identifier: BSD-3-Clause
// What the broker's accessors tell about a client at CONNECT: the plugin reads them
// (plugin/client_reader.h), the SessionTable turns them into a connection.
//
// Threads: the broker thread only.
#pragma once

#include <cstdint>
#include <string>

#include "link/connection.h"

namespace mqc {

// What the broker's accessors tell about a client at CONNECT.
struct ClientFacts {
  std::string client_id;
  std::string username;
  std::string ip_address;
  std::string auth_method;  // MQTT 5 enhanced authentication
  std::string peer_certificate_subject;
  std::uint8_t protocol_version = 0;
  bool clean_session = true;
  std::uint16_t keep_alive = 0;
  std::uint16_t port = 0;  // the client's; 0 when unknown
  std::uint16_t local_port = 0;
  // On a PROXY protocol listener (enable_proxy_protocol, Mosquitto 2.1) the broker takes the
  // client's address and port from the header its load balancer sends, and the socket's peer is
  // the balancer: its address and port are these, and `port` is the broker's own (read through
  // the verified client layout: BrokerEvents), never the socket's.
  bool proxied = false;
  std::string proxy_ip;
  std::uint16_t proxy_port = 0;
  AuthMechanism mechanism = AuthMechanism::kUnspecified;
  // Whether anything checks what the client presented: a password_file or an auth plugin for
  // a username, TLS itself for a certificate or a PSK. A username that nothing checks is
  // accepted by allow_anonymous alone: the connection is then unauthenticated.
  bool credentials_checked = true;
  // False for a client the broker holds without a connection (an offline session): its
  // credentials are checked again at a reload (SIGHUP), which is no CONNECT.
  bool has_socket = true;
  // Which end of a bridge the client is (read through the verified layout, or known by how
  // the client was seen: BrokerEvents::BridgeAtConnect and Discover).
  BridgeRole bridge = BridgeRole::kUnknown;
  // Whether it has a will (read through the verified layout: BrokerEvents::ReadFacts).
  WillState will = WillState::kUnknown;
};

}  // namespace mqc
