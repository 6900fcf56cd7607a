// SPDX-License-Identifier: BSD-3-Clause
// Mosquitto 2.0's chain of callbacks for one event, read from this plugin's own place in it, so
// that the plugin answers BASIC_AUTH and ACL_CHECK exactly as the broker would without it
// (docs/how-it-works.md, "Other plugins beside this one").
//
// Why: 2.0 asks the callbacks of an event in order and stops at the first answer that is not
// DEFER; when callbacks exist and every one defers, the answer is a denial, and when none exist
// it is success (src/security.c: mosquitto_acl_check, mosquitto_unpwd_check, v2.0.0 to
// v2.0.22). A plugin that only watches must therefore know whether any other callback is in the
// chain, and the configuration cannot tell (a plugin line says nothing of the events the plugin
// registers). The chain itself can: it is a doubly linked list of struct mosquitto__callback
// (src/mosquitto_broker_internal.h, the same from v2.0.0 to v2.0.22), appended to by
// mosquitto_callback_register (src/plugin.c), and the broker holds the node it calls in its loop
// while the callback runs. FindCallerNode finds this plugin's node there once; from it the
// links show every other callback, as the broker's own loop sees them, at every check.
//
// Threads: the broker thread only (the chain is the broker's, changed only on its thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace mqc {

using BrokerCallbackFn = int (*)(int event, void* event_data, void* userdata);

// struct mosquitto__callback of Mosquitto 2.0: a UT_hash_handle (six pointers and two 32-bit
// integers, used only by CONTROL callbacks: zero in every other node, which the broker callocs),
// the list links, the callback, its userdata and CONTROL's topic.
struct BrokerCallbackNode {
  void* hash_handle[7];
  BrokerCallbackNode* next;
  BrokerCallbackNode* prev;  // the head's prev is the last node (utlist's DL lists)
  BrokerCallbackFn cb;
  void* userdata;
  char* data;
};
static_assert(sizeof(void*) != 8 || sizeof(BrokerCallbackNode) == 96,
              "struct mosquitto__callback is 96 bytes on 64-bit builds");

// This plugin's node in one chain, and what it shows.
class CallbackChain {
 public:
  enum class State : std::uint8_t {
    kUnknown,      // not looked for yet
    kKnown,        // found: the chain is read at every check
    kUnavailable,  // looked for and not found: the configuration decides (logged once)
  };

  State state() const { return state_; }
  bool known() const { return state_ == State::kKnown; }
  // Records what FindCallerNode found (null: not found).
  void Found(const BrokerCallbackNode* own) {
    own_ = own;
    state_ = own != nullptr ? State::kKnown : State::kUnavailable;
  }

  // Whether any callback besides this plugin's is in the chain, before or after it. Only when
  // known().
  bool HasOthers() const;

  // Asks the callbacks after this plugin's, in order, with the broker's event, as the broker's
  // loop would: the first answer that is not DEFER, or DEFER when all defer or none follow. Only
  // when known(); the caller must then answer the broker with something other than DEFER, or
  // the broker would ask them again.
  // Each is handed a fresh copy of `data`, as the broker refills its event for each callback.
  template <typename Event>
  int AskAfter(int event, const Event& data, int defer_code) const {
    for (const BrokerCallbackNode* node = own_->next; node != nullptr; node = node->next) {
      Event fresh = data;
      const int answer = node->cb(event, &fresh, node->userdata);
      if (answer != defer_code) return answer;
    }
    return defer_code;
  }

 private:
  const BrokerCallbackNode* own_ = nullptr;
  State state_ = State::kUnknown;
};

// A range of the process's memory [begin, end).
struct MemoryRange {
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
};

// The private, writable, anonymous mappings of /proc/self/maps text (the heap among them,
// where the broker callocs its nodes), in address order. Mapped files are left out: a read
// past a file's end faults.
std::vector<MemoryRange> PrivateAnonymousRanges(std::string_view maps);

// The node among `words` (candidate addresses) that lies inside `ranges` and holds `fn` and
// `userdata` with an empty hash handle and consistent links; null when none does.
const BrokerCallbackNode* MatchCallbackNode(const std::vector<MemoryRange>& ranges,
                                            const std::uintptr_t* words, std::size_t count,
                                            BrokerCallbackFn fn, const void* userdata);

// The node of `fn` registered with `userdata` in the chain whose loop is calling it now: call it
// only from inside that callback (directly or further down). The broker's loop keeps the node
// it called either in a callee-saved register or in its own stack frame; both are read here (the
// registers as they are, and the words of the stack from here up to kCallerWordsBytes above).
// Reads /proc/self/maps once. Null when not found (an architecture other than x86-64 and
// AArch64, or a broker whose chain is not 2.0's).
const BrokerCallbackNode* FindCallerNode(BrokerCallbackFn fn, const void* userdata);

constexpr std::size_t kCallerWordsBytes = 16 * 1024;

// Whether FindCallerNode knows where this architecture keeps a caller's registers.
#if defined(__x86_64__) || defined(__aarch64__)
constexpr bool kCanReadCallbackChains = true;
#else
constexpr bool kCanReadCallbackChains = false;
#endif

}  // namespace mqc
