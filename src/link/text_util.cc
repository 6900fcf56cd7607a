// Text helpers (see text_util.h).
#include "link/text_util.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mqc {
namespace {

constexpr char kBase64UrlAlphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

constexpr std::size_t kMaxExcerptBytes = 64;

char ToLowerAscii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

int Base64UrlDigit(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

}  // namespace

bool EqualsIgnoreAsciiCase(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ToLowerAscii(a[i]) != ToLowerAscii(b[i])) return false;
  }
  return true;
}

std::string Excerpt(std::string_view text) {
  if (text.size() <= kMaxExcerptBytes) return std::string(text);
  std::size_t cut = kMaxExcerptBytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "...";
}

std::uint64_t Fnv1a64(std::string_view bytes, std::uint64_t hash) noexcept {
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3u;
  }
  return hash;
}

std::string EncodeBase64Url(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() * 4 + 2) / 3);
  std::uint32_t buffer = 0;
  int bits = 0;
  for (const char c : bytes) {
    buffer = ((buffer << 8) | static_cast<unsigned char>(c)) & 0xFFFF;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kBase64UrlAlphabet[(buffer >> bits) & 0x3F];
    }
  }
  if (bits > 0) out += kBase64UrlAlphabet[(buffer << (6 - bits)) & 0x3F];
  return out;
}

bool DecodeBase64Url(std::string_view text, std::string* bytes, bool canonical) {
  bytes->clear();
  if (text.size() % 4 == 1) return false;
  bytes->reserve(text.size() / 4 * 3 + 2);
  std::uint32_t buffer = 0;
  int bits = 0;
  for (const char c : text) {
    const int digit = Base64UrlDigit(c);
    if (digit < 0) return false;
    buffer = ((buffer << 6) | static_cast<std::uint32_t>(digit)) & 0xFFFF;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes->push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  return !canonical || (buffer & ((1u << bits) - 1)) == 0;
}

}  // namespace mqc
