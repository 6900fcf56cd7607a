// SPDX-License-Identifier: BSD-3-Clause
// What both processes know of one MQTT connection: why it closed, how it authenticated, its
// traffic totals. The broker side fills them into the event records (event_records.h); the
// companion builds its model of a connection from them (companion/connection.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

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

// Whether a client sent a will at CONNECT, read from the broker's client struct (`will`: null or
// not) once the layout is verified; kUnknown before, for good where it is unknown, and for
// offline sessions. Its topic, QoS and retain are never read (that would follow a pointer).
enum class WillState : std::uint8_t {
  kUnknown = 0,
  kNone = 1,
  kSet = 2,
};

struct RequestStatistics {
  std::uint64_t publish_count = 0;
  std::uint64_t publish_bytes = 0;
  std::uint64_t deliver_count = 0;
  std::uint64_t deliver_bytes = 0;
  std::uint64_t request_count = 0;
};

// The requests of a connection an ACL source refused (docs/api.md, "Denials"): its PUBLISHes
// and SUBSCRIBE filters, and the last refused topic (at most kDeniedTopicMax bytes of it) and
// when. `shown` false: the broker hides denials from the plugin (the start line says so), and
// nothing else is set.
struct Denials {
  bool shown = false;
  std::uint64_t publish = 0;
  std::uint64_t subscribe = 0;
  std::string last_topic;
  std::int64_t last_ns = 0;  // wall clock, ns since the epoch; 0: no denial
};

// The messages the broker holds for a connection in one direction (struct mosquitto's msgs_out:
// to the client; msgs_in: from it), as its own counters say (docs/api.md, "Queued and in-flight
// messages"). What is known depends on the broker (broker/broker_layout.h):
//   kSplit (2.0.13 on, 2.1): queued (waiting for an in-flight slot, or for an offline client)
//          and in flight (sent, not yet acknowledged: QoS 1 and 2; QoS 0 only until written);
//   kTotal (2.0.11, 2.0.12): their sum only (msg_count), in `total`;
//   kUnknown: nothing (layout not verified yet, or never).
// `total` is queued + in_flight for kSplit.
struct MessageQueue {
  enum class Known : std::uint8_t { kUnknown = 0, kTotal = 1, kSplit = 2 };
  Known known = Known::kUnknown;
  std::uint32_t queued = 0;
  std::uint32_t in_flight = 0;
  std::uint32_t total = 0;

  // Each count where the broker tells it, else nothing: the one rule the API's codecs and its
  // filters show them by.
  std::optional<std::uint32_t> Queued() const {
    return known == Known::kSplit ? std::optional<std::uint32_t>(queued) : std::nullopt;
  }
  std::optional<std::uint32_t> InFlight() const {
    return known == Known::kSplit ? std::optional<std::uint32_t>(in_flight) : std::nullopt;
  }
  std::optional<std::uint32_t> Pending() const {
    return known != Known::kUnknown ? std::optional<std::uint32_t>(total) : std::nullopt;
  }

  bool operator==(const MessageQueue& other) const {
    return known == other.known && queued == other.queued && in_flight == other.in_flight &&
           total == other.total;
  }
};

struct MessageCounts {
  MessageQueue out;  // to the client
  MessageQueue in;   // from the client (QoS 2 awaiting PUBREL, and beyond its receive maximum)
};

// The messages the broker threw away instead of queueing them for a connection, by cause
// (docs/api.md, "Dropped messages"). Only a full queue (max_queued_messages, max_queued_bytes)
// is seen per connection, and only where the broker lets the plugin predict it exactly
// (broker/queue_drops.h); `known` false: this broker hides it (the API omits the figures).
// Expired messages and packets over the client's maximum packet size are hidden on every
// build; a QoS 0 message for an offline session has no connection (it is counted in /metrics).
struct MessageDrops {
  bool known = false;
  std::uint64_t queue_full = 0;

  std::optional<std::uint64_t> Total() const {
    return known ? std::optional<std::uint64_t>(queue_full) : std::nullopt;
  }
  std::optional<std::uint64_t> QueueFull() const {
    return known ? std::optional<std::uint64_t>(queue_full) : std::nullopt;
  }
  bool operator==(const MessageDrops& other) const {
    return known == other.known && queue_full == other.queue_full;
  }
};

}  // namespace mqc
