// SPDX-License-Identifier: BSD-3-Clause
#include "link/event_ring.h"

#include <cstring>

namespace mqc {

namespace {

constexpr std::uint64_t RecordBytes(std::uint32_t payload_size) noexcept {
  return RingWriter::RecordBytes(payload_size);
}

}  // namespace

RingWriter::RingWriter(RingIndices* indices, std::uint8_t* data, std::uint64_t capacity) noexcept
    : indices_(indices), data_(data), capacity_(capacity) {
  cached_tail_ = indices_->tail.load(std::memory_order_acquire);
  reserved_head_ = indices_->head.load(std::memory_order_relaxed);
}

std::uint32_t RingWriter::max_payload() const noexcept {
  return static_cast<std::uint32_t>(capacity_ / 2 - sizeof(RingRecordHeader));
}

std::uint8_t* RingWriter::Reserve(std::uint16_t type, std::uint32_t size) noexcept {
  if (size > max_payload()) return nullptr;
  const std::uint64_t head = indices_->head.load(std::memory_order_relaxed);
  const std::uint64_t offset = head & (capacity_ - 1);
  const std::uint64_t needed = RecordBytes(size);
  const std::uint64_t to_end = capacity_ - offset;
  const std::uint64_t padding = needed > to_end ? to_end : 0;
  if (head + padding + needed - cached_tail_ > capacity_) {
    cached_tail_ = indices_->tail.load(std::memory_order_acquire);
    if (head + padding + needed - cached_tail_ > capacity_) return nullptr;
  }
  std::uint64_t start = head;
  if (padding != 0) {
    RingRecordHeader pad{static_cast<std::uint32_t>(padding - sizeof(RingRecordHeader)),
                         kRingPadding, 0};
    std::memcpy(data_ + offset, &pad, sizeof(pad));
    start += padding;
  }
  RingRecordHeader header{size, type, 0};
  std::uint8_t* at = data_ + (start & (capacity_ - 1));
  std::memcpy(at, &header, sizeof(header));
  reserved_head_ = start + needed;
  return at + sizeof(header);
}

void RingWriter::Commit() noexcept {
  indices_->head.store(reserved_head_, std::memory_order_release);
}

bool RingWriter::TryWrite(std::uint16_t type, const void* payload, std::uint32_t size) noexcept {
  std::uint8_t* at = Reserve(type, size);
  if (at == nullptr) return false;
  if (size != 0) std::memcpy(at, payload, size);
  Commit();
  return true;
}

RingReader::RingReader(RingIndices* indices, const std::uint8_t* data,
                       std::uint64_t capacity) noexcept
    : indices_(indices), data_(data), capacity_(capacity) {
  next_tail_ = indices_->tail.load(std::memory_order_relaxed);
}

bool RingReader::Peek(RingRecord* record) noexcept {
  std::uint64_t tail = indices_->tail.load(std::memory_order_relaxed);
  const std::uint64_t head = indices_->head.load(std::memory_order_acquire);
  while (tail != head) {
    RingRecordHeader header;
    std::memcpy(&header, data_ + (tail & (capacity_ - 1)), sizeof(header));
    const std::uint64_t bytes = RecordBytes(header.size);
    if (bytes > head - tail) {  // a torn or corrupt header: never read past the head
      SkipToHead();
      ++corrupt_records_;
      return false;
    }
    if (header.type == kRingPadding) {
      tail += bytes;
      indices_->tail.store(tail, std::memory_order_release);
      continue;
    }
    record->type = header.type;
    record->size = header.size;
    record->payload = data_ + ((tail + sizeof(header)) & (capacity_ - 1));
    next_tail_ = tail + bytes;
    return true;
  }
  return false;
}

void RingReader::Pop() noexcept { indices_->tail.store(next_tail_, std::memory_order_release); }

void RingReader::SkipToHead() noexcept {
  const std::uint64_t head = indices_->head.load(std::memory_order_acquire);
  indices_->tail.store(head, std::memory_order_release);
  next_tail_ = head;
}

}  // namespace mqc
