// SPDX-License-Identifier: BSD-3-Clause
// JsonWriter: the companion's one way of writing JSON answers out: the KubeMQ views and the
// Connect service's JSON answers (kubemq_view.cc, connect_rpc_json.cc, watch_stream.cc,
// disconnect_view.cc, ban_view.cc) and both error forms (view_util.cc). It appends compact JSON
// text to a string as the caller walks its data, so a big answer costs one growing buffer
// rather than a tree of nodes (cJSON builds one node per value, then prints it). cJSON stays for
// reading requests (json_util.h) and for the ban file (ban_store.cc, which is not an answer and
// lives below this folder).
//
// The text is byte for byte what cJSON_PrintUnformatted prints for the same values: strings made
// valid UTF-8 first (ToValidUtf8), escaped as cJSON does ("\"", "\\", \b \f \n \r \t, other
// control characters as \u00xx, everything else as is), integers in decimal. (cJSON prints a
// whole number of 1e15 or more with an exponent when 15 digits hold it, "1e+15"; Int always
// writes the digits. No value written with Int comes near: protobuf JSON's int64 and uint64 are
// strings, and the views' other numbers are 32-bit or counts far below it: bans, clients
// kicked, connections refused.) tests/data/connect_json_answers.txt holds
// the Connect answers to the bytes the cJSON encoder printed.
//
// The caller keeps the structure right (a Key before each value in an object, every Begin
// ended); the writer only places the commas and colons. Member names are not escaped (Key). One
// writer per thread; no locking.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mqc {

class JsonWriter {
 public:
  // Appends to *out, which must outlive the writer.
  explicit JsonWriter(std::string* out) : out_(out) {}

  JsonWriter& BeginObject() { return Open('{'); }
  JsonWriter& EndObject() { return Close('}'); }
  JsonWriter& BeginArray() { return Open('['); }
  JsonWriter& EndArray() { return Close(']'); }
  // An object's member name; the next call writes its value. The name is written as it is: it
  // must need no escaping (the views' own field names: ASCII letters, digits, '_').
  JsonWriter& Key(std::string_view name) {
    // One append for the comma, the quoted name and the colon: a list writes a few names per
    // value, and each append checks the capacity (docs/benchmarks.md, "Memory and the full
    // list").
    char text[64];
    if (name.size() + 4 > sizeof(text)) return LongKey(name);
    std::size_t length = 0;
    if (need_comma_) text[length++] = ',';
    text[length++] = '"';
    name.copy(text + length, name.size());
    length += name.size();
    text[length++] = '"';
    text[length++] = ':';
    out_->append(text, length);
    need_comma_ = false;
    return *this;
  }
  JsonWriter& String(std::string_view value);
  JsonWriter& Int(std::int64_t value);
  // The shortest text that reads back as `value`; null when it is not finite.
  JsonWriter& Number(double value);
  JsonWriter& Bool(bool value) { return Literal(value ? "true" : "false"); }
  JsonWriter& Null() { return Literal("null"); }
  // The output, for a caller that writes an array's elements itself right after BeginArray and
  // before EndArray: complete values, comma separated (the KubeMQ list's connections,
  // http/kubemq_list_json.h).
  std::string* elements_output() { return out_; }

 private:
  // Small and called for every value: inline.
  void BeforeValue() {
    if (need_comma_) out_->push_back(',');
    need_comma_ = true;
  }
  JsonWriter& Open(char bracket) {
    BeforeValue();
    out_->push_back(bracket);
    need_comma_ = false;
    return *this;
  }
  JsonWriter& Close(char bracket) {
    out_->push_back(bracket);
    need_comma_ = true;
    return *this;
  }
  JsonWriter& LongKey(std::string_view name) {
    if (need_comma_) out_->push_back(',');
    out_->push_back('"');
    out_->append(name);
    out_->append("\":", 2);
    need_comma_ = false;
    return *this;
  }
  JsonWriter& Literal(std::string_view text) {
    BeforeValue();
    out_->append(text);
    return *this;
  }

  std::string* out_;
  bool need_comma_ = false;  // a value ended and its container goes on
};

}  // namespace mqc
