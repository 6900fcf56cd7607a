// SPDX-License-Identifier: BSD-3-Clause
// See flapping_tracker.h.
#include "companion/flapping_tracker.h"

#include <algorithm>
#include <limits>
#include <memory>

namespace mqc {
namespace {

constexpr std::int64_t kNsPerSecond = 1000000000;

std::int64_t SecondOf(std::int64_t time_ns) { return time_ns <= 0 ? 0 : time_ns / kNsPerSecond; }

std::size_t Slot(std::int64_t unit) { return static_cast<std::size_t>(unit % 60); }

void Bump(std::uint16_t* counter) {
  if (*counter < std::numeric_limits<std::uint16_t>::max()) ++*counter;
}

}  // namespace

void FlappingTracker::Rate::Add(std::int64_t second) {
  if (latest_second_ >= 0 && second < latest_second_) second = latest_second_;  // a step back
  if (latest_second_ < 0) {
    latest_second_ = second;
  } else if (second > latest_second_) {
    // Clear the slots of the seconds and minutes skipped over, at most a whole ring each.
    for (std::int64_t s = latest_second_ + 1; s <= std::min(second, latest_second_ + 60); ++s) {
      per_second_[Slot(s)] = 0;
    }
    const std::int64_t latest_minute = latest_second_ / 60;
    for (std::int64_t m = latest_minute + 1; m <= std::min(second / 60, latest_minute + 60); ++m) {
      per_minute_[Slot(m)] = 0;
    }
    latest_second_ = second;
  }
  Bump(&per_second_[Slot(second)]);
  Bump(&per_minute_[Slot(second / 60)]);
}

std::uint32_t FlappingTracker::Rate::Seconds(std::int64_t now_second, std::int64_t seconds) const {
  std::uint32_t sum = 0;
  // The slots hold the 60 seconds up to latest_second_; those within the window up to now count.
  for (std::int64_t s = latest_second_; s >= 0 && s > latest_second_ - 60; --s) {
    if (s > now_second - seconds && s <= now_second) sum += per_second_[Slot(s)];
  }
  return sum;
}

std::uint32_t FlappingTracker::Rate::Minutes(std::int64_t now_second, std::int64_t minutes) const {
  if (latest_second_ < 0) return 0;
  std::uint32_t sum = 0;
  const std::int64_t latest_minute = latest_second_ / 60;
  const std::int64_t now_minute = now_second / 60;
  for (std::int64_t m = latest_minute; m >= 0 && m > latest_minute - 60; --m) {
    if (m > now_minute - minutes && m <= now_minute) sum += per_minute_[Slot(m)];
  }
  return sum;
}

FlappingTracker::FlappingTracker(std::size_t max_client_ids)
    : max_client_ids_(std::max<std::size_t>(max_client_ids, 1)) {}

FlappingTracker::Entry& FlappingTracker::Touch(std::string_view client_id, std::int64_t second) {
  auto found = ids_.find(client_id);
  if (found != ids_.end()) {
    entries_.splice(entries_.begin(), entries_, found->second);  // keys stay valid
    Entry& entry = entries_.front();
    entry.latest_second = std::max(entry.latest_second, second);
    return entry;
  }
  if (ids_.size() >= max_client_ids_) {  // the least recently active goes (an idle one first)
    ids_.erase(entries_.back().client_id);
    entries_.pop_back();
    ++dropped_;
  }
  entries_.push_front(Entry{});
  Entry& entry = entries_.front();
  entry.client_id = std::string(client_id);
  entry.latest_second = second;
  ids_.emplace(entry.client_id, entries_.begin());
  return entry;
}

void FlappingTracker::Connected(std::string_view client_id, std::string_view address,
                                std::int64_t time_ns) {
  const std::int64_t second = SecondOf(time_ns);
  Entry& entry = Touch(client_id, second);
  entry.connects.Add(second);
  if (!address.empty() && entry.addresses[0] != address) {
    entry.addresses[1] = std::move(entry.addresses[0]);
    entry.addresses[0] = std::string(address);
  }
}

void FlappingTracker::TakenOver(std::string_view client_id, std::int64_t time_ns) {
  const std::int64_t second = SecondOf(time_ns);
  Entry& entry = Touch(client_id, second);
  if (!entry.takeovers) entry.takeovers = std::make_unique<Rate>();
  entry.takeovers->Add(second);
  ++takeovers_total_;
}

std::uint32_t FlappingTracker::ConnectsWithin(std::string_view client_id, std::uint32_t window_s,
                                              std::int64_t now_ns) const {
  auto found = ids_.find(client_id);
  if (found == ids_.end() || window_s == 0) return 0;
  const Rate& connects = found->second->connects;
  const std::int64_t now = SecondOf(now_ns);
  if (window_s <= 60) return connects.Seconds(now, window_s);
  return connects.Minutes(now, std::min<std::int64_t>((window_s + 59) / 60, 60));
}

FlappingCounts FlappingTracker::Read(std::string_view client_id, std::int64_t now_ns) const {
  FlappingCounts counts;
  auto found = ids_.find(client_id);
  if (found == ids_.end()) return counts;
  const Entry& entry = *found->second;
  const std::int64_t now = SecondOf(now_ns);
  counts.connects_last_minute = entry.connects.LastMinute(now);
  counts.connects_last_hour = entry.connects.LastHour(now);
  if (entry.takeovers) {
    counts.takeovers_last_minute = entry.takeovers->LastMinute(now);
    counts.takeovers_last_hour = entry.takeovers->LastHour(now);
  }
  counts.addresses = entry.addresses;
  return counts;
}

std::size_t FlappingTracker::FlappingNow(std::int64_t now_ns) const {
  const std::int64_t now = SecondOf(now_ns);
  std::size_t flapping = 0;
  for (const Entry& entry : entries_) {
    if (entry.latest_second <= now - 60) break;  // this one and every later one: quiet
    if (entry.connects.LastMinute(now) >= kFlappingConnects ||
        (entry.takeovers && entry.takeovers->LastMinute(now) > 0)) {
      ++flapping;
    }
  }
  return flapping;
}

}  // namespace mqc
