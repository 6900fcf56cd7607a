// SPDX-License-Identifier: BSD-3-Clause
// Bans: targets parsed and refused with the field named, matching by client id, username and
// address prefix (v4, v6, v4 on a dual-stack listener), expiry. The record that carries the list
// to the broker is tested in event_records_test.cc.
#include "link/ban_list.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../support/ban_target.h"

namespace mqc {
namespace {

std::string Refusal(const std::string& as, const std::string& who) {
  Ban ban;
  const Status status = ParseBanTarget(as, who, &ban);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  return status.message();
}

TEST(BanTargetTest, CanonicalAddressesAndPrefixes) {
  EXPECT_EQ(Target("peerhost", "10.1.2.3").who, "10.1.2.3");
  EXPECT_EQ(Target("peerhost_net", "10.1.2.3/8").who, "10.0.0.0/8");
  EXPECT_EQ(Target("peerhost_net", "10.1.2.3/8").prefix_len, 104);
  EXPECT_EQ(Target("peerhost_net", "2001:DB8::1/32").who, "2001:db8::/32");
  EXPECT_EQ(Target("peerhost", "::1").who, "::1");
  EXPECT_EQ(Target("peerhost_net", "0.0.0.0/0").who, "0.0.0.0/0");
  EXPECT_EQ(Target("clientid", "a/b c").who, "a/b c");
  EXPECT_EQ(Target("username", "u").as(), "username");
  EXPECT_EQ(Target("peerhost_net", "10.0.0.0/8").as(), "peerhost_net");
}

TEST(BanTargetTest, RefusalsNameTheField) {
  EXPECT_EQ(Refusal("ip", "x").rfind("as: must be one of", 0), 0u);
  EXPECT_EQ(Refusal("clientid", ""), "who: must not be empty");
  EXPECT_EQ(Refusal("clientid", std::string(257, 'x')), "who: at most 256 bytes, got 257");
  EXPECT_EQ(Refusal("clientid", std::string("a\0b", 3)), "who: must not hold a NUL byte");
  EXPECT_NE(Refusal("peerhost", "10.0.0.0/8").find("'peerhost' takes one address"),
            std::string::npos);
  EXPECT_NE(Refusal("peerhost_net", "10.0.0.0").find("has no prefix length"), std::string::npos);
  EXPECT_EQ(Refusal("peerhost_net", "10.0.0.0/33"),
            "who: '10.0.0.0/33' is not an address prefix (prefix length 0..32 for IPv4)");
  EXPECT_EQ(Refusal("peerhost_net", "::/129"),
            "who: '::/129' is not an address prefix (prefix length 0..128 for IPv6)");
  EXPECT_NE(Refusal("peerhost_net", "10.0.0.0/x").find("not an address prefix"), std::string::npos);
  EXPECT_NE(Refusal("peerhost", "host.example").find("is not an IPv4 or IPv6 address"),
            std::string::npos);
  EXPECT_NE(Refusal("peerhost", "10.0.0.256").find("not an IPv4"), std::string::npos);
}

TEST(BanMatcherTest, MatchesEachKind) {
  std::vector<Ban> bans{Target("clientid", "bad-client"), Target("username", "mallory"),
                        Target("peerhost_net", "192.168.7.0/24"),
                        Target("peerhost_net", "2001:db8::/32")};
  const BanMatcher matcher(std::move(bans));
  const std::int64_t now = 1000;
  EXPECT_EQ(matcher.Find("bad-client", nullptr, "127.0.0.1", now)->who, "bad-client");
  EXPECT_EQ(matcher.Find("bad-client2", nullptr, "127.0.0.1", now), nullptr);
  EXPECT_EQ(matcher.Find("x", "mallory", nullptr, now)->kind, BanKind::kUsername);
  EXPECT_EQ(matcher.Find("mallory", "alice", nullptr, now), nullptr);  // kinds do not mix
  EXPECT_EQ(matcher.Find("x", nullptr, "192.168.7.200", now)->who, "192.168.7.0/24");
  EXPECT_EQ(matcher.Find("x", nullptr, "192.168.8.1", now), nullptr);
  // A v4 client on a dual-stack listener shows as a mapped address.
  EXPECT_NE(matcher.Find("x", nullptr, "::ffff:192.168.7.9", now), nullptr);
  EXPECT_NE(matcher.Find("x", nullptr, "2001:db8:ffff::1", now), nullptr);
  EXPECT_EQ(matcher.Find("x", nullptr, "2001:db9::1", now), nullptr);
  EXPECT_EQ(matcher.Find("x", nullptr, "fe80::1%eth0", now), nullptr);  // a zone is ignored
  EXPECT_EQ(matcher.Find("x", nullptr, "not an address", now), nullptr);
  const std::string user = "mallory";
  EXPECT_NE(matcher.Find(std::string_view("y"), &user, std::string_view(), now), nullptr);
}

TEST(BanMatcherTest, PrefixBoundaries) {
  AddressBytes a{};
  bool v4 = false;
  ASSERT_TRUE(ParseAddress("10.255.255.255", &a, &v4));
  EXPECT_TRUE(v4);
  const Ban ban = Target("peerhost_net", "10.0.0.0/8");
  EXPECT_TRUE(AddressInPrefix(a, ban.address, ban.prefix_len));
  ASSERT_TRUE(ParseAddress("11.0.0.0", &a, &v4));
  EXPECT_FALSE(AddressInPrefix(a, ban.address, ban.prefix_len));
  const Ban odd = Target("peerhost_net", "10.0.0.128/25");
  ASSERT_TRUE(ParseAddress("10.0.0.127", &a, &v4));
  EXPECT_FALSE(AddressInPrefix(a, odd.address, odd.prefix_len));
  ASSERT_TRUE(ParseAddress("10.0.0.128", &a, &v4));
  EXPECT_TRUE(AddressInPrefix(a, odd.address, odd.prefix_len));
  const Ban all = Target("peerhost_net", "::/0");
  ASSERT_TRUE(ParseAddress("1.2.3.4", &a, &v4));
  EXPECT_TRUE(AddressInPrefix(a, all.address, all.prefix_len));
}

TEST(BanMatcherTest, ExpiredBansDoNotMatch) {
  std::vector<Ban> bans{Target("clientid", "c", 2000), Target("peerhost", "10.0.0.1", 2000)};
  const BanMatcher matcher(std::move(bans));
  EXPECT_NE(matcher.Find("c", nullptr, nullptr, 1999), nullptr);
  EXPECT_EQ(matcher.Find("c", nullptr, nullptr, 2000), nullptr);
  EXPECT_NE(matcher.Find("x", nullptr, "10.0.0.1", 1999), nullptr);
  EXPECT_EQ(matcher.Find("x", nullptr, "10.0.0.1", 2001), nullptr);
}

TEST(BanMatcherTest, SurvivesAMove) {
  std::vector<Ban> bans;
  for (int i = 0; i < 50; ++i) bans.push_back(Target("clientid", "c" + std::to_string(i)));
  BanMatcher first(std::move(bans));
  BanMatcher second = std::move(first);
  EXPECT_NE(second.Find("c7", nullptr, nullptr, 0), nullptr);  // short strings live inline
}

}  // namespace
}  // namespace mqc
