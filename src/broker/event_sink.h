// SPDX-License-Identifier: BSD-3-Clause
// Where the broker thread's events go: the events ring in the plugin (BrokerLink, which encodes
// them), a recorder in tests (which keeps them as they are). The session table and the plugin's
// settings hand over typed records (link/event_records.h) and never see their bytes; the two
// sides know each other only through this interface.
//
// Threads: the broker thread.
#pragma once

#include "broker/subscription_list.h"
#include "link/event_records.h"

namespace mqc {

// Emit returns false when the event could not be delivered (ring full); the caller then owes the
// companion a resync.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual bool Emit(const ConnectionEvent& event) = 0;
  virtual bool Emit(const CloseEvent& event) = 0;
  // `type`: EventType::kSubscribe or EventType::kUnsubscribe.
  virtual bool Emit(EventType type, const SubscriptionEvent& event) = 0;
  virtual bool Emit(const OfflineSessionEvent& event) = 0;
  virtual bool Emit(const OfflineSessionEndEvent& event) = 0;
  // `type`: EventType::kResyncBegin or EventType::kResyncEnd.
  virtual bool Emit(EventType type, const ResyncEvent& event) = 0;
  virtual bool Emit(const SettingsEvent& event) = 0;
  virtual bool Emit(const BridgeEvent& event) = 0;

  // Whether these records, written one after another now, would all fit: a resync sends a
  // connection or offline session whole or not at all, and waits with its end until it fits,
  // rather than lose an event. `subscriptions` follow `head` as kSubscribe records of head.seq.
  virtual bool Fits(const ConnectionEvent& head, const SubscriptionList& subscriptions) = 0;
  virtual bool Fits(const OfflineSessionEvent& head, const SubscriptionList& subscriptions) = 0;
  virtual bool Fits(const ResyncEvent& event) = 0;
};

}  // namespace mqc
