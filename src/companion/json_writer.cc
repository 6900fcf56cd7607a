// SPDX-License-Identifier: BSD-3-Clause
// JsonWriter (see json_writer.h).
#include "companion/json_writer.h"

#include <charconv>
#include <cmath>
#include <string>
#include <string_view>

#include "companion/json_util.h"

namespace mqc {

JsonWriter& JsonWriter::String(std::string_view value) {
  BeforeValue();
  AppendJsonString(value, out_);
  return *this;
}

JsonWriter& JsonWriter::Int(std::int64_t value) {
  BeforeValue();
  char digits[24];
  const auto result = std::to_chars(digits, digits + sizeof(digits), value);
  out_->append(digits, result.ptr);
  return *this;
}

JsonWriter& JsonWriter::Number(double value) {
  if (!std::isfinite(value)) return Null();
  BeforeValue();
  char digits[32];
  const auto result = std::to_chars(digits, digits + sizeof(digits), value);
  out_->append(digits, result.ptr);
  return *this;
}

}  // namespace mqc
