// SPDX-License-Identifier: BSD-3-Clause
// The per-connection statistics seqlock (AssignStatsSlot / ReadStatsSlot in
// link/shared_region.h), hammered by one writer and two readers. Run under TSan by
// `scripts/test.sh tsan`. Each owner writes only multiples of its own seq, and only growing
// values, so a reader that accepted a value of another owner (a torn hand-over) or the reset of
// a later owner under an earlier one's seq breaks one of the two checks.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "link/shared_region.h"

namespace mqc {
namespace {

// Owners are large: an owner's own values are always multiples of it, so a non-multiple is
// certainly another owner's (the check misses some mixes, it never reports a false one).
constexpr std::uint64_t kFirstOwner = 1'000'003;

std::array<std::uint64_t, 5> Fields(const RequestStatistics& v) {
  return {v.publish_count, v.publish_bytes, v.deliver_count, v.deliver_bytes, v.request_count};
}

TEST(StatsSeqlockTest, ReadersNeverSeeAnotherOwnersValuesOrAResetUnderAnOldSeq) {
  ConnectionStatsSlot slot;
  ConnectionRareSlot rare;
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> owners_written{0};
  // Each reader's accepted reads, which the writer waits for: on a loaded machine a reader
  // thread may first run after the writer's 400 ms (bounded by 10 s in all).
  std::array<std::atomic<std::uint64_t>, 2> accepted{};
  const auto every_reader_read = [&accepted] {
    for (const auto& count : accepted) {
      if (count.load(std::memory_order_relaxed) == 0) return false;
    }
    return true;
  };

  std::thread writer([&] {
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + std::chrono::milliseconds(400);
    const auto hard_deadline = start + std::chrono::seconds(10);
    for (std::uint64_t owner = kFirstOwner;; ++owner) {
      AssignStatsSlot(slot, rare, owner);
      for (int bump = 0; bump < 16; ++bump) {
        Bump(slot.publish_count, owner);
        Bump(slot.publish_bytes, owner);
        Bump(slot.deliver_count, owner);
        Bump(slot.deliver_bytes, owner);
        Bump(slot.request_count, owner);
      }
      // The message counts: this owner's own figures (its seq, modulo 31 bits), or unknown.
      MessageCounts counts;
      counts.out = {MessageQueue::Known::kSplit, static_cast<std::uint32_t>(owner & 0x7fffffff),
                    static_cast<std::uint32_t>(owner % 1000), 0};
      StoreMessageCounts(rare, counts);
      owners_written.store(owner - kFirstOwner + 1, std::memory_order_relaxed);
      const auto now = std::chrono::steady_clock::now();
      if (now > hard_deadline || (now > deadline && every_reader_read())) break;
    }
    done.store(true, std::memory_order_release);
  });

  struct Outcome {
    std::atomic<std::uint64_t>* accepted = nullptr;
    std::uint64_t refused = 0;
    std::vector<std::string> violations;
  };
  std::vector<Outcome> outcomes(accepted.size());
  std::vector<std::thread> readers;
  for (std::size_t reader = 0; reader < outcomes.size(); ++reader) {
    Outcome& outcome = outcomes[reader];
    outcome.accepted = &accepted[reader];
    readers.emplace_back([&slot, &rare, &done, &outcome] {
      std::uint64_t last_owner = 0;
      std::array<std::uint64_t, 5> last{};
      while (!done.load(std::memory_order_acquire) && outcome.violations.size() < 5) {
        const std::uint64_t owner = slot.seq.load(std::memory_order_relaxed);
        RequestStatistics values;
        MessageCounts messages;
        if (owner == 0 || !ReadStatsSlot(slot, owner, &values) ||
            !ReadMessageCounts(slot, rare, owner, &messages)) {
          ++outcome.refused;
          continue;
        }
        outcome.accepted->fetch_add(1, std::memory_order_relaxed);
        if (messages.out.known != MessageQueue::Known::kUnknown &&
            (messages.out.queued != (owner & 0x7fffffff) ||
             messages.out.in_flight != owner % 1000)) {
          outcome.violations.push_back("owner " + std::to_string(owner) +
                                       " read another owner's message counts " +
                                       std::to_string(messages.out.queued));
        }
        const std::array<std::uint64_t, 5> fields = Fields(values);
        if (owner != last_owner) last.fill(0);
        for (std::size_t i = 0; i < fields.size(); ++i) {
          if (fields[i] % owner != 0) {
            outcome.violations.push_back("owner " + std::to_string(owner) + " field " +
                                         std::to_string(i) + " holds another owner's " +
                                         std::to_string(fields[i]));
          } else if (owner == last_owner && fields[i] < last[i]) {
            outcome.violations.push_back("owner " + std::to_string(owner) + " field " +
                                         std::to_string(i) + " went back from " +
                                         std::to_string(last[i]) + " to " +
                                         std::to_string(fields[i]) + " (a later reset)");
          }
        }
        last = fields;
        last_owner = owner;
      }
    });
  }
  writer.join();
  for (std::thread& reader : readers) reader.join();

  EXPECT_GT(owners_written.load(), 100u);
  for (const Outcome& outcome : outcomes) {
    EXPECT_GT(outcome.accepted->load(), 0u);
    EXPECT_TRUE(outcome.violations.empty()) << outcome.violations.front();
  }
}

TEST(StatsSeqlockTest, AHandOverZeroesTheCountersAndNamesTheNewOwner) {
  ConnectionStatsSlot slot;
  ConnectionRareSlot rare;
  AssignStatsSlot(slot, rare, 7);
  Bump(slot.publish_count, 3);
  Bump(slot.deliver_bytes, 40);
  RequestStatistics values;
  ASSERT_TRUE(ReadStatsSlot(slot, 7, &values));
  EXPECT_EQ(values.publish_count, 3u);
  EXPECT_EQ(values.deliver_bytes, 40u);
  EXPECT_FALSE(ReadStatsSlot(slot, 8, &values));

  AssignStatsSlot(slot, rare, 9);
  EXPECT_FALSE(ReadStatsSlot(slot, 7, &values));
  ASSERT_TRUE(ReadStatsSlot(slot, 9, &values));
  EXPECT_EQ(values.publish_count, 0u);
  EXPECT_EQ(values.deliver_bytes, 0u);
}

TEST(StatsSeqlockTest, AHandOverMakesTheMessageCountsUnknown) {
  ConnectionStatsSlot slot;
  ConnectionRareSlot rare;
  AssignStatsSlot(slot, rare, 7);
  MessageCounts messages;
  ASSERT_TRUE(ReadMessageCounts(slot, rare, 7, &messages));
  EXPECT_EQ(messages.out.known, MessageQueue::Known::kUnknown);  // not copied yet: not 0
  MessageCounts counts;
  counts.out = {MessageQueue::Known::kSplit, 0, 0, 0};
  counts.in = {MessageQueue::Known::kTotal, 0, 0, 3};
  StoreMessageCounts(rare, counts);
  ASSERT_TRUE(ReadMessageCounts(slot, rare, 7, &messages));
  EXPECT_EQ(messages.out, counts.out);
  EXPECT_EQ(messages.in, counts.in);
  AssignStatsSlot(slot, rare, 9);
  EXPECT_FALSE(ReadMessageCounts(slot, rare, 7, &messages));  // the old owner's are gone
  ASSERT_TRUE(ReadMessageCounts(slot, rare, 9, &messages));
  EXPECT_EQ(messages.out.known, MessageQueue::Known::kUnknown);
  EXPECT_EQ(messages.in.known, MessageQueue::Known::kUnknown);
}

TEST(StatsSeqlockTest, EachCounterIsCopiedIntoItsOwnField) {
  ConnectionStatsSlot slot;
  ConnectionRareSlot rare;
  AssignStatsSlot(slot, rare, 5);
  Bump(slot.publish_count, 1);
  Bump(slot.publish_bytes, 2);
  Bump(slot.deliver_count, 3);
  Bump(slot.deliver_bytes, 4);
  Bump(slot.request_count, 5);
  const std::array<std::uint64_t, 5> want = {1, 2, 3, 4, 5};
  EXPECT_EQ(Fields(LoadStatsSlot(slot)), want);  // the writer's own read
  RequestStatistics values;
  ASSERT_TRUE(ReadStatsSlot(slot, 5, &values));  // another thread's
  EXPECT_EQ(Fields(values), want);
}

}  // namespace
}  // namespace mqc
