// SPDX-License-Identifier: BSD-3-Clause
// SharedText: a text shared by reference, read as the text; the pool's texts shared by every
// value that asks for the same one, and bounded.
#include "companion/shared_text.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace mqc {
namespace {

TEST(SharedTextTest, ReadsAsItsTextOrEmptyAndCopiesShareIt) {
  const SharedText none;
  EXPECT_EQ(*none, "");
  EXPECT_FALSE(none.held());
  EXPECT_FALSE(SharedText(std::string()).held());  // an empty text is none
  SharedText a(std::string("KubeMQ's store pattern takes no wildcards"));
  SharedText b = a;
  EXPECT_EQ(*b, "KubeMQ's store pattern takes no wildcards");
  EXPECT_EQ(&*a, &*b);  // one text, not two
  a = "another";
  EXPECT_EQ(*a, "another");
  EXPECT_EQ(*b, "KubeMQ's store pattern takes no wildcards");  // b keeps its own
  SharedText moved = std::move(b);
  EXPECT_EQ(b->size(), 0u);  // NOLINT(bugprone-use-after-move): a moved-from one holds none
  EXPECT_EQ(moved->size(), 41u);
  moved.reset();
  EXPECT_FALSE(moved.held());
}

TEST(SharedTextTest, ThePoolGivesTheSameTextOnceAndStaysBounded) {
  const SharedText first = SharedText::Pooled("KubeMQ's queues subscriptions need MQTT 5");
  const SharedText second = SharedText::Pooled(std::string("KubeMQ's queues subscriptions ") +
                                               "need MQTT 5");
  EXPECT_EQ(&*first, &*second);
  EXPECT_FALSE(SharedText::Pooled("").held());
  SharedText empty_set;
  SetUnlessEmpty(&empty_set, "");
  EXPECT_FALSE(empty_set.held());
  SetUnlessEmpty(&empty_set, "KubeMQ's queues subscriptions need MQTT 5");
  EXPECT_EQ(&*empty_set, &*first);
  // Past the bound every text still reads right; it is just not shared.
  std::vector<SharedText> many;
  for (std::size_t i = 0; i < SharedText::kPoolMax + 10; ++i) {
    many.push_back(SharedText::Pooled("text " + std::to_string(i)));
  }
  EXPECT_EQ(*many.back(), "text " + std::to_string(SharedText::kPoolMax + 9));
  EXPECT_NE(&*SharedText::Pooled(*many.back()), &*many.back());
}

// Copies made and dropped on several threads at once leave the text whole (run under the
// sanitizers: a reference counted wrong is a use after free or a leak there).
TEST(SharedTextTest, CopiesOnSeveralThreadsCountRight) {
  const SharedText shared = SharedText::Pooled("no KubeMQ channel: empty topic filter");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&shared] {
      for (int i = 0; i < 10000; ++i) {
        SharedText copy = shared;
        SharedText again = copy;
        ASSERT_EQ(again->size(), 37u);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(*shared, "no KubeMQ channel: empty topic filter");
}

}  // namespace
}  // namespace mqc
