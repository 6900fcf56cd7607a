// SPDX-License-Identifier: BSD-3-Clause
// QuoteFilterString: a string as a quoted filter literal (JSON escapes), the inverse of
// ReadStringLiteral (companion/query/query_syntax.h), for the tests, the fuzz target and the
// benchmark that build filters from values. Nothing in the product builds filter text: the
// round trip in query_syntax_test and the connection_query fuzz target keep the two in step.
#pragma once

#include <string>
#include <string_view>

namespace mqc {

inline std::string QuoteFilterString(std::string_view value) {
  try {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out = "\"";
    for (const char c : value) {
      const auto byte = static_cast<unsigned char>(c);
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '*':  // every star, so that a trailing one cannot turn into a prefix match
          out += "\\*";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (byte < 0x20 || byte == 0x7F) {
            out += "\\u00";
            out += kHex[byte >> 4];
            out += kHex[byte & 0xF];
          } else {
            out += c;
          }
      }
    }
    out += '"';
    return out;
  } catch (...) {
    // Only std::bad_alloc can get here. An empty result is not a literal, so a filter built
    // from it fails to parse instead of matching something else.
    return std::string();
  }
}

}  // namespace mqc
