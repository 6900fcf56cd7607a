// SPDX-License-Identifier: BSD-3-Clause
#include "broker/c_string_compare.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

namespace mqc {
namespace {

// The known text as TrafficMeter keeps it: aligned, NUL-terminated, padded to whole chunks.
struct Padded {
  explicit Padded(const std::string& text)
      : buffer((text.size() + kCStringChunk) / kCStringChunk * kCStringChunk / sizeof(Chunk)),
        size(text.size()) {
    std::memcpy(buffer.data(), text.data(), text.size());
  }
  const char* data() const { return reinterpret_cast<const char*>(buffer.data()); }
  struct alignas(kCStringChunk) Chunk {
    char bytes[kCStringChunk] = {};
  };
  std::vector<Chunk> buffer;
  std::size_t size;
};

std::string Text(std::size_t size) {
  std::string text;
  for (std::size_t i = 0; i < size; ++i) text.push_back(static_cast<char>('a' + i % 26));
  return text;
}

TEST(QuickEqualsCStringTest, EqualTextsOfEveryLengthAreEqual) {
  for (std::size_t size = 0; size <= 256; ++size) {
    const std::string text = Text(size);
    const Padded known(text);
    EXPECT_TRUE(QuickEqualsCString(text.c_str(), known.data(), known.size)) << size;
  }
}

TEST(QuickEqualsCStringTest, ADifferentByteOrLengthAnywhereIsNotEqual) {
  for (std::size_t size : {1, 14, 15, 16, 17, 31, 32, 33, 100, 256}) {
    const std::string text = Text(size);
    const Padded known(text);
    for (std::size_t at = 0; at < size; ++at) {
      std::string other = text;
      other[at] = '#';
      EXPECT_FALSE(QuickEqualsCString(other.c_str(), known.data(), known.size)) << size << at;
    }
    // A prefix of the known text, and the known text with more after it.
    EXPECT_FALSE(QuickEqualsCString(text.substr(0, size - 1).c_str(), known.data(), known.size))
        << size;
    EXPECT_FALSE(QuickEqualsCString((text + "x").c_str(), known.data(), known.size)) << size;
    EXPECT_FALSE(QuickEqualsCString((text + "/").c_str(), known.data(), known.size)) << size;
  }
}

// The broker's string right before an unmapped page: the compare must not read into that page
// (a crash here), and says equal only for an equal text.
TEST(QuickEqualsCStringTest, AStringEndingBeforeAnUnmappedPageIsReadSafely) {
  const long page = sysconf(_SC_PAGESIZE);
  ASSERT_GT(page, 0);
  void* pages = mmap(nullptr, static_cast<std::size_t>(2 * page), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(pages, MAP_FAILED);
  ASSERT_EQ(mprotect(static_cast<char*>(pages) + page, static_cast<std::size_t>(page), PROT_NONE),
            0);
  char* end = static_cast<char*>(pages) + page;
  for (std::size_t size : {0, 1, 5, 14, 15, 16, 17, 40}) {
    const std::string text = Text(size);
    const Padded known(text);
    const Padded longer(text + "more");
    for (std::size_t gap = 0; gap < 40; ++gap) {
      char* at = end - (size + 1) - gap;  // the NUL `gap` bytes before the unmapped page
      std::memcpy(at, text.c_str(), size + 1);
      // Near the page's end the answer may be "cannot tell" (false), never a wrong true.
      const bool equal = QuickEqualsCString(at, known.data(), known.size);
      if (gap >= kCStringChunk) {
        EXPECT_TRUE(equal) << size << " " << gap;
      }
      EXPECT_FALSE(QuickEqualsCString(at, longer.data(), longer.size)) << size << " " << gap;
    }
  }
  munmap(pages, static_cast<std::size_t>(2 * page));
}

}  // namespace
}  // namespace mqc
