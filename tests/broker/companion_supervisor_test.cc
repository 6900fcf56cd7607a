// SPDX-License-Identifier: BSD-3-Clause
// CompanionSupervisor against a real child, tests/broker/fake_companion.cc (its path is
// MQC_FAKE_COMPANION). Time at TICK is passed in, so stall and back-off are checked without
// waiting for them; only the child's own start and end take real time, each bounded.
#include "broker/companion_supervisor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../support/test_region.h"

namespace mqc {
namespace {

constexpr std::int64_t kMs = 1'000'000;

std::vector<std::string> ReadLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class CompanionSupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    region_ = TestRegion({4096, 4096, 16});
    ASSERT_NE(region_, nullptr);
    const std::string base = ::testing::TempDir() + "supervisor-" + std::to_string(getpid());
    starts_ = base + ".starts";
    mode_ = base + ".mode";
    std::remove(starts_.c_str());
    SetMode("serve");
    supervisor_ = std::make_unique<CompanionSupervisor>(
        region_.get(), MQC_FAKE_COMPANION,
        std::vector<std::string>{"log=" + starts_, "mode=" + mode_, "http_port=0"},
        [this](LogLevel, const std::string& line) { log_.push_back(line); });
  }
  void TearDown() override {
    supervisor_.reset();  // stops the child
    std::remove(starts_.c_str());
    std::remove(mode_.c_str());
  }
  void SetMode(const std::string& mode) { std::ofstream(mode_) << mode << "\n"; }
  std::size_t Starts() { return ReadLines(starts_).size(); }
  // Waits (at most 5 s) until the fake companion has written its n-th start line.
  bool WaitStarts(std::size_t n) {
    for (int i = 0; i < 500 && Starts() < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return Starts() == n;
  }
  // Ticks at `now_ns` (real time passing in between, at most 5 s) until the log has a line
  // containing `text`.
  bool TickUntilLogged(std::int64_t now_ns, const std::string& text) {
    for (int i = 0; i < 500; ++i) {
      supervisor_->Tick(now_ns);
      for (const std::string& line : log_) {
        if (line.find(text) != std::string::npos) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  Status StartAndWait(int timeout_ms = 5000) {
    return supervisor_->StartAndWait(timeout_ms, [] {});
  }

  std::unique_ptr<SharedRegion> region_;
  std::string starts_;
  std::string mode_;
  std::vector<std::string> log_;
  std::unique_ptr<CompanionSupervisor> supervisor_;
};

TEST_F(CompanionSupervisorTest, StartsAndWaitsForTheCompanionToServe) {
  const Status started = StartAndWait();
  ASSERT_TRUE(started.ok()) << started.message();
  EXPECT_TRUE(supervisor_->serving());
  EXPECT_EQ(supervisor_->http_port(), 41234);
  EXPECT_TRUE(WaitStarts(1));
}

TEST_F(CompanionSupervisorTest, AFailureReportedAtStartIsTheError) {
  SetMode("fail");
  const Status started = StartAndWait();
  EXPECT_EQ(started.code(), StatusCode::kUnavailable);
  EXPECT_EQ(started.message(), "fake failure");
  EXPECT_FALSE(supervisor_->serving());
}

TEST_F(CompanionSupervisorTest, ACompanionEndingBeforeItServesIsTheError) {
  SetMode("exit");
  const Status started = StartAndWait();
  EXPECT_EQ(started.code(), StatusCode::kUnavailable);
  EXPECT_THAT(started.message(), ::testing::HasSubstr("exited with status 3 before it was ready"));
}

TEST_F(CompanionSupervisorTest, ACompanionSilentPastTheTimeoutIsStoppedAndTheError) {
  SetMode("silent");
  const Status started = StartAndWait(200);
  EXPECT_EQ(started.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(started.message(), "the companion did not report ready within 200 ms");
  EXPECT_FALSE(supervisor_->serving());
  EXPECT_FALSE(supervisor_->pid() > 0);  // stopped and reaped
}

TEST_F(CompanionSupervisorTest, AStalledCompanionIsKilledAndStartedAgain) {
  SetMode("stall");
  const Status started = StartAndWait();
  ASSERT_TRUE(started.ok()) << started.message();
  const pid_t first = supervisor_->pid();
  const std::int64_t t0 = 1000 * kMs;
  supervisor_->Tick(t0);  // the stall clock starts
  supervisor_->Tick(t0 + CompanionSupervisor::kStallTimeoutNs);
  EXPECT_TRUE(log_.empty());  // not yet: exactly the timeout is still allowed
  supervisor_->Tick(t0 + CompanionSupervisor::kStallTimeoutNs + 1);
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_THAT(log_[0], ::testing::HasSubstr("stopped answering for 5 s"));
  EXPECT_NE(kill(first, 0), 0);  // killed and reaped
  SetMode("serve");
  EXPECT_FALSE(supervisor_->pid() > 0);
  supervisor_->Tick(t0 + CompanionSupervisor::kStallTimeoutNs + 1);  // first restart: at once
  EXPECT_GT(supervisor_->pid(), 0);
  EXPECT_NE(supervisor_->pid(), first);
  EXPECT_TRUE(WaitStarts(2));
}

TEST_F(CompanionSupervisorTest, RestartsBackOffWhileTheyFailAndKeepThePort) {
  const Status started = StartAndWait();
  ASSERT_TRUE(started.ok()) << started.message();
  ASSERT_EQ(supervisor_->http_port(), 41234);  // chosen by the companion (http_port=0)
  SetMode("exit");
  const std::int64_t t = 1000 * kMs;
  ASSERT_EQ(kill(supervisor_->pid(), SIGKILL), 0);
  ASSERT_TRUE(TickUntilLogged(t, "killed by signal 9"));
  supervisor_->Tick(t);  // the first restart is at once
  EXPECT_GT(supervisor_->pid(), 0);
  ASSERT_TRUE(TickUntilLogged(t, "exited with status 3"));
  supervisor_->Tick(t + 99 * kMs);
  EXPECT_FALSE(supervisor_->pid() > 0);  // the second waits 100 ms
  supervisor_->Tick(t + 100 * kMs);
  EXPECT_GT(supervisor_->pid(), 0);
  log_.clear();
  ASSERT_TRUE(TickUntilLogged(t + 100 * kMs, "exited with status 3"));
  SetMode("serve");
  supervisor_->Tick(t + 299 * kMs);
  EXPECT_FALSE(supervisor_->pid() > 0);  // the third waits 200 ms
  supervisor_->Tick(t + 300 * kMs);
  EXPECT_GT(supervisor_->pid(), 0);
  ASSERT_TRUE(TickUntilLogged(t + 300 * kMs, "companion restarted, serving on port 41234"));
  EXPECT_TRUE(supervisor_->serving());

  // Every restart was told the port the first start got, as its last option.
  ASSERT_TRUE(WaitStarts(4));
  const std::vector<std::string> starts = ReadLines(starts_);
  ASSERT_EQ(starts.size(), 4u);
  EXPECT_THAT(starts[0], ::testing::EndsWith(" http_port=0"));
  for (std::size_t i = 1; i < starts.size(); ++i) {
    EXPECT_THAT(starts[i], ::testing::EndsWith(" http_port=0 http_port=41234")) << i;
  }
}

TEST_F(CompanionSupervisorTest, StopEndsTheCompanion) {
  const Status started = StartAndWait();
  ASSERT_TRUE(started.ok()) << started.message();
  const pid_t pid = supervisor_->pid();
  ASSERT_GT(pid, 0);
  supervisor_->Stop();
  EXPECT_FALSE(supervisor_->serving());
  EXPECT_NE(kill(pid, 0), 0);  // ended and reaped
}

}  // namespace
}  // namespace mqc
