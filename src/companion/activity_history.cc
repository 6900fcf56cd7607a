// SPDX-License-Identifier: BSD-3-Clause
#include "companion/activity_history.h"

#include <algorithm>

namespace mqc {

namespace {

std::uint64_t Since(std::uint64_t now, std::uint64_t before) {
  return now >= before ? now - before : now;
}

std::uint64_t Load(const std::atomic<std::uint64_t>& counter) {
  return counter.load(std::memory_order_relaxed);
}

}  // namespace

ActivityTotals ReadActivityTotals(const BrokerCounters& counters, std::size_t open_connections,
                                  std::size_t flapping_clients) {
  ActivityTotals totals;
  totals.open_connections = open_connections;
  totals.flapping_clients = flapping_clients;
  totals.connects = Load(counters.connects);
  totals.connects_refused = Load(counters.connects_refused);
  for (std::size_t i = 0; i < 8; ++i) totals.disconnects[i] = Load(counters.disconnects[i]);
  totals.messages_received = Load(counters.received_messages);
  totals.messages_delivered = Load(counters.delivered_messages);
  totals.subscribes_refused =
      Load(counters.subscribes[static_cast<std::size_t>(SubscribeStatus::kError)]) +
      Load(counters.acl_denials[static_cast<std::size_t>(AclAccess::kSubscribe)]);
  totals.publishes_refused = Load(counters.acl_denials[static_cast<std::size_t>(AclAccess::kPublish)]);
  totals.acl_denials_shown = Load(counters.acl_denials_shown) != 0;
  return totals;
}

ActivityHistory::ActivityHistory(const ActivityHistoryOptions& options)
    : options_{std::max<std::int64_t>(options.interval_ns, 1),
               std::max<std::size_t>(options.samples, 1)} {}

void ActivityHistory::Sample(std::int64_t now_ns, const ActivityTotals& totals) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::int64_t interval = options_.interval_ns;
  acl_denials_shown_ = totals.acl_denials_shown;
  if (!started_) {
    started_ = true;
    last_ns_ = now_ns;
    next_ns_ = (now_ns / interval + 1) * interval;
    last_ = totals;
    return;
  }
  if (now_ns < next_ns_) return;
  ActivitySample sample;
  sample.end_ns = now_ns;
  sample.seconds = static_cast<std::uint32_t>(
      std::max<std::int64_t>((now_ns - last_ns_ + 500'000'000) / 1'000'000'000, 1));
  sample.open_connections = totals.open_connections;
  sample.connects = Since(totals.connects, last_.connects);
  sample.connects_refused = Since(totals.connects_refused, last_.connects_refused);
  for (std::size_t i = 0; i < 8; ++i) {
    sample.disconnects[i] = Since(totals.disconnects[i], last_.disconnects[i]);
  }
  sample.messages_received = Since(totals.messages_received, last_.messages_received);
  sample.messages_delivered = Since(totals.messages_delivered, last_.messages_delivered);
  sample.subscribes_refused = Since(totals.subscribes_refused, last_.subscribes_refused);
  sample.publishes_refused = Since(totals.publishes_refused, last_.publishes_refused);
  sample.flapping_clients = totals.flapping_clients;
  if (ring_.size() < options_.samples) {
    ring_.push_back(sample);
  } else {
    ring_[oldest_] = sample;
    oldest_ = (oldest_ + 1) % ring_.size();
  }
  last_ = totals;
  last_ns_ = now_ns;
  next_ns_ = (now_ns / interval + 1) * interval;
}

std::vector<ActivitySample> ActivityHistory::Samples() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<ActivitySample> samples;
  samples.reserve(ring_.size());
  for (std::size_t i = 0; i < ring_.size(); ++i) {
    samples.push_back(ring_[(oldest_ + i) % ring_.size()]);
  }
  return samples;
}

std::int64_t ActivityHistory::DueInNs(std::int64_t now_ns) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!started_) return 0;
  return std::max<std::int64_t>(next_ns_ - now_ns, 0);
}

bool ActivityHistory::acl_denials_shown() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return acl_denials_shown_;
}

}  // namespace mqc
