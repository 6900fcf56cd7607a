// SPDX-License-Identifier: BSD-3-Clause
#include "companion/connection_changes.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace mqc {

namespace {

std::uint64_t UnixMicrosecondsNow() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(now).count());
}

}  // namespace

ConnectionChanges::ConnectionChanges(const ConnectionChangesOptions& options)
    : history_(std::max<std::size_t>(options.history, 1)),
      last_(options.start_sequence != 0 ? options.start_sequence : UnixMicrosecondsNow()) {
  woken_at_ = last_;
}

void ConnectionChanges::Publish(ConnectionChange change) {
  auto shared = std::make_shared<ConnectionChange>(std::move(change));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shared->sequence = ++last_;
    changes_.push_back(shared);
    while (changes_.size() > history_) changes_.pop_front();
  }
  if (listener_) listener_(*shared);
}

ConnectionChanges::Read ConnectionChanges::ReadAfter(
    std::uint64_t after, std::size_t max, std::vector<ConnectionChangePtr>* out) const {
  out->clear();
  std::lock_guard<std::mutex> lock(mutex_);
  if (after > last_) return Read::kGap;
  if (after == last_) return Read::kNothing;
  const std::uint64_t oldest = changes_.empty() ? last_ + 1 : changes_.front()->sequence;
  if (after + 1 < oldest) return Read::kGap;
  std::size_t index = static_cast<std::size_t>(after + 1 - oldest);
  for (; index < changes_.size() && out->size() < max; ++index) {
    const ConnectionChangePtr& change = changes_[index];
    if (change->kind == ChangeKind::kReset) break;
    out->push_back(change);
  }
  if (out->empty()) return Read::kGap;  // the next one is a reset
  return Read::kChanges;
}

std::uint64_t ConnectionChanges::last_sequence() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_;
}

std::uint64_t ConnectionChanges::AddWaiter(std::function<void()> wake) {
  std::lock_guard<std::mutex> lock(waiters_mutex_);
  const std::uint64_t id = next_waiter_++;
  waiters_.emplace(id, std::move(wake));
  return id;
}

void ConnectionChanges::RemoveWaiter(std::uint64_t id) {
  std::lock_guard<std::mutex> lock(waiters_mutex_);
  waiters_.erase(id);
}

void ConnectionChanges::WakeWaiters() {
  const std::uint64_t last = last_sequence();
  std::vector<std::function<void()>> wakes;
  {
    std::lock_guard<std::mutex> lock(waiters_mutex_);
    if (last == woken_at_) return;
    woken_at_ = last;
    wakes.reserve(waiters_.size());
    for (const auto& [id, wake] : waiters_) wakes.push_back(wake);
  }
  // Outside the lock: a wake-up may drop the last reference to its stream, whose destructor
  // removes its waiter (the same mutex), and it takes libmicrohttpd's locks, under which
  // libmicrohttpd may free another stream.
  for (const auto& wake : wakes) wake();
}

}  // namespace mqc
