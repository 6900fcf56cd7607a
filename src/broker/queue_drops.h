// SPDX-License-Identifier: BSD-3-Clause
// Messages Mosquitto 2.0 throws away at a full queue (max_queued_messages, max_queued_bytes),
// seen per connection: predicted at the ACL check that comes just before the broker queues each
// message for a subscriber, from the very fields and settings the broker decides by.
//
// Mosquitto 2.0's src/subs.c (subs__send) asks the READ ACL check, then calls
// db__message_insert (src/database.c) with nothing in between that changes the client; that
// function drops the message where db__ready_for_flight and db__ready_for_queue say no
// (v2.0.11 to v2.0.22: msgs_out's counts and quota, out_packet_count, and the configuration's
// max_queued_messages, max_queued_bytes, max_inflight_bytes, queue_qos0_messages). WouldDrop
// below is those two functions, over QueueFields read from the client struct through the
// verified layout (broker_layout.h; struct mosquitto_msg_data lies alike relative to the counts
// the layout knows). docs/broker-versions.md, "Dropped messages", has the rest: 2.1 queues
// without a check the plugin sees on an open connection, and the other causes are hidden.
//
// The per-delivery cost is MayDrop: two int loads of the client and two compares, no call out;
// only a client whose in-flight window is full (or whose socket queue is at the limit) goes on
// to the full prediction (Predict), which reads the rest and matches the topic against the
// connection's subscriptions for the QoS the broker queues it at.
//
// Threads: the broker thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>

#include "broker/broker.h"
#include "broker/broker_layout.h"
#include "link/broker_config.h"

namespace mqc {

// The outgoing queue of a client as db__message_insert reads it. 2.0.11 and 2.0.12 keep one
// count for in flight and queued together (msg_count12, msg_bytes12): there `bytes` is
// msg_bytes, `bytes12` and `queued_bytes12` msg_bytes12, `queued_count12` msg_count12.
struct QueueFields {
  std::int64_t bytes = 0;           // inflight_bytes (2.0.13 on) or msg_bytes
  std::int64_t bytes12 = 0;         // inflight_bytes12 or msg_bytes12
  std::int64_t queued_count12 = 0;  // queued_count12 or msg_count12
  std::int64_t queued_bytes12 = 0;  // queued_bytes12 or msg_bytes12
  std::int64_t inflight_quota = 0;
  std::int64_t inflight_maximum = 0;
  std::int64_t out_packet_count = 0;
};

// Whether db__message_insert (v2.0.11 to v2.0.22) drops a message it is asked to queue at
// `qos` (the QoS it queues at: the subscription's and the message's lower, or the
// subscription's with upgrade_outgoing_qos) for a client with a socket (`online`) or without
// one, at a full queue. A QoS 0 message for a client without a socket is not this case: the
// broker throws it away before (DropReason::kOffline), unless queue_qos0_messages.
bool WouldDrop(const BrokerConfig::Queues& limits, const QueueFields& queue, int qos, bool online);

// The QoS src/subs.c queues a message of `message_qos` at for a client of which `matches`
// subscriptions match its topic, the last at `subscription_qos`: with exactly one, the lower of
// the two (the subscription's with upgrade_outgoing_qos). Nothing with none (a subscription the
// plugin does not know) or several: each is a copy queued at its own QoS, and with
// allow_duplicate_messages false the broker skips the later copies of a message it queued for
// an MQTT 3.1.1 client, which no field tells; such a drop is not counted.
std::optional<int> QueuedQos(int message_qos, std::size_t matches, int subscription_qos,
                             bool upgrade_outgoing_qos);

// Where the fields of QueueFields lie in a verified 2.0 layout; nothing for 2.1 or an
// unverified layout.
struct QueueOffsets {
  std::uint16_t msgs_out = 0;  // struct mosquitto_msg_data msgs_out
  bool split = false;          // 2.0.13 on
  std::uint16_t out_packet_count = 0;
  std::uint16_t inflight_quota = 0;  // msgs_out + 40 or + 64
  std::size_t end = 0;               // the end of the last byte read
};
std::optional<QueueOffsets> QueueOffsetsOf(const BrokerLayout& layout);

// Reads QueueFields through `offsets`, bounds checked by the broker; nothing when it cannot.
std::optional<QueueFields> ReadQueueFields(const Broker& broker, const BrokerClient* client,
                                           const QueueOffsets& offsets);

class QueueDrops {
 public:
  // The limits of the broker's configuration (again after a reload).
  void Configure(const BrokerConfig::Queues& limits);
  // Arms the prediction once the layout is verified on a 2.0 broker (`api_2_1` false); no-op
  // otherwise, or when already armed.
  void Arm(const BrokerLayoutVerifier* layout, bool api_2_1);
  // Whether drops at a full queue are seen on this broker (armed).
  bool armed() const { return armed_; }
  const BrokerConfig::Queues& limits() const { return limits_; }

  // The per-delivery test: false when no message, of any QoS, can be dropped for this online
  // client now. Reads through B (a `final` Broker) two ints inside the client's struct: the
  // layout's end was checked against the client allocation the broker makes for every client
  // alike (calloc of sizeof(struct mosquitto)).
  template <typename B>
  bool MayDrop(const B& broker, const BrokerClient* client) const {
    if (mode_ != Mode::kTwoReads) return mode_ == Mode::kAlways;
    return broker.ClientInt32(client, quota_at_) <= 0 ||
           broker.ClientInt32(client, out_packets_at_) >= qos0_bound_;
  }

  // The same through the Broker interface (bounds checked), for the paths off the fast one.
  bool MayDrop(const Broker& broker, const BrokerClient* client) const;

  // Whether the broker drops a message at a full queue now, at QoS 0 and at QoS 1 or 2 (the
  // two decide alike), `online` whether the client has a socket. Nothing when it cannot tell
  // (unarmed, a field that cannot be read). Both false: no subscription need be matched.
  struct Verdict {
    bool qos0 = false;
    bool qos12 = false;
    bool At(int qos) const { return qos == 0 ? qos0 : qos12; }
  };
  std::optional<Verdict> Predict(const Broker& broker, const BrokerClient* client,
                                 bool online) const;

 private:
  // What MayDrop does, one byte for the fast path to test: nothing unarmed; two reads and
  // compares with max_inflight_bytes and max_queued_bytes 0 (the defaults); else always on.
  enum class Mode : std::uint8_t { kUnarmed, kTwoReads, kAlways };
  void SetMode() { mode_ = !armed_ ? Mode::kUnarmed : simple_ ? Mode::kTwoReads : Mode::kAlways; }

  BrokerConfig::Queues limits_;
  bool armed_ = false;
  bool simple_ = true;  // max_inflight_bytes and max_queued_bytes 0
  Mode mode_ = Mode::kUnarmed;
  // max_queued_messages (at most INT32_MAX: out_packet_count is an int), or no bound for 0.
  std::int32_t qos0_bound_ = 1000;
  std::size_t quota_at_ = 0;        // offsets_.inflight_quota
  std::size_t out_packets_at_ = 0;  // offsets_.out_packet_count
  QueueOffsets offsets_;
};

}  // namespace mqc
