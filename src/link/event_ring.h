// SPDX-License-Identifier: BSD-3-Clause
// A single-producer, single-consumer ring of variable-length records in shared memory.
//
// Two of them join the processes: broker thread -> companion (connection events) and
// companion -> broker thread (log lines, requests). The producer never blocks and never makes a
// syscall: when the ring is full, TryWrite fails and the caller counts the loss (the events ring
// then asks for a resync). Indices grow without bound (64 bits never wrap in practice); a record
// never straddles the end of the buffer: a padding record fills the tail instead.
//
// Threads: RingWriter on the producer's thread only, RingReader on the consumer's thread only.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace mqc {

// Lives in the shared region; head and tail on their own cache lines.
struct RingIndices {
  alignas(64) std::atomic<std::uint64_t> head{0};  // written by the producer
  alignas(64) std::atomic<std::uint64_t> tail{0};  // written by the consumer
};

inline constexpr std::size_t kRingAlignment = 8;
inline constexpr std::uint16_t kRingPadding = 0;  // record type reserved for padding

struct RingRecordHeader {
  std::uint32_t size;  // payload bytes, without this header or alignment
  std::uint16_t type;
  std::uint16_t reserved;
};
static_assert(sizeof(RingRecordHeader) == kRingAlignment, "record header is one alignment unit");

class RingWriter {
 public:
  // capacity: a power of two, at least 64 bytes.
  RingWriter(RingIndices* indices, std::uint8_t* data, std::uint64_t capacity) noexcept;

  // Reserves space for a record of `size` payload bytes and returns where to write it, or nullptr
  // when it does not fit now. Nothing is visible to the consumer before Commit().
  std::uint8_t* Reserve(std::uint16_t type, std::uint32_t size) noexcept;
  void Commit() noexcept;

  // Reserve + copy + Commit.
  bool TryWrite(std::uint16_t type, const void* payload, std::uint32_t size) noexcept;

  // The largest payload that can ever fit (half the capacity, so that padding always fits too).
  std::uint32_t max_payload() const noexcept;

  // The position after the last committed record: it moves with every Commit. The writer's own
  // word, read back relaxed (no locked instruction).
  std::uint64_t head() const noexcept { return indices_->head.load(std::memory_order_relaxed); }

  // Whether records of these payload sizes, written one after another from now, would all fit
  // (padding at the end of the buffer included). Reads the consumer's tail.
  template <typename Sizes>
  bool Fits(const Sizes& payload_sizes) noexcept {
    cached_tail_ = indices_->tail.load(std::memory_order_acquire);
    std::uint64_t head = indices_->head.load(std::memory_order_relaxed);
    for (const auto size : payload_sizes) {
      if (size > max_payload()) return false;
      const std::uint64_t needed = RecordBytes(static_cast<std::uint32_t>(size));
      const std::uint64_t to_end = capacity_ - (head & (capacity_ - 1));
      head += (needed > to_end ? to_end : 0) + needed;
      if (head - cached_tail_ > capacity_) return false;
    }
    return true;
  }

  static constexpr std::uint64_t RecordBytes(std::uint32_t payload_size) noexcept {
    return sizeof(RingRecordHeader) + ((std::uint64_t{payload_size} + kRingAlignment - 1) &
                                       ~std::uint64_t{kRingAlignment - 1});
  }

 private:
  RingIndices* indices_;
  std::uint8_t* data_;
  std::uint64_t capacity_;
  std::uint64_t cached_tail_ = 0;    // the consumer's tail as last read: avoids a shared read
  std::uint64_t reserved_head_ = 0;  // head after the reserved record, until Commit
};

struct RingRecord {
  std::uint16_t type = 0;
  const std::uint8_t* payload = nullptr;
  std::uint32_t size = 0;
};

class RingReader {
 public:
  RingReader(RingIndices* indices, const std::uint8_t* data, std::uint64_t capacity) noexcept;

  // The next record, if any. It stays valid until Pop().
  bool Peek(RingRecord* record) noexcept;
  void Pop() noexcept;

  // Drops everything written so far (a new consumer starting over).
  void SkipToHead() noexcept;

  // Records whose header claimed more bytes than were written; the ring was skipped to its head.
  std::uint64_t corrupt_records() const noexcept { return corrupt_records_; }

 private:
  RingIndices* indices_;
  const std::uint8_t* data_;
  std::uint64_t capacity_;
  std::uint64_t next_tail_ = 0;  // tail after the peeked record
  std::uint64_t corrupt_records_ = 0;
};

}  // namespace mqc
