// SPDX-License-Identifier: BSD-3-Clause
#include "link/event_ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace mqc {
namespace {

struct TestRing {
  explicit TestRing(std::uint64_t size) : data(size), capacity(size) {}
  RingWriter Writer() { return RingWriter(&indices, data.data(), capacity); }
  RingReader Reader() { return RingReader(&indices, data.data(), capacity); }
  RingIndices indices;
  std::vector<std::uint8_t> data;
  std::uint64_t capacity;
};

std::string Payload(const RingRecord& record) {
  return std::string(reinterpret_cast<const char*>(record.payload), record.size);
}

TEST(EventRingTest, RecordsComeOutInOrderWithTheirTypes) {
  TestRing ring(256);
  RingWriter writer = ring.Writer();
  RingReader reader = ring.Reader();
  ASSERT_TRUE(writer.TryWrite(7, "abc", 3));
  ASSERT_TRUE(writer.TryWrite(9, "", 0));
  ASSERT_TRUE(writer.TryWrite(11, "0123456789", 10));
  RingRecord record;
  ASSERT_TRUE(reader.Peek(&record));
  EXPECT_EQ(record.type, 7);
  EXPECT_EQ(Payload(record), "abc");
  reader.Pop();
  ASSERT_TRUE(reader.Peek(&record));
  EXPECT_EQ(record.type, 9);
  EXPECT_EQ(record.size, 0u);
  reader.Pop();
  ASSERT_TRUE(reader.Peek(&record));
  EXPECT_EQ(Payload(record), "0123456789");
  reader.Pop();
  EXPECT_FALSE(reader.Peek(&record));
}

TEST(EventRingTest, NothingIsVisibleBeforeCommit) {
  TestRing ring(256);
  RingWriter writer = ring.Writer();
  RingReader reader = ring.Reader();
  std::uint8_t* at = writer.Reserve(1, 4);
  ASSERT_NE(at, nullptr);
  std::memcpy(at, "wxyz", 4);
  RingRecord record;
  EXPECT_FALSE(reader.Peek(&record));
  writer.Commit();
  ASSERT_TRUE(reader.Peek(&record));
  EXPECT_EQ(Payload(record), "wxyz");
}

TEST(EventRingTest, FullRingRefusesWithoutBlockingAndRecoversWhenRead) {
  TestRing ring(128);
  RingWriter writer = ring.Writer();
  RingReader reader = ring.Reader();
  int written = 0;
  while (writer.TryWrite(1, "12345678", 8)) ++written;  // 16 bytes each
  EXPECT_EQ(written, 8);
  EXPECT_FALSE(writer.TryWrite(1, "x", 1));
  RingRecord record;
  ASSERT_TRUE(reader.Peek(&record));
  reader.Pop();
  EXPECT_TRUE(writer.TryWrite(1, "12345678", 8));
  EXPECT_FALSE(writer.TryWrite(1, "12345678", 8));
}

TEST(EventRingTest, WrapsAroundWithPaddingAndKeepsEveryRecordWhole) {
  TestRing ring(128);
  RingWriter writer = ring.Writer();
  RingReader reader = ring.Reader();
  // Sizes that do not divide the capacity, so records meet the end at every offset.
  std::uint64_t next_write = 0;
  std::uint64_t next_read = 0;
  for (int round = 0; round < 2000; ++round) {
    const std::string payload(static_cast<std::size_t>(1 + round % 37),
                              static_cast<char>('a' + round % 26));
    if (writer.TryWrite(static_cast<std::uint16_t>(1 + round % 5), payload.data(),
                        static_cast<std::uint32_t>(payload.size()))) {
      ++next_write;
    }
    RingRecord record;
    if (round % 3 != 0 && reader.Peek(&record)) {
      ++next_read;
      EXPECT_GE(record.size, 1u);
      EXPECT_EQ(std::string(record.size, Payload(record)[0]), Payload(record));
      reader.Pop();
    }
  }
  RingRecord record;
  while (reader.Peek(&record)) {
    ++next_read;
    reader.Pop();
  }
  EXPECT_EQ(next_read, next_write);
  EXPECT_GT(next_write, 1000u);
}

TEST(EventRingTest, OversizedRecordIsRefused) {
  TestRing ring(128);
  RingWriter writer = ring.Writer();
  EXPECT_EQ(writer.max_payload(), 56u);
  std::string big(57, 'x');
  EXPECT_FALSE(writer.TryWrite(1, big.data(), 57));
  EXPECT_TRUE(writer.TryWrite(1, big.data(), 56));
}

TEST(EventRingTest, ACorruptHeaderNeverReadsPastTheHead) {
  TestRing ring(128);
  RingWriter writer = ring.Writer();
  RingReader reader = ring.Reader();
  ASSERT_TRUE(writer.TryWrite(1, "abcd", 4));
  RingRecordHeader lie{1000, 1, 0};
  std::memcpy(ring.data.data(), &lie, sizeof(lie));
  RingRecord record;
  EXPECT_FALSE(reader.Peek(&record));
  EXPECT_EQ(reader.corrupt_records(), 1u);
  ASSERT_TRUE(writer.TryWrite(2, "ok", 2));
  ASSERT_TRUE(reader.Peek(&record));
  EXPECT_EQ(Payload(record), "ok");
}

TEST(EventRingTest, ANewReaderCanSkipWhatAnEarlierOneLeft) {
  TestRing ring(256);
  RingWriter writer = ring.Writer();
  ASSERT_TRUE(writer.TryWrite(1, "old", 3));
  RingReader reader = ring.Reader();
  reader.SkipToHead();
  RingRecord record;
  EXPECT_FALSE(reader.Peek(&record));
  ASSERT_TRUE(writer.TryWrite(1, "new", 3));
  ASSERT_TRUE(reader.Peek(&record));
  EXPECT_EQ(Payload(record), "new");
}

// One producer thread and one consumer thread: every record arrives once, in order, intact.
TEST(EventRingTest, ProducerAndConsumerOnTwoThreads) {
  TestRing ring(1024);
  constexpr std::uint64_t kCount = 200000;
  std::thread producer([&] {
    RingWriter writer = ring.Writer();
    for (std::uint64_t i = 0; i < kCount;) {
      const std::uint32_t size = static_cast<std::uint32_t>(9 + i % 24);
      std::uint8_t* at = writer.Reserve(1, size);
      if (at == nullptr) {
        std::this_thread::yield();
        continue;
      }
      std::memset(at, static_cast<int>(i & 0xff), size);
      std::memcpy(at, &i, sizeof(i));
      writer.Commit();
      ++i;
    }
  });
  RingReader reader = ring.Reader();
  std::uint64_t expected = 0;
  bool intact = true;
  while (expected < kCount) {
    RingRecord record;
    if (!reader.Peek(&record)) {
      std::this_thread::yield();
      continue;
    }
    std::uint64_t value = 0;
    std::memcpy(&value, record.payload, sizeof(value));
    intact = intact && value == expected && record.size == 9 + expected % 24 &&
             record.payload[record.size - 1] == static_cast<std::uint8_t>(expected & 0xff);
    reader.Pop();
    ++expected;
  }
  producer.join();
  EXPECT_TRUE(intact);
  EXPECT_EQ(expected, kCount);
}

}  // namespace
}  // namespace mqc
