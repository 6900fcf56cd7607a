// SPDX-License-Identifier: BSD-3-Clause
// The broker's ban gate: with no ban it does nothing and counts nothing; a list replaces the one
// before; every refusal is counted in the shared counters.
#include <gtest/gtest.h>

#include <string>

#include "broker/ban_gate.h"
#include "link/ban_list.h"
#include "link/event_records.h"
#include "link/shared_region.h"

namespace mqc {
namespace {

Ban Target(const std::string& as, const std::string& who) {
  Ban ban;
  EXPECT_TRUE(ParseBanTarget(as, who, &ban).ok());
  return ban;
}

TEST(BanGateTest, CountsRefusalsAndNothingWithoutBans) {
  BrokerCounters counters;
  BanGate gate(&counters);
  EXPECT_FALSE(gate.active());
  EXPECT_EQ(gate.Refuses("c", "u", "10.0.0.1", 0), nullptr);
  BansCommand command;
  command.bans = {Target("clientid", "c"), Target("peerhost_net", "10.0.0.0/8")};
  EXPECT_EQ(gate.Replace(std::move(command)), "mosquitto_connections: 2 bans in force");
  EXPECT_TRUE(gate.active());
  EXPECT_NE(gate.Refuses("c", nullptr, nullptr, 0), nullptr);
  EXPECT_NE(gate.Refuses("d", nullptr, "10.9.9.9", 0), nullptr);
  EXPECT_EQ(gate.Refuses("d", nullptr, "11.0.0.1", 0), nullptr);
  EXPECT_EQ(counters.connects_banned.load(), 2u);
  EXPECT_EQ(gate.Replace(BansCommand{}), "mosquitto_connections: 0 bans in force");
  EXPECT_FALSE(gate.active());
  EXPECT_EQ(gate.Refuses("c", nullptr, nullptr, 0), nullptr);
}

}  // namespace
}  // namespace mqc
