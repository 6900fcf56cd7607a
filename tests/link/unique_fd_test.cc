// SPDX-License-Identifier: BSD-3-Clause
// UniqueFd: closes what it owns exactly once, and nothing it released or handed over.
#include "link/unique_fd.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <utility>

namespace mqc {
namespace {

bool IsOpen(int fd) { return fcntl(fd, F_GETFD) != -1; }

// Both ends of a pipe; the test owns the write end.
struct Pipe {
  Pipe() {
    int fds[2];
    if (pipe(fds) == 0) {
      read_end = fds[0];
      write_end = fds[1];
    }
  }
  ~Pipe() {
    if (write_end >= 0) close(write_end);
  }
  int read_end = -1;
  int write_end = -1;
};

TEST(UniqueFdTest, ClosesWhatItOwnsWhenItGoes) {
  Pipe pipe;
  ASSERT_TRUE(IsOpen(pipe.read_end));
  {
    const UniqueFd owner(pipe.read_end);
    EXPECT_EQ(owner.get(), pipe.read_end);
    EXPECT_TRUE(IsOpen(pipe.read_end));
  }
  EXPECT_FALSE(IsOpen(pipe.read_end));
  EXPECT_TRUE(IsOpen(pipe.write_end));
}

TEST(UniqueFdTest, AReleasedDescriptorStaysOpen) {
  Pipe pipe;
  int released = -1;
  {
    UniqueFd owner(pipe.read_end);
    released = owner.release();
    EXPECT_EQ(owner.get(), -1);
  }
  EXPECT_EQ(released, pipe.read_end);
  EXPECT_TRUE(IsOpen(released));
  close(released);
}

TEST(UniqueFdTest, AMoveHandsTheDescriptorOverAndAnAssignmentClosesTheOldOne) {
  Pipe first;
  Pipe second;
  UniqueFd a(first.read_end);
  UniqueFd b(std::move(a));
  EXPECT_EQ(a.get(), -1);  // NOLINT(bugprone-use-after-move): a moved-from owner is empty
  EXPECT_EQ(b.get(), first.read_end);
  EXPECT_TRUE(IsOpen(first.read_end));
  b = UniqueFd(second.read_end);
  EXPECT_FALSE(IsOpen(first.read_end));
  EXPECT_EQ(b.get(), second.read_end);
  EXPECT_TRUE(IsOpen(second.read_end));
}

}  // namespace
}  // namespace mqc
