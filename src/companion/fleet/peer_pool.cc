// SPDX-License-Identifier: BSD-3-Clause
// PeerPool (see peer_pool.h).
#include "companion/fleet/peer_pool.h"

#include <poll.h>

#include <algorithm>
#include <iterator>
#include <utility>

namespace mqc {
namespace {

using Clock = std::chrono::steady_clock;

// An idle connection has nothing to read: readable means the peer closed it (end of stream,
// a reset) or sent what no request asked for. Either way it cannot carry the next request.
bool StillOpen(const PeerLink& link) {
  if (link.tls && gnutls_record_check_pending(link.tls.get()) > 0) return false;
  pollfd p{link.fd.get(), POLLIN, 0};
  return poll(&p, 1, 0) == 0;
}

}  // namespace

PeerPool::PeerPool(PeerPoolOptions options)
    : options_(options), sweeper_([this] { Sweep(); }) {}

PeerPool::~PeerPool() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  sweeper_.join();
}

std::optional<PeerLink> PeerPool::Take(const std::string& peer) {
  // Bounded by max_idle_per_peer: every turn removes one.
  for (;;) {
    std::optional<PeerLink> link;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      const auto found = idle_.find(peer);
      if (found == idle_.end() || found->second.empty()) return std::nullopt;
      link = std::move(found->second.back());
      found->second.pop_back();
    }
    if (Clock::now() - link->idle_since < options_.idle_timeout && StillOpen(*link)) return link;
  }
}

void PeerPool::Put(const std::string& peer, PeerLink link) {
  if (options_.max_idle_per_peer == 0) return;
  link.idle_since = Clock::now();
  std::optional<PeerLink> closed;  // closed outside the lock
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::vector<PeerLink>& idle = idle_[peer];
    if (idle.size() >= options_.max_idle_per_peer) {
      closed = std::move(idle.front());
      idle.erase(idle.begin());
    }
    idle.push_back(std::move(link));
  }
  wake_.notify_all();
}

std::size_t PeerPool::Idle() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::size_t count = 0;
  for (const auto& [peer, idle] : idle_) count += idle.size();
  return count;
}

void PeerPool::Sweep() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    std::vector<PeerLink> expired;
    std::optional<Clock::time_point> next;
    const Clock::time_point now = Clock::now();
    for (auto& [peer, idle] : idle_) {
      // Oldest first: the expired ones are a prefix.
      auto keep = std::find_if(idle.begin(), idle.end(), [&](const PeerLink& link) {
        return now - link.idle_since < options_.idle_timeout;
      });
      std::move(idle.begin(), keep, std::back_inserter(expired));
      idle.erase(idle.begin(), keep);
      if (!idle.empty()) {
        const Clock::time_point due = idle.front().idle_since + options_.idle_timeout;
        next = next ? std::min(*next, due) : due;
      }
    }
    if (!expired.empty()) {
      lock.unlock();
      expired.clear();
      lock.lock();
      continue;
    }
    if (next) {
      wake_.wait_until(lock, *next);
    } else {
      wake_.wait(lock);
    }
  }
}

}  // namespace mqc
