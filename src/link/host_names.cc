// SPDX-License-Identifier: BSD-3-Clause
// Host names and IP literals (see host_names.h).
//
// Where the RFCs leave room:
// - '_' is accepted in labels: RFC 952 forbids it in host names, but DNS carries it, internal
//   names use it, and browsers send it.
// - A name whose last label is numeric (`127.1`, `10.0.0.0001`, `a.0x1f`) is what the URL
//   standard parses as an IPv4 address: a browser never sends it as a name, so it is refused,
//   with a hint to write the dotted-quad form.
// - An IPv6 zone (`fe80::1%25eth0`) is refused: inet_pton does not read it, and a zone names
//   an interface of the client, not a host.
#include "link/host_names.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "link/text_util.h"

namespace mqc {
namespace {

constexpr std::size_t kMaxLabelLength = 63;
constexpr std::size_t kMaxPortDigits = 5;

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool IsHexDigit(char c) {
  return IsAsciiDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// The URL standard's "ends in a number": the last label is decimal digits or 0x + hex digits.
bool EndsInNumber(std::string_view name) {
  const std::size_t dot = name.rfind('.');
  const std::string_view last = dot == std::string_view::npos ? name : name.substr(dot + 1);
  if (last.empty()) return false;
  if (std::all_of(last.begin(), last.end(), IsAsciiDigit)) return true;
  if (last.size() >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X')) {
    return std::all_of(last.begin() + 2, last.end(), IsHexDigit);
  }
  return false;
}

bool IsLabelCharacter(char c) {
  return IsAsciiDigit(c) || (c >= 'a' && c <= 'z') || c == '-' || c == '_';
}

// `name` is lower case without a trailing dot.
Status CheckName(std::string_view name) {
  if (name.size() > kMaxHostNameLength) {
    return InvalidArgument("longer than " + std::to_string(kMaxHostNameLength) + " characters");
  }
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = name.find('.', start);
    const std::string_view label =
        name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty()) {
      return InvalidArgument("an empty label (two dots, or a leading dot)");
    }
    if (label.size() > kMaxLabelLength) {
      return InvalidArgument("a label longer than " + std::to_string(kMaxLabelLength) +
                             " characters");
    }
    if (!std::all_of(label.begin(), label.end(), IsLabelCharacter)) {
      return InvalidArgument(
          "not a host name (letters, digits, '-', '_' and dots) or an IP address");
    }
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return Status();
}

bool IsPortDigits(std::string_view port) {
  return port.size() <= kMaxPortDigits && std::all_of(port.begin(), port.end(), IsAsciiDigit);
}

}  // namespace

StatusOr<CanonicalHost> CanonicalizeHost(std::string_view host, bool bare_ipv6) {
  CanonicalHost out;
  if (host.empty()) {
    return InvalidArgument("empty");
  }
  const bool bracketed = host.front() == '[';
  if (bracketed || (bare_ipv6 && host.find(':') != std::string_view::npos)) {
    std::string_view address = host;
    if (bracketed) {
      if (host.size() < 2 || host.back() != ']') {
        return InvalidArgument("an IPv6 address without its closing ']'");
      }
      address = host.substr(1, host.size() - 2);
    }
    const std::string text(address);
    unsigned char bytes[16];
    char canonical[INET6_ADDRSTRLEN] = {};
    if (inet_pton(AF_INET6, text.c_str(), bytes) != 1 ||
        inet_ntop(AF_INET6, bytes, canonical, sizeof(canonical)) == nullptr) {
      return InvalidArgument(
          bracketed ? "not an IPv6 address (zones such as %eth0 are not accepted)"
                    : "not a host name (letters, digits, '-', '_' and dots) or an IP address");
    }
    out.kind = HostKind::kIPv6;
    out.text = canonical;
    return out;
  }
  std::string name = Lower(host);
  if (name.back() == '.') name.pop_back();
  unsigned char bytes[4];
  if (inet_pton(AF_INET, name.c_str(), bytes) == 1) {
    out.kind = HostKind::kIPv4;
    out.text = std::move(name);  // inet_pton takes only the dotted-quad form: already canonical
    return out;
  }
  const Status checked = CheckName(name);
  if (!checked.ok()) return checked;
  if (EndsInNumber(name)) {
    return InvalidArgument(
        "an IPv4 address in a form other than four decimal numbers (write 127.0.0.1, not "
        "127.1): browsers send only that form");
  }
  out.kind = HostKind::kName;
  out.text = std::move(name);
  return out;
}

StatusOr<std::string_view> SplitHostHeader(std::string_view value) {
  std::string_view host;
  std::string_view port;
  if (!value.empty() && value.front() == '[') {
    const std::size_t close = value.find(']');
    if (close == std::string_view::npos) {
      return InvalidArgument("an IPv6 address without its closing ']'");
    }
    host = value.substr(0, close + 1);
    const std::string_view rest = value.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') {
      return InvalidArgument("text after the IPv6 address that is not a port");
    }
    port = rest.empty() ? rest : rest.substr(1);
  } else {
    const std::size_t colon = value.find(':');
    host = value.substr(0, colon);
    if (colon != std::string_view::npos) {
      port = value.substr(colon + 1);
      if (port.find(':') != std::string_view::npos) {
        return InvalidArgument("more than one ':' (an IPv6 address must be in brackets)");
      }
    }
  }
  if (!IsPortDigits(port)) {
    return InvalidArgument("a port that is not a number");
  }
  return host;
}

