// SPDX-License-Identifier: BSD-3-Clause
#include "broker/callback_chain.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../support/broker_chain.h"

namespace mqc {
namespace {

constexpr int kDefer = 17;
constexpr int kDenied = 12;
constexpr int kEvent = 8;

// The broker's loop (src/security.c: mosquitto_acl_check): the first answer that is not DEFER,
// else a denial where callbacks exist. Out of line, as in the broker.
[[gnu::noinline]] int RunChain(const BrokerCallbackNode* head, int* event_data) {
  int answer = 0;
  for (const BrokerCallbackNode* node = head; node != nullptr; node = node->next) {
    answer = node->cb(kEvent, event_data, node->userdata);
    if (answer != kDefer) return answer;
  }
  return answer == kDefer ? kDenied : answer;
}

// What the plugin's callback does here: finds its own node, from inside the broker's loop.
struct Probe {
  const BrokerCallbackNode* found = nullptr;
  int calls = 0;
  int answer = kDefer;
};

int ProbeCallback(int /*event*/, void* /*event_data*/, void* userdata) {
  auto* probe = static_cast<Probe*>(userdata);
  ++probe->calls;
  probe->found = FindCallerNode(ProbeCallback, probe);
  return probe->answer;
}

// Another plugin's callback: counts its calls, sees the event, answers what it is told.
struct Other {
  int calls = 0;
  int answer = kDefer;
  int seen = 0;
};

int OtherCallback(int /*event*/, void* event_data, void* userdata) {
  auto* other = static_cast<Other*>(userdata);
  ++other->calls;
  other->seen = *static_cast<int*>(event_data);
  *static_cast<int*>(event_data) = -1;  // a callback that scribbles on its event
  return other->answer;
}

TEST(CallbackChainTest, FindsItsNodeFromInsideTheBrokersLoopWhereverItStands) {
  for (int position = 0; position < 3; ++position) {
    SCOPED_TRACE("position " + std::to_string(position));
    BrokerChain chain;
    Other before;
    Other after;
    Probe probe;
    if (position > 0) chain.Append(OtherCallback, &before);
    const BrokerCallbackNode* own = chain.Append(ProbeCallback, &probe);
    if (position < 2) chain.Append(OtherCallback, &after);
    int event = 7;
    RunChain(chain.head(), &event);
    EXPECT_EQ(probe.calls, 1);
    EXPECT_EQ(probe.found, own);
  }
}

TEST(CallbackChainTest, FindsNothingForAnotherUserdataOrOutsideTheLoop) {
  BrokerChain chain;
  Probe probe;
  chain.Append(ProbeCallback, &probe);
  Probe stranger;
  EXPECT_EQ(FindCallerNode(ProbeCallback, &stranger), nullptr);
  EXPECT_EQ(FindCallerNode(OtherCallback, &probe), nullptr);
}

TEST(CallbackChainTest, MatchRefusesNodesOutsideTheRangesWithAHashHandleOrBrokenLinks) {
  BrokerChain chain;
  Probe probe;
  BrokerCallbackNode* own = chain.Append(ProbeCallback, &probe);
  const auto address = reinterpret_cast<std::uintptr_t>(own);
  const std::vector<MemoryRange> around = {{address - 4096, address + 4096}};
  EXPECT_EQ(MatchCallbackNode(around, &address, 1, ProbeCallback, &probe), own);
  const std::vector<MemoryRange> elsewhere = {{address + 4096, address + 8192}};
  EXPECT_EQ(MatchCallbackNode(elsewhere, &address, 1, ProbeCallback, &probe), nullptr);
  const std::uintptr_t misaligned = address + 1;
  EXPECT_EQ(MatchCallbackNode(around, &misaligned, 1, ProbeCallback, &probe), nullptr);
  own->hash_handle[2] = own;  // a CONTROL callback's node
  EXPECT_EQ(MatchCallbackNode(around, &address, 1, ProbeCallback, &probe), nullptr);
  own->hash_handle[2] = nullptr;
  own->prev = nullptr;
  EXPECT_EQ(MatchCallbackNode(around, &address, 1, ProbeCallback, &probe), nullptr);
}

TEST(CallbackChainTest, TellsWhetherOtherCallbacksAreInTheChain) {
  struct Case {
    bool before;
    bool after;
  };
  for (const Case c : {Case{false, false}, Case{true, false}, Case{false, true}, Case{true, true}}) {
    SCOPED_TRACE(std::string(c.before ? "before " : "") + (c.after ? "after" : ""));
    BrokerChain chain;
    Other other;
    Probe probe;
    if (c.before) chain.Append(OtherCallback, &other);
    CallbackChain own;
    own.Found(chain.Append(ProbeCallback, &probe));
    if (c.after) chain.Append(OtherCallback, &other);
    ASSERT_TRUE(own.known());
    EXPECT_EQ(own.HasOthers(), c.before || c.after);
  }
}

TEST(CallbackChainTest, AsksOnlyTheCallbacksAfterItsOwnEachWithAFreshEvent) {
  BrokerChain chain;
  Other before;
  before.answer = kDenied;  // never asked: the broker asked it already
  Other first;
  Other second;
  second.answer = 0;
  Other third;
  third.answer = kDenied;
  Probe probe;
  chain.Append(OtherCallback, &before);
  CallbackChain own;
  own.Found(chain.Append(ProbeCallback, &probe));
  chain.Append(OtherCallback, &first);
  chain.Append(OtherCallback, &second);
  chain.Append(OtherCallback, &third);
  const int event = 7;
  EXPECT_EQ(own.AskAfter(kEvent, event, kDefer), 0);
  EXPECT_EQ(before.calls, 0);
  EXPECT_EQ(first.calls, 1);
  EXPECT_EQ(second.calls, 1);
  EXPECT_EQ(second.seen, 7);  // not what the first one scribbled
  EXPECT_EQ(third.calls, 0);
  second.answer = kDefer;
  third.answer = kDefer;
  EXPECT_EQ(own.AskAfter(kEvent, event, kDefer), kDefer);
  EXPECT_EQ(third.calls, 1);
}

TEST(CallbackChainTest, AnUnfoundChainIsUnavailable) {
  CallbackChain chain;
  EXPECT_EQ(chain.state(), CallbackChain::State::kUnknown);
  chain.Found(nullptr);
  EXPECT_EQ(chain.state(), CallbackChain::State::kUnavailable);
  EXPECT_FALSE(chain.known());
}

TEST(CallbackChainTest, KeepsOnlyPrivateWritableAnonymousMappings) {
  const std::string maps =
      "55d0c0a00000-55d0c0a21000 r--p 00000000 08:01 1234 /usr/sbin/mosquitto\n"
      "55d0c0c00000-55d0c0c21000 rw-p 00000000 00:00 0 [heap]\n"
      "7f0000000000-7f0000100000 rw-p 00000000 00:00 0 \n"
      "7f0000200000-7f0000300000 rw-s 00000000 00:01 99 /memfd:mosquitto_connections (deleted)\n"
      "7f0000400000-7f0000500000 rw-p 00001000 08:01 555 /var/lib/mosquitto/file\n"
      "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]\n"
      "7ffc00030000-7ffc00031000 r-xp 00000000 00:00 0 [vdso]\n"
      "not a line\n";
  const std::vector<MemoryRange> ranges = PrivateAnonymousRanges(maps);
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_EQ(ranges[0].begin, 0x55d0c0c00000u);
  EXPECT_EQ(ranges[0].end, 0x55d0c0c21000u);
  EXPECT_EQ(ranges[1].begin, 0x7f0000000000u);
  EXPECT_EQ(ranges[2].end, 0x7ffc00021000u);
}

}  // namespace
}  // namespace mqc
