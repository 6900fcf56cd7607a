// SPDX-License-Identifier: BSD-3-Clause
// The stream pump without libmicrohttpd: a StreamSender reading a scripted body stream, with
// counters in place of parking and resuming a connection, and the StreamSet that wakes, stops
// and counts them.
#include "companion/http/stream_sender.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "../../support/queue_stream.h"
#include "link/clock.h"

namespace mqc {
namespace {

// Counts the parks and resumes a sender asks for.
struct Parking {
  std::atomic<int> parks{0};
  std::atomic<int> resumes{0};
  std::function<void()> Park() {
    return [this] { ++parks; };
  }
  std::function<void()> Resume() {
    return [this] { ++resumes; };
  }
};

// Everything the sender has now, in reads of `max` bytes, until it parks or ends.
std::string Drain(StreamSender* sender, std::size_t max, ssize_t* last) {
  std::string out;
  char buffer[64];
  for (int i = 0; i < 100; ++i) {
    *last = sender->Read(buffer, max);
    if (*last <= 0) break;
    out.append(buffer, static_cast<std::size_t>(*last));
  }
  return out;
}

// A set, its streams' parking, and a stream for the test to add.
class StreamSenderTest : public ::testing::Test {
 protected:
  // A sender of `stream` in set_; `peer` -1: no socket to watch for a hang-up.
  std::shared_ptr<StreamSender> Add(std::shared_ptr<QueueStream> stream, int peer = -1) {
    return set_.Add(std::move(stream), peer, parking_.Park(), parking_.Resume());
  }

  std::shared_ptr<QueueStream> stream_ = std::make_shared<QueueStream>();
  Parking parking_;
  StreamSet set_;
};

class StreamSetTest : public StreamSenderTest {};

TEST_F(StreamSenderTest, SendsInPiecesParksWhenEmptyAndOneWakeResumes) {
  const auto sender = Add(stream_);
  stream_->Push("0123456789");
  ssize_t last = 0;
  EXPECT_EQ(Drain(sender.get(), 4, &last), "0123456789");
  EXPECT_EQ(last, 0);
  EXPECT_EQ(parking_.parks.load(), 1);
  EXPECT_EQ(parking_.resumes.load(), 0);
  stream_->Push("more");  // the stream's wake resumes the parked connection, once
  stream_->Push("again");
  EXPECT_EQ(parking_.resumes.load(), 1);
  EXPECT_EQ(Drain(sender.get(), 64, &last), "moreagain");
  EXPECT_EQ(parking_.parks.load(), 2);
}

TEST_F(StreamSenderTest, AWakeBeforeAReadDoesNotKeepItFromParking) {
  const auto sender = Add(stream_);
  sender->Wake();  // not parked: remembered, no resume
  EXPECT_EQ(parking_.resumes.load(), 0);
  char buffer[8];
  EXPECT_EQ(sender->Read(buffer, sizeof(buffer)), 0);  // Read clears it first, then parks
  EXPECT_EQ(parking_.parks.load(), 1);
}

TEST_F(StreamSenderTest, AWakeThatOutlivesTheSenderResumesNothing) {
  auto sender = std::make_unique<StreamSender>(stream_, -1, parking_.Park(), parking_.Resume());
  stream_->SetWake(sender->WakeFunction());
  char buffer[8];
  EXPECT_EQ(sender->Read(buffer, sizeof(buffer)), 0);  // parks
  sender.reset();  // gone without MHD's free: its connection may be too
  stream_->Push("late");
  EXPECT_EQ(parking_.resumes.load(), 0);
}

TEST_F(StreamSenderTest, StopEndsWithTheLastWords) {
  const auto sender = Add(stream_);
  ssize_t last = 0;
  Drain(sender.get(), 64, &last);  // parks
  sender->Stop();
  EXPECT_EQ(parking_.resumes.load(), 1);
  EXPECT_EQ(Drain(sender.get(), 64, &last), "stopped\n");
  EXPECT_EQ(last, StreamSender::kEndOfStream);
}

TEST_F(StreamSenderTest, AHungUpPeerEndsTheStream) {
  int fds[2] = {-1, -1};
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  const auto sender = Add(stream_, fds[0]);
  char buffer[8];
  EXPECT_EQ(sender->Read(buffer, sizeof(buffer)), 0);  // peer there: parks
  close(fds[1]);
  EXPECT_EQ(sender->Read(buffer, sizeof(buffer)), StreamSender::kEndOfStream);
  close(fds[0]);
}

TEST_F(StreamSetTest, CountsUntilFinishedAndNoResumeAfterwards) {
  const auto sender = Add(stream_);
  EXPECT_EQ(set_.size(), 1u);
  ssize_t last = 0;
  Drain(sender.get(), 64, &last);  // parks
  set_.Finished(sender);
  EXPECT_EQ(set_.size(), 0u);
  stream_->Push("late");
  set_.Tick();
  EXPECT_EQ(parking_.resumes.load(), 0);
}

// A stream that notes the thread it is destroyed on, and hands out its wake.
class NotingStream final : public HttpBodyStream {
 public:
  explicit NotingStream(std::thread::id* destroyed_on) : destroyed_on_(destroyed_on) {}
  ~NotingStream() override { *destroyed_on_ = std::this_thread::get_id(); }
  void SetWake(std::function<void()> wake) override { wake_ = std::move(wake); }
  Pull Read(std::size_t /*max*/, std::string* /*out*/) override { return Pull::kWait; }
  void Stop() override {}
  const std::function<void()>& wake() const { return wake_; }

