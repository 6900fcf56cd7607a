// SPDX-License-Identifier: BSD-3-Clause
// Runs a fuzz target over every file of its corpus folders, so that the corpus is replayed in
// the ordinary test run (built with GCC or clang, with or without sanitizers).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

int ReplayFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return 1;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int failures = 0;
  std::size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path root(argv[i]);
    if (std::filesystem::is_regular_file(root)) {
      failures += ReplayFile(root);
      ++replayed;
      continue;
    }
    if (!std::filesystem::is_directory(root)) {
      std::fprintf(stderr, "no corpus at %s\n", root.c_str());
      return 1;
    }
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
      if (!entry.is_regular_file()) continue;
      failures += ReplayFile(entry.path());
      ++replayed;
    }
  }
  if (replayed == 0) {
    std::fprintf(stderr, "empty corpus: nothing replayed\n");
    return 1;
  }
  std::printf("replayed %zu inputs\n", replayed);
  return failures == 0 ? 0 : 1;
}
