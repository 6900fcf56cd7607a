// SPDX-License-Identifier: BSD-3-Clause
// AccessTokens (see access_tokens.h).
#include "companion/http/access_tokens.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

#include "link/text_util.h"

namespace mqc {

namespace {

bool IsTokenCharacter(char c) { return c > 0x20 && c < 0x7f; }

}  // namespace

Status ReadTokenFile(const std::string& path, const std::string& option, AccessLevel level,
                     TokenSet* set, std::string* warning) {
  const std::string where = "plugin_opt_" + option + " " + path;
  std::ifstream in(path);
  if (!in) {
    return Status(StatusCode::kInvalidArgument,
                  where + ": cannot read it: " + std::strerror(errno));
  }
  struct stat info {};
  if (stat(path.c_str(), &info) == 0 && (info.st_mode & S_IROTH) != 0) {
    *warning = where + " is readable by every user of this machine: chmod o-r it";
  }
  const std::string kind = level == AccessLevel::kAdmin ? "admin token file" : "token file";
  std::string text;
  std::size_t number = 0;
  std::size_t found = 0;
  while (std::getline(in, text)) {
    ++number;
    const std::string_view line = Trim(text);
    if (line.empty() || line.front() == '#') continue;
    bool visible = true;
    for (char c : line) visible = visible && IsTokenCharacter(c);
    if (!visible || line.size() < kMinTokenLength || line.size() > kMaxTokenLength) {
      return Status(StatusCode::kInvalidArgument,
                    where + " line " + std::to_string(number) + ": a token is " +
                        std::to_string(kMinTokenLength) + " to " + std::to_string(kMaxTokenLength) +
                        " visible ASCII characters without spaces (one token per line)");
    }
    set->entries.push_back({std::string(line), level, kind + " line " + std::to_string(number)});
    ++found;
  }
  if (in.bad()) {
    return Status(StatusCode::kInvalidArgument, where + ": read error: " + std::strerror(errno));
  }
  if (found == 0) {
    return Status(StatusCode::kInvalidArgument,
                  where + " holds no token (one per line; '#' starts a comment line)");
  }
  return Status();
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // Every byte up to the maximum length is compared, whatever the lengths and contents; only
  // the OR of the differences decides.
  unsigned difference = a.size() != b.size() ? 1u : 0u;
  if (a.size() > kMaxTokenLength || b.size() > kMaxTokenLength) difference = 1;
  for (std::size_t i = 0; i < kMaxTokenLength; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    difference |= static_cast<unsigned>(x ^ y);
  }
  return difference == 0;
}

void AccessTokens::Replace(TokenSet set) {
  auto tokens = std::make_shared<const TokenSet>(std::move(set));
  std::lock_guard<std::mutex> lock(mutex_);
  tokens_ = std::move(tokens);
}

AccessGrant AccessTokens::Check(const std::string* authorization) const {
  AccessGrant grant;
  grant.level = required_ ? AccessLevel::kNone : AccessLevel::kRead;
  if (authorization == nullptr) return grant;
  grant.token_presented = true;
  // "Bearer" is case-insensitive (RFC 7235); one or more spaces before the token.
  std::string_view value(*authorization);
  constexpr std::string_view kScheme = "bearer ";
  if (value.size() < kScheme.size() || !required_ ||
      !EqualsIgnoreAsciiCase(value.substr(0, kScheme.size()), kScheme)) {
    return grant;
  }
  const std::string_view presented = Trim(value.substr(kScheme.size()));
  std::shared_ptr<const TokenSet> tokens;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tokens = tokens_;
  }
  // Every entry is compared, so the time says nothing about which one matched.
  const TokenSet::Entry* match = nullptr;
  for (const auto& entry : tokens->entries) {
    const bool equal = ConstantTimeEquals(presented, entry.token);
    if (equal && (match == nullptr || entry.level == AccessLevel::kAdmin)) match = &entry;
  }
  if (match == nullptr) return grant;  // without token files everyone still reads
  grant.level = match->level;
  grant.token_line = match->line;
  return grant;
}

}  // namespace mqc
