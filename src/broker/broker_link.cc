// SPDX-License-Identifier: BSD-3-Clause
#include "broker/broker_link.h"

#include <algorithm>
#include <string_view>
#include <utility>

namespace mqc {

BrokerLink::BrokerLink(SharedRegion* region)
    : region_(region),
      events_(&region->header()->events, region->events_data(), region->header()->events_capacity),
      commands_(&region->header()->commands, region->commands_data(),
                region->header()->commands_capacity) {}

template <typename Event>
bool BrokerLink::Write(EventType type, const Event& event) {
  Encode(event, &buffer_);
  if (events_.TryWrite(static_cast<std::uint16_t>(type), buffer_.data(),
                       static_cast<std::uint32_t>(buffer_.size()))) {
    return true;
  }
  auto& lost = region_->header()->broker.events_lost;
  lost.store(lost.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  resync_due_ = true;
  return false;
}

bool BrokerLink::Emit(const ConnectionEvent& event) { return Write(EventType::kConnection, event); }

bool BrokerLink::Emit(const CloseEvent& event) { return Write(EventType::kClose, event); }

bool BrokerLink::Emit(EventType type, const SubscriptionEvent& event) { return Write(type, event); }

bool BrokerLink::Emit(const OfflineSessionEvent& event) {
  return Write(EventType::kOfflineSession, event);
}

bool BrokerLink::Emit(const OfflineSessionEndEvent& event) {
  return Write(EventType::kOfflineSessionEnd, event);
}

bool BrokerLink::Emit(EventType type, const ResyncEvent& event) { return Write(type, event); }

bool BrokerLink::Emit(const SettingsEvent& event) { return Write(EventType::kSettings, event); }

bool BrokerLink::Emit(const BridgeEvent& event) { return Write(EventType::kBridge, event); }

template <typename Head>
bool BrokerLink::FitsWhole(const Head& head, const SubscriptionList& subscriptions) {
  sizes_.clear();
  Encode(head, &buffer_);
  sizes_.push_back(buffer_.size());
  subscription_.seq = head.seq;
  subscriptions.ForEach([&](const SubscriptionList::Entry& entry) {
    subscription_.qos = entry.qos;
    subscription_.filter.assign(entry.filter);
    Encode(subscription_, &buffer_);
    sizes_.push_back(buffer_.size());
  });
  return events_.Fits(sizes_);
}

bool BrokerLink::Fits(const ConnectionEvent& head, const SubscriptionList& subscriptions) {
  return FitsWhole(head, subscriptions);
}

bool BrokerLink::Fits(const OfflineSessionEvent& head, const SubscriptionList& subscriptions) {
  return FitsWhole(head, subscriptions);
}

bool BrokerLink::Fits(const ResyncEvent& event) {
  Encode(event, &buffer_);
  const std::size_t size[] = {buffer_.size()};
  return events_.Fits(size);
}

std::size_t BrokerLink::DrainCommands(const std::function<void(const LogCommand&)>& log,
                                      const std::function<void(const KickCommand&)>& kick,
                                      const std::function<void(BansCommand&&)>& bans) {
  std::size_t count = 0;
  RingRecord record;
  while (commands_.Peek(&record)) {
    ++count;
    const std::string_view bytes(reinterpret_cast<const char*>(record.payload), record.size);
    if (record.type == static_cast<std::uint16_t>(CommandType::kLog)) {
      LogCommand command;
      if (Decode(bytes, &command)) log(command);
    } else if (record.type == static_cast<std::uint16_t>(CommandType::kKick) && kick) {
      KickCommand command;
      if (Decode(bytes, &command)) {
        kick(command);
      } else {
        log({LogLevel::kWarning,
             "mosquitto_connections: a malformed disconnect request from the companion was "
             "ignored"});
      }
    } else if (record.type == static_cast<std::uint16_t>(CommandType::kBans) && bans) {
      BansCommand command;
      if (Decode(bytes, &command)) {
        bans(std::move(command));
      } else {
        log({LogLevel::kWarning,
             "mosquitto_connections: a malformed ban list from the companion was ignored; the "
             "bans in force stay"});
      }
    }
    commands_.Pop();
  }
  return count;
}

std::optional<std::uint64_t> BrokerLink::TakeResyncDue() {
  const std::uint64_t requested =
      region_->header()->companion.resync_requested.load(std::memory_order_acquire);
  if (requested == handled_request_ && !resync_due_) return std::nullopt;
  resync_due_ = false;
  handled_request_ = requested;
  ++generation_;
  region_->header()->broker.resync_started.store(generation_, std::memory_order_release);
  return generation_;
}

std::uint64_t BrokerLink::ReleaseReadPages() {
  constexpr std::uint64_t kPage = 4096;  // the events ring starts on a page of the memfd
  const SharedHeader& header = *region_->header();
  const std::uint64_t capacity = header.events_capacity;
  if (capacity < kPage) return 0;
  const std::uint64_t tail = header.events.tail.load(std::memory_order_acquire);
  const std::uint64_t head = header.events.head.load(std::memory_order_relaxed);
  // Read bytes: before the page the consumer's tail is on. Bytes below `head_page_end -
  // capacity` share no page with the unread records [tail, head) nor the writer's next ones.
  const std::uint64_t end = tail & ~(kPage - 1);
  const std::uint64_t head_page_end = (head + kPage - 1) & ~(kPage - 1);
  std::uint64_t begin = released_;
  if (head_page_end > capacity) begin = std::max(begin, head_page_end - capacity);
  if (end < begin + kReleaseStep) return 0;
  const std::uint64_t length = end - begin;
  const std::uint64_t offset = begin & (capacity - 1);
  const std::uint64_t first = std::min(length, capacity - offset);
  bool ok = region_->ReleaseEventBytes(offset, first);
  if (ok && length > first) ok = region_->ReleaseEventBytes(0, length - first);
  released_ = end;  // a refusal is not retried: the pages stay, as without this
  return ok ? length : 0;
}

std::uint64_t BrokerLink::events_lost() const {
  return region_->header()->broker.events_lost.load(std::memory_order_relaxed);
}

}  // namespace mqc
