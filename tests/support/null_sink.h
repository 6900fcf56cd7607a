// SPDX-License-Identifier: BSD-3-Clause
// An EventSink that takes every event and keeps none: for the broker-side tests that look at
// the answers and the session table, not at what reaches the companion.
#pragma once

#include "broker/session_table.h"

namespace mqc {

class NullSink : public EventSink {
 public:
  bool Emit(const ConnectionEvent&) override { return true; }
  bool Emit(const CloseEvent&) override { return true; }
  bool Emit(EventType, const SubscriptionEvent&) override { return true; }
  bool Emit(const OfflineSessionEvent&) override { return true; }
  bool Emit(const OfflineSessionEndEvent&) override { return true; }
  bool Emit(EventType, const ResyncEvent&) override { return true; }
  bool Emit(const SettingsEvent&) override { return true; }
  bool Emit(const BridgeEvent&) override { return true; }
  bool Fits(const ConnectionEvent&, const SubscriptionList&) override { return true; }
  bool Fits(const OfflineSessionEvent&, const SubscriptionList&) override { return true; }
  bool Fits(const ResyncEvent&) override { return true; }
};

}  // namespace mqc
