// SPDX-License-Identifier: BSD-3-Clause
#include "broker/callback_chain.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace mqc {

namespace {

// The registers a callee must preserve, which is where a compiler keeps a loop's node across
// the call (System V AMD64 ABI: rbx, rbp, r12 to r15; AAPCS64: x19 to x29).
#if defined(__x86_64__)
constexpr std::size_t kSavedRegisters = 6;
#define MQC_READ_SAVED_REGISTERS(out)              \
  asm volatile(                                    \
      "movq %%rbx, 0(%0)\n\t"                      \
      "movq %%rbp, 8(%0)\n\t"                      \
      "movq %%r12, 16(%0)\n\t"                     \
      "movq %%r13, 24(%0)\n\t"                     \
      "movq %%r14, 32(%0)\n\t"                     \
      "movq %%r15, 40(%0)\n\t"                     \
      :                                            \
      : "r"(out)                                   \
      : "memory")
#elif defined(__aarch64__)
constexpr std::size_t kSavedRegisters = 11;
#define MQC_READ_SAVED_REGISTERS(out)              \
  asm volatile(                                    \
      "stp x19, x20, [%0]\n\t"                     \
      "stp x21, x22, [%0, #16]\n\t"                \
      "stp x23, x24, [%0, #32]\n\t"                \
      "stp x25, x26, [%0, #48]\n\t"                \
      "stp x27, x28, [%0, #64]\n\t"                \
      "str x29, [%0, #80]\n\t"                     \
      :                                            \
      : "r"(out)                                   \
      : "memory")
#else
constexpr std::size_t kSavedRegisters = 0;
#define MQC_READ_SAVED_REGISTERS(out) static_cast<void>(out)
#endif

// The range (of `ranges`, in address order) that holds `address`, or null.
const MemoryRange* Containing(const std::vector<MemoryRange>& ranges, std::uintptr_t address) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), address,
                             [](std::uintptr_t a, const MemoryRange& r) { return a < r.begin; });
  if (it == ranges.begin() || address >= (it - 1)->end) return nullptr;
  return &*(it - 1);
}

// Inside one range, all `size` bytes from `address`.
bool Inside(const std::vector<MemoryRange>& ranges, std::uintptr_t address, std::size_t size) {
  if (address == 0 || address % alignof(void*) != 0 || address + size < address) return false;
  const MemoryRange* range = Containing(ranges, address);
  return range != nullptr && address + size <= range->end;
}

bool ParseHex(std::string_view text, std::uintptr_t* value) {
  if (text.empty() || text.size() > 2 * sizeof(std::uintptr_t)) return false;
  std::uintptr_t result = 0;
  for (const char c : text) {
    int digit = 0;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return false;
    }
    result = result * 16 + static_cast<std::uintptr_t>(digit);
  }
  *value = result;
  return true;
}

// The next space-separated field of a maps line.
std::string_view NextField(std::string_view* line) {
  const std::size_t start = line->find_first_not_of(' ');
  if (start == std::string_view::npos) {
    *line = std::string_view();
    return std::string_view();
  }
  line->remove_prefix(start);
  const std::size_t end = line->find(' ');
  const std::string_view field = line->substr(0, end);
  line->remove_prefix(end == std::string_view::npos ? line->size() : end);
  return field;
}

