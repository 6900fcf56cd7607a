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
    held_.emplace_back();
    while (changes_.size() > history_) {
      changes_.pop_front();
      held_.pop_front();
    }
    DropMadeVersion();
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
  MadeVersions made;
  for (; index < changes_.size() && out->size() < max; ++index) {
    if (changes_[index]->kind == ChangeKind::kReset) break;
    out->push_back(AsPublished(index, &made));
  }
  if (out->empty()) return Read::kGap;  // the next one is a reset
  return Read::kChanges;
}

void ConnectionChanges::DropMadeVersion() {
  const std::size_t newest = changes_.size() - 1;
  const ConnectionChange& change = *changes_[newest];  // Publish holds it when replaced below
  if (change.kind != ChangeKind::kSubscribed || !change.before || !change.after) return;
  const std::vector<Subscription>& now = change.after->subscriptions;
  if (now.size() != change.before->subscriptions.size() + 1 ||
      now.back().filter != change.subscription.filter) {
    return;  // not one subscription added at the end (a QoS changed)
  }
  const std::size_t look_back = std::min(newest, kMaxLookBack);
  for (std::size_t back = 1; back <= look_back; ++back) {
    const std::size_t earlier = newest - back;
    if (changes_[earlier]->after != change.before) continue;
    const Held& held = held_[earlier];
    const std::uint8_t steps =
        held.before_made ? static_cast<std::uint8_t>(held.steps + 1) : std::uint8_t{1};
    // Kept: the next change of the run starts again from this version.
    if (steps > kMaxMadeVersions) return;
    auto without_after = std::make_shared<ConnectionChange>(*changes_[earlier]);
    without_after->after = nullptr;
    changes_[earlier] = std::move(without_after);
    held_[earlier].after_from = static_cast<std::uint32_t>(back);
    auto without_before = std::make_shared<ConnectionChange>(change);
    without_before->before = nullptr;
    changes_[newest] = std::move(without_before);
    held_[newest].before_made = true;
    held_[newest].steps = steps;
    return;
  }
}

ConnectionChangePtr ConnectionChanges::AsPublished(std::size_t index, MadeVersions* made) const {
  const Held& held = held_[index];
  if (held.after_from == 0 && !held.before_made) return changes_[index];
  auto change = std::make_shared<ConnectionChange>(*changes_[index]);
  change->before = BeforeOf(index, made);
  change->after = AfterOf(index, made);
  return change;
}

ConnectionPtr ConnectionChanges::BeforeOf(std::size_t index, MadeVersions* made) const {
  if (!held_[index].before_made) return changes_[index]->before;
  ConnectionPtr& before = (*made)[index];
  if (!before) {
    auto version = std::make_shared<Connection>(*AfterOf(index, made));
    version->subscriptions.pop_back();
    before = std::move(version);
  }
  return before;
}

ConnectionPtr ConnectionChanges::AfterOf(std::size_t index, MadeVersions* made) const {
  const std::uint32_t from = held_[index].after_from;
  return from == 0 ? changes_[index]->after : BeforeOf(index + from, made);
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
