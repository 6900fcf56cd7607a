// SPDX-License-Identifier: BSD-3-Clause
// Starts, watches and stops the companion process from the broker thread.
//
// posix_spawn (vfork + exec: no copy of the broker's page tables) with the shared memory
// descriptor as fd 3 and every other inherited descriptor closed (the broker's listener and
// client sockets must not leak into it), default signal handling, an empty signal mask and a
// process group of its own (a terminal's Ctrl-C reaches the broker, which then stops it). The
// companion asks the kernel to kill it when the broker dies (PR_SET_PDEATHSIG).
//
// Threads: the broker thread only. Syscalls here happen at init, TICK and cleanup, never per
// message.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "link/status.h"

namespace mqc {

inline constexpr int kCompanionSharedFd = 3;

class CompanionProcess {
 public:
  CompanionProcess(std::string executable, std::vector<std::string> arguments, int shared_fd);
  ~CompanionProcess();  // stops it
  CompanionProcess(const CompanionProcess&) = delete;
  CompanionProcess& operator=(const CompanionProcess&) = delete;

  // Starts the process unless it runs already. A failed posix_spawn set-up (attributes, file
  // actions, the descriptor copy) is kInternal; a spawn the system refuses (no such executable,
  // no permission, no resources) is kUnavailable.
  Status Start();

  // Arguments added after the constructor's at the next Start (replacing earlier extras).
  void SetExtraArguments(std::vector<std::string> extra) { extra_arguments_ = std::move(extra); }

  // Non-blocking. True once the process has ended (it is reaped); *how says how it ended.
  bool Exited(std::string* how);

  // SIGTERM, up to `grace_ms` for it to end, then SIGKILL; reaps it.
  void Stop(int grace_ms);

  // SIGKILL and reap, without waiting for anything else: for a companion that failed or stopped
  // answering, from the broker thread.
  void Kill();

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }

 private:
  std::string executable_;
  std::vector<std::string> arguments_;
  std::vector<std::string> extra_arguments_;
  int shared_fd_;
  pid_t pid_ = -1;
};

}  // namespace mqc
