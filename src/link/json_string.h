// SPDX-License-Identifier: BSD-3-Clause
// JSON string literals, written the one way both processes write them: the companion's answers
// (companion/json_writer.h) and the broker's presence messages (broker/presence.h). Valid UTF-8
// is copied, anything else becomes U+FFFD, and control characters are escaped as cJSON prints
// them (\n, \u0001). No third-party library: linked into both processes.
//
// Threads: pure functions, safe on any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mqc {

// `value` with every byte sequence that is not valid UTF-8, and every NUL, replaced by U+FFFD.
std::string ToValidUtf8(std::string_view value);

// Appends `value` to *out as a JSON string literal, quotes included: made valid UTF-8 as
// ToValidUtf8 does and escaped as cJSON prints strings.
void AppendJsonString(std::string_view value, std::string* out);

// The most bytes WriteJsonChars writes for `size` bytes of value: a control character becomes
// six (\u00XX), an invalid byte three (U+FFFD).
constexpr std::size_t MaxJsonCharsBytes(std::size_t size) { return 6 * size; }

// What AppendJsonString appends without its two quotes, written at `out`, which has room for
// MaxJsonCharsBytes(value.size()); returns the end. For an encoder that writes a big answer
// into a buffer of its own (companion/http/kubemq_list_json.h): printable ASCII without quote
// or backslash, which client ids, topics and addresses are in practice, is found 8 bytes at a
// time and copied whole; anything else is escaped by AppendJsonString.
char* WriteJsonChars(std::string_view value, char* out);

}  // namespace mqc
