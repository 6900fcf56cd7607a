// SPDX-License-Identifier: BSD-3-Clause
#include "companion/connection_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../support/connection_builder.h"
#include "../support/stats_slots.h"
#include "companion/companion_link.h"
#include "companion/metrics_views.h"
#include "link/clock.h"

namespace mqc {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

ConnectionEvent Open(std::uint64_t seq, const std::string& id, std::int64_t open_ns = 1) {
  ConnectionEvent e = TestConnectionRecord(seq, id);
  e.open_time_ns = open_ns;
  return e;
}

class ConnectionRegistryTest : public ::testing::Test {
 protected:
  void ApplyOpen(const ConnectionEvent& e) { Apply(EventType::kConnection, e); }
  void ApplyClose(std::uint64_t seq, std::int64_t at, CloseReason reason) {
    CloseEvent e{seq, at, reason, {}};
    Apply(EventType::kClose, e);
  }
  void ApplySub(EventType type, std::uint64_t seq, const std::string& filter, std::uint8_t qos) {
    SubscriptionEvent e{seq, qos, filter};
    Apply(type, e);
  }
  void ApplyResync(EventType type, std::uint64_t generation) {
    ResyncEvent e{generation};
    Apply(type, e);
  }
  template <typename Event>
  void Apply(EventType type, const Event& event) {
    std::string bytes;
    Encode(event, &bytes);
    ASSERT_TRUE(ApplyEventRecord(&registry_, type, bytes, now_));
  }
  std::vector<std::string> Ids(ConnectionState state) {
    std::vector<std::string> ids;
    for (const auto& c : registry_.Snapshot()) {
      if (c.state == state) ids.push_back(c.client_id);
    }
    return ids;
  }

