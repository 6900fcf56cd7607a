// SPDX-License-Identifier: BSD-3-Clause
#include "broker/companion_process.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace mqc {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool WaitExited(CompanionProcess* process, std::string* how) {
  for (int i = 0; i < 500; ++i) {
    if (process->Exited(how)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Waits (at most 5 s) until `path` holds exactly `text`.
bool WaitForFile(const std::string& path, const std::string& text) {
  for (int i = 0; i < 500; ++i) {
    if (ReadFile(path) == text) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

class CompanionProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = ::testing::TempDir() + "companion-process-" + std::to_string(getpid());
    shared_fd_ = memfd_create("companion-process-test", MFD_CLOEXEC);
    ASSERT_GE(shared_fd_, 0);
  }
  void TearDown() override {
    close(shared_fd_);
    std::remove(out_.c_str());
  }
  std::string out_;
  int shared_fd_ = -1;
};

TEST_F(CompanionProcessTest, OnlyTheSharedDescriptorIsInheritedAsFd3) {
  int leaked[2];
  ASSERT_EQ(pipe(leaked), 0);  // no close-on-exec: a broker's sockets may look like this
  // ls lists its own descriptors: 0-2, 3, and the one it reads /proc/self/fd with.
  CompanionProcess process("/bin/sh", {"-c", "exec ls -l /proc/self/fd > " + out_}, shared_fd_);
  const Status started = process.Start();
  ASSERT_TRUE(started.ok()) << started.message();
  std::string how;
  ASSERT_TRUE(WaitExited(&process, &how));
  EXPECT_EQ(how, "exited with status 0");
  std::istringstream listing(ReadFile(out_));
  std::string line;
  bool shared_seen = false;
  int others = 0;
  while (std::getline(listing, line)) {
    const std::size_t arrow = line.find(" -> ");
    if (arrow == std::string::npos) continue;  // "total 0"
    const std::size_t space = line.rfind(' ', arrow - 1);
    const int fd = std::stoi(line.substr(space + 1, arrow - space - 1));
    const std::string target = line.substr(arrow + 4);
    if (fd == 3) {
      shared_seen = target.find("memfd:companion-process-test") != std::string::npos;
    } else if (fd > 3 && target.find("/fd") == std::string::npos) {
      ADD_FAILURE() << "inherited descriptor " << fd << " -> " << target;
    } else if (fd > 3) {
      ++others;  // ls's own directory handle
    }
  }
  EXPECT_TRUE(shared_seen);
  EXPECT_LE(others, 1);
  close(leaked[0]);
  close(leaked[1]);
}

TEST_F(CompanionProcessTest, ExitStatusAndSignalAreReported) {
  CompanionProcess exits("/bin/sh", {"-c", "exit 7"}, shared_fd_);
  const Status started = exits.Start();
  ASSERT_TRUE(started.ok()) << started.message();
  std::string how;
  ASSERT_TRUE(WaitExited(&exits, &how));
  EXPECT_EQ(how, "exited with status 7");
  EXPECT_FALSE(exits.running());

  CompanionProcess killed("/bin/sh", {"-c", "kill -9 $$"}, shared_fd_);
  const Status killed_started = killed.Start();
  ASSERT_TRUE(killed_started.ok()) << killed_started.message();
  ASSERT_TRUE(WaitExited(&killed, &how));
  EXPECT_THAT(how, ::testing::StartsWith("killed by signal 9"));
}

TEST_F(CompanionProcessTest, StopEndsARunningProcessEvenIfItIgnoresSigterm) {
  // The child says "ready" once SIGTERM is ignored (a shell's `exec` keeps that for `sleep`).
  CompanionProcess stubborn(
      "/bin/sh", {"-c", "trap '' TERM; echo ready > " + out_ + "; exec sleep 30"}, shared_fd_);
  const Status spawned = stubborn.Start();
  ASSERT_TRUE(spawned.ok()) << spawned.message();
  const pid_t pid = stubborn.pid();
  ASSERT_TRUE(WaitForFile(out_, "ready\n")) << "the child never installed its trap";
  const auto started = std::chrono::steady_clock::now();
  stubborn.Stop(300);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  EXPECT_FALSE(stubborn.running());
  EXPECT_NE(kill(pid, 0), 0);  // reaped: no such process any more
}

TEST_F(CompanionProcessTest, AMissingExecutableIsAnErrorNamingIt) {
  CompanionProcess missing("/nonexistent/companion", {}, shared_fd_);
  const Status started = missing.Start();
  EXPECT_EQ(started.code(), StatusCode::kUnavailable);
  EXPECT_THAT(started.message(), ::testing::HasSubstr("/nonexistent/companion"));
}

TEST_F(CompanionProcessTest, ExtraArgumentsFollowTheOthers) {
  CompanionProcess process("/bin/sh", {"-c", "echo \"$0 $1\" > " + out_, "first"}, shared_fd_);
  process.SetExtraArguments({"second"});
  const Status started = process.Start();
  ASSERT_TRUE(started.ok()) << started.message();
  std::string how;
  ASSERT_TRUE(WaitExited(&process, &how));
  EXPECT_EQ(ReadFile(out_), "first second\n");
}

}  // namespace
}  // namespace mqc
