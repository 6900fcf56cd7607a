// SPDX-License-Identifier: BSD-3-Clause
#include "companion/http/stream_sender.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "link/clock.h"

namespace mqc {

StreamSender::StreamSender(std::shared_ptr<HttpBodyStream> stream, int fd,
                           std::function<void()> park, std::function<void()> resume)
    : stream_(std::move(stream)),
      fd_(fd),
      park_(std::move(park)),
      wake_(std::make_shared<WakeState>(std::move(resume))),
      started_ns_(MonotonicNs()) {}

StreamSender::~StreamSender() { Done(); }

void StreamSender::WakeState::Wake() {
  bool resume_now = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (done) return;
    if (parked) {
      parked = false;
      resume_now = true;
    } else {
      woken = true;
    }
  }
  if (resume_now) resume();
}

void StreamSender::Wake() { wake_->Wake(); }

std::function<void()> StreamSender::WakeFunction() const {
  return [state = wake_] { state->Wake(); };
}

void StreamSender::Stop() {
  stream_->Stop();
  {
    std::lock_guard<std::mutex> lock(wake_->mutex);
    wake_->stopping = true;
  }
  Wake();
}

void StreamSender::Done() {
  std::lock_guard<std::mutex> lock(wake_->mutex);
  wake_->done = true;
}

bool StreamSender::PeerGone() const {
  if (fd_ < 0) return false;
  char byte = 0;
  const ssize_t n = recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;
  return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

ssize_t StreamSender::Read(char* buffer, std::size_t max) {
  if (sent_ == pending_.size() && !ended_) {
    pending_.clear();
    sent_ = 0;
    // The end, not an error: MHD logs an error as a failure of ours, and the peer is gone.
    if (PeerGone()) return kEndOfStream;
    constexpr int kMaxRounds = 16;  // each further round follows a Wake during the last
    for (int round = 0; round < kMaxRounds && pending_.empty() && !ended_; ++round) {
      {
        std::lock_guard<std::mutex> lock(wake_->mutex);
        wake_->woken = false;
      }
      const HttpBodyStream::Pull pull = stream_->Read(max, &pending_);
      if (pull == HttpBodyStream::Pull::kEnd) ended_ = true;
      if (pull != HttpBodyStream::Pull::kWait || !pending_.empty()) break;
      std::lock_guard<std::mutex> lock(wake_->mutex);
      if (wake_->stopping) {
        ended_ = true;  // a stopped stream that has nothing more: end it here
        break;
      }
      if (wake_->woken) continue;
      wake_->parked = true;
      park_();
      return 0;
    }
  }
  if (sent_ == pending_.size()) return ended_ ? kEndOfStream : 0;
  const std::size_t n = std::min(max, pending_.size() - sent_);
  std::memcpy(buffer, pending_.data() + sent_, n);
  sent_ += n;
  return static_cast<ssize_t>(n);
}

std::shared_ptr<StreamSender> StreamSet::Add(std::shared_ptr<HttpBodyStream> stream, int fd,
                                             std::function<void()> park,
                                             std::function<void()> resume) {
  HttpBodyStream& body = *stream;
  auto sender =
      std::make_shared<StreamSender>(std::move(stream), fd, std::move(park), std::move(resume));
  body.SetWake(sender->WakeFunction());
  bool closing = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.insert(sender);
    closing = closing_;
  }
  if (closing) sender->Stop();
  return sender;
}

void StreamSet::Finished(const std::shared_ptr<StreamSender>& sender) {
  sender->Done();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.erase(sender);
  }
  changed_.notify_all();
}

void StreamSet::Stop(std::int64_t started_before_ns, int wait_ms) {
  const auto selected = [started_before_ns](const StreamSender& sender) {
    return started_before_ns == 0 || sender.started_ns() < started_before_ns;
  };
  std::vector<std::shared_ptr<StreamSender>> stopping;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (started_before_ns == 0) closing_ = true;
    for (const auto& sender : live_) {
      if (selected(*sender)) stopping.push_back(sender);
    }
  }
  for (const auto& sender : stopping) sender->Stop();
  stopping.clear();
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, std::chrono::milliseconds(wait_ms), [&] {
    for (const auto& sender : live_) {
      if (selected(*sender)) return false;
    }
    return true;
  });
  // A stream whose client reads nothing may still be sending: MHD closes it at stop. None is
  // parked: Stop's wake resumed it, and a stopping stream never parks again.
}

void StreamSet::Tick() {
  // The wakes, not the senders: a sender MHD finishes meanwhile is not left to this thread to
  // destroy (a fleet watch's destructor waits for its peers' threads to end).
  std::vector<std::function<void()>> wakes;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wakes.reserve(live_.size());
    for (const auto& sender : live_) wakes.push_back(sender->WakeFunction());
  }
  for (const auto& wake : wakes) wake();
}

std::size_t StreamSet::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_.size();
}

}  // namespace mqc