  ConnectionRegistryOptions options_{3, DefaultPattern::kEvents, 2, 1000, {}, nullptr, 0};
  ConnectionRegistry registry_{options_};
  std::int64_t now_ = 10;
  std::size_t subscriptions_of_1_ = 0;  // what connection 1 should have, when open
};

// The broker's own bridge is named from the broker's configuration by its local_clientid; the
// socket's peer is its address, the configuration's only where the socket told none.
TEST_F(ConnectionRegistryTest, TheBrokersOwnBridgeIsNamedFromTheConfiguration) {
  ConnectionRegistryOptions options = options_;
  options.bridges = {
      BridgeConfig{"to-cloud", "cloud.example", 8883, "local.edge.to-cloud", "edge.to-cloud"},
      BridgeConfig{"other", "192.0.2.9", 1883, "other-local", "other-remote"}};
  ConnectionRegistry registry(options);
  const auto apply = [&](const ConnectionEvent& event) {
    std::string bytes;
    Encode(event, &bytes);
    ASSERT_TRUE(ApplyEventRecord(&registry, EventType::kConnection, bytes, now_));
  };
  ConnectionEvent peer_known = Open(1, "local.edge.to-cloud");
  peer_known.bridge = BridgeRole::kOutgoing;
  peer_known.ip_address = "192.0.2.7";
  peer_known.port = 8883;
  apply(peer_known);
  ConnectionEvent peer_unknown = Open(2, "other-local");
  peer_unknown.bridge = BridgeRole::kOutgoing;
  peer_unknown.ip_address.clear();
  peer_unknown.port = 0;
  apply(peer_unknown);
  // A client with a bridge's client id that is no outgoing bridge is not named.
  ConnectionEvent impostor = Open(3, "other-local");
  impostor.bridge = BridgeRole::kNone;
  apply(impostor);
  std::map<std::uint64_t, Connection> by_seq;
  for (Connection& c : registry.Snapshot()) by_seq[c.seq] = std::move(c);
  EXPECT_EQ(by_seq[1].bridge, BridgeRole::kOutgoing);
  EXPECT_EQ(*by_seq[1].bridge_name, "to-cloud");
  EXPECT_EQ(by_seq[1].ip_address, "192.0.2.7");
  EXPECT_EQ(*by_seq[2].bridge_name, "other");
  EXPECT_EQ(by_seq[2].ip_address, "192.0.2.9");
  EXPECT_EQ(by_seq[2].port, 1883);
  EXPECT_EQ(by_seq[3].bridge, BridgeRole::kNone);
  EXPECT_EQ(*by_seq[3].bridge_name, "");
}

// Roles learnt after the connections opened: one connection's, then "the rest are none" for
// those still unknown (open ones only; a known role stays). Also during a resync.
TEST_F(ConnectionRegistryTest, BridgeRolesLearntLaterAreApplied) {
  ApplyOpen(Open(1, "remote-bridge"));
  ApplyOpen(Open(2, "plain"));
  ConnectionEvent own = Open(3, "own-bridge");
  own.bridge = BridgeRole::kOutgoing;
  ApplyOpen(own);
  ApplyOpen(Open(4, "leaves"));
  ApplyClose(4, 5, CloseReason::kClientDisconnect);
  ApplyOpen(Open(5, "unreadable"));
  Apply(EventType::kBridge, BridgeEvent{0, BridgeRole::kNone});
  Apply(EventType::kBridge, BridgeEvent{1, BridgeRole::kIncoming});
  Apply(EventType::kBridge, BridgeEvent{5, BridgeRole::kUnknown});
  std::map<std::string, BridgeRole> roles;
  for (const Connection& c : registry_.Snapshot()) roles[c.client_id] = c.bridge;
  EXPECT_EQ(roles["remote-bridge"], BridgeRole::kIncoming);
  EXPECT_EQ(roles["plain"], BridgeRole::kNone);
  EXPECT_EQ(roles["own-bridge"], BridgeRole::kOutgoing);
  EXPECT_EQ(roles["leaves"], BridgeRole::kUnknown);  // closed before: as it was
  EXPECT_EQ(roles["unreadable"], BridgeRole::kUnknown);
  // Indexed by client id still (the edit replaced the stored connection).
  ASSERT_EQ(registry_.FindByClientId("remote-bridge").size(), 1u);
  EXPECT_EQ(registry_.FindByClientId("remote-bridge")[0]->bridge, BridgeRole::kIncoming);

  ApplyResync(EventType::kResyncBegin, 9);
  ApplyOpen(Open(6, "staged"));
  Apply(EventType::kBridge, BridgeEvent{0, BridgeRole::kNone});
  ApplyResync(EventType::kResyncEnd, 9);
  ASSERT_EQ(registry_.FindByClientId("staged").size(), 1u);
  EXPECT_EQ(registry_.FindByClientId("staged")[0]->bridge, BridgeRole::kNone);
}

// A role learnt later is a change a WatchConnections stream sees: UPDATED, with the connection
// as it was and as it is; a role that stays what it was, and one learnt while a resync is
// staged (its end is a reset), publish nothing.
TEST(ConnectionRegistryChangesTest, ABridgeRoleLearntLaterIsPublishedAsUpdated) {
  ConnectionChanges changes({16, 100});
  ConnectionRegistryOptions options;
  options.changes = &changes;
  ConnectionRegistry registry(options);
  const auto apply = [&](EventType type, const auto& event) {
    std::string bytes;
    Encode(event, &bytes);
    ASSERT_TRUE(ApplyEventRecord(&registry, type, bytes, 10));
  };
  apply(EventType::kConnection, Open(1, "remote-bridge"));
  apply(EventType::kConnection, Open(2, "plain"));
  apply(EventType::kBridge, BridgeEvent{1, BridgeRole::kIncoming});
  apply(EventType::kBridge, BridgeEvent{0, BridgeRole::kNone});
  apply(EventType::kBridge, BridgeEvent{1, BridgeRole::kIncoming});  // no change

  std::vector<ConnectionChangePtr> read;
  ASSERT_EQ(changes.ReadAfter(100, 16, &read), ConnectionChanges::Read::kChanges);
  ASSERT_EQ(read.size(), 4u);
  EXPECT_EQ(read[0]->kind, ChangeKind::kOpened);
  EXPECT_EQ(read[1]->kind, ChangeKind::kOpened);
  EXPECT_EQ(read[2]->kind, ChangeKind::kUpdated);
  EXPECT_EQ(read[2]->before->client_id, "remote-bridge");
  EXPECT_EQ(read[2]->before->bridge, BridgeRole::kUnknown);
  EXPECT_EQ(read[2]->after->bridge, BridgeRole::kIncoming);
  EXPECT_EQ(read[3]->kind, ChangeKind::kUpdated);
  EXPECT_EQ(read[3]->after->client_id, "plain");
  EXPECT_EQ(read[3]->after->bridge, BridgeRole::kNone);

  apply(EventType::kResyncBegin, ResyncEvent{9});
  apply(EventType::kConnection, Open(3, "staged"));
  apply(EventType::kBridge, BridgeEvent{3, BridgeRole::kIncoming});
  apply(EventType::kResyncEnd, ResyncEvent{9});
  EXPECT_EQ(changes.last_sequence(), 105u);  // the reset alone
}

TEST_F(ConnectionRegistryTest, OpenConnectionsCarryTheirFields) {
  ConnectionEvent e = Open(1, "sensor-1", 123);
  e.username = "alice";
  e.auth_mechanism = AuthMechanism::kPassword;
  e.auth_state = AuthState::kSuccess;
  ApplyOpen(e);
  const auto all = registry_.Snapshot();
  ASSERT_EQ(all.size(), 1u);
  const Connection& c = all[0];
  EXPECT_EQ(c.seq, 1u);
  EXPECT_EQ(c.node_id, 3u);
  EXPECT_EQ(c.state, ConnectionState::kOpen);
  EXPECT_EQ(c.open_time_ns, 123);
  EXPECT_EQ(c.client_id, "sensor-1");
  EXPECT_EQ(c.username, "alice");
  EXPECT_EQ(c.ip_address, "127.0.0.1");
  EXPECT_EQ(c.port, 40000);
  EXPECT_EQ(c.uid.size(), 36u);
  EXPECT_EQ(c.authentication.mechanism, AuthMechanism::kPassword);
  EXPECT_EQ(c.authentication.user_principal, "alice");
}

TEST_F(ConnectionRegistryTest, CloseMovesAConnectionToTheClosedList) {
  ApplyOpen(Open(1, "a"));
  ApplyOpen(Open(2, "b"));
  ApplyClose(1, 5, CloseReason::kClientDisconnect);
  EXPECT_THAT(Ids(ConnectionState::kOpen), ::testing::ElementsAre("b"));
  EXPECT_THAT(Ids(ConnectionState::kClosed), ::testing::ElementsAre("a"));
  const auto all = registry_.Snapshot();
  for (const auto& c : all) {
    if (c.client_id == "a") {
      EXPECT_EQ(c.close_time_ns, 5);
      EXPECT_EQ(c.close_reason, CloseReason::kClientDisconnect);
    }
  }
  EXPECT_EQ(registry_.open_count(), 1u);
}

// Connects and takeovers of a client id are counted as the events come (not from a resync's
// re-sent connections), and every connection of the id shows them as a detail.
TEST_F(ConnectionRegistryTest, FlappingCountsComeWithTheDetails) {
  ApplyResync(EventType::kResyncBegin, 1);
  ApplyOpen(Open(1, "twin", NowNs()));  // re-sent by the resync: not a new connect
  ApplyResync(EventType::kResyncEnd, 1);
  ConnectionEvent second = Open(2, "twin", NowNs());
  second.ip_address = "10.0.0.2";
  ApplyOpen(second);
  ApplyClose(1, NowNs(), CloseReason::kSessionTakenOver);
  ConnectionEvent third = Open(3, "twin", NowNs());
  third.ip_address = "10.0.0.3";
  ApplyOpen(third);
  ApplyClose(2, NowNs(), CloseReason::kSessionTakenOver);
  ApplyOpen(Open(4, "calm", NowNs()));
  std::map<std::uint64_t, FlappingCounts> counts;
  for (const Connection& c : registry_.DetailedSnapshot()) counts[c.seq] = c.flapping;
  ASSERT_EQ(counts.size(), 4u);
  for (std::uint64_t seq : {1u, 2u, 3u}) {
    EXPECT_EQ(counts[seq].connects_last_minute, 2u) << seq;
    EXPECT_EQ(counts[seq].takeovers_last_minute, 2u) << seq;
    EXPECT_EQ(counts[seq].addresses[0], "10.0.0.3") << seq;
    EXPECT_EQ(counts[seq].addresses[1], "10.0.0.2") << seq;
  }
  EXPECT_EQ(counts[4].connects_last_minute, 1u);
  EXPECT_EQ(counts[4].takeovers_last_hour, 0u);
  // The plain snapshot carries no details; AddDetails fills them for the rows a caller keeps.
  std::vector<Connection> plain = registry_.Snapshot();
  for (const Connection& c : plain) EXPECT_EQ(c.flapping->connects_last_minute, 0u);
  registry_.AddDetails(&plain);
  for (const Connection& c : plain) {
    EXPECT_EQ(c.flapping->connects_last_minute, c.client_id == "twin" ? 2u : 1u) << c.seq;
  }
}

// plugin_opt_flapping_max_count: the connect that goes over the limit hands the client id over,
// once until taken; nothing while the ban is off.
TEST(ConnectionRegistryFlappingTest, AClientIdOverTheLimitIsHandedOverOnce) {
  for (const std::uint32_t max_count : {0u, 2u}) {
    SCOPED_TRACE(max_count);
    ConnectionRegistryOptions options;
    options.flapping_max_count = max_count;
    options.flapping_window_s = 60;
    ConnectionRegistry registry(options);
    const auto open = [&registry](std::uint64_t seq, const std::string& id) {
      std::string bytes;
      Encode(Open(seq, id, NowNs()), &bytes);
      ASSERT_TRUE(ApplyEventRecord(&registry, EventType::kConnection, bytes, 10));
    };
    open(1, "flapper");
    open(2, "flapper");
    open(3, "calm");
    EXPECT_TRUE(registry.TakeFlappingOffenders().empty());  // two connects: not over two
    open(4, "flapper");
    open(5, "flapper");
    const std::vector<std::string> offenders = registry.TakeFlappingOffenders();
    if (max_count == 0) {
      EXPECT_TRUE(offenders.empty());
    } else {
      EXPECT_EQ(offenders, std::vector<std::string>{"flapper"});
    }
    EXPECT_TRUE(registry.TakeFlappingOffenders().empty());
  }
}

TEST_F(ConnectionRegistryTest, ARefusedConnectionIsListedClosedOnly) {
  ConnectionEvent e = Open(1, "bad");
  e.close_time_ns = 2;
  e.close_reason = CloseReason::kAuthenticationFailed;
  e.auth_state = AuthState::kFailure;
  ApplyOpen(e);
  EXPECT_EQ(registry_.open_count(), 0u);
  EXPECT_THAT(Ids(ConnectionState::kClosed), ::testing::ElementsAre("bad"));
}

TEST_F(ConnectionRegistryTest, ClosedConnectionsAreBoundedByCountAndAge) {
  for (std::uint64_t i = 1; i <= 3; ++i) {
    ApplyOpen(Open(i, "c" + std::to_string(i)));
    ApplyClose(i, static_cast<std::int64_t>(i), CloseReason::kConnectionLost);
  }
  EXPECT_THAT(Ids(ConnectionState::kClosed), ::testing::ElementsAre("c2", "c3"));
  registry_.ExpireClosed(1002);  // ttl 1000: c2 (closed at 2) is not older than that yet
  EXPECT_EQ(registry_.closed_count(), 2u);
  registry_.ExpireClosed(1003);
  EXPECT_THAT(Ids(ConnectionState::kClosed), ::testing::ElementsAre("c3"));
}

TEST_F(ConnectionRegistryTest, ClosedMaxZeroKeepsNone) {
  ConnectionRegistry registry({0, DefaultPattern::kEvents, 0, 1000, {}, nullptr, 0});
  std::string bytes;
  Encode(Open(1, "a"), &bytes);
  ASSERT_TRUE(ApplyEventRecord(&registry, EventType::kConnection, bytes, 0));
  CloseEvent close{1, 2, CloseReason::kClientDisconnect, {}};
  Encode(close, &bytes);
  ASSERT_TRUE(ApplyEventRecord(&registry, EventType::kClose, bytes, 0));
  EXPECT_TRUE(registry.Snapshot().empty());
}

TEST_F(ConnectionRegistryTest, SubscriptionsAreMappedAndUpdated) {
  ApplyOpen(Open(1, "s"));
  ApplySub(EventType::kSubscribe, 1, "events/site1/#", 1);
  ApplySub(EventType::kSubscribe, 1, "$share/workers/queues/jobs/email", 1);
  ApplySub(EventType::kSubscribe, 1, "events/site1/#", 2);
  ApplySub(EventType::kUnsubscribe, 1, "nope", 0);
  ApplySub(EventType::kSubscribe, 99, "unknown/connection", 0);
  const auto all = registry_.Snapshot();
  ASSERT_EQ(all.size(), 1u);
  const auto& subs = all[0].subscriptions;
  ASSERT_EQ(subs.size(), 2u);
  EXPECT_EQ(subs[0].filter, "events/site1/#");
  EXPECT_EQ(subs[0].qos, 2);
  EXPECT_EQ(subs[0].mapping.pattern, Pattern::kEvents);
  EXPECT_EQ(subs[0].mapping.channel, "site1.>");
  EXPECT_EQ(subs[1].mapping.pattern, Pattern::kQueues);
  EXPECT_EQ(subs[1].mapping.channel, "jobs.email");
  EXPECT_EQ(*subs[1].mapping.shared_group, "workers");
  ApplySub(EventType::kUnsubscribe, 1, "events/site1/#", 0);
  EXPECT_EQ(registry_.Snapshot()[0].subscriptions.size(), 1u);
}

TEST_F(ConnectionRegistryTest, SubscriptionsSayWhetherKubemqAcceptsThem) {
  ConnectionEvent open = Open(1, "s");
  open.protocol_version = 5;
  ApplyOpen(open);
  ApplySub(EventType::kSubscribe, 1, "events/a", 0);
  ApplySub(EventType::kSubscribe, 1, "store/#", 1);
  ApplySub(EventType::kSubscribe, 1, "$share/g/queues/jobs", 0);
  ApplySub(EventType::kSubscribe, 1, "$reply/s/#", 0);
  auto subs = registry_.Snapshot()[0].subscriptions;
  ASSERT_EQ(subs.size(), 4u);
  EXPECT_EQ(*subs[0].kubemq_error, "");
  EXPECT_EQ(*subs[1].kubemq_error, "KubeMQ's store pattern takes no wildcards");
  EXPECT_EQ(*subs[2].kubemq_error, "KubeMQ's queues subscriptions need QoS 1 or 2");
  EXPECT_EQ(*subs[3].kubemq_error, "");  // the client's own reply namespace
  // A new QoS is a new verdict.
  ApplySub(EventType::kSubscribe, 1, "$share/g/queues/jobs", 1);
  EXPECT_EQ(*registry_.Snapshot()[0].subscriptions[2].kubemq_error, "");
  // So is a new default pattern.
  ApplySub(EventType::kSubscribe, 1, "site/+", 0);
  EXPECT_EQ(*registry_.Snapshot()[0].subscriptions[4].kubemq_error, "");
  Apply(EventType::kSettings, SettingsEvent{DefaultPattern::kStore, 10, 1000});
  EXPECT_EQ(*registry_.Snapshot()[0].subscriptions[4].kubemq_error,
            "KubeMQ's store pattern takes no wildcards");
}

TEST_F(ConnectionRegistryTest, ReloadedSettingsRemapSubscriptionsAndTrimTheClosedList) {
  ApplyOpen(Open(1, "s"));
  ApplySub(EventType::kSubscribe, 1, "site1/temp", 0);
  ApplySub(EventType::kSubscribe, 1, "queues/jobs", 1);
  for (std::uint64_t i = 2; i <= 3; ++i) {
    ApplyOpen(Open(i, "c" + std::to_string(i)));
    ApplyClose(i, static_cast<std::int64_t>(i), CloseReason::kAccessRevoked);
  }
  EXPECT_EQ(registry_.closed_count(), 2u);
  Apply(EventType::kSettings, SettingsEvent{DefaultPattern::kStore, 1, 100});
  EXPECT_THAT(Ids(ConnectionState::kClosed), ::testing::ElementsAre("c3"));
  const auto subs = registry_.Snapshot()[0].subscriptions;
  ASSERT_EQ(subs.size(), 2u);
  EXPECT_EQ(subs[0].mapping.pattern, Pattern::kStore);
  EXPECT_EQ(subs[1].mapping.pattern, Pattern::kQueues);
  ApplySub(EventType::kSubscribe, 1, "site2/temp", 0);
  EXPECT_EQ(registry_.Snapshot()[0].subscriptions[2].mapping.pattern, Pattern::kStore);
  // The new ttl (100 ns, was 1000): c3, closed at 3, expires after 103.
  registry_.ExpireClosed(103);
  EXPECT_EQ(registry_.closed_count(), 1u);
  registry_.ExpireClosed(104);
  EXPECT_EQ(registry_.closed_count(), 0u);
  std::string bytes;
  Encode(SettingsEvent{DefaultPattern::kEvents, 1, -1}, &bytes);
  EXPECT_FALSE(ApplyEventRecord(&registry_, EventType::kSettings, bytes, now_));
}

TEST_F(ConnectionRegistryTest, AResyncReplacesTheOpenSetOnlyWhenComplete) {
  ApplyOpen(Open(1, "stale"));
  EXPECT_FALSE(registry_.synced());
  ApplyResync(EventType::kResyncBegin, 4);
  ApplyOpen(Open(2, "fresh"));
  ApplySub(EventType::kSubscribe, 2, "events/a", 0);
  // Half-way through, readers still see the old state.
  EXPECT_THAT(Ids(ConnectionState::kOpen), ::testing::ElementsAre("stale"));
  ApplyResync(EventType::kResyncEnd, 4);
  EXPECT_THAT(Ids(ConnectionState::kOpen), ::testing::ElementsAre("fresh"));
  EXPECT_EQ(registry_.Snapshot()[0].subscriptions.size(), 1u);
  EXPECT_TRUE(registry_.synced());
  EXPECT_TRUE(registry_.WaitUntilSynced(std::chrono::milliseconds(0)));
}

TEST_F(ConnectionRegistryTest, WaitUntilNotOpenAnswersWhenTheCloseIsApplied) {
  using Clock = std::chrono::steady_clock;
  ApplyOpen(Open(1, "kicked"));
  const Clock::time_point far = Clock::now() + std::chrono::seconds(30);
  std::atomic<std::int64_t> woke_ns{0};
  std::future<bool> waited = std::async(std::launch::async, [&] {
    const bool closed = registry_.WaitUntilNotOpen(1, far);
    woke_ns.store(Clock::now().time_since_epoch().count());
    return closed;
  });
  // Other changes of the view wake the waiter, which waits on: connection 1 is still open.
  ApplyOpen(Open(2, "bystander"));
  ApplySub(EventType::kSubscribe, 1, "events/a", 0);
  EXPECT_EQ(waited.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  const std::int64_t closed_ns = Clock::now().time_since_epoch().count();
  ApplyClose(1, 20, CloseReason::kKicked);
  ASSERT_EQ(waited.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(waited.get());
  // Long before the deadline: woken by the close, not by a clock (generous for a loaded host).
  EXPECT_LT(woke_ns.load() - closed_ns, std::int64_t{2'000'000'000});
}

TEST_F(ConnectionRegistryTest, WaitUntilNotOpenKeepsItsDeadline) {
  using Clock = std::chrono::steady_clock;
  ApplyOpen(Open(1, "stays"));
  const Clock::time_point start = Clock::now();
  EXPECT_FALSE(registry_.WaitUntilNotOpen(1, start + std::chrono::milliseconds(100)));
  const auto waited = Clock::now() - start;
  EXPECT_GE(waited, std::chrono::milliseconds(100));
  EXPECT_LT(waited, std::chrono::seconds(10));
  // A connection that is not open (never seen, or closed) answers at once, deadline or not.
  EXPECT_TRUE(registry_.WaitUntilNotOpen(7, start));
  ApplyClose(1, 20, CloseReason::kClientDisconnect);
  EXPECT_TRUE(registry_.WaitUntilNotOpen(1, start));
}

TEST_F(ConnectionRegistryTest, AnAbandonedResyncIsReplacedByTheNextOne) {
  ApplyResync(EventType::kResyncBegin, 1);
  ApplyOpen(Open(1, "partial"));
  ApplyResync(EventType::kResyncBegin, 2);
  ApplyOpen(Open(2, "whole"));
  ApplyResync(EventType::kResyncEnd, 1);  // the end of the abandoned one: ignored
  EXPECT_FALSE(registry_.synced());
  ApplyResync(EventType::kResyncEnd, 2);
  EXPECT_THAT(Ids(ConnectionState::kOpen), ::testing::ElementsAre("whole"));
}

TEST_F(ConnectionRegistryTest, MalformedRecordsAreRefused) {
  EXPECT_FALSE(ApplyEventRecord(&registry_, EventType::kConnection, "short", 0));
  EXPECT_FALSE(ApplyEventRecord(&registry_, EventType::kClose, "", 0));
  EXPECT_FALSE(ApplyEventRecord(&registry_, static_cast<EventType>(99), "", 0));
  std::string bytes;
  Encode(Open(1, "a"), &bytes);
  bytes.push_back('x');  // trailing garbage
  EXPECT_FALSE(ApplyEventRecord(&registry_, EventType::kConnection, bytes, 0));
  EXPECT_TRUE(registry_.Snapshot().empty());
}

OfflineSessionEvent Offline(std::uint64_t seq, const std::string& id) {
  OfflineSessionEvent e;
  e.seq = seq;
  e.uid[0] = static_cast<std::uint8_t>(seq);
  e.since_ns = 5;
  e.expiry_time_ns = 3600'000'000'000;
  e.client_id = id;
  e.username = "alice";
  return e;
}

TEST_F(ConnectionRegistryTest, OfflineSessionsAreListedWithTheirSubscriptionsAndCountedApart) {
  ApplyOpen(Open(1, "online"));
  ApplySub(EventType::kSubscribe, 1, "events/a", 0);
  Apply(EventType::kOfflineSession, Offline(2, "sleeper"));
  ApplySub(EventType::kSubscribe, 2, "queues/jobs", 2);
  ApplySub(EventType::kSubscribe, 2, "$share/g/events/b", 1);
  EXPECT_THAT(Ids(ConnectionState::kOffline), ::testing::ElementsAre("sleeper"));
  EXPECT_THAT(Ids(ConnectionState::kOpen), ::testing::ElementsAre("online"));
  EXPECT_EQ(registry_.open_count(), 1u);
  EXPECT_EQ(registry_.offline_count(), 1u);
  // The broker still routes to an offline session's subscriptions: they count.
  const auto counts = SubscriptionsByPattern(registry_);
  EXPECT_EQ(counts[static_cast<std::size_t>(Pattern::kEvents)], 2u);
  EXPECT_EQ(counts[static_cast<std::size_t>(Pattern::kQueues)], 1u);
  for (const Connection& c : registry_.DetailedSnapshot()) {
    if (c.state != ConnectionState::kOffline) continue;
    EXPECT_EQ(c.username, "alice");
    EXPECT_EQ(c.open_time_ns, 5);
    EXPECT_EQ(c.session_expiry_time_ns, 3600'000'000'000);
    EXPECT_FALSE(c.clean_session);
    ASSERT_EQ(c.subscriptions.size(), 2u);
    EXPECT_EQ(*c.subscriptions[1].mapping.shared_group, "g");
  }
  Apply(EventType::kOfflineSessionEnd, OfflineSessionEndEvent{2});
  EXPECT_THAT(Ids(ConnectionState::kOffline), ::testing::IsEmpty());
  EXPECT_EQ(SubscriptionsByPattern(registry_)[static_cast<std::size_t>(Pattern::kQueues)], 0u);
  EXPECT_THAT(Ids(ConnectionState::kClosed), ::testing::IsEmpty());  // not a closed connection
}

TEST_F(ConnectionRegistryTest, AResyncCarriesOfflineSessions) {
  Apply(EventType::kOfflineSession, Offline(2, "gone-meanwhile"));
  ApplyResync(EventType::kResyncBegin, 1);
  Apply(EventType::kOfflineSession, Offline(3, "kept"));
  ApplySub(EventType::kSubscribe, 3, "events/x", 1);
  EXPECT_THAT(Ids(ConnectionState::kOffline), ::testing::ElementsAre("gone-meanwhile"));
  ApplyResync(EventType::kResyncEnd, 1);
  EXPECT_THAT(Ids(ConnectionState::kOffline), ::testing::ElementsAre("kept"));
  EXPECT_EQ(SubscriptionsByPattern(registry_)[static_cast<std::size_t>(Pattern::kEvents)], 1u);
}

// --- the shared snapshot and the client id index -----------------------------------------

// For every id: the index gives exactly the stored connections a scan of the shared snapshot
// finds (the same objects, so never a value an edit has replaced).
void ExpectIndexAgreesWithScan(const ConnectionRegistry& registry,
                               const std::vector<std::string>& ids) {
  const std::vector<ConnectionPtr> all = *registry.SharedSnapshot();
  for (const std::string& id : ids) {
    SCOPED_TRACE("client id " + id);
    std::vector<const Connection*> scanned;
    for (const ConnectionPtr& c : all) {
      if (c->client_id == id) scanned.push_back(c.get());
    }
    std::vector<const Connection*> found;
    for (const ConnectionPtr& c : registry.FindByClientId(id)) found.push_back(c.get());
    std::sort(scanned.begin(), scanned.end());
    std::sort(found.begin(), found.end());
    EXPECT_EQ(found, scanned);
  }
}

std::vector<ConnectionState> StatesOf(const std::vector<ConnectionPtr>& connections) {
  std::vector<ConnectionState> states;
  for (const ConnectionPtr& c : connections) states.push_back(c->state);
  std::sort(states.begin(), states.end());
  return states;
}

TEST_F(ConnectionRegistryTest, TheIndexFollowsOpenSubscribeCloseAndTakeover) {
  const std::vector<std::string> ids = {"a", "b", "nobody"};
  ApplyOpen(Open(1, "a"));
  ApplyOpen(Open(2, "b"));
  ApplySub(EventType::kSubscribe, 1, "events/x", 1);
  ExpectIndexAgreesWithScan(registry_, ids);
  ASSERT_EQ(registry_.FindByClientId("a").size(), 1u);
  EXPECT_EQ(registry_.FindByClientId("a")[0]->subscriptions.size(), 1u);
  // Takeover: the new connection opens before the old one's close arrives.
  ApplyOpen(Open(3, "a"));
  EXPECT_EQ(registry_.FindByClientId("a").size(), 2u);
  ExpectIndexAgreesWithScan(registry_, ids);
  ApplyClose(1, 11, CloseReason::kSessionTakenOver);
  EXPECT_THAT(StatesOf(registry_.FindByClientId("a")),
              ::testing::ElementsAre(ConnectionState::kOpen, ConnectionState::kClosed));
  ExpectIndexAgreesWithScan(registry_, ids);
  ApplySub(EventType::kUnsubscribe, 3, "events/x", 0);
  ApplyClose(2, 12, CloseReason::kClientDisconnect);
  ExpectIndexAgreesWithScan(registry_, ids);
  EXPECT_TRUE(registry_.FindByClientId("nobody").empty());
}

TEST_F(ConnectionRegistryTest, TheIndexForgetsClosedConnectionsTrimmedOrExpired) {
  // closed_max 2, closed_ttl 1000 ns (the fixture's options).
  for (std::uint64_t seq = 1; seq <= 3; ++seq) ApplyOpen(Open(seq, "c" + std::to_string(seq)));
  for (std::uint64_t seq = 1; seq <= 3; ++seq) ApplyClose(seq, 10, CloseReason::kConnectionLost);
  const std::vector<std::string> ids = {"c1", "c2", "c3"};
  ExpectIndexAgreesWithScan(registry_, ids);
  EXPECT_TRUE(registry_.FindByClientId("c1").empty());  // trimmed by count
  EXPECT_EQ(registry_.FindByClientId("c3").size(), 1u);
  registry_.ExpireClosed(10 + 1000 + 1);
  ExpectIndexAgreesWithScan(registry_, ids);
  EXPECT_TRUE(registry_.FindByClientId("c3").empty());
  // A reload that keeps fewer closed connections trims the index too.
  ApplyOpen(Open(4, "c4"));
  ApplyOpen(Open(5, "c5"));
  ApplyClose(4, 2000, CloseReason::kConnectionLost);
  ApplyClose(5, 2000, CloseReason::kConnectionLost);
  now_ = 2000;
  Apply(EventType::kSettings, SettingsEvent{DefaultPattern::kEvents, 1, 1000});
  EXPECT_TRUE(registry_.FindByClientId("c4").empty());
  EXPECT_EQ(registry_.FindByClientId("c5").size(), 1u);
  ExpectIndexAgreesWithScan(registry_, {"c4", "c5"});
}

TEST_F(ConnectionRegistryTest, TheIndexShowsAResyncOnlyWhenItIsSwappedIn) {
  const std::vector<std::string> ids = {"stale", "fresh", "both"};
  ApplyOpen(Open(1, "stale"));
  ApplyOpen(Open(2, "both"));
  ApplyResync(EventType::kResyncBegin, 7);
  ApplyOpen(Open(2, "both"));
  ApplyOpen(Open(3, "fresh"));
  ApplySub(EventType::kSubscribe, 3, "events/a", 0);
  EXPECT_TRUE(registry_.FindByClientId("fresh").empty());
  EXPECT_EQ(registry_.FindByClientId("stale").size(), 1u);
  ExpectIndexAgreesWithScan(registry_, ids);
  // A close during the resync reaches both sets.
  ApplyClose(2, 11, CloseReason::kClientDisconnect);
  ExpectIndexAgreesWithScan(registry_, ids);
  ApplyResync(EventType::kResyncEnd, 7);
  ExpectIndexAgreesWithScan(registry_, ids);
  EXPECT_TRUE(registry_.FindByClientId("stale").empty());
  ASSERT_EQ(registry_.FindByClientId("fresh").size(), 1u);
  EXPECT_EQ(registry_.FindByClientId("fresh")[0]->subscriptions.size(), 1u);
  EXPECT_THAT(StatesOf(registry_.FindByClientId("both")),
              ::testing::ElementsAre(ConnectionState::kClosed));
}

TEST_F(ConnectionRegistryTest, TheIndexFollowsOfflineSessionsAndRemapping) {
  Apply(EventType::kOfflineSession, Offline(1, "sleeper"));
  ApplySub(EventType::kSubscribe, 1, "queue/jobs", 1);
  EXPECT_THAT(StatesOf(registry_.FindByClientId("sleeper")),
              ::testing::ElementsAre(ConnectionState::kOffline));
  // A reload with another default pattern maps the subscription again: a new stored value.
  Apply(EventType::kSettings, SettingsEvent{DefaultPattern::kStore, 2, 1000});
  ASSERT_EQ(registry_.FindByClientId("sleeper").size(), 1u);
  EXPECT_EQ(registry_.FindByClientId("sleeper")[0]->subscriptions[0].mapping.pattern,
            Pattern::kStore);
  ExpectIndexAgreesWithScan(registry_, {"sleeper"});
  // The session resumes: the offline entry ends, the client opens a connection.
  Apply(EventType::kOfflineSessionEnd, OfflineSessionEndEvent{1});
  EXPECT_TRUE(registry_.FindByClientId("sleeper").empty());
  ApplyOpen(Open(2, "sleeper"));
  EXPECT_THAT(StatesOf(registry_.FindByClientId("sleeper")),
              ::testing::ElementsAre(ConnectionState::kOpen));
  ExpectIndexAgreesWithScan(registry_, {"sleeper"});
}

TEST_F(ConnectionRegistryTest, ASharedSnapshotDoesNotChangeUnderItsReader) {
  ApplyOpen(Open(1, "a"));
  const std::vector<ConnectionPtr> before = *registry_.SharedSnapshot();
  ApplySub(EventType::kSubscribe, 1, "events/x", 1);
  ApplyClose(1, 11, CloseReason::kClientDisconnect);
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(before[0]->state, ConnectionState::kOpen);
  EXPECT_TRUE(before[0]->subscriptions.empty());
  const std::vector<ConnectionPtr> after = *registry_.SharedSnapshot();
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0]->state, ConnectionState::kClosed);
  EXPECT_EQ(after[0]->subscriptions.size(), 1u);
}

// The shared snapshot, kept between changes, is what Snapshot() copies after every kind of event.
TEST_F(ConnectionRegistryTest, TheSharedSnapshotFollowsEveryChange) {
  const auto expect_current = [this](const char* step) {
    SCOPED_TRACE(step);
    std::vector<std::pair<std::uint64_t, ConnectionState>> shared;
    const ConnectionList all = registry_.SharedSnapshot();
    for (const ConnectionPtr& c : *all) {
      shared.emplace_back(c->seq, c->state);
      EXPECT_EQ(c->subscriptions.size(),
                0u + (c->seq == 1 && c->state == ConnectionState::kOpen ? subscriptions_of_1_
                                                                        : c->subscriptions.size()));
    }
    std::vector<std::pair<std::uint64_t, ConnectionState>> copied;
    for (const Connection& c : registry_.Snapshot()) copied.emplace_back(c.seq, c.state);
    EXPECT_EQ(shared, copied);
    // Unchanged: the same list is handed out again.
    EXPECT_EQ(registry_.SharedSnapshot(), registry_.SharedSnapshot());
  };
  expect_current("empty");
  ApplyOpen(Open(1, "a"));
  expect_current("open");
  ApplySub(EventType::kSubscribe, 1, "events/x", 1);
  subscriptions_of_1_ = 1;
  expect_current("subscribe");
  Apply(EventType::kOfflineSession, Offline(2, "sleeper"));
  expect_current("offline");
  Apply(EventType::kOfflineSessionEnd, OfflineSessionEndEvent{2});
  expect_current("offline end");
  ApplyResync(EventType::kResyncBegin, 1);
  ApplyOpen(Open(3, "b"));
  expect_current("staged");
  ApplyResync(EventType::kResyncEnd, 1);
  subscriptions_of_1_ = 0;
  expect_current("resync swapped in");
  ApplyClose(3, 11, CloseReason::kClientDisconnect);
  expect_current("close");
  registry_.ExpireClosed(11 + 1000 + 1);
  expect_current("expired");
}

TEST_F(ConnectionRegistryTest, ManyConnectionsOfOneIdStayFindable) {
  std::vector<std::string> ids;
  for (std::uint64_t seq = 1; seq <= 200; ++seq) {
    ApplyOpen(Open(seq, "id-" + std::to_string(seq % 7)));
    if (seq % 3 == 0) ApplyClose(seq - 1, 11, CloseReason::kConnectionLost);
  }
  for (int i = 0; i < 7; ++i) ids.push_back("id-" + std::to_string(i));
  ExpectIndexAgreesWithScan(registry_, ids);
}

}  // namespace
}  // namespace mqc

namespace mqc {
namespace {

constexpr std::int64_t kMinute = 60'000'000'000;

class RegistryDetailsTest : public ::testing::Test {
 protected:
  RegistryDetailsTest() {
    ListenerConfig plain;
    plain.port = 1883;
    ListenerConfig tls;
    tls.port = 8883;
    tls.tls = true;
    ListenerConfig ws;
    ws.port = 8083;
    ws.protocol = "websockets";
    ListenerConfig proxy_v1;
    proxy_v1.port = 1884;
    proxy_v1.proxy_protocol = 1;
    ListenerConfig proxy_v2;
    proxy_v2.port = 1885;
    proxy_v2.proxy_protocol = 2;
    ListenerConfig proxy_v2_tls = proxy_v2;
    proxy_v2_tls.port = 1886;
    proxy_v2_tls.proxy_v2_require_tls = true;
    options_.listeners = {plain, tls, ws, proxy_v1, proxy_v2, proxy_v2_tls};
    options_.stats = slots_.view();
    registry_ = std::make_unique<ConnectionRegistry>(options_);
  }
  // Connection `seq` ("c<seq>") opened at `open_ns` (when the broker gave it `slot`, zeroed),
  // seen by the registry at `now`. The slot keeps what was counted into it before: traffic
  // between the CONNECT and the moment the companion reads the event.
  void Open(std::uint64_t seq, std::uint16_t local_port, std::uint32_t slot, std::int64_t now,
            std::int64_t open_ns = 0, const std::string& client_id = "") {
    ConnectionEvent e;
    e.seq = seq;
    e.client_id = client_id.empty() ? "c" + std::to_string(seq) : client_id;
    e.local_port = local_port;
    e.stats_slot = slot;
    e.open_time_ns = open_ns;
    if (slot != kNoStatsSlot) slots_[slot].seq.store(seq);
    Apply(EventType::kConnection, e, now);
  }
  template <typename Event>
  void Apply(EventType type, const Event& event, std::int64_t now) {
    std::string bytes;
    Encode(event, &bytes);
    ASSERT_TRUE(ApplyEventRecord(registry_.get(), type, bytes, now));
  }
  // A new registry whose statistics window started at `window_start`, and slot 0 handed to
  // connection 1.
  void StartOver(std::int64_t window_start) {
    registry_ = std::make_unique<ConnectionRegistry>(options_);
    registry_->RollStatisticsWindow(window_start);
    Assign(0, 1);
  }
  // The broker's side of a CONNECT: the slot handed over zeroed to `seq`.
  void Assign(std::uint32_t slot, std::uint64_t seq) {
    AssignStatsSlot(slots_[slot], slots_.rare(slot), seq);
  }
  // The broker's side of a close: the slot given back (it keeps its figures until it is taken
  // again), its totals in the close event, read by the registry at `now`.
  void Close(std::uint64_t seq, std::uint32_t slot, std::int64_t close_ns, std::int64_t now) {
    const RequestStatistics totals = LoadStatsSlot(slots_[slot]);
    Apply(EventType::kClose, CloseEvent{seq, close_ns, CloseReason::kClientDisconnect, totals},
          now);
  }
  // Connections 1, 2, ... opened on these local ports, and what the registry tells of each:
  // listener name and whether TLS protects it.
  std::vector<std::pair<std::string, bool>> ListenersOf(const std::vector<std::uint16_t>& ports) {
    for (std::size_t i = 0; i < ports.size(); ++i) Open(i + 1, ports[i], kNoStatsSlot, 0);
    std::vector<std::pair<std::string, bool>> listeners;
    for (std::uint64_t seq = 1; seq <= ports.size(); ++seq) {
      const Connection c = Stored(seq);
      listeners.emplace_back(c.listener_name, c.tls->enabled);
    }
    return listeners;
  }
  // The stored connection `seq` as a reader of the shared view sees it (no details added).
  Connection Stored(std::uint64_t seq) { return Find(registry_->Snapshot(), seq); }
  // client id -> publishes plus deliveries of the top clients, in their order.
  std::vector<std::pair<std::string, std::uint64_t>> Top(std::size_t n) {
    std::vector<std::pair<std::string, std::uint64_t>> top;
    for (const auto& client : TopClients(*registry_, n)) {
      top.emplace_back(client.client_id, client.recent.publish_count + client.recent.deliver_count);
    }
    return top;
  }
  Connection Find(const std::vector<Connection>& all, std::uint64_t seq) {
    for (const auto& c : all) {
      if (c.seq == seq) return c;
    }
    ADD_FAILURE() << "no connection " << seq;
    return Connection{};
  }

  TestStatsSlots slots_ = TestStatsSlots(4);
  ConnectionRegistryOptions options_;
  std::unique_ptr<ConnectionRegistry> registry_;
};

TEST_F(RegistryDetailsTest, ListenerNameAndTlsComeFromTheLocalPort) {
  EXPECT_THAT(ListenersOf({1883, 8883, 8083, 9999}),  // 9999: not a configured listener
              ElementsAre(Pair("mqtt:1883", false), Pair("mqtts:8883", true),
                          Pair("ws:8083", false), Pair("", false)));
}

// Behind a load balancer the listener itself is plain; TLS ended at the balancer is known only
// where the broker refuses a PROXY v2 header without TLS facts (proxy_protocol_v2_require_tls):
// the broker keeps nothing else of them for a client.
TEST_F(RegistryDetailsTest, TlsEndedAtTheBalancerIsKnownWhereTheListenerRequiresIt) {
  EXPECT_THAT(
      ListenersOf({1884, 1885, 1886}),
      ElementsAre(Pair("mqtt:1884", false), Pair("mqtt:1885", false), Pair("mqtt:1886", true)));
}

TEST_F(RegistryDetailsTest, DetailedSnapshotReadsTheSlotOnlyWhileItIsTheConnections) {
  Open(1, 1883, 0, 0);
  Bump(slots_[0].publish_count, 5);
  Bump(slots_[0].deliver_bytes, 70);
  auto c = Find(registry_->DetailedSnapshot(), 1);
  EXPECT_EQ(c.total_statistics->publish_count, 5u);
  EXPECT_EQ(c.total_statistics->deliver_bytes, 70u);
  EXPECT_EQ(c.idle_ns, -1);  // the kernel's to tell (NetworkInfoCache), not the slot's
  EXPECT_EQ(Find(registry_->Snapshot(), 1).total_statistics->publish_count, 0u);
  slots_[0].seq.store(99);  // the broker gave the slot to another connection
  c = Find(registry_->DetailedSnapshot(), 1);
  EXPECT_EQ(c.total_statistics->publish_count, 0u);
}

// The message counts come with the totals, under the same ownership check; until the broker
// copied them (and for a slot that is no longer the connection's) they are unknown, not 0.
TEST_F(RegistryDetailsTest, MessageCountsAreReadWithTheTotals) {
  Open(1, 1883, 0, 0);
  Connection c = Find(registry_->DetailedSnapshot(), 1);
  EXPECT_EQ(c.messages->out.known, MessageQueue::Known::kUnknown);
  MessageCounts counts;
  counts.out = {MessageQueue::Known::kSplit, 96, 4, 100};
  counts.in = {MessageQueue::Known::kSplit, 0, 2, 2};
  StoreMessageCounts(slots_.rare(0), counts);
  c = Find(registry_->DetailedSnapshot(), 1);
  EXPECT_EQ(c.messages->out, counts.out);
  EXPECT_EQ(c.messages->in, counts.in);
  std::vector<Connection> page = {Find(registry_->Snapshot(), 1)};
  EXPECT_EQ(page[0].messages->out.known, MessageQueue::Known::kUnknown);  // a detail
  registry_->AddDetails(&page);
  EXPECT_EQ(page[0].messages->out, counts.out);
  slots_[0].seq.store(99);
  c = Find(registry_->DetailedSnapshot(), 1);
  EXPECT_EQ(c.messages->out.known, MessageQueue::Known::kUnknown);
}

TEST_F(RegistryDetailsTest, RecentStatisticsAreThePreviousCompleteMinute) {
  Open(1, 1883, 0, 10 * kMinute + 5);
  Bump(slots_[0].publish_count, 3);  // during minute 10
  registry_->RollStatisticsWindow(10 * kMinute + 6);
  registry_->RollStatisticsWindow(11 * kMinute);  // minute 10 ends
  EXPECT_EQ(Find(registry_->DetailedSnapshot(), 1).recent_statistics->publish_count, 3u);
  Bump(slots_[0].publish_count, 4);                                // during minute 11
  registry_->RollStatisticsWindow(11 * kMinute + 30'000'000'000);  // same minute: no change
  EXPECT_EQ(Find(registry_->Snapshot(), 1).recent_statistics->publish_count, 3u);
  registry_->RollStatisticsWindow(12 * kMinute + 1);
  EXPECT_EQ(Find(registry_->Snapshot(), 1).recent_statistics->publish_count, 4u);
  EXPECT_EQ(Find(registry_->DetailedSnapshot(), 1).total_statistics->publish_count, 7u);
  registry_->RollStatisticsWindow(15 * kMinute);  // minutes were missed: no complete window
  EXPECT_EQ(Find(registry_->Snapshot(), 1).recent_statistics->publish_count, 0u);
}

// The report this came from: a client connects and at once publishes 300 messages; the
// companion reads the CONNECT event after some of them (or all) were counted into the slot.
// The window of a connection opened during the minute starts at its open, where the broker
// zeroed its slot, not at what the companion first read.
TEST_F(RegistryDetailsTest, TrafficBeforeTheCompanionSawTheConnectionCountsInItsMinute) {
  registry_->RollStatisticsWindow(10 * kMinute + 1);  // the clock runs: minute 10
  Assign(0, 1);
  Bump(slots_[0].publish_count, 300);  // right after CONNECT, before the event is read
  Bump(slots_[0].deliver_count, 2);
  Open(1, 1883, 0, 10 * kMinute + 20'000'000'000, 10 * kMinute + 10'000'000'000);
  Bump(slots_[0].publish_count, 5);
  EXPECT_EQ(Find(registry_->DetailedSnapshot(), 1).total_statistics->publish_count, 305u);
  registry_->RollStatisticsWindow(11 * kMinute);
  const Connection c = Find(registry_->DetailedSnapshot(), 1);
  EXPECT_EQ(c.recent_statistics->publish_count, 305u);
  EXPECT_EQ(c.recent_statistics->deliver_count, 2u);
  const auto top = TopClients(*registry_, 5);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].client_id, "c1");
  EXPECT_EQ(top[0].recent.publish_count, 305u);
  // The next minute is the connection's own again.
  Bump(slots_[0].publish_count, 4);
  registry_->RollStatisticsWindow(12 * kMinute);
  EXPECT_EQ(Find(registry_->Snapshot(), 1).recent_statistics->publish_count, 4u);
}

// A persistent session that resumes is a new connection (its own seq and slot, zeroed): the
// messages queued while it was offline go out right after its CONNECT, and they are deliveries
// of the minute it resumed in, however late the companion reads the CONNECT.
TEST_F(RegistryDetailsTest, AResumedSessionCountsTheDeliveriesOfItsResume) {
  registry_->RollStatisticsWindow(10 * kMinute + 1);
  OfflineSessionEvent offline;
  offline.seq = 1;
  offline.client_id = "c2";
  offline.since_ns = 9 * kMinute;
  Apply(EventType::kOfflineSession, offline, 10 * kMinute + 2);
  EXPECT_TRUE(TopClients(*registry_, 5).empty());  // an offline session has no traffic
  Assign(1, 2);
  Bump(slots_[1].deliver_count, 20);  // the queued messages, sent before the event is read
  Bump(slots_[1].deliver_bytes, 200);
  Apply(EventType::kOfflineSessionEnd, OfflineSessionEndEvent{1}, 10 * kMinute + 40'000'000'000);
  Open(2, 1883, 1, 10 * kMinute + 40'000'000'000, 10 * kMinute + 30'000'000'000);
  registry_->RollStatisticsWindow(11 * kMinute);
  EXPECT_EQ(Find(registry_->DetailedSnapshot(), 2).recent_statistics->deliver_count, 20u);
  EXPECT_EQ(Find(registry_->DetailedSnapshot(), 2).recent_statistics->deliver_bytes, 200u);
  const auto top = TopClients(*registry_, 5);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].client_id, "c2");
  EXPECT_EQ(top[0].recent.deliver_count, 20u);
}

// A restarted companion reads the slots again (a resync). Of a connection opened during the
// current minute it knows the window exactly (the slot was zeroed at the open); of an older one
// it cannot know what the slot held when the minute began: its first window counts from the
// restart (what this companion saw, a lower bound), and full windows start at the next
// boundary. The same whether the clock starts before or after the resync is read.
TEST_F(RegistryDetailsTest, ARestartedCompanionKnowsTheMinuteOfConnectionsOpenedInIt) {
  for (const bool clock_first : {false, true}) {
    SCOPED_TRACE(clock_first ? "clock first" : "resync first");
    registry_ = std::make_unique<ConnectionRegistry>(options_);  // the restarted companion
    const std::int64_t restart = 10 * kMinute + 30'000'000'000;
    Assign(0, 1);  // opened at 10:10, before the restart
    Bump(slots_[0].publish_count, 30);
    Assign(1, 2);  // opened at 9:50, the minute before
    Bump(slots_[1].publish_count, 40);
    if (clock_first) registry_->RollStatisticsWindow(restart);
    Apply(EventType::kResyncBegin, ResyncEvent{1}, restart);
    Open(1, 1883, 0, restart, 10 * kMinute + 10'000'000'000);
    Open(2, 1883, 1, restart, 9 * kMinute + 50'000'000'000);
    Apply(EventType::kResyncEnd, ResyncEvent{1}, restart);
    registry_->RollStatisticsWindow(restart + 1);
    Bump(slots_[0].publish_count, 5);
    Bump(slots_[1].publish_count, 5);
    registry_->RollStatisticsWindow(11 * kMinute);
    EXPECT_EQ(Find(registry_->Snapshot(), 1).recent_statistics->publish_count, 35u);  // exact
    EXPECT_EQ(Find(registry_->Snapshot(), 2).recent_statistics->publish_count, 5u);   // seen only
    Bump(slots_[0].publish_count, 7);
    Bump(slots_[1].publish_count, 7);
    registry_->RollStatisticsWindow(12 * kMinute);
    EXPECT_EQ(Find(registry_->Snapshot(), 1).recent_statistics->publish_count, 7u);
    EXPECT_EQ(Find(registry_->Snapshot(), 2).recent_statistics->publish_count, 7u);
  }
}

// A connection that opens during a resync (events lost on a full ring) waits in the staged set
// until the resync ends; a minute that ends meanwhile ends for it too.
TEST_F(RegistryDetailsTest, AMinuteThatEndsDuringAResyncEndsForTheStagedConnections) {
  registry_->RollStatisticsWindow(10 * kMinute + 1);
  Apply(EventType::kResyncBegin, ResyncEvent{1}, 10 * kMinute + 50'000'000'000);
  Assign(0, 1);
  Bump(slots_[0].publish_count, 3);  // minute 10
  Open(1, 1883, 0, 10 * kMinute + 55'000'000'000, 10 * kMinute + 52'000'000'000);
  registry_->RollStatisticsWindow(11 * kMinute);
  Bump(slots_[0].publish_count, 4);  // minute 11
  Apply(EventType::kResyncEnd, ResyncEvent{1}, 11 * kMinute + 1);
  EXPECT_EQ(Find(registry_->Snapshot(), 1).recent_statistics->publish_count, 3u);
  registry_->RollStatisticsWindow(12 * kMinute);
  EXPECT_EQ(Find(registry_->Snapshot(), 1).recent_statistics->publish_count, 4u);
}

using TopList = std::vector<std::pair<std::string, std::uint64_t>>;

// The issue's device: it connects, sends a burst and leaves within one minute. When that minute
// ends, its closed record's recent statistics are the minute's traffic (all of its life: the
// broker zeroed its slot at the open), and it is among the top clients; a minute later both are
// back to nothing, as for any connection that sent nothing in the previous minute. The same
// when the companion reads its CONNECT and its close only after the minute ended (its slot
// already given to another connection).
TEST_F(RegistryDetailsTest, AConnectionThatBurstsAndLeavesWithinAMinuteShowsItTheNextMinute) {
  for (const bool read_late : {false, true}) {
    SCOPED_TRACE(read_late ? "events read after the minute" : "events read at once");
    StartOver(10 * kMinute + 1);
    Bump(slots_[0].publish_count, 300);
    Bump(slots_[0].publish_bytes, 3000);
    Bump(slots_[0].deliver_count, 2);
    const std::int64_t open = 10 * kMinute + 10'000'000'000;
    const std::int64_t close = 10 * kMinute + 30'000'000'000;
    if (!read_late) {
      Open(1, 1883, 0, open + 1, open);
      Close(1, 0, close, close + 1);
      const Connection c = Stored(1);
      EXPECT_EQ(c.state, ConnectionState::kClosed);
      EXPECT_EQ(c.total_statistics->publish_count, 300u);
      EXPECT_EQ(c.recent_statistics->publish_count, 0u);  // minute 9: it was not there
      EXPECT_TRUE(TopClients(*registry_, 5).empty());
      registry_->RollStatisticsWindow(11 * kMinute);
    } else {
      RequestStatistics totals = LoadStatsSlot(slots_[0]);
      registry_->RollStatisticsWindow(11 * kMinute);
      Open(1, 1883, 0, 11 * kMinute + 5, open);
      Assign(0, 7);  // the slot, given back at the close, serves another connection now
      Apply(EventType::kClose, CloseEvent{1, close, CloseReason::kClientDisconnect, totals},
            11 * kMinute + 6);
    }
    Connection c = Stored(1);
    EXPECT_EQ(c.recent_statistics->publish_count, 300u);
    EXPECT_EQ(c.recent_statistics->publish_bytes, 3000u);
    EXPECT_EQ(c.recent_statistics->deliver_count, 2u);
    EXPECT_EQ(Find(registry_->DetailedSnapshot(), 1).recent_statistics->publish_count, 300u);
    EXPECT_EQ(Top(5), (TopList{{"c1", 302}}));
    registry_->RollStatisticsWindow(12 * kMinute);
    c = Stored(1);
    EXPECT_EQ(c.recent_statistics->publish_count, 0u);  // minute 11: it was gone
    EXPECT_EQ(c.recent_statistics->deliver_count, 0u);
    EXPECT_EQ(c.total_statistics->publish_count, 300u);
    EXPECT_TRUE(TopClients(*registry_, 5).empty());
  }
}

// An older connection that closes: until the minute it closed in ends it shows the minute
// before (as it did while open, and it stays among the top clients for it); then what it sent
// in its last minute, up to its close; then nothing. Also when the registry reads the close
// only after the minute ended, the slot still holding its final figures at the boundary.
TEST_F(RegistryDetailsTest, AClosedConnectionShowsItsLastMinuteWhenThatMinuteEnds) {
  for (const bool read_late : {false, true}) {
    SCOPED_TRACE(read_late ? "close read after the minute" : "close read at once");
    StartOver(9 * kMinute + 1);
    Open(1, 1883, 0, 9 * kMinute + 2, 9 * kMinute + 1);
    Bump(slots_[0].publish_count, 5);  // minute 9
    registry_->RollStatisticsWindow(10 * kMinute);
    Bump(slots_[0].publish_count, 7);  // minute 10, then the close
    const std::int64_t close = 10 * kMinute + 30'000'000'000;
    if (!read_late) {
      Close(1, 0, close, close + 1);
      EXPECT_EQ(Stored(1).recent_statistics->publish_count, 5u);
      EXPECT_EQ(Top(5), (TopList{{"c1", 5}}));
      registry_->RollStatisticsWindow(11 * kMinute);
    } else {
      registry_->RollStatisticsWindow(11 * kMinute);  // reads the slot's final figures
      Close(1, 0, close, 11 * kMinute + 1);
    }
    EXPECT_EQ(Stored(1).recent_statistics->publish_count, 7u);
    EXPECT_EQ(Top(5), (TopList{{"c1", 7}}));
    registry_->RollStatisticsWindow(12 * kMinute);
    EXPECT_EQ(Stored(1).recent_statistics->publish_count, 0u);
    EXPECT_TRUE(TopClients(*registry_, 5).empty());
  }
}

// Minutes the companion missed: a connection that closed in minute 10 sent nothing in minute
// 12, the previous complete minute at the next boundary it sees.
TEST_F(RegistryDetailsTest, AClosedConnectionShowsNothingForMinutesAfterItsClose) {
  registry_->RollStatisticsWindow(10 * kMinute + 1);
  Assign(0, 1);
  Open(1, 1883, 0, 10 * kMinute + 2, 10 * kMinute + 1);
  Bump(slots_[0].publish_count, 4);
  Close(1, 0, 10 * kMinute + 3, 10 * kMinute + 4);
  registry_->RollStatisticsWindow(13 * kMinute);
  EXPECT_EQ(Stored(1).recent_statistics->publish_count, 0u);
  EXPECT_TRUE(TopClients(*registry_, 5).empty());
  // Read only two minutes after its close: nothing to show either.
  Assign(1, 2);
  Bump(slots_[1].publish_count, 6);
  const RequestStatistics totals = LoadStatsSlot(slots_[1]);
  Open(2, 1883, 1, 13 * kMinute + 1, 11 * kMinute + 1);
  Apply(EventType::kClose, CloseEvent{2, 11 * kMinute + 2, CloseReason::kClientDisconnect, totals},
        13 * kMinute + 2);
  EXPECT_EQ(Stored(2).recent_statistics->publish_count, 0u);
  EXPECT_TRUE(TopClients(*registry_, 5).empty());
}

// Closed connections the list no longer holds (closed_max, closed_ttl) show in no top list; a
// reload that trims the list drops them too.
TEST_F(RegistryDetailsTest, ClosedConnectionsTrimmedFromTheListLeaveTheTopClients) {
  options_.closed_max = 2;
  registry_ = std::make_unique<ConnectionRegistry>(options_);
  registry_->RollStatisticsWindow(10 * kMinute + 1);
  for (std::uint64_t seq = 1; seq <= 3; ++seq) {
    const std::int64_t t = 10 * kMinute + static_cast<std::int64_t>(seq) * 1'000'000'000;
    Assign(0, seq);
    Open(seq, 1883, 0, t, t);
    Bump(slots_[0].publish_count, seq);
    Close(seq, 0, t + 1, t + 2);
  }
  EXPECT_EQ(registry_->closed_count(), 2u);
  registry_->RollStatisticsWindow(11 * kMinute);
  EXPECT_EQ(Top(5), (TopList{{"c3", 3}, {"c2", 2}}));
  SettingsEvent settings;
  settings.closed_max = 1;
  settings.closed_ttl_ns = options_.closed_ttl_ns;
  Apply(EventType::kSettings, settings, 11 * kMinute + 1);
  EXPECT_EQ(Top(5), (TopList{{"c3", 3}}));
  registry_->ExpireClosed(11 * kMinute + options_.closed_ttl_ns);
  EXPECT_TRUE(TopClients(*registry_, 5).empty());
  EXPECT_EQ(registry_->closed_count(), 0u);
  registry_->RollStatisticsWindow(12 * kMinute);  // nothing left to roll
  EXPECT_TRUE(TopClients(*registry_, 5).empty());
}

// The minute's figure changes the stored closed connection: a new value (a reader's shared
// snapshot keeps the one it took), found by client id, and no change for WatchConnections,
// whose connections carry no traffic figures of the minute (open ones' change every minute
// without one either).
TEST(ConnectionRegistryChangesTest, AClosedConnectionsMinuteIsNoChangeOfTheStream) {
  ConnectionChanges changes({16, 100});
  TestStatsSlots slots(1);
  ConnectionRegistryOptions options;
  options.changes = &changes;
  options.stats = slots.view();
  ConnectionRegistry registry(options);
  const auto apply = [&](EventType type, const auto& event) {
    std::string bytes;
    Encode(event, &bytes);
    ASSERT_TRUE(ApplyEventRecord(&registry, type, bytes, 10 * kMinute + 3));
  };
  registry.RollStatisticsWindow(10 * kMinute + 1);
  AssignStatsSlot(slots[0], slots.rare(0), 1);
  ConnectionEvent open = Open(1, "burst", 10 * kMinute + 2);
  open.stats_slot = 0;
  apply(EventType::kConnection, open);
  Bump(slots[0].publish_count, 9);
  apply(EventType::kClose,
        CloseEvent{1, 10 * kMinute + 3, CloseReason::kClientDisconnect, LoadStatsSlot(slots[0])});
  const std::uint64_t last = changes.last_sequence();
  const ConnectionList before = registry.SharedSnapshot();
  registry.RollStatisticsWindow(11 * kMinute);
  EXPECT_EQ(changes.last_sequence(), last);
  ASSERT_EQ(before->size(), 1u);
  EXPECT_EQ((*before)[0]->recent_statistics->publish_count, 0u);
  const ConnectionList after = registry.SharedSnapshot();
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ((*after)[0]->recent_statistics->publish_count, 9u);
  const auto found = registry.FindByClientId("burst");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0]->recent_statistics->publish_count, 9u);
}

TEST_F(RegistryDetailsTest, AClosedConnectionKeepsTheTotalsAndIdleOfItsClose) {
  Open(1, 1883, 0, 0);
  CloseEvent close{1, 5, CloseReason::kConnectionLost, {9, 90, 1, 10, 12}, 2'000'000'000};
  std::string bytes;
  Encode(close, &bytes);
  ASSERT_TRUE(ApplyEventRecord(registry_.get(), EventType::kClose, bytes, 5));
  const Connection c = Find(registry_->DetailedSnapshot(), 1);
  EXPECT_EQ(c.state, ConnectionState::kClosed);
  EXPECT_EQ(c.total_statistics->publish_count, 9u);
  EXPECT_EQ(c.total_statistics->request_count, 12u);
  EXPECT_EQ(c.idle_ns, 2'000'000'000);
}

TEST_F(RegistryDetailsTest, AddDetailsFillsThePageCopiesOfOpenConnections) {
  Open(1, 1883, 0, 10 * kMinute + 5);
  Open(2, 1883, 1, 10 * kMinute + 5);
  Bump(slots_[0].publish_count, 3);
  registry_->RollStatisticsWindow(10 * kMinute + 6);
  registry_->RollStatisticsWindow(11 * kMinute);
  Bump(slots_[0].publish_count, 2);
  std::vector<Connection> page;
  const ConnectionList all = registry_->SharedSnapshot();
  for (const ConnectionPtr& c : *all) {
    // Stored connections carry no details.
    EXPECT_EQ(c->total_statistics->publish_count, 0u);
    EXPECT_EQ(c->recent_statistics->publish_count, 0u);
    EXPECT_EQ(c->idle_ns, -1);
    page.push_back(*c);
  }
  // Connection 2 closes after the snapshot: its copy keeps what it had.
  CloseEvent close{2, 5, CloseReason::kConnectionLost, {9, 90, 1, 10, 12}, 0};
  std::string bytes;
  Encode(close, &bytes);
  ASSERT_TRUE(ApplyEventRecord(registry_.get(), EventType::kClose, bytes, 11 * kMinute));
  registry_->AddDetails(&page);
  const Connection one = Find(page, 1);
  EXPECT_EQ(one.total_statistics->publish_count, 5u);
  EXPECT_EQ(one.recent_statistics->publish_count, 3u);
  EXPECT_EQ(one.idle_ns, -1);  // idle time comes from the kernel (NetworkInfoCache), not here
  EXPECT_EQ(Find(page, 2).total_statistics->publish_count, 0u);
  EXPECT_EQ(Find(page, 2).state, ConnectionState::kOpen);
}

}  // namespace
}  // namespace mqc
