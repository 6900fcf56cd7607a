// SPDX-License-Identifier: BSD-3-Clause
#include "broker/resync_writer.h"

#include <optional>

namespace mqc {

bool ResyncWriter::Begin(std::uint64_t generation) {
  active_ = false;
  if (!sink_->Emit(EventType::kResyncBegin, ResyncEvent{generation})) return false;
  generation_ = generation;
  open_queue_.clear();
  open_queue_.reserve(table_->open_count());
  table_->ForEachOpenClient([this](const void* client) { open_queue_.push_back(client); });
  open_next_ = 0;
  offline_queue_.clear();
  table_->ForEachListedOffline([this](const std::string& id) { offline_queue_.push_back(id); });
  offline_next_ = 0;
  active_ = true;
  return true;
}

template <typename Head>
bool ResyncWriter::EmitWhole(const Head& head, const SubscriptionList& subscriptions) {
  if (!sink_->Fits(head, subscriptions)) return false;
  bool ok = sink_->Emit(head);
  subscriptions.ForEach([&](const SubscriptionList::Entry& entry) {
    if (!ok) return;
    subscription_.seq = head.seq;
    subscription_.qos = entry.qos;
    subscription_.filter.assign(entry.filter);
    ok = sink_->Emit(EventType::kSubscribe, subscription_);
  });
  if (!ok) active_ = false;
  return ok;
}

bool ResyncWriter::EmitOpen(const void* client) {
  ConnectionEvent event;
  const SubscriptionList* subscriptions = table_->OpenRecord(client, &event);
  if (subscriptions == nullptr) return true;  // closed since the resync began
  return EmitWhole(event, *subscriptions);
}

bool ResyncWriter::EmitOffline(const std::string& id) {
  const OfflineSession* session = table_->ListedOffline(id);
  if (session == nullptr) return true;  // gone since
  return EmitWhole(session->event, session->subscriptions);
}

bool ResyncWriter::Continue() {
  if (!active_) return false;
  while (open_next_ < open_queue_.size()) {
    if (!EmitOpen(open_queue_[open_next_])) return false;
    ++open_next_;
  }
  while (offline_next_ < offline_queue_.size()) {
    if (!EmitOffline(offline_queue_[offline_next_])) return false;
    ++offline_next_;
  }
  const ResyncEvent end{generation_};
  if (!sink_->Fits(end) || !sink_->Emit(EventType::kResyncEnd, end)) return false;
  active_ = false;
  open_queue_.clear();
  offline_queue_.clear();
  return true;
}

bool ResyncStep(BrokerLink* link, ResyncWriter* writer) {
  if (const std::optional<std::uint64_t> generation = link->TakeResyncDue()) {
    if (!writer->Begin(*generation)) return false;  // Emit made it due again
  }
  if (!writer->active()) return true;
  return writer->Continue();
}

}  // namespace mqc
