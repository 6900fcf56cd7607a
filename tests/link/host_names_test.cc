// SPDX-License-Identifier: BSD-3-Clause
#include "link/host_names.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mqc {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

CanonicalHost Canonical(const std::string& host, bool bare_ipv6 = false) {
  const StatusOr<CanonicalHost> out = CanonicalizeHost(host, bare_ipv6);
  EXPECT_TRUE(out.ok()) << host << ": " << out.status().message();
  return out.ok() ? *out : CanonicalHost();
}

std::string Refusal(const std::string& host, bool bare_ipv6 = false) {
  const StatusOr<CanonicalHost> out = CanonicalizeHost(host, bare_ipv6);
  EXPECT_FALSE(out.ok()) << host << " -> " << (out.ok() ? out->text : "");
  EXPECT_EQ(out.status().code(), out.ok() ? StatusCode::kOk : StatusCode::kInvalidArgument);
  return out.status().message();
}

TEST(HostNamesTest, NamesAreLowerCaseWithoutTheTrailingDot) {
  EXPECT_EQ(Canonical("LocalHost").text, "localhost");
  EXPECT_EQ(Canonical("localhost.").text, "localhost");
  EXPECT_EQ(Canonical("API.example.COM.").text, "api.example.com");
  EXPECT_EQ(Canonical("under_score-1.example").text, "under_score-1.example");
  EXPECT_EQ(Canonical("xn--bcher-kva.example").text, "xn--bcher-kva.example");
  EXPECT_EQ(Canonical("a.example").kind, HostKind::kName);
  EXPECT_EQ(Canonical(std::string(63, 'a') + ".example").text, std::string(63, 'a') + ".example");
}

TEST(HostNamesTest, AddressesInTheirCanonicalForm) {
  EXPECT_EQ(Canonical("127.0.0.1").kind, HostKind::kIPv4);
  EXPECT_EQ(Canonical("127.0.0.1.").text, "127.0.0.1");
  EXPECT_EQ(Canonical("[::1]").kind, HostKind::kIPv6);
  EXPECT_EQ(Canonical("[::1]").text, "::1");
  EXPECT_EQ(Canonical("[0:0:0:0:0:0:0:1]").text, "::1");
  EXPECT_EQ(Canonical("[::FFFF:127.0.0.1]").text, "::ffff:127.0.0.1");
  EXPECT_EQ(Canonical("[2001:DB8::A]").text, "2001:db8::a");
  EXPECT_EQ(Canonical("2001:db8::a", /*bare_ipv6=*/true).text, "2001:db8::a");
}

TEST(HostNamesTest, OtherSpellingsAndNonHostsAreRefused) {
  // Browsers send these only after normalising them to 127.0.0.1.
  for (const char* host : {"127.1", "0x7f.1", "0x7f000001", "2130706433", "127.000.000.001",
                           "127.0.0.01", "a.0x1f", "10.0.0.0001"}) {
    EXPECT_THAT(Refusal(host), HasSubstr("four decimal numbers")) << host;
  }
  EXPECT_EQ(Refusal(""), "empty");
  EXPECT_THAT(Refusal("a..example"), HasSubstr("empty label"));
  EXPECT_THAT(Refusal(".example"), HasSubstr("empty label"));
  EXPECT_THAT(Refusal("localhost.."), HasSubstr("empty label"));
  EXPECT_THAT(Refusal(std::string(64, 'a') + ".example"), HasSubstr("label longer than 63"));
  std::string overlong;
  while (overlong.size() <= kMaxHostNameLength) overlong += "abcdefgh.";
  overlong += "example";
  EXPECT_THAT(Refusal(overlong), HasSubstr("longer than 253"));
  for (const char* host :
       {"a b", "a/b", "a%2eb", "a@b", "caf\xC3\xA9.example", "a\tb", "a\x01", "a:b"}) {
    EXPECT_THAT(Refusal(host), HasSubstr("not a host name")) << host;
  }
  EXPECT_THAT(Refusal("::1"), HasSubstr("not a host name"));  // Host needs the brackets
  EXPECT_THAT(Refusal("[::1"), HasSubstr("closing ']'"));
  EXPECT_THAT(Refusal("[127.0.0.1]"), HasSubstr("not an IPv6 address"));
  EXPECT_THAT(Refusal("[fe80::1%25eth0]"), HasSubstr("not an IPv6 address"));
  EXPECT_THAT(Refusal("[localhost]"), HasSubstr("not an IPv6 address"));
}

