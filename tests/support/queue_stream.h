// SPDX-License-Identifier: BSD-3-Clause
// A scripted HTTP body stream for the tests of the server and its stream pump.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <utility>

#include "companion/http/http_message.h"

namespace mqc {

// A body stream that sends what is queued, waits (parks) when nothing is, and ends on Stop.
class QueueStream final : public HttpBodyStream {
 public:
  void SetWake(std::function<void()> wake) override {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_ = std::move(wake);
  }
  Pull Read(std::size_t /*max*/, std::string* out) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++reads_;
    if (stopped_) {
      out->append("stopped\n");
      return Pull::kEnd;
    }
    if (queued_.empty()) return Pull::kWait;
    out->append(queued_);
    queued_.clear();
    return Pull::kData;
  }
  void Stop() override {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
  }
  void Push(const std::string& text) {
    std::function<void()> wake;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queued_ += text;
      wake = wake_;
    }
    if (wake) wake();  // the server resumes the parked connection
  }
  int reads() {
    std::lock_guard<std::mutex> lock(mutex_);
    return reads_;
  }

 private:
  std::mutex mutex_;
  std::function<void()> wake_;
  std::string queued_;
  bool stopped_ = false;
  int reads_ = 0;
};

}  // namespace mqc
