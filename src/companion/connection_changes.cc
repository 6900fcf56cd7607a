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

// Every field, so that a subscription made again from `after` is the one published. A field
// added to Subscription or TopicMapping changes their sizes: compare it here too.
bool SameSubscription(const Subscription& a, const Subscription& b) {
  static_assert(sizeof(Subscription) == 104 && sizeof(TopicMapping) == 56,
                "compare the new field in SameSubscription");
  return a.filter == b.filter && a.qos == b.qos && a.mapping.pattern == b.mapping.pattern &&
         a.mapping.channel == b.mapping.channel &&
         *a.mapping.shared_group == *b.mapping.shared_group &&
         *a.mapping.error == *b.mapping.error && *a.kubemq_error == *b.kubemq_error;
}

}  // namespace

ConnectionChanges::ConnectionChanges(const ConnectionChangesOptions& options)
    : history_(std::max<std::size_t>(options.history, 1)),
      last_(options.start_sequence != 0 ? options.start_sequence : UnixMicrosecondsNow()) {
  woken_at_ = last_;
}

void ConnectionChanges::Publish(ConnectionChange change) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    change.sequence = ++last_;
    Kept kept;
    kept.kind = change.kind;
    kept.before = change.before;
    kept.after = change.after;
    if (change.after && !change.after->subscriptions.empty() &&
        SameSubscription(change.after->subscriptions.back(), change.subscription)) {
      kept.subscription_is_last = true;
    } else if (!SameSubscription(change.subscription, Subscription{})) {
      kept.subscription = std::make_unique<const Subscription>(change.subscription);
    }
    changes_.push_back(std::move(kept));
    while (changes_.size() > history_) changes_.pop_front();
    DropMadeVersion(change);
  }
  if (listener_) listener_(change);
}

ConnectionChanges::Read ConnectionChanges::ReadAfter(
    std::uint64_t after, std::size_t max, std::vector<ConnectionChangePtr>* out) const {
  out->clear();
  std::lock_guard<std::mutex> lock(mutex_);
  if (after > last_) return Read::kGap;
  if (after == last_) return Read::kNothing;
  const std::uint64_t oldest = last_ + 1 - changes_.size();
  if (after + 1 < oldest) return Read::kGap;
  std::size_t index = static_cast<std::size_t>(after + 1 - oldest);
  MadeVersions made;
  for (; index < changes_.size() && out->size() < max; ++index) {
    if (changes_[index].kind == ChangeKind::kReset) break;
    out->push_back(AsPublished(index, &made));
  }
  if (out->empty()) return Read::kGap;  // the next one is a reset
  return Read::kChanges;
}

void ConnectionChanges::DropMadeVersion(const ConnectionChange& change) {
  const std::size_t newest = changes_.size() - 1;
  if (change.kind != ChangeKind::kSubscribed || !change.before || !change.after) return;
  const std::vector<Subscription>& now = change.after->subscriptions;
  if (now.size() != change.before->subscriptions.size() + 1 ||
      now.back().filter != change.subscription.filter) {
    return;  // not one subscription added at the end (a QoS changed)
  }
  const std::size_t look_back = std::min(newest, kMaxLookBack);
  for (std::size_t back = 1; back <= look_back; ++back) {
    const std::size_t earlier = newest - back;
    Kept& kept = changes_[earlier];
    if (kept.after != change.before) continue;
    const std::uint8_t steps =
        kept.before_made ? static_cast<std::uint8_t>(kept.steps + 1) : std::uint8_t{1};
    // Kept: the next change of the run starts again from this version.
    if (steps > kMaxMadeVersions) return;
    kept.after = nullptr;
    kept.after_from = static_cast<std::uint32_t>(back);
    Kept& made = changes_[newest];
    made.before = nullptr;
    made.before_made = true;
    made.steps = steps;
    return;
  }
}

ConnectionChangePtr ConnectionChanges::AsPublished(std::size_t index, MadeVersions* made) const {
  const Kept& kept = changes_[index];
  auto change = std::make_shared<ConnectionChange>();
  change->sequence = last_ + 1 - changes_.size() + index;
  change->kind = kept.kind;
  change->before = BeforeOf(index, made);
  change->after = AfterOf(index, made);
  if (kept.subscription) {
    change->subscription = *kept.subscription;
  } else if (kept.subscription_is_last) {
    change->subscription = change->after->subscriptions.back();
  }
  return change;
}

ConnectionPtr ConnectionChanges::BeforeOf(std::size_t index, MadeVersions* made) const {
  if (!changes_[index].before_made) return changes_[index].before;
  ConnectionPtr& before = (*made)[index];
  if (!before) {
    auto version = std::make_shared<Connection>(*AfterOf(index, made));
    version->subscriptions.pop_back();
    before = std::move(version);
  }
  return before;
}

ConnectionPtr ConnectionChanges::AfterOf(std::size_t index, MadeVersions* made) const {
  const std::uint32_t from = changes_[index].after_from;
  return from == 0 ? changes_[index].after : BeforeOf(index + from, made);
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
