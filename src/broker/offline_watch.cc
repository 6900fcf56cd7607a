// SPDX-License-Identifier: BSD-3-Clause
#include "broker/offline_watch.h"

#include <string>

namespace mqc {

void OfflineWatch::Start(bool wanted, std::size_t offline_sessions, std::int64_t now_ns) {
  wanted_ = wanted;
  Tick(offline_sessions, now_ns);
}

void OfflineWatch::FirstOfflineSession() {
  none_since_ns_ = -1;
  if (wanted_ && !on_) TurnOn();
}

void OfflineWatch::Tick(std::size_t offline_sessions, std::int64_t now_ns) {
  if (!wanted_) return;
  if (offline_sessions > 0) {
    none_since_ns_ = -1;
    if (!on_) TurnOn();
    return;
  }
  if (!on_) return;
  if (none_since_ns_ < 0) {
    none_since_ns_ = now_ns;
    return;
  }
  if (now_ns - none_since_ns_ < kReleaseAfterNs) return;
  // A refusal leaves it on: it costs instructions, never a count.
  if (broker_->WatchAclChecks(false) == kBrokerSuccess) on_ = false;
  none_since_ns_ = -1;
}

void OfflineWatch::Stop() {
  if (on_ && broker_->WatchAclChecks(false) == kBrokerSuccess) on_ = false;
  wanted_ = false;
}

void OfflineWatch::TurnOn() {
  const int rc = broker_->WatchAclChecks(true);
  if (rc == kBrokerSuccess) {
    on_ = true;
    refusal_logged_ = false;
    return;
  }
  if (refusal_logged_) return;
  refusal_logged_ = true;
  broker_->Log(LogLevel::kWarning,
               "mosquitto_connections: cannot register for ACL_CHECK (" +
                   broker_->ErrorText(rc) +
                   "): QoS 0 messages for offline sessions are not counted as dropped until it "
                   "can (tried again at TICK)");
}

}  // namespace mqc
