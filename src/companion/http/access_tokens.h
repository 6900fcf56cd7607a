// SPDX-License-Identifier: BSD-3-Clause
// The bearer tokens of the HTTP API (plugin_opt_http_token_file, plugin_opt_http_admin_token_file)
// and the check of a request's `Authorization: Bearer <token>` against them.
//
// Files: one token per line; blank lines and lines starting with '#' are ignored; a token is
// 16 to 512 visible ASCII characters without spaces. The companion reads the files itself (at
// start, and again at every configuration reload): tokens never enter the broker process, the
// shared region or a log line. A caller is named by the file and line of its token.
//
// Threads: Load/Replace on the companion's main thread; Check on MHD's threads, several at a
// time. The token set is immutable once built and swapped whole under a mutex.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "link/status.h"

namespace mqc {

enum class AccessLevel { kNone, kRead, kAdmin };

// What a request may do, and which token line granted it (for the broker's log).
struct AccessGrant {
  AccessLevel level = AccessLevel::kNone;
  bool token_presented = false;  // an Authorization header was sent (right or wrong)
  std::string token_line;        // "admin token file line 3"; empty without a token
};

struct TokenSet {
  struct Entry {
    std::string token;
    AccessLevel level = AccessLevel::kRead;
    std::string line;  // "token file line 2", "admin token file line 5"
  };
  std::vector<Entry> entries;
};

inline constexpr std::size_t kMinTokenLength = 16;
inline constexpr std::size_t kMaxTokenLength = 512;

// Reads one token file into *set with `level`. A file that cannot be read, a bad line (named by
// its number, never by its content) or a file without a token is refused naming `option`.
// *warning is set when the file is readable by every user of the machine.
Status ReadTokenFile(const std::string& path, const std::string& option, AccessLevel level,
                     TokenSet* set, std::string* warning);

// a == b, in a time that depends on neither content (only on kMaxTokenLength).
bool ConstantTimeEquals(std::string_view a, std::string_view b);

class AccessTokens {
 public:
  // `required`: whether requests need a token at all (some token file is configured).
  explicit AccessTokens(bool required) : required_(required) {}

  void Replace(TokenSet set);
  bool required() const { return required_; }

  // The access of a request with this Authorization header value (null: none sent). Without
  // required tokens everyone reads (and no one is an admin, unless the header is an admin's).
  AccessGrant Check(const std::string* authorization) const;

 private:
  const bool required_;
  mutable std::mutex mutex_;
  std::shared_ptr<const TokenSet> tokens_ = std::make_shared<TokenSet>();  // guarded by mutex_
};

}  // namespace mqc
