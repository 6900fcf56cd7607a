#include "companion/connection_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace mqc {
namespace {

ConnectionEvent Open(std::uint64_t seq, const std::string& id, std::int64_t open_ns = 1) {
  ConnectionEvent e;
  e.seq = seq;
  e.uid[0] = static_cast<std::uint8_t>(seq);
  e.open_time_ns = open_ns;
  e.client_id = id;
  e.ip_address = "127.0.0.1";
  e.port = 40000;
  e.protocol_version = 4;
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
    ASSERT_TRUE(registry_.Apply(type, bytes, now_));
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
};

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
  ASSERT_TRUE(registry.Apply(EventType::kConnection, bytes, 0));
  CloseEvent close{1, 2, CloseReason::kClientDisconnect, {}};
  Encode(close, &bytes);
  ASSERT_TRUE(registry.Apply(EventType::kClose, bytes, 0));
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
  EXPECT_EQ(subs[1].mapping.shared_group, "workers");
  ApplySub(EventType::kUnsubscribe, 1, "events/site1/#", 0);
  EXPECT_EQ(registry_.Snapshot()[0].subscriptions.size(), 1u);
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
  EXPECT_FALSE(registry_.Apply(EventType::kSettings, bytes, now_));
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
  EXPECT_FALSE(registry_.Apply(EventType::kConnection, "short", 0));
  EXPECT_FALSE(registry_.Apply(EventType::kClose, "", 0));
  EXPECT_FALSE(registry_.Apply(static_cast<EventType>(99), "", 0));
  std::string bytes;
  Encode(Open(1, "a"), &bytes);
  bytes.push_back('x');  // trailing garbage
  EXPECT_FALSE(registry_.Apply(EventType::kConnection, bytes, 0));
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
  const auto counts = registry_.SubscriptionsByPattern();
  EXPECT_EQ(counts[static_cast<std::size_t>(Pattern::kEvents)], 2u);
  EXPECT_EQ(counts[static_cast<std::size_t>(Pattern::kQueues)], 1u);
  for (const Connection& c : registry_.DetailedSnapshot()) {
    if (c.state != ConnectionState::kOffline) continue;
    EXPECT_EQ(c.username, "alice");
    EXPECT_EQ(c.open_time_ns, 5);
    EXPECT_EQ(c.session_expiry_time_ns, 3600'000'000'000);
    EXPECT_FALSE(c.clean_session);
    ASSERT_EQ(c.subscriptions.size(), 2u);
    EXPECT_EQ(c.subscriptions[1].mapping.shared_group, "g");
  }
  Apply(EventType::kOfflineSessionEnd, OfflineSessionEndEvent{2});
  EXPECT_THAT(Ids(ConnectionState::kOffline), ::testing::IsEmpty());
  EXPECT_EQ(registry_.SubscriptionsByPattern()[static_cast<std::size_t>(Pattern::kQueues)], 0u);
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
  EXPECT_EQ(registry_.SubscriptionsByPattern()[static_cast<std::size_t>(Pattern::kEvents)], 1u);
}

TEST(EventRecordsTest, EveryRecordRoundTripsAndRejectsTruncation) {
  ConnectionEvent e = Open(9, "id\xc3\xa9");
  e.username = "user";
  e.auth_method = "SCRAM";
  e.close_time_ns = 77;
  e.close_reason = CloseReason::kKicked;
  e.clean_session = false;
  std::string bytes;
  Encode(e, &bytes);
  ConnectionEvent back;
  ASSERT_TRUE(Decode(bytes, &back));
  EXPECT_EQ(back.client_id, e.client_id);
  EXPECT_EQ(back.auth_method, "SCRAM");
  EXPECT_EQ(back.close_reason, CloseReason::kKicked);
  EXPECT_FALSE(back.clean_session);
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    EXPECT_FALSE(Decode(std::string_view(bytes).substr(0, cut), &back)) << cut;
  }
  LogCommand log{LogLevel::kWarning, "hello"};
  Encode(log, &bytes);
  LogCommand log_back;
  ASSERT_TRUE(Decode(bytes, &log_back));
  EXPECT_EQ(log_back.text, "hello");
  EXPECT_EQ(log_back.level, LogLevel::kWarning);
  bytes[0] = 0x03;  // not a log level
  EXPECT_FALSE(Decode(bytes, &log_back));
  SubscriptionEvent sub{1, 3, "t"};  // QoS 3 does not exist
  Encode(sub, &bytes);
  EXPECT_FALSE(Decode(bytes, &sub));

