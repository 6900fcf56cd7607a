// SPDX-License-Identifier: BSD-3-Clause
// SharedText (see shared_text.h).
#include "companion/shared_text.h"

#include <mutex>
#include <unordered_map>

namespace mqc {

SharedText::SharedText(std::string text)
    : block_(text.empty() ? nullptr : new Block(std::move(text))) {}

const std::string& SharedText::Empty() {
  static const std::string kEmpty;
  return kEmpty;
}

SharedText SharedText::Pooled(std::string_view text) {
  if (text.empty()) return SharedText();
  // Never destroyed: its texts outlive every value that shares them, whatever the order of
  // static destruction.
  static auto* const pool = new std::unordered_map<std::string_view, SharedText>();
  static auto* const mutex = new std::mutex();
  std::lock_guard<std::mutex> lock(*mutex);
  const auto found = pool->find(text);
  if (found != pool->end()) return found->second;
  SharedText made{std::string(text)};
  if (pool->size() < kPoolMax) pool->emplace(*made, made);  // the key views the pooled text
  return made;
}

}  // namespace mqc
