// SPDX-License-Identifier: BSD-3-Clause
// cJSON trees built and printed, for the tests and benchmarks that compare JsonWriter's text
// with cJSON's own printing (the oracle): builders that never return null (std::bad_alloc
// instead) and a compact printer. The product writes JSON with JsonWriter only and reads it
// with cJSON (companion/json_util.h).
#pragma once

#include <cjson/cJSON.h>

#include <new>
#include <string>
#include <string_view>

#include "companion/json_util.h"

namespace mqc {

inline CjsonPtr CheckedJson(cJSON* item) {
  if (item == nullptr) throw std::bad_alloc();
  return CjsonPtr(item);
}

inline CjsonPtr NewJsonObject() { return CheckedJson(cJSON_CreateObject()); }
inline CjsonPtr NewJsonArray() { return CheckedJson(cJSON_CreateArray()); }
inline CjsonPtr NewJsonNull() { return CheckedJson(cJSON_CreateNull()); }
inline CjsonPtr NewJsonBool(bool value) { return CheckedJson(cJSON_CreateBool(value ? 1 : 0)); }
inline CjsonPtr NewJsonNumber(double value) { return CheckedJson(cJSON_CreateNumber(value)); }
// The value is made valid UTF-8 first (ToValidUtf8): cJSON prints bytes as they are, and stops
// at a NUL byte.
inline CjsonPtr NewJsonString(std::string_view value) {
  return CheckedJson(cJSON_CreateString(ToValidUtf8(value).c_str()));
}

// Moves `item` into `object` under `key` (or to the end of `array`).
inline void AddToJsonObject(cJSON* object, const char* key, CjsonPtr item) {
  if (!cJSON_AddItemToObject(object, key, item.get())) throw std::bad_alloc();
  item.release();  // owned by `object` now
}
inline void AddToJsonArray(cJSON* array, CjsonPtr item) {
  if (!cJSON_AddItemToArray(array, item.get())) throw std::bad_alloc();
  item.release();  // owned by `array` now
}

// Compact JSON text, no whitespace.
inline std::string PrintJson(const cJSON& item) {
  const CSmartPtr<char, cJSON_free> text(cJSON_PrintUnformatted(&item));
  if (text == nullptr) throw std::bad_alloc();
  return std::string(text.get());
}

}  // namespace mqc