std::string HostOf(const std::string& value) {
  const StatusOr<std::string_view> host = SplitHostHeader(value);
  EXPECT_TRUE(host.ok()) << value << ": " << host.status().message();
  return host.ok() ? std::string(*host) : std::string();
}

std::string SplitRefusal(const std::string& value) {
  const StatusOr<std::string_view> host = SplitHostHeader(value);
  EXPECT_FALSE(host.ok()) << value;
  return host.status().message();
}

TEST(HostNamesTest, HostHeaderLosesItsPort) {
  EXPECT_EQ(HostOf("localhost"), "localhost");
  EXPECT_EQ(HostOf("localhost:8080"), "localhost");
  EXPECT_EQ(HostOf("localhost:"), "localhost");  // RFC 3986: port = *DIGIT
  EXPECT_EQ(HostOf("[::1]:8080"), "[::1]");
  EXPECT_EQ(HostOf("[::1]"), "[::1]");
  EXPECT_EQ(HostOf(""), "");
  EXPECT_THAT(SplitRefusal("::1"), HasSubstr("in brackets"));
  EXPECT_THAT(SplitRefusal("::1:8080"), HasSubstr("in brackets"));
  EXPECT_THAT(SplitRefusal("localhost:80a"), HasSubstr("port"));
  EXPECT_THAT(SplitRefusal("localhost:123456"), HasSubstr("port"));
  EXPECT_THAT(SplitRefusal("[::1]8080"), HasSubstr("not a port"));
  EXPECT_THAT(SplitRefusal("[::1"), HasSubstr("closing ']'"));
}

TEST(HostNamesTest, HostPortBracketsOnlyIPv6) {
  EXPECT_EQ(HostPort("127.0.0.1", 8080), "127.0.0.1:8080");
  EXPECT_EQ(HostPort("api.example", 80), "api.example:80");
  EXPECT_EQ(HostPort("::1", 8080), "[::1]:8080");
  EXPECT_EQ(HostPort("::ffff:10.0.0.1", 65535), "[::ffff:10.0.0.1]:65535");
  EXPECT_EQ(HostPort("0.0.0.0", 0), "0.0.0.0:0");
  // The appending form adds to what the buffer holds; SplitHostHeader reads the host back.
  std::string text = "remote ";
  AppendHostPort("2001:db8::7", 1883, &text);
  EXPECT_EQ(text, "remote [2001:db8::7]:1883");
  EXPECT_EQ(HostOf(HostPort("2001:db8::7", 1883)), "[2001:db8::7]");
}

TEST(HostNamesTest, AllowedHostsList) {
  StatusOr<std::vector<std::string>> hosts = ParseAllowedHosts("b.example");
  ASSERT_TRUE(hosts.ok()) << hosts.status().message();
  EXPECT_THAT(*hosts, ElementsAre("b.example"));
  hosts = ParseAllowedHosts(" A.example.,a.example  ::1 [::1] 192.0.2.1,");
  ASSERT_TRUE(hosts.ok()) << hosts.status().message();
  EXPECT_THAT(*hosts, ElementsAre("a.example", "::1", "192.0.2.1"));
  hosts = ParseAllowedHosts("a.example,*");
  EXPECT_FALSE(hosts.ok());
  EXPECT_EQ(hosts.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(hosts.status().message(), HasSubstr("'*': wildcards are not accepted"));
  hosts = ParseAllowedHosts("a.example:80");
  EXPECT_FALSE(hosts.ok());
  EXPECT_THAT(hosts.status().message(), HasSubstr("without a port"));
  hosts = ParseAllowedHosts(
      "a.\x01"
      "example");
  EXPECT_FALSE(hosts.ok());
  // No control character in the message.
  EXPECT_THAT(hosts.status().message(), HasSubstr("'a.?example'"));
  EXPECT_EQ(ParseAllowedHosts(" , ").status().message(), "no host given");
}

}  // namespace
}  // namespace mqc
