// SPDX-License-Identifier: BSD-3-Clause
// A file descriptor that is closed when its owner goes, unless released to a new owner: the
// sockets opened for one job (a listener being set up, a sock_diag dump, a test's connections)
// are closed on every way out. Movable, not copyable; no thread-safety of its own.
#pragma once

#include <unistd.h>

#include <utility>

namespace mqc {

class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      Close();
      fd_ = other.release();
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Close(); }

  int get() const noexcept { return fd_; }
  // The descriptor, no longer closed here; -1 is left behind.
  int release() noexcept { return std::exchange(fd_, -1); }

 private:
  // Nothing is to be done about a failed close of a descriptor that is being given up.
  void Close() noexcept {
    if (fd_ >= 0) (void)close(fd_);
  }

  int fd_;
};

}  // namespace mqc
