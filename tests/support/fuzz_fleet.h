// SPDX-License-Identifier: BSD-3-Clause
// The connections the fuzz targets of the companion's answers (fuzz/connection_query_fuzz.cc,
// fuzz/connect_rpc_request_fuzz.cc) run over: one generator, so that the query engine and the
// Connect encoders meet the same unset, repeated and extreme values.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "companion/connection.h"
#include "connection_builder.h"
#include "link/topic_mapping.h"

namespace mqc {

// Connection i (from 0) of a fuzz fleet, with the client id `client_id`. Its values cycle with i:
// closed every third, MQTT 3 to 5, TLS every second, every authentication mechanism and state,
// the listener's name sometimes unknown, the idle time unknown every fourth, statistics up to
// UINT64_MAX, a close reason no release names (99), a subscription whose filter maps to no
// channel; seqs run against the open times. uids are unique (a target that wants ties sets its
// own).
inline Connection FuzzConnection(std::uint64_t i, std::string client_id) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  const char* const listeners[] = {"mqtt:1883", "mqtts:8883", "mqtt:1883", ""};
  Connection c;
  c.seq = 100 - i * 7;
  c.uid = "uid-" + std::to_string(i);
  c.node_id = static_cast<std::uint32_t>(i % 2);
  c.state = i % 3 == 0 ? ConnectionState::kClosed : ConnectionState::kOpen;
  // Some with a fraction of a second.
  c.open_time_ns = kTestTime0 + static_cast<std::int64_t>(i % 3) * kTestSecond +
                   static_cast<std::int64_t>(i % 2) * 7;
  if (c.state == ConnectionState::kClosed) {
    c.close_time_ns = c.open_time_ns + static_cast<std::int64_t>(i) * kTestSecond;
    c.close_reason = static_cast<CloseReason>(i % 7 == 3 ? 99 : i % 7);
  }
  c.client_id = std::move(client_id);
  c.username = i % 2 == 0 ? "" : "user";
  c.protocol_version = 3 + static_cast<int>(i % 3);
  c.clean_session = i % 4 != 0;
  c.keep_alive = static_cast<int>(i * 10);
  c.ip_address = i % 2 == 0 ? "10.0.0." + std::to_string(i) : "::1";
  c.port = static_cast<int>(i % 3) * 1000;
  c.listener_name = listeners[i % 4];
  c.tls->enabled = i % 2 == 1;
  if (c.tls->enabled) {
    c.tls->tls_version = "TLSv1.3";
    c.tls->cipher = "TLS_AES_128_GCM_SHA256";
  }
  c.authentication.mechanism = static_cast<AuthMechanism>(i % 6);
  c.authentication.state = static_cast<AuthState>(i % 4);
  c.authentication.user_principal = c.username;
  c.idle_ns = i % 4 == 0 ? -1 : static_cast<std::int64_t>(i) * kTestSecond / 3;
  c.total_statistics = {i, i * 100, i * 2, kMax - i, i};
  c.recent_statistics = {i % 2, 0, i % 3, 0, i % 5};
  if (i % 3 != 2) c.subscriptions.push_back(TestSubscription("events/a", 0, Pattern::kEvents, "a"));
  if (i % 2 == 1) {
    c.subscriptions.push_back(TestSubscription("$share/g/queues/q", 2, Pattern::kQueues, "q", "g"));
  }
  if (i % 5 == 4) c.subscriptions.push_back(MappedSubscription("events//x", 1));
  return c;
}

}  // namespace mqc
