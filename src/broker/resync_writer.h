// SPDX-License-Identifier: BSD-3-Clause
// Writes the session table's full state for a resync (docs/architecture.md, "Resync"), paged
// over as many TICKs as the sink needs: Begin emits ResyncBegin and notes which connections and
// listed offline sessions there are; each Continue emits as many of them (each whole, with its
// subscriptions) as fit, then ResyncEnd. Events of the connections meanwhile go out as usual;
// one closed or gone since is skipped. A refused Emit abandons the resync (the link makes a
// new one due).
//
// Threads: the broker thread only. Allocates per resync (the queues), never per message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "broker/broker_link.h"
#include "broker/event_sink.h"
#include "broker/session_table.h"
#include "broker/subscription_list.h"
#include "link/event_records.h"

namespace mqc {

class ResyncWriter {
 public:
  ResyncWriter(SessionTable* table, EventSink* sink) : table_(table), sink_(sink) {}
  ResyncWriter(const ResyncWriter&) = delete;
  ResyncWriter& operator=(const ResyncWriter&) = delete;

  // False when the sink refused ResyncBegin (nothing begun).
  bool Begin(std::uint64_t generation);
  // True once ResyncEnd is written; false while unfinished or abandoned (active() tells).
  bool Continue();
  bool active() const { return active_; }

 private:
  // Emits `head` (a ConnectionEvent or an OfflineSessionEvent) and `subscriptions` of its seq,
  // all or none.
  template <typename Head>
  bool EmitWhole(const Head& head, const SubscriptionList& subscriptions);
  bool EmitOpen(const void* client);
  bool EmitOffline(const std::string& id);

  SessionTable* table_;
  EventSink* sink_;
  bool active_ = false;
  std::uint64_t generation_ = 0;
  std::vector<const void*> open_queue_;
  std::size_t open_next_ = 0;
  std::vector<std::string> offline_queue_;  // listed offline sessions, by client id
  std::size_t offline_next_ = 0;
  SubscriptionEvent subscription_;  // reused for every subscription (its filter's capacity)
};

// At TICK: starts the resync `link` says is due (BrokerLink::TakeResyncDue) and carries an
// unfinished one on as far as the ring has room. True when no resync is due or under way any
// more. A resync the ring refuses is due again (BrokerLink::Emit).
bool ResyncStep(BrokerLink* link, ResyncWriter* writer);

}  // namespace mqc
