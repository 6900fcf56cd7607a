// SPDX-License-Identifier: BSD-3-Clause
// cJSON helpers (see json_util.h).
//
// Where the spec is silent:
// - Invalid UTF-8 is replaced as link/json_string.h says.
// - The nanosecond form always has nine digits, also for whole seconds, so that timestamps of
//   one kind have one width (protobuf's JSON mapping would shorten to 0, 3 or 6 digits).
#include "companion/json_util.h"

#include <cjson/cJSON.h>

#include <mutex>
#include <string>

namespace mqc {

CjsonPtr ParseJson(std::string_view text) {
  // A raw NUL is never valid JSON, and would end cJSON's reading early.
  if (text.find('\0') != std::string_view::npos) return nullptr;
  const std::string terminated(text);
  // cJSON's parser records its error position in a global, so parses on two threads race.
  static std::mutex parse_mutex;
  const std::lock_guard<std::mutex> lock(parse_mutex);
  // Counting the terminator in the length is what makes cJSON refuse trailing garbage.
  return CjsonPtr(cJSON_ParseWithLengthOpts(terminated.c_str(), terminated.size() + 1, nullptr,
                                            /*require_null_terminated=*/1));
}

std::string QuoteForMessage(std::string_view value) {
  // Excerpt cuts at a character boundary, so the cut adds no U+FFFD.
  return "'" + ToValidUtf8(Excerpt(value)) + "'";
}

}  // namespace mqc
