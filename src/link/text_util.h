// SPDX-License-Identifier: BSD-3-Clause
// Small text and C-interop helpers, one of each, for both processes: trimming, a prefix, ASCII
// case-insensitive comparison, excerpts, FNV-1a, base64url, RFC 3339 time text, and an owning
// pointer for C handles.
// Pure functions, safe on any thread; none allocates except the base64url ones.
#pragma once

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "link/status.h"

namespace mqc {

// `s` without leading and trailing white space.
inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

inline bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

// Whether `text` starts with `prefix`, reading only the bytes it compares, first to last: a
// filter's scan calls it on every stored connection's value, and most differ within a few
// bytes (memcmp's wider loads of each stored id cost a scan of 100,000 about twice its time:
// docs/benchmarks.md, "details and rare texts out of line").
inline bool StartsWith(std::string_view text, std::string_view prefix) noexcept {
  if (text.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (text[i] != prefix[i]) return false;
  }
  return true;
}

// Equal when both have the same bytes up to ASCII letter case (no locale, no Unicode folding).
bool EqualsIgnoreAsciiCase(std::string_view a, std::string_view b) noexcept;

// At most 64 bytes of `text` for an error message ("..." marks a cut), never cutting a UTF-8
// sequence in half. The bytes are not otherwise changed (see QuoteForMessage for JSON).
std::string Excerpt(std::string_view text);

// Excerpt's cut (64 bytes, "..." after) with every byte outside printable ASCII (0x20 to 0x7E)
// replaced by '?': for text a client chose (a path, a Host header) that goes into a log line or
// a plain-text answer, where a control character could forge a line.
std::string PrintableExcerpt(std::string_view text);

// FNV-1a 64 over `bytes`, continuing from `hash` (start with kFnv1aOffsetBasis). Not
// cryptographic: for hash tables and fingerprints.
inline constexpr std::uint64_t kFnv1aOffsetBasis = 0xcbf29ce484222325u;
std::uint64_t Fnv1a64(std::string_view bytes, std::uint64_t hash = kFnv1aOffsetBasis) noexcept;

// Protocol Buffers' base 128 varint: 7 bits a byte, least significant first, for the
// opaque tokens the companion hands out. GetVarint consumes from the front of *bytes; false
// when they end first or the value needs more than 64 bits.
void PutVarint(std::uint64_t value, std::string* out);
bool GetVarint(std::string_view* bytes, std::uint64_t* value);

// RFC 4648 section 5 (URL-safe alphabet) without padding.
std::string EncodeBase64Url(std::string_view bytes);
// Decodes unpadded base64url into *bytes (replaced). False on a character outside the alphabet
// or an impossible length (4n+1); with `canonical`, also when the unused low bits of the last
// character are not zero (so each byte string has exactly one text). A caller that accepts
// padding strips it first.
bool DecodeBase64Url(std::string_view text, std::string* bytes, bool canonical);

// --- RFC 3339 time text ---------------------------------------------------------------------

// Unix time in nanoseconds as RFC 3339 UTC: "2026-06-12T10:30:00Z" (fraction dropped, i.e.
// rounded towards the past) and "2026-06-12T10:30:00.123456789Z" (always nine digits).
std::string FormatRfc3339Seconds(std::int64_t unix_ns);
std::string FormatRfc3339Nanos(std::int64_t unix_ns);

// An RFC 3339 date-time (`2026-01-01T00:00:00Z`, `...T10:30:00.123456789+02:00`; 'T' and 'Z'
// also lower case; fractions beyond nanoseconds are cut off) as Unix nanoseconds. Times outside
// what int64 nanoseconds hold (1677-09-21T00:12:44Z to 2262-04-11T23:47:16.854775807Z)
// are an error. Every failure is kInvalidArgument, its message saying what is wrong without
// repeating the text (callers quote it in theirs).
StatusOr<std::int64_t> ParseTimestamp(std::string_view text);

// --- C handles -------------------------------------------------------------------------------

// An owning pointer for a C handle released by `Free` (a function taking T*), for example
// CSmartPtr<cJSON, cJSON_Delete> or CSmartPtr<char, std::free>. Null is never passed to Free.
template <typename T, auto Free>
struct CHandleFree {
  void operator()(T* handle) const noexcept { Free(handle); }
};
template <typename T, auto Free>
using CSmartPtr = std::unique_ptr<T, CHandleFree<T, Free>>;

}  // namespace mqc
