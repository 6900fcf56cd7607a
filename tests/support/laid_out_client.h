// SPDX-License-Identifier: BSD-3-Clause
// Test clients whose struct bytes are laid out as a BrokerLayout says (broker/broker_layout.h),
// with the pointers the broker's accessors return where that layout puts them (FakeClient::
// anchors), and the traffic of a few clients. Shared by the layout's own tests and the handlers'
// tests that read through a verified layout.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "broker/broker_layout.h"
#include "broker/queue_drops.h"
#include "fake_broker.h"

namespace mqc {

// The candidate of this name, else null.
inline const BrokerLayout* Named(const std::vector<const BrokerLayout*>& layouts,
                                 const std::string& name) {
  for (const BrokerLayout* layout : layouts) {
    if (name == layout->name) return layout;
  }
  return nullptr;
}

inline void Put(FakeClient* client, const BrokerLayout& layout, LayoutField field,
                std::int64_t value) {
  const FieldPlace& place = layout.place(field);
  ASSERT_NE(place.size, 0);
  ASSERT_LE(place.offset + place.size, client->memory.size());
  const auto le = static_cast<std::uint64_t>(value);
  // The fake stands for a broker of this machine's byte order, as the plugin's reads assume.
  if (place.size == 1) {
    const auto v = static_cast<std::uint8_t>(le);
    std::memcpy(client->memory.data() + place.offset, &v, 1);
  } else if (place.size == 2) {
    const auto v = static_cast<std::uint16_t>(le);
    std::memcpy(client->memory.data() + place.offset, &v, 2);
  } else if (place.size == 4) {
    const auto v = static_cast<std::uint32_t>(le);
    std::memcpy(client->memory.data() + place.offset, &v, 4);
  } else {
    std::memcpy(client->memory.data() + place.offset, &le, 8);
  }
}

// A client whose struct is laid out as `truth` says, with pointer-like noise everywhere else
// (a real struct holds addresses and strings' lengths around these fields).
inline FakeClient LaidOut(const BrokerLayout& truth, const std::string& id, bool clean,
                          std::uint16_t keepalive, std::size_t allocation = 0) {
  FakeClient client = Client(id, 4);
  client.facts.clean_session = clean;
  client.facts.keep_alive = keepalive;
  client.memory.assign(allocation != 0 ? allocation : truth.End() + 64, 0);
  for (std::size_t i = 0; i < client.memory.size(); ++i) {
    client.memory[i] = static_cast<unsigned char>((i * 37 + 11) & 0xff);
  }
  client.anchors = &truth;
  Put(&client, truth, LayoutField::kProtocol, truth.protocol == ProtocolEncoding::k20 ? 2 : 4);
  Put(&client, truth, LayoutField::kKeepalive, keepalive);
  Put(&client, truth, LayoutField::kCleanStart, clean ? 1 : 0);
  Put(&client, truth, LayoutField::kSubCount, 0);
  Put(&client, truth, LayoutField::kSessionExpiryTime, 0);
  Put(&client, truth, LayoutField::kSessionExpiryInterval, clean ? 0 : 3600);
  Put(&client, truth, LayoutField::kIsBridge, 0);
  Put(&client, truth, LayoutField::kWill, 0);  // no will unless a test sets one
  for (LayoutField field : {LayoutField::kMsgsInInflightCount, LayoutField::kMsgsInQueuedCount,
                            LayoutField::kMsgsOutInflightCount, LayoutField::kMsgsOutQueuedCount,
                            LayoutField::kMsgsInCount, LayoutField::kMsgsOutCount}) {
    if (truth.place(field).size != 0) Put(&client, truth, field, 0);
  }
  // 2.0: the outgoing queue of a fresh client (broker/queue_drops.h reads it): a window of 20
  // not used, nothing queued, nothing waiting for the socket.
  if (const auto queue = QueueOffsetsOf(truth)) {
    const std::int32_t window = 20;
    const std::uint16_t maximum = 20;
    const std::int32_t zero32 = 0;
    const std::int64_t zero64 = 0;
    unsigned char* base = client.memory.data();
    std::memcpy(base + queue->inflight_quota, &window, sizeof(window));
    std::memcpy(base + queue->end - sizeof(maximum), &maximum, sizeof(maximum));
    std::memcpy(base + queue->out_packet_count, &zero32, sizeof(zero32));
    // The bytes: 16 and 24 on both; 48 (queued_bytes12) 2.0.13 on.
    for (std::size_t at : {16, 24, 48}) {
      if (at < 48 || queue->split) std::memcpy(base + queue->msgs_out + at, &zero64, 8);
    }
    std::memcpy(base + queue->msgs_out + (queue->split ? 60 : 36), &zero32, sizeof(zero32));
  }
  return client;
}

// The subscription count changes, in the struct and in the accessor alike.
inline void SetSubCount(FakeClient* client, const BrokerLayout& truth, int count) {
  client->sub_count = count;
  Put(client, truth, LayoutField::kSubCount, count);
}

// Three clients connect, each subscribes twice and unsubscribes once: 12 observations, 9
// subscription changes.
inline void Traffic(FakeBroker* broker, BrokerLayoutVerifier* verifier,
                    std::vector<FakeClient>* clients, const BrokerLayout& truth) {
  for (FakeClient& client : *clients) {
    verifier->Observe(*broker, client.handle());
    for (int count : {1, 2, 1}) {
      SetSubCount(&client, truth, count);
      verifier->Observe(*broker, client.handle());
    }
  }
}

}  // namespace mqc
