// SPDX-License-Identifier: BSD-3-Clause
// JSON string literals, written the one way both processes write them: the companion's answers
// (companion/json_writer.h) and the broker's presence messages (broker/presence.h). Valid UTF-8
// is copied, anything else becomes U+FFFD, and control characters are escaped as cJSON prints
// them (\n, \u0001). No third-party library: linked into both processes.
//
// Threads: pure functions, safe on any thread.
#pragma once

#include <string>
#include <string_view>

namespace mqc {

// `value` with every byte sequence that is not valid UTF-8, and every NUL, replaced by U+FFFD.
std::string ToValidUtf8(std::string_view value);

// Appends `value` to *out as a JSON string literal, quotes included: made valid UTF-8 as
// ToValidUtf8 does and escaped as cJSON prints strings.
void AppendJsonString(std::string_view value, std::string* out);

}  // namespace mqc
