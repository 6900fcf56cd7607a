// SPDX-License-Identifier: BSD-3-Clause
#include "broker/broker_capabilities.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

namespace mqc {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Binary(std::initializer_list<std::string> strings) {
  std::string bytes(
      "\x7f"
      "ELF\0\0",
      6);
  for (const auto& text : strings) {
    bytes += text;
    bytes.push_back('\0');
  }
  return bytes;
}

TEST(BrokerVersionTest, TheOneVersionStringOfTheBinaryIsItsVersion) {
  const BrokerVersion version = FindBrokerVersion(
      Binary({"mosquitto version %s starting", "2.0.21", "1.3.1", "%s:%d", "2.0.21"}));
  EXPECT_EQ(version.Text(), "2.0.21");
  EXPECT_TRUE(version.AtLeast(2, 0, 15));
  EXPECT_TRUE(version.AtLeast(2, 0, 21));
  EXPECT_FALSE(version.AtLeast(2, 0, 22));
  EXPECT_FALSE(version.AtLeast(2, 1, 0));
  EXPECT_TRUE(FindBrokerVersion(Binary({"2.1.2"})).AtLeast(2, 0, 15));
}

TEST(BrokerVersionTest, NoneOrTwoDifferentOnesAreUnknown) {
  EXPECT_FALSE(FindBrokerVersion(Binary({"mosquitto", "3.0.1"})).known());
  EXPECT_FALSE(FindBrokerVersion(Binary({"2.0.11", "2.0.21"})).known());
  EXPECT_FALSE(FindBrokerVersion(Binary({"x2.0.11", "2.0.", "2..1", "2.0.11.4"})).known());
  EXPECT_FALSE(FindBrokerVersion("").known());
  const BrokerVersion unknown = FindBrokerVersion(Binary({}));
  EXPECT_EQ(unknown.Text(), "unknown");
  EXPECT_FALSE(unknown.AtLeast(2, 0, 0));
}

TEST(BrokerCapabilitiesTest, PerListenerSettingsNeedTickFrom2015Or21) {
  BrokerCapabilities capabilities;
  capabilities.version = FindBrokerVersion(Binary({"2.0.11"}));
  EXPECT_FALSE(capabilities.SendsTickWithPerListenerSettings());
  capabilities.version = FindBrokerVersion(Binary({"2.0.15"}));
  EXPECT_TRUE(capabilities.SendsTickWithPerListenerSettings());
  capabilities.version = BrokerVersion{};
  EXPECT_FALSE(capabilities.SendsTickWithPerListenerSettings());
  capabilities.api_2_1 = true;
  EXPECT_TRUE(capabilities.SendsTickWithPerListenerSettings());
}

TEST(BrokerCapabilitiesTest, DeliveriesAreExactUnlessAHiddenAclCheckDecides) {
  BrokerCapabilities hidden;  // 2.0.19 on: mosquitto_acl_check not exported
  EXPECT_TRUE(hidden.ExactDeliveries(/*other_acl_source=*/false));
  EXPECT_FALSE(hidden.ExactDeliveries(/*other_acl_source=*/true));
  BrokerCapabilities exported = hidden;
  exported.acl_check = true;
  EXPECT_TRUE(exported.ExactDeliveries(true));
  BrokerCapabilities v21 = hidden;
  v21.api_2_1 = true;
  EXPECT_TRUE(v21.ExactDeliveries(true));
}

TEST(BrokerCapabilitiesTest, TheStartLineNamesTheBrokerAndWhatItHides) {
  BrokerCapabilities capabilities;
  capabilities.version = FindBrokerVersion(Binary({"2.0.21"}));
  capabilities.property_readers = false;
  const std::string line = capabilities.Describe(/*other_acl_source=*/true);
  EXPECT_THAT(line, HasSubstr("broker 2.0.21, plugin API 2.0"));
  EXPECT_THAT(line, HasSubstr("mosquitto_acl_check"));
  EXPECT_THAT(line, HasSubstr("still counts as delivered"));
  EXPECT_THAT(line, HasSubstr("mosquitto__get_state"));
  // Without another ACL source the missing check costs nothing, and is not named.
  EXPECT_THAT(capabilities.Describe(false), Not(HasSubstr("mosquitto_acl_check")));

  BrokerCapabilities full;
  full.version = FindBrokerVersion(Binary({"2.0.11"}));
  full.acl_check = full.get_state = full.property_readers = true;
  EXPECT_EQ(full.Describe(true),
            "mosquitto_connections: broker 2.0.11, plugin API 2.0; every feature available; "
            "dropped messages: full queues (once the client layout is verified) and QoS 0 for "
            "offline sessions seen, expired and too large hidden");
  BrokerCapabilities v21;
  v21.api_2_1 = true;
  v21.property_readers = true;
  v21.client_lookup = true;
  v21.version = FindBrokerVersion(Binary({"2.1.2"}));
  EXPECT_EQ(v21.Describe(true),
            "mosquitto_connections: broker 2.1.2, plugin API 2.1; every feature available; "
            "dropped messages: QoS 0 for offline sessions seen (where no other ACL source "
            "exists), full queues, expired and too large hidden");
  // A 2.1 build that hid mosquitto_client (none of the matrix does: src/linker.syms has it).
  v21.client_lookup = false;
  EXPECT_EQ(v21.Describe(true),
            "mosquitto_connections: broker 2.1.2, plugin API 2.1; this broker does not export "
            "mosquitto_client (an MQTT 5 session's end by expiry is seen only where the client "
            "layout is verified); dropped messages: QoS 0 for offline sessions seen (where no "
            "other ACL source exists), full queues, expired and too large hidden");
  v21.client_lookup = true;
  // 2.1 with another ACL source: no refusal reaches the plugin, and the line says so, in place
  // of "every feature available" (README's broker table; integration/test_acl_denials.py).
  EXPECT_EQ(v21.Describe(false, /*denials_hidden=*/true),
            "mosquitto_connections: broker 2.1.2, plugin API 2.1; ACL denials are not shown (2.1 "
            "reports a subscription or a publish only once every ACL source allowed it, and this "
            "plugin stays out of the ACL chain another source decides); dropped messages: QoS 0 "
            "for offline sessions seen (where no other ACL source exists), full queues, expired "
            "and too large hidden");
  // On 2.0 the hidden denials are the unread source's, said with mosquitto_acl_check.
  EXPECT_EQ(full.Describe(true, /*denials_hidden=*/true),
            "mosquitto_connections: broker 2.0.11, plugin API 2.0; every feature available; "
            "dropped messages: full queues (once the client layout is verified) and QoS 0 for "
            "offline sessions seen, expired and too large hidden");
  EXPECT_THAT(capabilities.Describe(true, true), HasSubstr("and no denial is shown"));
  v21.version = BrokerVersion{};
  EXPECT_THAT(v21.Describe(true), HasSubstr("its version string"));
}

// A number the broker gave (a 2.1 reason code, a 2.0 client state), and its close reason.
struct ReasonCase {
  int given;
  CloseReason reason;
};

void ExpectReasons(CloseReason (*reason_of)(int), std::initializer_list<ReasonCase> cases) {
  for (const ReasonCase& c : cases) {
    EXPECT_EQ(reason_of(c.given), c.reason) << "given " << c.given;
  }
}

TEST(CloseReasonTest, The21ReasonCodes) {
  ExpectReasons(CloseReasonFromBrokerReason, {{0, CloseReason::kClientDisconnect},
                                              {142, CloseReason::kSessionTakenOver},
                                              {152, CloseReason::kKicked},
                                              {11, CloseReason::kAccessRevoked},
                                              {7, CloseReason::kConnectionLost},
                                              {19, CloseReason::kConnectionLost},
                                              {2, CloseReason::kConnectionLost},
                                              {-1, CloseReason::kUnspecified}});
}

TEST(CloseReasonTest, The20ClientStates) {
  ExpectReasons(CloseReasonFromClientState, {{2, CloseReason::kClientDisconnect},
                                             {18, CloseReason::kClientDisconnect},
                                             {17, CloseReason::kSessionTakenOver},
                                             {1, CloseReason::kConnectionLost},
                                             {-1, CloseReason::kUnspecified}});
}

TEST(RefusalTest, EachBrokerTellsARefusedConnectItsOwnWay) {
  // 2.1: the DISCONNECT of a CONNECT its CONNECT event never settled.
  EXPECT_TRUE(IsRefusal(true, /*pending=*/true, /*has_client_id=*/true, -1));
  EXPECT_FALSE(IsRefusal(true, false, true, -1));
  // 2.0.11 to 2.0.14: the id is gone.
  EXPECT_TRUE(IsRefusal(false, true, /*has_client_id=*/false, -1));
  EXPECT_TRUE(IsRefusal(false, false, false, -1));
  // 2.0.15 on, with the state: a refused client never became active (mosq_cs_new).
  EXPECT_TRUE(IsRefusal(false, true, true, /*mosq_cs_new=*/0));
  EXPECT_FALSE(IsRefusal(false, true, true, /*mosq_cs_disconnecting=*/2));
  EXPECT_FALSE(IsRefusal(false, true, true, /*mosq_cs_active=*/3));
  // 2.0.19 on: no state; a pending client's DISCONNECT.
  EXPECT_TRUE(IsRefusal(false, true, true, -1));
  EXPECT_FALSE(IsRefusal(false, false, true, -1));
}

TEST(BrokerErrorTextTest, NamesTheCodesThePluginLogs) {
  EXPECT_EQ(BrokerErrorText(6), "not found");
  EXPECT_EQ(BrokerErrorText(10), "not supported");
  EXPECT_EQ(BrokerErrorText(999), "error 999");
}

}  // namespace
}  // namespace mqc
