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

bool BrokerLink::Emit(EventType type, const std::string& payload) {
  if (events_.TryWrite(static_cast<std::uint16_t>(type), payload.data(),
                       static_cast<std::uint32_t>(payload.size()))) {
    return true;
  }
  auto& lost = region_->header()->broker.events_lost;
  lost.store(lost.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  resync_due_ = true;
  return false;
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

bool BrokerLink::Fits(const std::vector<std::size_t>& payload_sizes) const {
  return events_.Fits(payload_sizes);
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
