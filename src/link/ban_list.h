// SPDX-License-Identifier: BSD-3-Clause
// Bans: a client id, a username or an address prefix refused at CONNECT until a time (or for
// ever), as EMQX's banned API names them (`as` = clientid | username | peerhost | peerhost_net,
// `who`, `by`, `reason`, `at`, `until`).
//
// Both processes use this unit: the companion owns the list (the API edits it, a file keeps it,
// see companion/ban_store.h) and sends it whole to the broker thread, which builds a BanMatcher
// from it and asks it at every CONNECT while the list is not empty; the companion asks the same
// matcher which open clients a new ban concerns.
//
// Threads: a BanMatcher is built on one thread and then only read (by one thread at a time, or
// several: Find is const and touches nothing shared).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "link/status.h"

namespace mqc {

enum class BanKind : std::uint8_t {
  kClientId = 1,  // as "clientid"
  kUsername = 2,  // as "username"
  kAddress = 3,   // as "peerhost" (one address) or "peerhost_net" (an address prefix)
};

// Bounds: the whole list crosses the commands ring as one record (at most half its capacity).
inline constexpr std::size_t kMaxBans = 1000;
inline constexpr std::size_t kMaxBanWhoBytes = 256;
inline constexpr std::size_t kMaxBanTextBytes = 256;  // `by` and `reason`

// An IPv6 address, or an IPv4 one mapped into IPv6 (::ffff:a.b.c.d), so that one comparison
// serves both and a v4 client on a dual-stack listener matches a v4 ban.
using AddressBytes = std::array<std::uint8_t, 16>;

// IPv4 dotted quad or IPv6 text (a zone "%eth0" or a mapped ::ffff:a.b.c.d allowed) into 16
// bytes. False for anything else.
bool ParseAddress(std::string_view text, AddressBytes* out, bool* is_v4);

struct Ban {
  BanKind kind = BanKind::kClientId;
  // The client id or username as given; for addresses the canonical text: "10.1.2.3" for one
  // address, "10.0.0.0/8" for a prefix (host bits cleared).
  std::string who;
  AddressBytes address{};      // kAddress: the network, v4 mapped
  std::uint8_t prefix_len = 0;  // kAddress: 0..128 over the mapped form (v4 /8 is 104)
  bool single_address = false;  // kAddress given as peerhost (no prefix)
  std::string by;               // who made it (the API fills in the caller's token line)
  std::string reason;
  std::int64_t at_ns = 0;     // Unix ns when it was made
  std::int64_t until_ns = 0;  // Unix ns when it ends; 0: never

  bool expired(std::int64_t now_ns) const { return until_ns != 0 && until_ns <= now_ns; }
  // The EMQX `as` of this ban.
  std::string_view as() const;
  // "clientid 'x'" for log lines (control characters as '?').
  std::string Describe() const;
};

// Reads `as` and `who` into *ban (kind, who, address, prefix_len): kInvalidArgument naming the
// field for an unknown `as`, an empty, too long or NUL-holding `who`, an address or prefix that
// does not parse ("who: '10.0.0.0/33' is not an address prefix (prefix length 0..32 for IPv4)").
Status ParseBanTarget(std::string_view as, std::string_view who, Ban* ban);

// Whether two bans name the same target (same kind and canonical who): the list holds each
// target once, a new ban replaces the old one.
inline bool SameTarget(const Ban& a, const Ban& b) { return a.kind == b.kind && a.who == b.who; }

// The list as the broker asks it at CONNECT: a hash per kind for client ids and usernames, the
// address prefixes in a short vector (bounded by kMaxBans). Finding allocates nothing.
class BanMatcher {
 public:
  BanMatcher() = default;
  explicit BanMatcher(std::vector<Ban> bans);
  // Holds views into its own bans: not copied (moving keeps the strings where they are).
  BanMatcher(const BanMatcher&) = delete;
  BanMatcher& operator=(const BanMatcher&) = delete;
  BanMatcher(BanMatcher&&) = default;
  BanMatcher& operator=(BanMatcher&&) = default;

  bool empty() const { return bans_.empty(); }
  bool has_addresses() const { return !addresses_.empty(); }
  const std::vector<Ban>& bans() const { return bans_; }

  // The first ban in force at `now_ns` that matches the client (null: none). `client_id`,
  // `username` may be null (none); `address` is the peer's text address (null or unparsable:
  // no address ban matches).
  const Ban* Find(const char* client_id, const char* username, const char* address,
                  std::int64_t now_ns) const;
  const Ban* Find(std::string_view client_id, const std::string* username,
                  std::string_view address, std::int64_t now_ns) const;

 private:
  const Ban* FindAddress(const AddressBytes& address, std::int64_t now_ns) const;

  std::vector<Ban> bans_;
  std::unordered_map<std::string_view, std::size_t> client_ids_;  // views into bans_
  std::unordered_map<std::string_view, std::size_t> usernames_;
  std::vector<std::size_t> addresses_;
};

// True when `address` is inside the prefix (network, prefix_len) (both mapped forms).
bool AddressInPrefix(const AddressBytes& address, const AddressBytes& network,
                     std::uint8_t prefix_len);

}  // namespace mqc
