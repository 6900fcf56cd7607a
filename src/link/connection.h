// SPDX-License-Identifier: BSD-3-Clause
// What both processes know of one MQTT connection: why it closed, how it authenticated, its
// traffic totals. The broker side fills them into the event records (event_records.h); the
// companion builds its model of a connection from them (companion/connection.h).
#pragma once

#include <cstdint>

namespace mqc {

// Enum numbers are the protobuf enum numbers of the rich API (orderBy sorts by them).
enum class CloseReason : std::uint8_t {
  kUnspecified = 0,
  kClientDisconnect = 1,
  kConnectionLost = 2,
  kSessionTakenOver = 3,
  kAuthenticationFailed = 4,
  kKicked = 5,
  kBrokerShutdown = 6,
  kAccessRevoked = 7,  // a config reload withdrew the client's right to stay connected
};

enum class AuthMechanism : std::uint8_t {
  kUnspecified = 0,
  kAnonymous = 1,
  kPassword = 2,
  kMtls = 3,
  kPsk = 4,
  kEnhanced = 5,
};

enum class AuthState : std::uint8_t {
  kUnspecified = 0,
  kUnauthenticated = 1,
  kSuccess = 2,
  kFailure = 3,
};

// Whether a connection is a Mosquitto bridge, and which end of it (docs/how-it-works.md,
// "Bridges"). kUnknown: the broker's client layout is not verified (broker/broker_layout.h), so
// `is_bridge` could not be read.
enum class BridgeRole : std::uint8_t {
  kUnknown = 0,
  kNone = 1,      // not a bridge
  kOutgoing = 2,  // the broker's own bridge context: the connection it made to another broker
  kIncoming = 3,  // a remote broker's bridge connected here (CONNECT with the bridge bit)
};

struct RequestStatistics {
  std::uint64_t publish_count = 0;
  std::uint64_t publish_bytes = 0;
  std::uint64_t deliver_count = 0;
  std::uint64_t deliver_bytes = 0;
  std::uint64_t request_count = 0;
};

}  // namespace mqc
