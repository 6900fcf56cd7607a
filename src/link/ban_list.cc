// SPDX-License-Identifier: BSD-3-Clause
// See ban_list.h.
#include "link/ban_list.h"

#include <arpa/inet.h>

#include <cstring>
#include <utility>

#include "link/text_util.h"

namespace mqc {
namespace {

constexpr std::uint8_t kV4MappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

// A value for an error message: quoted, cut, control characters as '?'.
std::string Quote(std::string_view text) { return "'" + PrintableExcerpt(text) + "'"; }

void ClearHostBits(AddressBytes* address, std::uint8_t prefix_len) {
  for (std::size_t i = 0; i < address->size(); ++i) {
    const int bits = static_cast<int>(prefix_len) - static_cast<int>(i) * 8;
    if (bits >= 8) continue;
    const auto mask = static_cast<std::uint8_t>(bits <= 0 ? 0 : 0xff << (8 - bits));
    (*address)[i] = static_cast<std::uint8_t>((*address)[i] & mask);
  }
}

std::string FormatAddress(const AddressBytes& address, bool v4) {
  char text[INET6_ADDRSTRLEN] = {};
  if (v4) {
    inet_ntop(AF_INET, address.data() + 12, text, sizeof(text));
  } else {
    inet_ntop(AF_INET6, address.data(), text, sizeof(text));
  }
  return text;
}

}  // namespace

bool ParseAddress(std::string_view text, AddressBytes* out, bool* is_v4) {
  char buffer[INET6_ADDRSTRLEN + 1];
  const std::size_t zone = text.find('%');
  if (zone != std::string_view::npos) text = text.substr(0, zone);
  if (text.empty() || text.size() >= sizeof(buffer)) return false;
  std::memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = '\0';
  std::uint8_t v4[4];
  if (inet_pton(AF_INET, buffer, v4) == 1) {
    std::memcpy(out->data(), kV4MappedPrefix, sizeof(kV4MappedPrefix));
    std::memcpy(out->data() + 12, v4, 4);
    *is_v4 = true;
    return true;
  }
  if (inet_pton(AF_INET6, buffer, out->data()) == 1) {
    *is_v4 = std::memcmp(out->data(), kV4MappedPrefix, sizeof(kV4MappedPrefix)) == 0;
    return true;
  }
  return false;
}

bool AddressInPrefix(const AddressBytes& address, const AddressBytes& network,
                     std::uint8_t prefix_len) {
  std::size_t i = 0;
  for (; (i + 1) * 8 <= prefix_len; ++i) {
    if (address[i] != network[i]) return false;
  }
  const int rest = prefix_len - static_cast<int>(i) * 8;
  if (rest == 0) return true;
  const auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
  return (address[i] & mask) == network[i];
}

std::string_view Ban::as() const {
  switch (kind) {
    case BanKind::kClientId:
      return "clientid";
    case BanKind::kUsername:
      return "username";
    case BanKind::kAddress:
      return single_address ? "peerhost" : "peerhost_net";
  }
  return "clientid";
}

std::string Ban::Describe() const {
  std::string printable = who;
  for (char& c : printable) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return std::string(as()) + " '" + printable + "'";
}

Status ParseBanTarget(std::string_view as, std::string_view who, Ban* ban) {
  if (who.empty()) return InvalidArgument("who: must not be empty");
  if (who.size() > kMaxBanWhoBytes) {
    return InvalidArgument("who: at most " + std::to_string(kMaxBanWhoBytes) + " bytes, got " +
                           std::to_string(who.size()));
  }
  if (who.find('\0') != std::string_view::npos)
    return InvalidArgument("who: must not hold a NUL byte");
  if (as == "clientid" || as == "username") {
    ban->kind = as == "clientid" ? BanKind::kClientId : BanKind::kUsername;
    ban->who = std::string(who);
    ban->single_address = false;
    ban->prefix_len = 0;
    ban->address = {};
    return Status();
  }
  const bool single = as == "peerhost";
  if (!single && as != "peerhost_net") {
    return InvalidArgument(
        "as: must be one of 'clientid', 'username', 'peerhost', 'peerhost_net', got " + Quote(as));
  }
  std::string_view address_text = who;
  int prefix = -1;
  const std::size_t slash = who.find('/');
  if (slash != std::string_view::npos) {
    if (single) {
      return InvalidArgument(
          "who: " + Quote(who) +
          " is a prefix; 'peerhost' takes one address ('peerhost_net' takes a prefix)");
    }
    address_text = who.substr(0, slash);
    const std::string_view digits = who.substr(slash + 1);
    if (digits.empty() || digits.size() > 3) prefix = 999;
    for (char c : digits) {
      if (!IsAsciiDigit(c)) prefix = 999;
    }
    if (prefix != 999) prefix = std::stoi(std::string(digits));
  } else if (!single) {
    return InvalidArgument("who: " + Quote(who) +
                           " has no prefix length; 'peerhost_net' takes address/length, e.g. "
                           "'10.0.0.0/8'");
  }
  AddressBytes address{};
  bool v4 = false;
  if (!ParseAddress(address_text, &address, &v4) || address_text.find('%') != std::string::npos) {
    return InvalidArgument("who: " + Quote(who) + " is not an IPv4 or IPv6 address" +
                           (single ? "" : " prefix"));
  }
  const int max_len = v4 ? 32 : 128;
  if (single) prefix = max_len;
  if (prefix < 0 || prefix > max_len) {
    return InvalidArgument("who: " + Quote(who) + " is not an address prefix (prefix length 0.." +
                           std::to_string(max_len) + " for IPv" + (v4 ? "4" : "6") + ")");
  }
  const auto mapped_len = static_cast<std::uint8_t>(v4 ? prefix + 96 : prefix);
  ClearHostBits(&address, mapped_len);
  ban->kind = BanKind::kAddress;
  ban->address = address;
  ban->prefix_len = mapped_len;
  ban->single_address = single;
  ban->who = FormatAddress(address, v4);
  if (!single) ban->who += "/" + std::to_string(prefix);
  return Status();
}

BanMatcher::BanMatcher(std::vector<Ban> bans) : bans_(std::move(bans)) {
  for (std::size_t i = 0; i < bans_.size(); ++i) {
    const Ban& ban = bans_[i];
    switch (ban.kind) {
      case BanKind::kClientId:
        client_ids_.emplace(ban.who, i);
        break;
      case BanKind::kUsername:
        usernames_.emplace(ban.who, i);
        break;
      case BanKind::kAddress:
        addresses_.push_back(i);
        break;
    }
  }
}

const Ban* BanMatcher::FindAddress(const AddressBytes& address, std::int64_t now_ns) const {
  for (const std::size_t i : addresses_) {
    const Ban& ban = bans_[i];
    if (!ban.expired(now_ns) && AddressInPrefix(address, ban.address, ban.prefix_len)) {
      return &ban;
    }
  }
  return nullptr;
}

const Ban* BanMatcher::Find(const char* client_id, const char* username, const char* address,
                            std::int64_t now_ns) const {
  if (bans_.empty()) return nullptr;
  if (client_id != nullptr && !client_ids_.empty()) {
    const auto it = client_ids_.find(std::string_view(client_id));
    if (it != client_ids_.end() && !bans_[it->second].expired(now_ns)) return &bans_[it->second];
  }
  if (username != nullptr && !usernames_.empty()) {
    const auto it = usernames_.find(std::string_view(username));
    if (it != usernames_.end() && !bans_[it->second].expired(now_ns)) return &bans_[it->second];
  }
  if (address != nullptr && !addresses_.empty()) {
    AddressBytes bytes{};
    bool v4 = false;
    if (ParseAddress(address, &bytes, &v4)) return FindAddress(bytes, now_ns);
  }
  return nullptr;
}

const Ban* BanMatcher::Find(std::string_view client_id, const std::string* username,
                            std::string_view address, std::int64_t now_ns) const {
  if (bans_.empty()) return nullptr;
  if (!client_id.empty() && !client_ids_.empty()) {
    const auto it = client_ids_.find(client_id);
    if (it != client_ids_.end() && !bans_[it->second].expired(now_ns)) return &bans_[it->second];
  }
  if (username != nullptr && !usernames_.empty()) {
    const auto it = usernames_.find(*username);
    if (it != usernames_.end() && !bans_[it->second].expired(now_ns)) return &bans_[it->second];
  }
  if (!address.empty() && !addresses_.empty()) {
    AddressBytes bytes{};
    bool v4 = false;
    if (ParseAddress(address, &bytes, &v4)) return FindAddress(bytes, now_ns);
  }
  return nullptr;
}

}  // namespace mqc
