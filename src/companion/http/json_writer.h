// JsonWriter: the companion's one way of writing JSON out. It appends compact JSON text to a
// string as the caller walks its data, so a big answer costs one growing buffer rather than a
// tree of nodes (cJSON builds one node per value, then prints it). cJSON stays for reading
// requests (json_util.h).
//
// The text is byte for byte what cJSON_PrintUnformatted prints for the same values: strings made
// valid UTF-8 first (ToValidUtf8), escaped as cJSON does ("\"", "\\", \b \f \n \r \t, other
// control characters as \u00xx, everything else as is), integers in decimal.
//
// The caller keeps the structure right (a Key before each value in an object, every Begin
// ended); the writer only places the commas and colons. One writer per thread; no locking.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mqc {

class JsonWriter {
 public:
  // Appends to *out, which must outlive the writer.
  explicit JsonWriter(std::string* out) : out_(out) {}

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  // An object's member name; the next call writes its value.
  JsonWriter& Key(std::string_view name);
  JsonWriter& String(std::string_view value);
  JsonWriter& Int(std::int64_t value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();

 private:
  void BeforeValue();

  std::string* out_;
  bool need_comma_ = false;  // a value ended and its container goes on
};

}  // namespace mqc
