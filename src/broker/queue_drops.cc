// SPDX-License-Identifier: BSD-3-Clause
#include "broker/queue_drops.h"

#include <algorithm>

namespace mqc {

namespace {

// db__ready_for_flight(context, mosq_md_out, qos), src/database.c of v2.0.11 to v2.0.22 (2.0.13
// renamed msg_bytes/msg_bytes12 to inflight_bytes/inflight_bytes12, same places, same use).
bool ReadyForFlight(const BrokerConfig::Queues& limits, const QueueFields& queue, int qos) {
  if (queue.inflight_maximum == 0 && limits.max_inflight_bytes == 0) return true;
  bool valid_bytes = false;
  bool valid_count = false;
  if (qos == 0) {
    if (limits.max_queued_messages == 0 && limits.max_inflight_bytes == 0) return true;
    valid_bytes = queue.bytes - limits.max_inflight_bytes < limits.max_queued_bytes;
    valid_count = queue.out_packet_count < limits.max_queued_messages;
    if (limits.max_queued_messages == 0) return valid_bytes;
    if (limits.max_queued_bytes == 0) return valid_count;
  } else {
    valid_bytes = queue.bytes12 < limits.max_inflight_bytes;
    valid_count = queue.inflight_quota > 0;
    if (queue.inflight_maximum == 0) return valid_bytes;
    if (limits.max_inflight_bytes == 0) return valid_count;
  }
  return valid_bytes && valid_count;
}

// db__ready_for_queue(context, qos, &context->msgs_out), same source.
bool ReadyForQueue(const BrokerConfig::Queues& limits, const QueueFields& queue, int qos,
                   bool online) {
  if (limits.max_queued_messages == 0 && limits.max_queued_bytes == 0) return true;
  if (qos == 0 && !limits.queue_qos0_messages) return false;
  // Nothing in flight for a client without a socket.
  const std::int64_t adjust_bytes = online ? limits.max_inflight_bytes : 0;
  const std::int64_t adjust_count = online ? queue.inflight_maximum : 0;
  const bool valid_bytes = queue.queued_bytes12 - adjust_bytes < limits.max_queued_bytes;
  const bool valid_count = queue.queued_count12 - adjust_count < limits.max_queued_messages;
  if (limits.max_queued_bytes == 0) return valid_count;
  if (limits.max_queued_messages == 0) return valid_bytes;
  return valid_bytes && valid_count;
}

// struct mosquitto_msg_data (lib/mosquitto_internal.h, WITH_BROKER): two pointers, then
//   2.0.11, 2.0.12: long msg_bytes (16), msg_bytes12 (24); int msg_count (32), msg_count12
//                   (36), inflight_quota (40); uint16_t inflight_maximum (44)
//   2.0.13 on:      long inflight_bytes (16), inflight_bytes12 (24); int inflight_count (32),
//                   inflight_count12 (36); long queued_bytes (40), queued_bytes12 (48); int
//                   queued_count (56), queued_count12 (60), inflight_quota (64); uint16_t
//                   inflight_maximum (68)
constexpr std::uint16_t kBytes = 16;
constexpr std::uint16_t kBytes12 = 24;
constexpr std::uint16_t kCount = 32;  // msg_count, inflight_count: what the layout knows
constexpr std::uint16_t kOldCount12 = 36;
constexpr std::uint16_t kOldQuota = 40;
constexpr std::uint16_t kOldMaximum = 44;
constexpr std::uint16_t kSplitQueuedBytes12 = 48;
constexpr std::uint16_t kSplitQueuedCount12 = 60;
constexpr std::uint16_t kSplitQuota = 64;
constexpr std::uint16_t kSplitMaximum = 68;
// 2.0's struct mosquitto, v2.0.11 to v2.0.22: `will`, then aliases (8), will_delay_entry (8),
// alias_count (4), out_packet_count.
constexpr std::uint16_t kOutPacketCountAfterWill = 28;

template <typename T>
bool ReadAt(const Broker& broker, const BrokerClient* client, std::size_t offset,
            std::int64_t* out) {
  T value{};
  if (!broker.ReadClientBytes(client, offset, sizeof(value), &value)) return false;
  *out = static_cast<std::int64_t>(value);
  return true;
}

}  // namespace

bool WouldDrop(const BrokerConfig::Queues& limits, const QueueFields& queue, int qos, bool online) {
  if (online) {
    if (ReadyForFlight(limits, queue, qos)) return false;
    return qos == 0 || !ReadyForQueue(limits, queue, qos, online);
  }
  return !ReadyForQueue(limits, queue, qos, online);
}

std::optional<int> QueuedQos(int message_qos, std::size_t matches, int subscription_qos,
                             bool upgrade_outgoing_qos) {
  if (matches != 1) return std::nullopt;
  if (upgrade_outgoing_qos) return subscription_qos;
  return message_qos < subscription_qos ? message_qos : subscription_qos;
}

std::optional<QueueOffsets> QueueOffsetsOf(const BrokerLayout& layout) {
  if (layout.protocol != ProtocolEncoding::k20) return std::nullopt;
  const FieldPlace will = layout.place(LayoutField::kWill);
  const FieldPlace split = layout.place(LayoutField::kMsgsOutInflightCount);
  const FieldPlace old = layout.place(LayoutField::kMsgsOutCount);
  if (will.size == 0 || (split.size == 0 && old.size == 0)) return std::nullopt;
  QueueOffsets offsets;
  offsets.split = split.size != 0;
  offsets.msgs_out =
      static_cast<std::uint16_t>((offsets.split ? split.offset : old.offset) - kCount);
  offsets.out_packet_count = static_cast<std::uint16_t>(will.offset + kOutPacketCountAfterWill);
  offsets.inflight_quota =
      static_cast<std::uint16_t>(offsets.msgs_out + (offsets.split ? kSplitQuota : kOldQuota));
  offsets.end =
      static_cast<std::size_t>(offsets.msgs_out + (offsets.split ? kSplitMaximum : kOldMaximum)) +
      sizeof(std::uint16_t);
  return offsets;
}

std::optional<QueueFields> ReadQueueFields(const Broker& broker, const BrokerClient* client,
                                           const QueueOffsets& offsets) {
  QueueFields fields;
  const std::size_t base = offsets.msgs_out;
  const bool read =
      ReadAt<long>(broker, client, base + kBytes, &fields.bytes) &&
      ReadAt<long>(broker, client, base + kBytes12, &fields.bytes12) &&
      ReadAt<std::int32_t>(broker, client,
                           base + (offsets.split ? kSplitQueuedCount12 : kOldCount12),
                           &fields.queued_count12) &&
      ReadAt<long>(broker, client, base + (offsets.split ? kSplitQueuedBytes12 : kBytes12),
                   &fields.queued_bytes12) &&
      ReadAt<std::int32_t>(broker, client, offsets.inflight_quota, &fields.inflight_quota) &&
      ReadAt<std::uint16_t>(broker, client, base + (offsets.split ? kSplitMaximum : kOldMaximum),
                            &fields.inflight_maximum) &&
      ReadAt<std::int32_t>(broker, client, offsets.out_packet_count, &fields.out_packet_count);
  if (!read) return std::nullopt;
  return fields;
}

void QueueDrops::Configure(const BrokerConfig::Queues& limits) {
  limits_ = limits;
  simple_ = limits.max_inflight_bytes == 0 && limits.max_queued_bytes == 0;
  constexpr std::int64_t kNoBound = std::numeric_limits<std::int32_t>::max();
  // out_packet_count is an int: a bound at INT32_MAX is never reached, as no bound.
  qos0_bound_ = static_cast<std::int32_t>(
      limits.max_queued_messages == 0 ? kNoBound : std::min(limits.max_queued_messages, kNoBound));
  SetMode();
}

void QueueDrops::Arm(const BrokerLayoutVerifier* layout, bool api_2_1) {
  if (armed_ || api_2_1 || layout == nullptr || layout->layout() == nullptr) return;
  const std::optional<QueueOffsets> offsets = QueueOffsetsOf(*layout->layout());
  // MayDrop reads without a bounds check: only inside what the verified layout already covers.
  if (!offsets || offsets->end > layout->layout()->End()) return;
  offsets_ = *offsets;
  quota_at_ = offsets_.inflight_quota;
  out_packets_at_ = offsets_.out_packet_count;
  armed_ = true;
  SetMode();
}

bool QueueDrops::MayDrop(const Broker& broker, const BrokerClient* client) const {
  if (!armed_) return false;
  if (!simple_) return true;
  std::int64_t quota = 0;
  std::int64_t out_packets = 0;
  if (!ReadAt<std::int32_t>(broker, client, offsets_.inflight_quota, &quota) ||
      !ReadAt<std::int32_t>(broker, client, offsets_.out_packet_count, &out_packets)) {
    return false;  // nothing read, nothing predicted (Predict could not read either)
  }
  return quota <= 0 || out_packets >= qos0_bound_;
}

std::optional<QueueDrops::Verdict> QueueDrops::Predict(const Broker& broker,
                                                       const BrokerClient* client,
                                                       bool online) const {
  if (!armed_) return std::nullopt;
  const std::optional<QueueFields> fields = ReadQueueFields(broker, client, offsets_);
  if (!fields) return std::nullopt;
  Verdict verdict;
  // Offline, QoS 0 is thrown away before the queue unless queue_qos0_messages
  // (DropReason::kOffline): not this cause.
  verdict.qos0 = (online || limits_.queue_qos0_messages) && WouldDrop(limits_, *fields, 0, online);
  verdict.qos12 = WouldDrop(limits_, *fields, 1, online);
  return verdict;
}

}  // namespace mqc