std::string ReadMaps() {
  std::ifstream in("/proc/self/maps");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

bool CallbackChain::HasOthers() const {
  // The head's prev is the last node, whose next is null; any other node's prev links to it.
  return own_->next != nullptr || own_->prev->next != nullptr;
}

std::vector<MemoryRange> PrivateAnonymousRanges(std::string_view maps) {
  std::vector<MemoryRange> ranges;
  while (!maps.empty()) {
    const std::size_t end = maps.find('\n');
    std::string_view line = maps.substr(0, end);
    maps.remove_prefix(end == std::string_view::npos ? maps.size() : end + 1);
    // "begin-end perms offset dev inode [name]"
    const std::string_view span = NextField(&line);
    const std::string_view perms = NextField(&line);
    NextField(&line);  // offset
    NextField(&line);  // device
    const std::string_view inode = NextField(&line);
    const std::size_t dash = span.find('-');
    MemoryRange range;
    if (dash == std::string_view::npos || !ParseHex(span.substr(0, dash), &range.begin) ||
        !ParseHex(span.substr(dash + 1), &range.end) || range.end <= range.begin) {
      continue;
    }
    if (perms.size() != 4 || perms[0] != 'r' || perms[1] != 'w' || perms[3] != 'p' ||
        inode != "0") {
      continue;
    }
    ranges.push_back(range);
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const MemoryRange& a, const MemoryRange& b) { return a.begin < b.begin; });
  return ranges;
}

// Reads memory that only `ranges` vouches for: no sanitizer's instrumentation (a candidate
// may lie in an allocator's red zone, in freed memory, or in a sanitizer's own shadow, all
// mapped and readable, none of them the program's to touch under instrumentation).
__attribute__((no_sanitize("address", "thread", "undefined"))) const BrokerCallbackNode*
MatchCallbackNode(
    const std::vector<MemoryRange>& ranges, const std::uintptr_t* words, std::size_t count,
    BrokerCallbackFn fn, const void* userdata) {
  constexpr std::size_t kSize = sizeof(BrokerCallbackNode);
  for (std::size_t i = 0; i < count; ++i) {
    if (!Inside(ranges, words[i], kSize)) continue;
    const auto* node = reinterpret_cast<const BrokerCallbackNode*>(words[i]);
    if (node->cb != fn || node->userdata != userdata) continue;
    // A plain loop, not a library call: everything that reads the candidate stays in this
    // uninstrumented function.
    bool empty_hash_handle = true;
    for (const void* word : node->hash_handle) empty_hash_handle &= word == nullptr;
    if (!empty_hash_handle) continue;
    const BrokerCallbackNode* prev = node->prev;
    const BrokerCallbackNode* next = node->next;
    if (!Inside(ranges, reinterpret_cast<std::uintptr_t>(prev), kSize)) continue;
    if (next != nullptr &&
        (!Inside(ranges, reinterpret_cast<std::uintptr_t>(next), kSize) || next->prev != node)) {
      continue;
    }
    // The head (its prev the last node, or itself alone) or a node its prev links to.
    if (prev != node && prev->next != nullptr && prev->next != node) continue;
    return node;
  }
  return nullptr;
}

__attribute__((noinline, no_sanitize("address", "thread", "undefined"))) const BrokerCallbackNode*
FindCallerNode(BrokerCallbackFn fn, const void* userdata) {
  if (!kCanReadCallbackChains) return nullptr;
  std::uintptr_t registers[kSavedRegisters > 0 ? kSavedRegisters : 1] = {};
  MQC_READ_SAVED_REGISTERS(registers);
  const std::vector<MemoryRange> ranges = PrivateAnonymousRanges(ReadMaps());
  // The stack grows down: the frames of this plugin, then the broker's loop, lie above here.
  const auto low = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)) &
                   ~static_cast<std::uintptr_t>(alignof(void*) - 1);
  const MemoryRange* stack = Containing(ranges, low);
  if (stack == nullptr) return nullptr;
  const std::uintptr_t high = std::min(low + kCallerWordsBytes, stack->end);
  std::vector<std::uintptr_t> words(kSavedRegisters + (high - low) / sizeof(std::uintptr_t));
  std::copy(std::begin(registers), std::end(registers), words.begin());
  std::uintptr_t* out = words.data() + kSavedRegisters;
  for (std::uintptr_t at = low; at + sizeof(std::uintptr_t) <= high; at += sizeof(std::uintptr_t)) {
    *out++ = *reinterpret_cast<const std::uintptr_t*>(at);
  }
  return MatchCallbackNode(ranges, words.data(), words.size(), fn, userdata);
}

#undef MQC_READ_SAVED_REGISTERS

}  // namespace mqc
