// SPDX-License-Identifier: BSD-3-Clause
#include "companion/companion_link.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string_view>
#include <thread>

namespace mqc {

namespace {

template <typename Event, typename Use>
bool Decoded(std::string_view payload, Use use) {
  Event event;
  if (!Decode(payload, &event)) return false;
  use(event);
  return true;
}

}  // namespace

bool ApplyEventRecord(ConnectionRegistry* registry, EventType type, std::string_view payload,
                      std::int64_t now_ns) {
  ConnectionRegistry& r = *registry;
  switch (type) {
    case EventType::kConnection:
      return Decoded<ConnectionEvent>(payload, [&](const auto& e) { r.Apply(e); });
    case EventType::kClose:
      return Decoded<CloseEvent>(payload, [&](const auto& e) { r.Apply(e, now_ns); });
    case EventType::kSubscribe:
    case EventType::kUnsubscribe:
      return Decoded<SubscriptionEvent>(
          payload, [&](const auto& e) { r.ApplySubscription(type == EventType::kSubscribe, e); });
    case EventType::kResyncBegin:
      return Decoded<ResyncEvent>(payload, [&](const auto& e) { r.BeginResync(e); });
    case EventType::kResyncEnd:
      return Decoded<ResyncEvent>(payload, [&](const auto& e) { r.EndResync(e); });
    case EventType::kOfflineSession:
      return Decoded<OfflineSessionEvent>(payload, [&](const auto& e) { r.Apply(e); });
    case EventType::kOfflineSessionEnd:
      return Decoded<OfflineSessionEndEvent>(payload, [&](const auto& e) { r.Apply(e); });
    case EventType::kSettings:
      return Decoded<SettingsEvent>(payload, [&](const auto& e) { r.Apply(e, now_ns); });
    case EventType::kBridge:
      return Decoded<BridgeEvent>(payload, [&](const auto& e) { r.Apply(e); });
  }
  return false;
}

CompanionLink::CompanionLink(SharedRegion* region)
    : region_(region),
      events_(&region->header()->events, region->events_data(), region->header()->events_capacity),
      commands_(&region->header()->commands, region->commands_data(),
                region->header()->commands_capacity) {}

void CompanionLink::Begin() {
  events_.SkipToHead();
  auto& requested = region_->header()->companion.resync_requested;
  requested.fetch_add(1, std::memory_order_acq_rel);
}

std::size_t CompanionLink::Poll(ConnectionRegistry* registry, std::int64_t now_ns) {
  std::size_t count = 0;
  RingRecord record;
  while (events_.Peek(&record)) {
    const std::string_view bytes(reinterpret_cast<const char*>(record.payload), record.size);
    if (!ApplyEventRecord(registry, static_cast<EventType>(record.type), bytes, now_ns)) {
      ++malformed_;
    }
    if (record.type == static_cast<std::uint16_t>(EventType::kSettings)) ++settings_seen_;
    events_.Pop();
    ++count;
  }
  return count;
}

bool CompanionLink::Log(LogLevel level, const std::string& text) {
  std::lock_guard<std::mutex> lock(log_mutex_);
  LogCommand command{level, "mosquitto_connections: " + text};
  Encode(command, &buffer_);
  return commands_.TryWrite(static_cast<std::uint16_t>(CommandType::kLog), buffer_.data(),
                            static_cast<std::uint32_t>(buffer_.size()));
}

bool CompanionLink::RequestKick(const KickCommand& command) {
  std::lock_guard<std::mutex> lock(log_mutex_);
  Encode(command, &buffer_);
  return commands_.TryWrite(static_cast<std::uint16_t>(CommandType::kKick), buffer_.data(),
                            static_cast<std::uint32_t>(buffer_.size()));
}

std::uint64_t CompanionLink::SendBans(const std::vector<Ban>& bans) {
  BansCommand command;
  command.bans = bans;
  std::lock_guard<std::mutex> lock(log_mutex_);
  auto& sent = region_->header()->companion.bans_sent;
  command.sequence = sent.load(std::memory_order_relaxed) + 1;
  Encode(command, &buffer_);
  if (!commands_.TryWrite(static_cast<std::uint16_t>(CommandType::kBans), buffer_.data(),
                          static_cast<std::uint32_t>(buffer_.size()))) {
    return 0;
  }
  sent.store(command.sequence, std::memory_order_relaxed);
  return command.sequence;
}

std::uint64_t CompanionLink::bans_sent() const {
  return region_->header()->companion.bans_sent.load(std::memory_order_relaxed);
}

bool CompanionLink::WaitForBans(std::uint64_t sequence, std::int64_t timeout_ns) {
  const auto& applied = region_->header()->broker.bans_applied;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
  while (applied.load(std::memory_order_acquire) < sequence) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

void CompanionLink::ReportServing(int port) {
  auto& companion = region_->header()->companion;
  companion.http_port.store(port, std::memory_order_relaxed);
  companion.state.store(static_cast<std::uint32_t>(CompanionState::kServing),
                        std::memory_order_release);
}

void CompanionLink::Heartbeat() {
  auto& heartbeat = region_->header()->companion.heartbeat;
  heartbeat.store(heartbeat.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

void CompanionLink::WaitForEvents(std::int64_t timeout_ns) {
  WaitForBrokerEvents(region_->header(), timeout_ns);
}

void CompanionLink::ReportFailed(const std::string& why) {
  auto& companion = region_->header()->companion;
  const std::size_t n = std::min(why.size(), sizeof(companion.failure) - 1);
  std::memcpy(companion.failure, why.data(), n);
  companion.failure[n] = '\0';
  companion.state.store(static_cast<std::uint32_t>(CompanionState::kFailed),
                        std::memory_order_release);
}

}  // namespace mqc