  OfflineSessionEvent offline = Offline(4, "sleeper");
  offline.protocol_version = 5;
  Encode(offline, &bytes);
  OfflineSessionEvent offline_back;
  ASSERT_TRUE(Decode(bytes, &offline_back));
  EXPECT_EQ(offline_back.client_id, "sleeper");
  EXPECT_EQ(offline_back.username, "alice");
  EXPECT_EQ(offline_back.expiry_time_ns, offline.expiry_time_ns);
  EXPECT_EQ(offline_back.protocol_version, 5);
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    EXPECT_FALSE(Decode(std::string_view(bytes).substr(0, cut), &offline_back)) << cut;
  }
  Encode(OfflineSessionEndEvent{4}, &bytes);
  OfflineSessionEndEvent end_back;
  ASSERT_TRUE(Decode(bytes, &end_back));
  EXPECT_EQ(end_back.seq, 4u);
  EXPECT_FALSE(Decode(std::string_view(bytes).substr(0, 7), &end_back));
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
    options_.listeners = {plain, tls, ws};
    options_.stats = slots_;
    options_.stats_count = 4;
    registry_ = std::make_unique<ConnectionRegistry>(options_);
  }
  void Open(std::uint64_t seq, std::uint16_t local_port, std::uint32_t slot, std::int64_t now) {
    ConnectionEvent e;
    e.seq = seq;
    e.client_id = "c" + std::to_string(seq);
    e.local_port = local_port;
    e.stats_slot = slot;
    if (slot != kNoStatsSlot) slots_[slot].seq.store(seq);
    std::string bytes;
    Encode(e, &bytes);
    ASSERT_TRUE(registry_->Apply(EventType::kConnection, bytes, now));
  }
  Connection Find(const std::vector<Connection>& all, std::uint64_t seq) {
    for (const auto& c : all) {
      if (c.seq == seq) return c;
    }
    ADD_FAILURE() << "no connection " << seq;
    return Connection{};
  }

  ConnectionStatsSlot slots_[4];
  ConnectionRegistryOptions options_;
  std::unique_ptr<ConnectionRegistry> registry_;
};

TEST_F(RegistryDetailsTest, ListenerNameAndTlsComeFromTheLocalPort) {
  Open(1, 1883, kNoStatsSlot, 0);
  Open(2, 8883, kNoStatsSlot, 0);
  Open(3, 8083, kNoStatsSlot, 0);
  Open(4, 9999, kNoStatsSlot, 0);  // not a configured listener
  const auto all = registry_->Snapshot();
  EXPECT_EQ(Find(all, 1).listener_name, "mqtt:1883");
  EXPECT_FALSE(Find(all, 1).tls.enabled);
  EXPECT_EQ(Find(all, 2).listener_name, "mqtts:8883");
  EXPECT_TRUE(Find(all, 2).tls.enabled);
  EXPECT_EQ(Find(all, 3).listener_name, "ws:8083");
  EXPECT_EQ(Find(all, 4).listener_name, "");
}

TEST_F(RegistryDetailsTest, DetailedSnapshotReadsTheSlotOnlyWhileItIsTheConnections) {
  Open(1, 1883, 0, 0);
  Bump(slots_[0].publish_count, 5);
  Bump(slots_[0].deliver_bytes, 70);
  auto c = Find(registry_->DetailedSnapshot(), 1);
  EXPECT_EQ(c.total_statistics.publish_count, 5u);
  EXPECT_EQ(c.total_statistics.deliver_bytes, 70u);
  EXPECT_EQ(c.idle_ns, -1);  // the kernel's to tell (NetworkInfoCache), not the slot's
  EXPECT_EQ(Find(registry_->Snapshot(), 1).total_statistics.publish_count, 0u);
  slots_[0].seq.store(99);  // the broker gave the slot to another connection
  c = Find(registry_->DetailedSnapshot(), 1);
  EXPECT_EQ(c.total_statistics.publish_count, 0u);
}

TEST_F(RegistryDetailsTest, RecentStatisticsAreThePreviousCompleteMinute) {
  Open(1, 1883, 0, 10 * kMinute + 5);
  Bump(slots_[0].publish_count, 3);  // during minute 10
  registry_->RollStatisticsWindow(10 * kMinute + 6);
  registry_->RollStatisticsWindow(11 * kMinute);  // minute 10 ends
  EXPECT_EQ(Find(registry_->DetailedSnapshot(), 1).recent_statistics.publish_count, 3u);
  Bump(slots_[0].publish_count, 4);                                // during minute 11
  registry_->RollStatisticsWindow(11 * kMinute + 30'000'000'000);  // same minute: no change
  EXPECT_EQ(Find(registry_->Snapshot(), 1).recent_statistics.publish_count, 3u);
  registry_->RollStatisticsWindow(12 * kMinute + 1);
  EXPECT_EQ(Find(registry_->Snapshot(), 1).recent_statistics.publish_count, 4u);
  EXPECT_EQ(Find(registry_->DetailedSnapshot(), 1).total_statistics.publish_count, 7u);
  registry_->RollStatisticsWindow(15 * kMinute);  // minutes were missed: no complete window
  EXPECT_EQ(Find(registry_->Snapshot(), 1).recent_statistics.publish_count, 0u);
}

TEST_F(RegistryDetailsTest, AClosedConnectionKeepsTheTotalsAndIdleOfItsClose) {
  Open(1, 1883, 0, 0);
  CloseEvent close{1, 5, CloseReason::kConnectionLost, {9, 90, 1, 10, 12}, 2'000'000'000};
  std::string bytes;
  Encode(close, &bytes);
  ASSERT_TRUE(registry_->Apply(EventType::kClose, bytes, 5));
  const Connection c = Find(registry_->DetailedSnapshot(), 1);
  EXPECT_EQ(c.state, ConnectionState::kClosed);
  EXPECT_EQ(c.total_statistics.publish_count, 9u);
  EXPECT_EQ(c.total_statistics.request_count, 12u);
  EXPECT_EQ(c.idle_ns, 2'000'000'000);
}

}  // namespace
}  // namespace mqc
