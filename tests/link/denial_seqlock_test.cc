// SPDX-License-Identifier: BSD-3-Clause
// The ACL denials of a statistics slot (RecordDenial / ReadDenials in link/shared_region.h): a
// hand-over clears them and says whether they are shown, a denial writes its count, topic and
// time, and a reader racing the writer never takes one denial's topic with another's time.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "link/shared_region.h"

namespace mqc {
namespace {

TEST(DenialSeqlockTest, AHandOverClearsTheDenialsAndSaysWhetherTheyAreShown) {
  ConnectionStatsSlot slot;
  ConnectionRareSlot rare;
  AssignStatsSlot(slot, rare, 7, /*denials_shown=*/true);
  RecordDenial(rare, AclAccess::kPublish, "a/b", 11);
  RecordDenial(rare, AclAccess::kSubscribe, "c/#", 12);
  RecordDenial(rare, AclAccess::kPublish, "d", 13);
  Denials denials;
  ASSERT_TRUE(ReadDenials(slot, rare, 7, &denials));
  EXPECT_TRUE(denials.shown);
  EXPECT_EQ(denials.publish, 2u);
  EXPECT_EQ(denials.subscribe, 1u);
  EXPECT_EQ(denials.last_topic, "d");
  EXPECT_EQ(denials.last_ns, 13);
  EXPECT_FALSE(ReadDenials(slot, rare, 8, &denials));  // another owner's: left as it was
  EXPECT_EQ(denials.publish, 2u);

  AssignStatsSlot(slot, rare, 9, /*denials_shown=*/false);
  ASSERT_TRUE(ReadDenials(slot, rare, 9, &denials));
  EXPECT_FALSE(denials.shown);
  EXPECT_EQ(denials.publish + denials.subscribe, 0u);
  EXPECT_EQ(denials.last_topic, "");
  EXPECT_EQ(denials.last_ns, 0);

  AssignStatsSlot(slot, rare, 10, /*denials_shown=*/true);
  ASSERT_TRUE(ReadDenials(slot, rare, 10, &denials));
  EXPECT_TRUE(denials.shown);
  EXPECT_EQ(denials.last_ns, 0);  // no denial yet: no topic, no time
}

TEST(DenialSeqlockTest, ATopicIsKeptToTheFieldsSizeWhateverItsLength) {
  ConnectionStatsSlot slot;
  ConnectionRareSlot rare;
  AssignStatsSlot(slot, rare, 7, true);
  Denials denials;
  for (std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{8}, std::size_t{9},
                           kDeniedTopicMax - 1, kDeniedTopicMax, kDeniedTopicMax + 1,
                           std::size_t{65535}}) {
    std::string topic(size, 'x');
    for (std::size_t i = 0; i < size; ++i) topic[i] = static_cast<char>('a' + i % 26);
    RecordDenial(rare, AclAccess::kPublish, topic, 100 + static_cast<std::int64_t>(size));
    ASSERT_TRUE(ReadDenials(slot, rare, 7, &denials));
    EXPECT_EQ(denials.last_topic, topic.substr(0, kDeniedTopicMax)) << size;
  }
}

// One writer records denials whose topic spells its own time; two readers check that every
// topic they accept goes with its own time. Bounded: 300 ms of writing, 10 s at most.
TEST(DenialSeqlockTest, AReaderNeverMixesTwoDenials) {
  ConnectionStatsSlot slot;
  ConnectionRareSlot rare;
  AssignStatsSlot(slot, rare, 5, true);
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> accepted{0};
  std::atomic<std::uint64_t> mixed{0};
  std::thread writer([&] {
    const auto start = std::chrono::steady_clock::now();
    for (std::int64_t n = 1;; ++n) {
      // Topics of varying length, so that a torn read also shows in the size.
      const std::string topic = "t/" + std::to_string(n) + "/" + std::string(n % 90, 'p');
      RecordDenial(rare, n % 2 == 0 ? AclAccess::kPublish : AclAccess::kSubscribe, topic, n);
      const auto now = std::chrono::steady_clock::now();
      if ((now - start > std::chrono::milliseconds(300) && accepted.load() > 100) ||
          now - start > std::chrono::seconds(10)) {
        break;
      }
    }
    done.store(true);
  });
  auto reader = [&] {
    while (!done.load()) {
      Denials denials;
      if (!ReadDenials(slot, rare, 5, &denials) || denials.last_ns == 0) continue;
      const std::int64_t n = denials.last_ns;
      const std::string want = "t/" + std::to_string(n) + "/" + std::string(n % 90, 'p');
      if (denials.last_topic.empty() && denials.publish + denials.subscribe > 0) continue;
      if (denials.last_topic != want.substr(0, kDeniedTopicMax)) mixed.fetch_add(1);
      accepted.fetch_add(1);
    }
  };
  std::thread reader_a(reader);
  std::thread reader_b(reader);
  writer.join();
  reader_a.join();
  reader_b.join();
  EXPECT_EQ(mixed.load(), 0u);
  EXPECT_GT(accepted.load(), 0u);
}

}  // namespace
}  // namespace mqc
