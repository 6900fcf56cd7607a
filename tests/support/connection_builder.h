// SPDX-License-Identifier: BSD-3-Clause
// Connections as the companion's tests need them: the model the registry lists (Connection), a
// subscription of it, and the record the broker writes at CONNECT (ConnectionEvent). An open
// connection is a plain MQTT 3.1.1 client from 127.0.0.1:40000, an offline session only what
// persistence tells; a test sets only what it looks at. Shared by the companion-side unit tests
// (the broker side has client_facts_builder.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "companion/connection.h"
#include "link/event_records.h"
#include "link/topic_mapping.h"

namespace mqc {

inline constexpr std::int64_t kTestMilli = 1'000'000;
inline constexpr std::int64_t kTestSecond = 1'000'000'000;
inline constexpr std::int64_t kTestTime0 = 1767225600 * kTestSecond;  // 2026-01-01T00:00:00Z

// An open connection: seq `seq`, uid "uid-<seq>", client id "client-<seq>", opened at kTestTime0
// on the listener "mqtt:1883", anonymous and authenticated.
inline Connection TestConnection(std::uint64_t seq) {
  Connection c;
  c.seq = seq;
  c.uid = "uid-" + std::to_string(seq);
  c.state = ConnectionState::kOpen;
  c.open_time_ns = kTestTime0;
  c.client_id = "client-" + std::to_string(seq);
  c.protocol_version = 4;
  c.ip_address = "127.0.0.1";
  c.port = 40000;
  c.listener_name = "mqtt:1883";
  c.authentication.mechanism = AuthMechanism::kAnonymous;
  c.authentication.state = AuthState::kSuccess;
  return c;
}

// An offline session with only what the broker's persistence tells of it: uid, client id, when it
// opened and when it expires (0: never or unknown).
inline Connection TestOfflineSession(std::string uid, std::string client_id,
                                     std::int64_t open_time_ns,
                                     std::int64_t session_expiry_time_ns) {
  Connection c;
  c.uid = std::move(uid);
  c.client_id = std::move(client_id);
  c.state = ConnectionState::kOffline;
  c.open_time_ns = open_time_ns;
  c.session_expiry_time_ns = session_expiry_time_ns;
  return c;
}

// A subscription with its KubeMQ mapping given as it is (also mappings MapTopicFilter would not
// give, to test what reads them).
inline Subscription TestSubscription(std::string filter, int qos, Pattern pattern,
                                     std::string channel, std::string shared_group = "") {
  Subscription subscription;
  subscription.filter = std::move(filter);
  subscription.qos = qos;
  subscription.mapping.pattern = pattern;
  subscription.mapping.channel = std::move(channel);
  subscription.mapping.shared_group = std::move(shared_group);
  return subscription;
}

// A subscription mapped as the registry maps it.
inline Subscription MappedSubscription(std::string filter, int qos,
                                       DefaultPattern default_pattern = DefaultPattern::kEvents) {
  Subscription subscription;
  subscription.mapping = MapTopicFilter(filter, default_pattern);
  subscription.filter = std::move(filter);
  subscription.qos = qos;
  return subscription;
}

// The broker's record of a connection at CONNECT: seq `seq` (also the uid's first byte), opened
// at 1 ns.
inline ConnectionEvent TestConnectionRecord(std::uint64_t seq, std::string client_id) {
  ConnectionEvent e;
  e.seq = seq;
  e.uid[0] = static_cast<std::uint8_t>(seq);
  e.open_time_ns = 1;
  e.client_id = std::move(client_id);
  e.ip_address = "127.0.0.1";
  e.port = 40000;
  e.protocol_version = 4;
  return e;
}

}  // namespace mqc
