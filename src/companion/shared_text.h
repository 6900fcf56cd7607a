// SPDX-License-Identifier: BSD-3-Clause
// A text that many values hold the same of, shared: one pointer, read as the text (empty while
// none); a copy counts a reference (atomic) instead of copying the text. Immutable once made.
// A subscription's KubeMQ refusal is one of a dozen texts, so at 15,000 connections with a
// refused filter each the registry keeps a dozen texts, not 15,000 (Pooled).
//
// Threads: copies and reads from any thread; Pooled behind its own lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace mqc {

class SharedText {
 public:
  SharedText() = default;
  // A text of its own (none when empty).
  explicit SharedText(std::string text);
  // `text` from a pool kept for the process's life: the same text shares one block. Past the
  // pool's bound (kPoolMax texts) a text gets a block of its own.
  static SharedText Pooled(std::string_view text);
  static constexpr std::size_t kPoolMax = 256;

  SharedText(const SharedText& other) noexcept : block_(other.block_) { Acquire(); }
  SharedText(SharedText&& other) noexcept : block_(std::exchange(other.block_, nullptr)) {}
  SharedText& operator=(SharedText other) noexcept {
    std::swap(block_, other.block_);
    return *this;
  }
  SharedText& operator=(std::string text) { return *this = SharedText(std::move(text)); }
  ~SharedText() { Release(); }

  const std::string& operator*() const { return block_ != nullptr ? block_->text : Empty(); }
  const std::string* operator->() const { return &**this; }
  // Whether it holds a text (an empty one never does).
  bool held() const { return block_ != nullptr; }
  void reset() { *this = SharedText(); }

 private:
  struct Block {
    explicit Block(std::string value) : text(std::move(value)) {}
    std::atomic<std::uint32_t> references{1};
    const std::string text;
  };
  void Acquire() noexcept {
    if (block_ != nullptr) block_->references.fetch_add(1, std::memory_order_relaxed);
  }
  void Release() noexcept {
    if (block_ != nullptr && block_->references.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      delete block_;
    }
  }
  static const std::string& Empty();

  Block* block_ = nullptr;
};

// A text kept only when there is one, from the pool: an empty text leaves it empty.
inline void SetUnlessEmpty(SharedText* text, std::string_view value) {
  *text = value.empty() ? SharedText() : SharedText::Pooled(value);
}

}  // namespace mqc
