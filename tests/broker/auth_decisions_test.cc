// SPDX-License-Identifier: BSD-3-Clause
#include "broker/auth_decisions.h"

#include <gtest/gtest.h>

#include <string>

namespace mqc {
namespace {

const std::string kOwn = "/usr/lib/mosquitto_connections.so";

BrokerConfig Parse(const std::string& text) {
  BrokerConfig config;
  const Status parsed = ParseBrokerConfig(text, "test.conf", true, &config);
  EXPECT_TRUE(parsed.ok()) << parsed.message();
  return config;
}

BrokerCapabilities Api20(bool acl_check) {
  BrokerCapabilities capabilities;
  capabilities.acl_check = acl_check;
  return capabilities;
}

BrokerCapabilities Api21() {
  BrokerCapabilities capabilities;
  capabilities.api_2_1 = true;
  return capabilities;
}

// Nothing else configured: the plugin decides both, as the broker would (local-only mode
// allows anonymous clients; a listener without allow_anonymous refuses them).
TEST(AuthDecisionsTest, WithoutOtherSourcesThePluginDecidesAsTheBroker) {
  for (const BrokerCapabilities& capabilities : {Api20(true), Api20(false), Api21()}) {
    const BrokerAuth local = DecideAuth(Parse("plugin " + kOwn + "\n"), kOwn, capabilities);
    EXPECT_TRUE(local.decisions.decide_basic_auth);
    EXPECT_TRUE(local.decisions.allow_anonymous);
    EXPECT_TRUE(local.decisions.decide_acl);
    EXPECT_FALSE(local.read_acl_file);
    const BrokerAuth listener =
        DecideAuth(Parse("listener 1883\nplugin " + kOwn + "\n"), kOwn, capabilities);
    EXPECT_FALSE(listener.decisions.allow_anonymous);
  }
}

TEST(AuthDecisionsTest, APasswordFileOrAnotherPluginDecides) {
  const BrokerAuth password = DecideAuth(
      Parse("listener 1883\npassword_file /etc/p\nplugin " + kOwn + "\n"), kOwn, Api20(true));
  EXPECT_FALSE(password.decisions.decide_basic_auth);
  EXPECT_TRUE(password.decisions.decide_acl);
  const BrokerAuth dynsec = DecideAuth(
      Parse("plugin " + kOwn + "\nplugin /usr/lib/dynamic-security.so\n"), kOwn, Api20(true));
  EXPECT_FALSE(dynsec.decisions.decide_basic_auth);
  EXPECT_FALSE(dynsec.decisions.decide_acl);
}

// The acl_file is read by the plugin only where the broker cannot be asked (2.0 without
// mosquitto_acl_check) and nothing else decides before it.
TEST(AuthDecisionsTest, TheAclFileIsReadOnlyWhereTheBrokerCannotBeAsked) {
  const BrokerConfig config = Parse("acl_file /etc/mosquitto/acl\nplugin " + kOwn + "\n");
  const BrokerAuth read = DecideAuth(config, kOwn, Api20(false));
  EXPECT_FALSE(read.decisions.decide_acl);
  EXPECT_TRUE(read.read_acl_file);
  EXPECT_EQ(read.acl_file_to_read, "/etc/mosquitto/acl");
  EXPECT_FALSE(DecideAuth(config, kOwn, Api20(true)).read_acl_file);
  EXPECT_FALSE(DecideAuth(config, kOwn, Api21()).read_acl_file);
  const BrokerConfig with_plugin = Parse("acl_file /etc/mosquitto/acl\nplugin " + kOwn +
                                         "\nplugin /usr/lib/dynamic-security.so\n");
  EXPECT_FALSE(DecideAuth(with_plugin, kOwn, Api20(false)).read_acl_file);
}

// A reload decides from the new file with the same function: a password_file added turns the
// plugin's own decision off, one removed turns it on again.
TEST(AuthDecisionsTest, AReloadDecidesAgainFromTheNewFile) {
  const BrokerConfig before = Parse("listener 1883\nallow_anonymous true\nplugin " + kOwn + "\n");
  const BrokerConfig after = Parse(
      "listener 1883\nallow_anonymous true\npassword_file /etc/p\n"
      "plugin " +
      kOwn + "\n");
  EXPECT_TRUE(DecideAuth(before, kOwn, Api20(false)).decisions.decide_basic_auth);
  EXPECT_FALSE(DecideAuth(after, kOwn, Api20(false)).decisions.decide_basic_auth);
  EXPECT_FALSE(DecideAuth(before, kOwn, Api20(false)).decisions ==
               DecideAuth(after, kOwn, Api20(false)).decisions);
}

}  // namespace
}  // namespace mqc
