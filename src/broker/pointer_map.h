// SPDX-License-Identifier: BSD-3-Clause
// A hash table keyed by pointer, for the lookup every delivery and publish makes (the broker's
// client object to the session table's connection): open addressing with linear probing in one
// array of (key, value) slots, a power-of-two capacity and a multiplicative (Fibonacci) hash, so
// that a lookup is a multiply, a shift and one compare in the common case. std::unordered_map
// costs a division and a walk to a separately allocated node for the same answer.
//
// Erase shifts the entries after the hole back (backward-shift deletion), so there are no
// tombstones and a miss stops at the first empty slot. The table grows (doubles) when an insert
// would fill more than 3/4 of it; it never shrinks. Only Insert allocates, and only when it
// grows. Null is the empty slot's key: null is never inserted and never found.
//
// Threads: its owner's (SessionTable: the broker thread only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace mqc {

// Fibonacci hashing: the product's high bits, which the table uses, depend on every bit of the
// pointer, its always-zero low bits included.
struct FibonacciPointerHash {
  std::uint64_t operator()(const void* key) const {
    return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(key)) *
           0x9E3779B97F4A7C15ull;
  }
};

template <typename Value, typename Hash = FibonacciPointerHash>
class PointerMap {
 public:
  PointerMap() { Allocate(kMinCapacity); }
  PointerMap(const PointerMap&) = delete;
  PointerMap& operator=(const PointerMap&) = delete;

  // The value of `key`; null when absent.
  Value* Find(const void* key) {
    if (key == nullptr) return nullptr;
    std::size_t i = Home(key);
    while (slots_[i].key != key) {
      if (slots_[i].key == nullptr) return nullptr;
      i = (i + 1) & mask_;
    }
    return &slots_[i].value;
  }
  const Value* Find(const void* key) const { return const_cast<PointerMap*>(this)->Find(key); }

  // Sets the value of `key` (not null), adding it when absent; returns where it is stored, which
  // stays valid until the next Insert or Erase.
  Value& Insert(const void* key, Value value) {
    if (Value* existing = Find(key)) {
      *existing = std::move(value);
      return *existing;
    }
    if ((size_ + 1) * 4 > capacity() * 3) Allocate(capacity() * 2);
    ++size_;
    return Place(key, std::move(value));
  }

  // Removes `key`; false when it was absent.
  bool Erase(const void* key) {
    if (key == nullptr) return false;
    std::size_t hole = Home(key);
    while (slots_[hole].key != key) {
      if (slots_[hole].key == nullptr) return false;
      hole = (hole + 1) & mask_;
    }
    // Every entry after the hole, up to the next empty slot, moves back into the hole when the
    // hole lies on its way from its home slot (cyclically between home and where it is).
    for (std::size_t next = (hole + 1) & mask_; slots_[next].key != nullptr;
         next = (next + 1) & mask_) {
      Slot& moving = slots_[next];
      if (((next - Home(moving.key)) & mask_) >= ((next - hole) & mask_)) {
        slots_[hole].key = moving.key;
        slots_[hole].value = std::move(moving.value);
        hole = next;
      }
    }
    slots_[hole].key = nullptr;
    slots_[hole].value = Value();
    --size_;
    return true;
  }

  // Calls visit(key, value) for every entry, in no particular order. `visit` must not insert or
  // erase.
  template <typename Visit>
  void ForEach(Visit visit) {
    for (std::size_t i = 0; i < capacity(); ++i) {
      if (slots_[i].key != nullptr) visit(slots_[i].key, slots_[i].value);
    }
  }

  // Calls visit(key, value) for the entries in `count` slots of the array from slot `from`
  // (taken modulo the capacity), wrapping at its end; returns the slot to go on from. A bounded
  // slice of a walk over every entry: an entry that an Erase moves back across the cursor, or a
  // growth rehashes, may be skipped or visited twice in one round. `visit` must not insert or
  // erase.
  template <typename Visit>
  std::size_t ForEachInSlots(std::size_t from, std::size_t count, Visit visit) {
    std::size_t i = from & mask_;
    for (std::size_t n = 0; n < count && n <= mask_; ++n) {
      if (slots_[i].key != nullptr) visit(slots_[i].key, slots_[i].value);
      i = (i + 1) & mask_;
    }
    return i;
  }

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return mask_ + 1; }

 private:
  static constexpr std::size_t kMinCapacity = 16;
  struct Slot {
    const void* key = nullptr;
    Value value{};
  };

  std::size_t Home(const void* key) const {
    return static_cast<std::size_t>(Hash()(key) >> shift_);
  }

  // Stores an absent key in the first empty slot of its probe sequence.
  Value& Place(const void* key, Value value) {
    std::size_t i = Home(key);
    while (slots_[i].key != nullptr) i = (i + 1) & mask_;
    slots_[i].key = key;
    slots_[i].value = std::move(value);
    return slots_[i].value;
  }

  void Allocate(std::size_t capacity) {
    std::unique_ptr<Slot[]> old = std::move(slots_);
    const std::size_t old_capacity = old != nullptr ? mask_ + 1 : 0;
    slots_ = std::make_unique<Slot[]>(capacity);
    mask_ = capacity - 1;
    shift_ = 64;
    for (std::size_t c = capacity; c > 1; c >>= 1) --shift_;
    for (std::size_t i = 0; i < old_capacity; ++i) {
      if (old[i].key != nullptr) Place(old[i].key, std::move(old[i].value));
    }
  }

  std::unique_ptr<Slot[]> slots_;
  std::size_t mask_ = 0;
  unsigned shift_ = 64;  // 64 - log2(capacity): Home keeps the hash's top bits
  std::size_t size_ = 0;
};

}  // namespace mqc
