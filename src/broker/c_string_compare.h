// SPDX-License-Identifier: BSD-3-Clause
// Compares a C string of unknown length (the broker's topic) with a known text, for the
// per-message path: a delivery's topic is compared with the one the previous check classified.
//
// strncmp costs about 25 instructions plus the call for a short topic. With SSE2 this compares
// 16 bytes at a time, inline: one load, one compare and a mask for a topic of up to 15 bytes.
// The broker's string is read 16 bytes at a time, which may read past its NUL: that is safe
// because a chunk is read only (1) when every byte before it matched a non-NUL byte of the
// known text, so the string reaches into the chunk, and (2) when the chunk does not cross into
// the next 4 KiB page, so every byte read lies on a page that holds part of the string and is
// mapped. Bytes after the NUL are read but never decide the answer (the mask ends at the NUL).
// glibc's own strlen and strcmp read the same way. The sanitizers would call these reads
// out-of-bounds, so the function is not instrumented by them.
//
// Threads: any; it reads only its arguments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace mqc {

// The known text's buffer is read in whole chunks: round its size (text and NUL) up to this.
constexpr std::size_t kCStringChunk = 16;

// Whether the NUL-terminated `text` equals the `size` bytes at `padded` (no NUL among them),
// which must be followed by a NUL, readable up to the next multiple of kCStringChunk bytes past
// that NUL, and aligned to kCStringChunk. True only when equal; false when different, and also
// when `text` runs within a chunk of a page's end before a difference was found, where telling
// would take a call: the caller then compares in full (strlen and memcmp) or takes its general
// path. That keeps the common case free of calls, so the callbacks that use it save no
// registers.
__attribute__((no_sanitize_address, no_sanitize_thread)) inline bool QuickEqualsCString(
    const char* text, const char* padded, std::size_t size) {
#if defined(__SSE2__)
  constexpr std::uintptr_t kPage = 4096;
  for (std::size_t at = 0;; at += kCStringChunk) {
    const char* chunk = text + at;
    // The compiler must not reason about the string's bounds here (it would warn about the
    // read past a literal's end that this function makes on purpose): no instruction.
    __asm__("" : "+r"(chunk));
    if ((reinterpret_cast<std::uintptr_t>(chunk) & (kPage - 1)) > kPage - kCStringChunk) {
      return false;  // the chunk would cross into the next page: cannot tell here
    }
    const __m128i theirs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(chunk));
    const __m128i mine = _mm_load_si128(reinterpret_cast<const __m128i*>(padded + at));
    const unsigned equal = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(theirs, mine)));
    const std::size_t left = size + 1 - at;  // bytes still to compare, the NUL included
    if (left <= kCStringChunk) {
      const unsigned needed = (1u << left) - 1;
      return (equal & needed) == needed;
    }
    if (equal != 0xffffu) return false;
  }
#else
  return std::strncmp(text, padded, size + 1) == 0;
#endif
}

}  // namespace mqc
