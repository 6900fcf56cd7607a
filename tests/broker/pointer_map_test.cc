// SPDX-License-Identifier: BSD-3-Clause
#include "broker/pointer_map.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

namespace mqc {
namespace {

// Keys are addresses; these tests only compare them, never read through them.
const void* Key(std::uintptr_t n) { return reinterpret_cast<const void*>(n * 16); }

// Every key hashes to the same home slot: one long probe chain.
struct SameHome {
  std::uint64_t operator()(const void*) const { return 0; }
};
// Every key's home is the last slot: chains wrap around to slot 0.
struct LastSlot {
  std::uint64_t operator()(const void*) const { return ~std::uint64_t{0}; }
};

TEST(PointerMapTest, InsertFindEraseAndReplace) {
  PointerMap<int> map;
  EXPECT_EQ(map.Find(Key(1)), nullptr);
  map.Insert(Key(1), 10);
  map.Insert(Key(2), 20);
  ASSERT_NE(map.Find(Key(1)), nullptr);
  EXPECT_EQ(*map.Find(Key(1)), 10);
  EXPECT_EQ(*map.Find(Key(2)), 20);
  EXPECT_EQ(map.size(), 2u);
  map.Insert(Key(1), 11);  // replaces
  EXPECT_EQ(*map.Find(Key(1)), 11);
  EXPECT_EQ(map.size(), 2u);
  EXPECT_TRUE(map.Erase(Key(1)));
  EXPECT_FALSE(map.Erase(Key(1)));
  EXPECT_EQ(map.Find(Key(1)), nullptr);
  EXPECT_EQ(*map.Find(Key(2)), 20);
  EXPECT_EQ(map.size(), 1u);
}

TEST(PointerMapTest, NullIsNeverFound) {
  PointerMap<int> map;
  EXPECT_EQ(map.Find(nullptr), nullptr);  // empty slots have the null key
  map.Insert(Key(3), 3);
  EXPECT_EQ(map.Find(nullptr), nullptr);
  EXPECT_FALSE(map.Erase(nullptr));
}

template <typename Hash>
void EraseEachFromAChain() {
  constexpr int kKeys = 10;  // one chain in 16 slots
  for (int erased = 0; erased < kKeys; ++erased) {
    PointerMap<int, Hash> map;
    for (int i = 0; i < kKeys; ++i) map.Insert(Key(100 + i), i);
    ASSERT_EQ(map.capacity(), 16u);
    ASSERT_TRUE(map.Erase(Key(100 + erased)));
    for (int i = 0; i < kKeys; ++i) {
      const int* value = map.Find(Key(100 + i));
      if (i == erased) {
        EXPECT_EQ(value, nullptr);
      } else {
        ASSERT_NE(value, nullptr) << "erased " << erased << ", lost " << i;
        EXPECT_EQ(*value, i);
      }
    }
    // The hole was filled: a miss ends after the chain's entries, not at the hole.
    map.Insert(Key(100 + erased), 1000);
    EXPECT_EQ(*map.Find(Key(100 + erased)), 1000);
    EXPECT_EQ(map.size(), static_cast<std::size_t>(kKeys));
  }
}

TEST(PointerMapTest, CollidingKeysSurviveTheErasureOfAnyOfThem) { EraseEachFromAChain<SameHome>(); }

TEST(PointerMapTest, AChainThatWrapsAroundSurvivesTheErasureOfAnyOfIt) {
  EraseEachFromAChain<LastSlot>();
}

TEST(PointerMapTest, GrowsAtThreeQuartersAndKeepsEverything) {
  PointerMap<int> map;
  EXPECT_EQ(map.capacity(), 16u);
  for (int i = 0; i < 12; ++i) map.Insert(Key(i + 1), i);
  EXPECT_EQ(map.capacity(), 16u);
  map.Insert(Key(13), 12);
  EXPECT_EQ(map.capacity(), 32u);
  for (int i = 0; i < 13; ++i) EXPECT_EQ(*map.Find(Key(i + 1)), i);
}

TEST(PointerMapTest, MoveOnlyValuesAreMovedAndDestroyedOnErase) {
  PointerMap<std::unique_ptr<int>> map;
  auto shared = std::make_shared<int>(7);
  std::weak_ptr<int> watch = shared;
  PointerMap<std::shared_ptr<int>> owners;
  owners.Insert(Key(1), std::move(shared));
  for (int i = 2; i < 100; ++i) owners.Insert(Key(i), std::make_shared<int>(i));  // grows
  EXPECT_FALSE(watch.expired());
  EXPECT_TRUE(owners.Erase(Key(1)));
  EXPECT_TRUE(watch.expired());
  map.Insert(Key(1), std::make_unique<int>(5));
  EXPECT_EQ(**map.Find(Key(1)), 5);
}

TEST(PointerMapTest, AHundredThousandEntriesAgainstASet) {
  PointerMap<std::uintptr_t> map;
  std::set<std::uintptr_t> expected;
  // Addresses spaced like a heap's, erased in an order unrelated to insertion.
  for (std::uintptr_t i = 1; i <= 100000; ++i) {
    map.Insert(Key(i * 7), i);
    expected.insert(i);
  }
  EXPECT_EQ(map.size(), 100000u);
  for (std::uintptr_t i = 1; i <= 100000; i += 3) {
    EXPECT_TRUE(map.Erase(Key(i * 7)));
    expected.erase(i);
  }
  for (std::uintptr_t i = 100001; i <= 120000; ++i) {
    map.Insert(Key(i * 7), i);
    expected.insert(i);
  }
  EXPECT_EQ(map.size(), expected.size());
  std::size_t wrong = 0;
  for (std::uintptr_t i = 1; i <= 120000; ++i) {
    const std::uintptr_t* value = map.Find(Key(i * 7));
    const bool present = expected.count(i) != 0;
    if (present != (value != nullptr) || (value != nullptr && *value != i)) ++wrong;
  }
  EXPECT_EQ(wrong, 0u);
  std::size_t visited = 0;
  map.ForEach([&](const void* key, std::uintptr_t& value) {
    ++visited;
    EXPECT_EQ(key, Key(value * 7));
  });
  EXPECT_EQ(visited, expected.size());
}

}  // namespace
}  // namespace mqc