 private:
  std::thread::id* const destroyed_on_;
  std::function<void()> wake_;
};

// Where a stream is destroyed when MHD frees its response while `wake_on(set, wake)`, on
// another thread, is inside a wake of it (its resume under way).
std::thread::id DestroyedOnFinishDuringWake(
    const std::function<void(StreamSet&, const std::function<void()>&)>& wake_on) {
  StreamSet set;
  std::thread::id destroyed_on;
  std::promise<void> in_resume;
  std::promise<void> go;
  std::shared_future<void> go_future = go.get_future().share();
  auto stream = std::make_shared<NotingStream>(&destroyed_on);
  auto sender = set.Add(stream, -1, [] {}, [&in_resume, go_future] {
    in_resume.set_value();
    go_future.wait();
  });
  const std::function<void()> wake = stream->wake();  // a peer's copy
  stream.reset();
  char buffer[8];
  EXPECT_EQ(sender->Read(buffer, sizeof(buffer)), 0);  // parks
  std::thread other([&set, &wake_on, wake] { wake_on(set, wake); });
  in_resume.get_future().wait();
  set.Finished(sender);  // MHD frees the response while the wake is under way
  sender.reset();
  go.set_value();
  other.join();
  return destroyed_on;
}

// A fleet watch's peer threads call its wake. A wake that held the sender was left with the
// last reference when MHD freed the response meanwhile, and destroyed the stream on the peer's
// own thread: the stream joined that thread from itself ("Resource deadlock avoided").
TEST_F(StreamSetTest, AWakeUnderWayNeverDestroysTheStreamOnItsThread) {
  EXPECT_EQ(DestroyedOnFinishDuringWake(
                [](StreamSet&, const std::function<void()>& wake) { wake(); }),
            std::this_thread::get_id());
}

// Nor on the request clock's thread, which ticks the set every second: a fleet watch going
// there would hold it while the peers' threads end.
TEST_F(StreamSetTest, ATickUnderWayNeverDestroysAStream) {
  EXPECT_EQ(DestroyedOnFinishDuringWake(
                [](StreamSet& set, const std::function<void()>&) { set.Tick(); }),
            std::this_thread::get_id());
}

TEST_F(StreamSetTest, TickWakesEveryParkedStream) {
  auto first = std::make_shared<QueueStream>();
  auto second = std::make_shared<QueueStream>();
  const auto a = Add(first);
  const auto b = Add(second);
  ssize_t last = 0;
  Drain(a.get(), 64, &last);
  Drain(b.get(), 64, &last);
  EXPECT_EQ(parking_.parks.load(), 2);
  set_.Tick();
  EXPECT_EQ(parking_.resumes.load(), 2);
}

TEST_F(StreamSetTest, StopSelectsByStartAndWaitsForFinished) {
  const auto old_sender = Add(std::make_shared<QueueStream>());
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const std::int64_t between = MonotonicNs();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const auto new_sender = Add(std::make_shared<QueueStream>());
  // As MHD would: the stopped stream is read to its end and freed on another thread.
  std::thread server([&] {
    ssize_t last = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
      Drain(old_sender.get(), 64, &last);
      if (last == StreamSender::kEndOfStream) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    set_.Finished(old_sender);
  });
  const auto start = std::chrono::steady_clock::now();
  set_.Stop(between, 5000);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
  server.join();
  EXPECT_EQ(set_.size(), 1u);  // the one that started later serves on
  char buffer[16];
  EXPECT_EQ(new_sender->Read(buffer, sizeof(buffer)), 0);
}

TEST_F(StreamSetTest, AfterStoppingForGoodANewStreamIsStoppedAtOnce) {
  set_.Stop(0, 0);
  const auto sender = Add(stream_);
  ssize_t last = 0;
  EXPECT_EQ(Drain(sender.get(), 64, &last), "stopped\n");
  EXPECT_EQ(last, StreamSender::kEndOfStream);
  EXPECT_EQ(parking_.parks.load(), 0);
}

}  // namespace
}  // namespace mqc
