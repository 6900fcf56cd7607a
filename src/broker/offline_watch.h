// SPDX-License-Identifier: BSD-3-Clause
// 2.1's watch of the messages the broker throws away for offline sessions: the plugin's
// ACL_CHECK callback, registered only while the session table keeps an offline session.
//
// Where no other ACL source exists (BrokerSettings::watch_acl_21) the plugin's 2.1 ACL_CHECK is
// there for one thing: a QoS 0 message for an offline persistent session, which the broker
// throws away with no other event (BrokerEvents::OnAclCheck21). It counts only messages for a
// session the table keeps (SessionTable::OfflineQos); with none kept, every check answers
// IGNORE, the broker's own answer without the plugin (src/plugin_acl_check.c of v2.1.2), and
// counts nothing, yet the broker's dispatch of it costs about 3 % of a delivery
// (docs/benchmarks.md). So it is registered when the table keeps its first offline session,
// from inside the call that keeps it (before the broker routes another message), and given
// back at TICK once the table has kept none for kReleaseAfterNs: a persistent client
// reconnecting now and then does not register it at every disconnect (2.1 logs each
// registration at the information level). Strict mode registers ACL_CHECK for all of the time
// (WantedEvents): no watch then.
//
// Threads: the broker thread only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "broker/broker.h"
#include "broker/session_table.h"

namespace mqc {

class OfflineWatch final : public OfflineSessionsListener {
 public:
  static constexpr std::int64_t kReleaseAfterNs = 60 * std::int64_t{1000000000};

  explicit OfflineWatch(Broker* broker) : broker_(broker) {}

  // Once the plugin's other events are registered: `wanted` (2.1, watch_acl_21, not strict
  // mode) turns the watch on at once where sessions are kept (restored from the persistence
  // file), else at the first one kept.
  void Start(bool wanted, std::size_t offline_sessions, std::int64_t now_ns);
  // The table keeps its first offline session: on at once.
  void FirstOfflineSession() override;
  // At TICK's housekeeping: off once no session has been kept for kReleaseAfterNs; on again
  // where a registration the broker refused is still wanted.
  void Tick(std::size_t offline_sessions, std::int64_t now_ns);
  // Plugin cleanup: off.
  void Stop();

  bool on() const { return on_; }

 private:
  void TurnOn();

  Broker* broker_;
  bool wanted_ = false;
  bool on_ = false;
  bool refusal_logged_ = false;
  std::int64_t none_since_ns_ = -1;  // the first TICK that saw no session kept; -1: not now
};

}  // namespace mqc
