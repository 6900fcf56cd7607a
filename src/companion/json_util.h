// SPDX-License-Identifier: BSD-3-Clause
// Small helpers over cJSON: parsing requests (the HTTP views) and the ban file (ban_store.h), and
// building and printing the ban file: an owning pointer, builders that turn cJSON's "NULL on out
// of memory" into std::bad_alloc (so callers need no null checks and leak nothing), printing to
// std::string. The HTTP answers are written with JsonWriter (companion/http/json_writer.h), whose
// strings AppendJsonString below escapes. Pure functions, safe on any thread.
#pragma once

#include <cjson/cJSON.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "link/text_util.h"

namespace mqc {

using CjsonPtr = CSmartPtr<cJSON, cJSON_Delete>;

// Builders: never return null; throw std::bad_alloc when cJSON cannot allocate.
CjsonPtr NewJsonObject();
CjsonPtr NewJsonArray();
CjsonPtr NewJsonNull();
CjsonPtr NewJsonBool(bool value);
CjsonPtr NewJsonNumber(double value);
// The value is made valid UTF-8 first (see ToValidUtf8): cJSON prints bytes as they are, and
// stops at a NUL byte.
CjsonPtr NewJsonString(std::string_view value);

// Moves `item` into `object` under `key` (or to the end of `array`). Throws std::bad_alloc on
// failure; `item` is freed then.
void AddToJsonObject(cJSON* object, const char* key, CjsonPtr item);
void AddToJsonArray(cJSON* array, CjsonPtr item);

// Compact JSON text, no whitespace. Throws std::bad_alloc on failure.
std::string PrintJson(const cJSON& item);

// Parses JSON text (which need not be NUL-terminated); null when it is not valid JSON, also
// when valid JSON is followed by anything but whitespace. Safe on any thread (serialised).
CjsonPtr ParseJson(std::string_view text);

// `value` with every byte sequence that is not valid UTF-8, and every NUL, replaced by U+FFFD.
std::string ToValidUtf8(std::string_view value);

// Appends `value` to *out as a JSON string literal, quotes included: made valid UTF-8 as
// ToValidUtf8 does and escaped as cJSON prints strings (JsonWriter's strings).
void AppendJsonString(std::string_view value, std::string* out);

// `value` for an error message: in single quotes, cut to 64 bytes (then "...'") at a character
// boundary, valid UTF-8. Keeps an echoed request value short and printable.
std::string QuoteForMessage(std::string_view value);

}  // namespace mqc