StatusOr<std::vector<std::string>> ParseAllowedHosts(std::string_view value) {
  std::vector<std::string> parsed;
  std::size_t start = 0;
  const auto separator = [](char c) { return c == ',' || c == ' ' || c == '\t'; };
  while (start < value.size()) {
    if (separator(value[start])) {
      ++start;
      continue;
    }
    std::size_t end = start;
    while (end < value.size() && !separator(value[end])) ++end;
    const std::string_view entry = value.substr(start, end - start);
    start = end;
    const std::string quoted = "'" + PrintableExcerpt(entry) + "'";
    if (entry.find('*') != std::string_view::npos) {
      return InvalidArgument(
          quoted +
          ": wildcards are not accepted: a name that matches any host is what a DNS "
          "rebinding page needs to read the API through a browser; list each name the API "
          "is reached by");
    }
    // A port after a name or an IPv4 address, or after a bracketed IPv6 address.
    const std::size_t close = entry.rfind(']');
    const std::size_t colon = entry.rfind(':');
    const bool bracketed = !entry.empty() && entry.front() == '[';
    const bool has_port =
        colon != std::string_view::npos &&
        (bracketed ? close != std::string_view::npos && colon > close
                   : entry.find(':') == colon && IsPortDigits(entry.substr(colon + 1)));
    if (has_port) {
      return InvalidArgument(quoted +
                             ": give the host without a port (every port of it is accepted)");
    }
    StatusOr<CanonicalHost> host = CanonicalizeHost(entry, /*bare_ipv6=*/true);
    if (!host.ok()) return InvalidArgument(quoted + ": " + host.status().message());
    if (std::find(parsed.begin(), parsed.end(), host->text) == parsed.end()) {
      parsed.push_back(std::move(host->text));
    }
  }
  if (parsed.empty()) {
    return InvalidArgument("no host given");
  }
  return parsed;
}

void AppendHostPort(std::string_view host, int port, std::string* text) {
  const bool v6 = host.find(':') != std::string_view::npos;
  if (v6) text->push_back('[');
  text->append(host);
  if (v6) text->push_back(']');
  char digits[12];
  const auto end = std::to_chars(digits, digits + sizeof(digits), port).ptr;
  text->push_back(':');
  text->append(digits, end);
}

std::string HostPort(std::string_view host, int port) {
  std::string text;
  AppendHostPort(host, port, &text);
  return text;
}

}  // namespace mqc
