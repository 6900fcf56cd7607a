// SPDX-License-Identifier: BSD-3-Clause
// Lexical pieces of the filter and order_by grammars (docs/query-language.md): quoted
// string literals with JSON escapes, integers, durations (timestamps: link/text_util.h), and the
// 1-based positions that error messages name. Pure functions, safe on any thread, no exceptions
// thrown other than std::bad_alloc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "link/status.h"
#include "link/text_util.h"  // Excerpt for error messages, ParseTimestamp

namespace mqc {

// The 1-based column of byte `offset` of `text`, counted in UTF-8 characters (every byte that is
// not a continuation byte starts one), so that positions match what a person sees.
std::size_t TextColumn(std::string_view text, std::size_t offset);

// " at position N", the suffix of every filter and order_by error message.
std::string AtPosition(std::string_view text, std::size_t offset);

enum class NumberStatus : std::uint8_t { kOk, kNotANumber, kOutOfRange };

// Decimal integers: digits with an optional leading '-' (the unsigned form takes no sign).
NumberStatus ParseInt64(std::string_view text, std::int64_t* value);
NumberStatus ParseUint64(std::string_view text, std::uint64_t* value);

// A Go-style duration: one or more `<digits>[.<digits>]<unit>` (units ns, us, µs, ms, s, m, h;
// "1h30m", "1.5s"), or a bare "0", as nanoseconds. Fractions finer than a nanosecond are cut
// off. Every failure is kInvalidArgument, its message saying what is wrong.
StatusOr<std::int64_t> ParseDuration(std::string_view text);

// A quoted string literal as the filter grammar reads it.
struct StringLiteral {
  std::string value;    // decoded, without the trailing prefix '*'
  bool prefix = false;  // it ended in an unescaped '*': a prefix match
  std::size_t end = 0;  // byte offset just past the closing quote
};

// Where and why a literal is malformed.
struct SyntaxError {
  std::size_t offset = 0;  // byte offset into the text
  std::string message;
};

// Reads the literal whose opening '"' is text[start]. Escapes are JSON's (\" \\ \/ \b \f \n \r
// \t \uXXXX, surrogate pairs joined, lone surrogates refused) plus `\*`, a literal star that never
// makes a prefix match. Other bytes, also control and non-UTF-8 bytes, are taken as they are.
bool ReadStringLiteral(std::string_view text, std::size_t start, StringLiteral* literal,
                       SyntaxError* error);

// A string as a quoted filter literal (JSON escapes, every '*' escaped so that none makes a
// prefix match): the inverse of ReadStringLiteral, for filters built from values (the fleet's
// lookup of client ids on its peers, tests). Out of memory: an empty string, which is no
// literal, so a filter built from it fails to parse instead of matching something else.
std::string QuoteFilterString(std::string_view value);

}  // namespace mqc
