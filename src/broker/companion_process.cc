// SPDX-License-Identifier: BSD-3-Clause
#include "broker/companion_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "link/clock.h"

extern char** environ;

namespace mqc {

namespace {

std::string DescribeStatus(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  }
  return "ended (status " + std::to_string(status) + ")";
}

// posix_spawn attributes and file actions with RAII, so every early return cleans up.
class SpawnSetup {
 public:
  SpawnSetup() {
    ok_ = posix_spawnattr_init(&attr_) == 0;
    ok_ = posix_spawn_file_actions_init(&actions_) == 0 && ok_;
  }
  ~SpawnSetup() {
    posix_spawnattr_destroy(&attr_);
    posix_spawn_file_actions_destroy(&actions_);
  }
  bool ok() const { return ok_; }
  posix_spawnattr_t attr_;
  posix_spawn_file_actions_t actions_;

 private:
  bool ok_ = false;
};

}  // namespace

CompanionProcess::CompanionProcess(std::string executable, std::vector<std::string> arguments,
                                   int shared_fd)
    : executable_(std::move(executable)), arguments_(std::move(arguments)), shared_fd_(shared_fd) {}

CompanionProcess::~CompanionProcess() { Stop(2000); }

Status CompanionProcess::Start() {
  if (running()) return Status();
  SpawnSetup setup;
  if (!setup.ok()) return Status(StatusCode::kInternal, "posix_spawn set-up failed");
  sigset_t all;
  sigset_t none;
  sigfillset(&all);
  sigemptyset(&none);
  int rc = posix_spawnattr_setsigdefault(&setup.attr_, &all);
  if (rc == 0) rc = posix_spawnattr_setsigmask(&setup.attr_, &none);
  if (rc == 0) rc = posix_spawnattr_setpgroup(&setup.attr_, 0);
  if (rc == 0) {
    rc = posix_spawnattr_setflags(
        &setup.attr_, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  }
  // dup2 onto itself would keep close-on-exec, so make sure the source is another number.
  int source_fd = shared_fd_;
  int extra_fd = -1;
  if (rc == 0 && source_fd == kCompanionSharedFd) {
    extra_fd = fcntl(source_fd, F_DUPFD_CLOEXEC, kCompanionSharedFd + 1);
    if (extra_fd < 0) rc = errno;
    source_fd = extra_fd;
  }
  if (rc == 0)
    rc = posix_spawn_file_actions_adddup2(&setup.actions_, source_fd, kCompanionSharedFd);
  if (rc == 0)
    rc = posix_spawn_file_actions_addclosefrom_np(&setup.actions_, kCompanionSharedFd + 1);
  if (rc != 0) {
    if (extra_fd >= 0) close(extra_fd);
    return Status(StatusCode::kInternal,
                  std::string("posix_spawn set-up failed: ") + std::strerror(rc));
  }
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(executable_.c_str()));
  for (auto& argument : arguments_) argv.push_back(const_cast<char*>(argument.c_str()));
  for (auto& argument : extra_arguments_) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  rc = posix_spawn(&pid, executable_.c_str(), &setup.actions_, &setup.attr_, argv.data(), environ);
  if (extra_fd >= 0) close(extra_fd);
  if (rc != 0) {
    return Status(StatusCode::kUnavailable,
                  "cannot start the companion " + executable_ + ": " + std::strerror(rc));
  }
  pid_ = pid;
  return Status();
}

bool CompanionProcess::Exited(std::string* how) {
  if (!running()) return true;
  int status = 0;
  const pid_t rc = waitpid(pid_, &status, WNOHANG);
  if (rc == 0) return false;
  *how =
      rc == pid_ ? DescribeStatus(status) : std::string("vanished (") + std::strerror(errno) + ")";
  pid_ = -1;
  return true;
}

void CompanionProcess::Stop(int grace_ms) {
  if (!running()) return;
  kill(pid_, SIGTERM);
  std::string how;
  for (int waited = 0; waited < grace_ms; waited += 10) {
    if (Exited(&how)) return;
    SleepMs(10);
  }
  Kill();
}

void CompanionProcess::Kill() {
  if (!running()) return;
  kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

}  // namespace mqc
