// SPDX-License-Identifier: BSD-3-Clause
// Small helpers over cJSON, which only reads JSON here: the requests (the HTTP views) and the ban
// file (ban_store.h), with an owning pointer. Every JSON the companion writes, answers and the
// ban file, is written with JsonWriter (companion/json_writer.h), whose strings
// AppendJsonString (link/json_string.h) escapes. Pure functions, safe on any thread.
#pragma once

#include <cjson/cJSON.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "link/json_string.h"  // ToValidUtf8, AppendJsonString
#include "link/text_util.h"

namespace mqc {

using CjsonPtr = CSmartPtr<cJSON, cJSON_Delete>;

// Parses JSON text (which need not be NUL-terminated); null when it is not valid JSON, also
// when valid JSON is followed by anything but whitespace. Safe on any thread (serialised).
CjsonPtr ParseJson(std::string_view text);

// `value` for an error message: in single quotes, cut to 64 bytes (then "...'") at a character
// boundary, valid UTF-8. Keeps an echoed request value short and printable.
std::string QuoteForMessage(std::string_view value);

}  // namespace mqc
