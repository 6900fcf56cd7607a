// SPDX-License-Identifier: BSD-3-Clause
// What the broker unit tests build alike: a BrokerCore over a FakeBroker and the test's own
// sink, statistics slots and counters, and a 2.0 client's outgoing queue as the broker's
// queue-limit functions read it (broker/queue_drops.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "../support/fake_broker.h"
#include "broker/broker_core.h"
#include "broker/queue_drops.h"
#include "link/shared_region.h"
#include "../support/stats_slots.h"

namespace mqc {

// The setup BrokerCore::Create takes, over the test's `sink`, `slots` and `counters`.
inline BrokerCoreSetup TestCoreSetup(EventSink* sink, TestStatsSlots* slots,
                                     BrokerCounters* counters) {
  BrokerCoreSetup setup;
  setup.uuid_seed = 1;
  setup.sink = sink;
  setup.stats = slots->view();
  setup.counters = counters;
  return setup;
}

// The broker core as the plugin builds it over `broker`, with no client layout and no shared
// region: the sink gets the records.
inline StatusOr<std::unique_ptr<BrokerCore>> CreateTestCore(
    FakeBroker* broker, EventSink* sink, TestStatsSlots* slots,
    BrokerCounters* counters) {
  PluginOptions options;
  options.client_layout = false;
  return BrokerCore::Create(broker, options, TestCoreSetup(sink, slots, counters), nullptr);
}

// The outgoing queue of a client at `offsets` (a 2.0.13-on layout: QueueOffsetsOf), as
// db__message_insert reads it; the byte counts zero.
inline void PutQueue(FakeClient* client, const QueueOffsets& offsets, std::int32_t quota,
                     std::uint16_t maximum, std::int32_t queued_count12,
                     std::int32_t out_packets) {
  std::memcpy(client->memory.data() + offsets.inflight_quota, &quota, sizeof(quota));
  std::memcpy(client->memory.data() + offsets.msgs_out + 68, &maximum, sizeof(maximum));
  std::memcpy(client->memory.data() + offsets.msgs_out + 60, &queued_count12,
              sizeof(queued_count12));
  std::memcpy(client->memory.data() + offsets.out_packet_count, &out_packets, sizeof(out_packets));
  const std::int64_t zero = 0;
  for (int at : {16, 24, 48}) std::memcpy(client->memory.data() + offsets.msgs_out + at, &zero, 8);
}

}  // namespace mqc
