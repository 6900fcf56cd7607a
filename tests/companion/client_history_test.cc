// SPDX-License-Identifier: BSD-3-Clause
#include "companion/client_history.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "companion/companion_link.h"
#include "companion/connection_changes.h"
#include "companion/connection_registry.h"
#include "link/event_records.h"
#include "mqtt/connections/v1/connections.pb.h"

namespace mqc {
namespace {

ConnectionPtr MakeConnection(const std::string& client_id, const std::string& uid,
                             ConnectionState state, CloseReason reason = CloseReason::kUnspecified) {
  auto connection = std::make_shared<Connection>();
  connection->client_id = client_id;
  connection->uid = uid;
  connection->state = state;
  connection->close_reason = reason;
  connection->ip_address = "192.0.2.7";
  connection->port = 40001;
  connection->open_time_ns = 1000;
  if (state == ConnectionState::kClosed) connection->close_time_ns = 2000;
  return connection;
}

ConnectionChange Change(ChangeKind kind, ConnectionPtr before, ConnectionPtr after,
                        const std::string& filter = "") {
  ConnectionChange change;
  change.kind = kind;
  change.before = std::move(before);
  change.after = std::move(after);
  change.subscription.filter = filter;
  return change;
}

std::vector<ClientEventKind> Kinds(const ClientHistory& history, const std::string& client_id) {
  std::vector<ClientEvent> events;
  std::uint64_t dropped = 0;
  std::vector<ClientEventKind> kinds;
  if (!history.Find(client_id, &events, &dropped)) return kinds;
  for (const ClientEvent& event : events) kinds.push_back(event.kind);
  return kinds;
}

TEST(ClientHistoryTest, EachChangeBecomesItsEventWithTheClosingKindFromTheReason) {
  ClientHistory history;
  const ConnectionPtr open = MakeConnection("c", "u1", ConnectionState::kOpen);
  history.Record(Change(ChangeKind::kOpened, nullptr, open), 5);
  history.Record(Change(ChangeKind::kClosed, open,
                        MakeConnection("c", "u1", ConnectionState::kClosed, CloseReason::kKicked)),
                 6);
  const ConnectionPtr second = MakeConnection("c", "u2", ConnectionState::kOpen);
  history.Record(Change(ChangeKind::kOpened, nullptr, second), 7);
  history.Record(
      Change(ChangeKind::kClosed, second,
             MakeConnection("c", "u2", ConnectionState::kClosed, CloseReason::kSessionTakenOver)),
      8);
  history.Record(
      Change(ChangeKind::kClosed, nullptr,
             MakeConnection("c", "u3", ConnectionState::kClosed,
                            CloseReason::kAuthenticationFailed)),
      9);
  history.Record(Change(ChangeKind::kClosed, open,
                        MakeConnection("c", "u4", ConnectionState::kClosed,
                                       CloseReason::kConnectionLost)),
                 10);
  history.Record(Change(ChangeKind::kWentOffline, nullptr,
                        MakeConnection("c", "u4", ConnectionState::kOffline)),
                 11);
  history.Record(Change(ChangeKind::kExpired, MakeConnection("c", "u4", ConnectionState::kOffline),
                        nullptr),
                 12);
  history.Record(Change(ChangeKind::kReset, nullptr, nullptr), 13);
  history.Record(Change(ChangeKind::kUpdated, open, open), 14);
  EXPECT_EQ(Kinds(history, "c"),
            (std::vector<ClientEventKind>{
                ClientEventKind::kConnected, ClientEventKind::kKicked, ClientEventKind::kConnected,
                ClientEventKind::kTakenOver, ClientEventKind::kRefused, ClientEventKind::kClosed,
                ClientEventKind::kWentOffline, ClientEventKind::kSessionEnded}));
  std::vector<ClientEvent> events;
  std::uint64_t dropped = 0;
  ASSERT_TRUE(history.Find("c", &events, &dropped));
  EXPECT_EQ(events[4].close_reason, CloseReason::kAuthenticationFailed);
  EXPECT_EQ(events[4].uid, "u3");
  EXPECT_EQ(events[1].time_ns, 2000);  // the connection's close time, not the clock's
  EXPECT_EQ(events[7].time_ns, 12);    // a session's end has no time of its own
  EXPECT_EQ(events[0].ip_address, "192.0.2.7");
  EXPECT_EQ(events[0].port, 40001);
  EXPECT_EQ(dropped, 0u);
}

TEST(ClientHistoryTest, ARunOfSubscriptionsOfOneConnectionIsOneEventWithItsCount) {
  ClientHistory history;
  const ConnectionPtr open = MakeConnection("c", "u1", ConnectionState::kOpen);
  history.Record(Change(ChangeKind::kOpened, nullptr, open), 1);
  for (const char* filter : {"a/#", "b/#", "c/+"}) {
    history.Record(Change(ChangeKind::kSubscribed, open, open, filter), 2);
  }
  history.Record(Change(ChangeKind::kUnsubscribed, open, open, "a/#"), 3);
  history.Record(Change(ChangeKind::kSubscribed, open, open, "d"), 4);
  std::vector<ClientEvent> events;
  std::uint64_t dropped = 0;
  ASSERT_TRUE(history.Find("c", &events, &dropped));
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[1].kind, ClientEventKind::kSubscribed);
  EXPECT_EQ(events[1].count, 3u);
  EXPECT_EQ(events[1].filter, "c/+");
  EXPECT_EQ(events[2].kind, ClientEventKind::kUnsubscribed);
  EXPECT_EQ(events[2].count, 1u);
  EXPECT_EQ(events[3].count, 1u);
  EXPECT_EQ(history.event_count(), 4u);
}

TEST(ClientHistoryTest, KeepsTheLastEventsPerClientAndCountsTheDropped) {
  ClientHistory history({3, 100});
  for (int i = 0; i < 5; ++i) {
    const ConnectionPtr open = MakeConnection("c", "u" + std::to_string(i), ConnectionState::kOpen);
    history.Record(Change(ChangeKind::kOpened, nullptr, open), i);
  }
  std::vector<ClientEvent> events;
  std::uint64_t dropped = 0;
  ASSERT_TRUE(history.Find("c", &events, &dropped));
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].uid, "u2");
  EXPECT_EQ(events[2].uid, "u4");
  EXPECT_EQ(dropped, 2u);
  EXPECT_EQ(history.event_count(), 3u);
  // A run goes on in the ring's newest slot, wherever the ring starts.
  const ConnectionPtr last = MakeConnection("c", "u4", ConnectionState::kOpen);
  history.Record(Change(ChangeKind::kSubscribed, last, last, "x"), 9);
  history.Record(Change(ChangeKind::kSubscribed, last, last, "y"), 9);
  ASSERT_TRUE(history.Find("c", &events, &dropped));
  EXPECT_EQ(events.back().count, 2u);
  EXPECT_EQ(events.front().uid, "u3");
}

TEST(ClientHistoryTest, BeyondTheTotalTheClientChangedLeastRecentlyGoesWhole) {
  ClientHistory history({4, 5});
  const auto open = [&history](const std::string& client_id) {
    history.Record(
        Change(ChangeKind::kOpened, nullptr, MakeConnection(client_id, "u", ConnectionState::kOpen)),
        1);
  };
  open("a");
  open("a");
  open("b");
  open("b");
  open("a");  // a changed after b now
  open("c");  // six events: b goes
  EXPECT_EQ(Kinds(history, "b"), std::vector<ClientEventKind>{});
  EXPECT_EQ(Kinds(history, "a").size(), 3u);
  EXPECT_EQ(Kinds(history, "c").size(), 1u);
  EXPECT_EQ(history.event_count(), 4u);
  EXPECT_EQ(history.client_count(), 2u);
}

TEST(ClientHistoryTest, OffKeepsNothing) {
  ClientHistory history({0, 100});
  history.Record(
      Change(ChangeKind::kOpened, nullptr, MakeConnection("c", "u", ConnectionState::kOpen)), 1);
  EXPECT_FALSE(history.enabled());
  EXPECT_EQ(history.client_count(), 0u);
}

// The Connect views send a kind by its number (the JSON answer by the .proto's name of it).
TEST(ClientHistoryTest, KindNumbersAreTheProtoEnumNumbers) {
  EXPECT_EQ(static_cast<int>(ClientEventKind::kTakenOver),
            ::mqtt::connections::v1::CLIENT_EVENT_KIND_TAKEN_OVER);
  EXPECT_EQ(static_cast<int>(ClientEventKind::kSessionEnded),
            ::mqtt::connections::v1::CLIENT_EVENT_KIND_SESSION_ENDED);
}

// Fed by the registry's changes as they are published, the history sees every one, even when
// more arrive at once than the change ring keeps.
TEST(ClientHistoryTest, FedByTheRegistryItMissesNothingTheChangeRingDrops) {
  ConnectionChanges changes({4, 1000});
  ClientHistory history({8, 1000});
  changes.SetListener([&history](const ConnectionChange& change) { history.Record(change, 1); });
  ConnectionRegistryOptions options;
  options.changes = &changes;
  ConnectionRegistry registry(options);
  const auto apply = [&registry](EventType type, const auto& event) {
    std::string bytes;
    Encode(event, &bytes);
    ASSERT_TRUE(ApplyEventRecord(&registry, type, bytes, 10));
  };
  ConnectionEvent open;
  open.seq = 1;
  open.client_id = "d";
  open.ip_address = "198.51.100.2";
  open.username = "alice";
  open.protocol_version = 5;
  apply(EventType::kConnection, open);
  for (const char* filter : {"a", "b", "c", "d", "e", "f"}) {
    apply(EventType::kSubscribe, SubscriptionEvent{1, 1, filter});
  }
  apply(EventType::kClose, CloseEvent{1, 20, CloseReason::kKicked, {}});
  ConnectionEvent refused = open;
  refused.seq = 2;
  refused.close_time_ns = 30;
  refused.close_reason = CloseReason::kAuthenticationFailed;
  apply(EventType::kConnection, refused);
  std::vector<ClientEvent> events;
  std::uint64_t dropped = 0;
  ASSERT_TRUE(history.Find("d", &events, &dropped));
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].kind, ClientEventKind::kConnected);
  EXPECT_EQ(events[0].username, "alice");
  EXPECT_EQ(events[0].protocol_version, 5);
  EXPECT_EQ(events[1].count, 6u);
  EXPECT_EQ(events[2].kind, ClientEventKind::kKicked);
  EXPECT_EQ(events[3].kind, ClientEventKind::kRefused);
  EXPECT_EQ(events[3].close_reason, CloseReason::kAuthenticationFailed);
}

TEST(ClientHistoryTest, GivesBackEveryFieldAsRecordedWhateverTheUidLooksLike) {
  ClientHistory history;
  const std::string formatted = "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3";
  for (const std::string& uid :
       {formatted, std::string("0A1B2C3D-4E5F-4A6B-8C7D-8E9FA0B1C2D3"), std::string(),
        std::string("0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2dz")}) {
    auto open = std::make_shared<Connection>();
    open->client_id = "c";
    open->uid = uid;
    open->ip_address = "2001:db8::1";
    open->port = 65535;
    open->username = "user name";
    open->protocol_version = 5;
    open->open_time_ns = 77;
    history.Record(Change(ChangeKind::kOpened, nullptr, open), 1);
    history.Record(Change(ChangeKind::kSubscribed, open, open, "first/#"), 2);
    history.Record(Change(ChangeKind::kSubscribed, open, open, "a/much/longer/filter/+/#"), 3);
  }
  std::vector<ClientEvent> events;
  std::uint64_t dropped = 0;
  ASSERT_TRUE(history.Find("c", &events, &dropped));
  ASSERT_EQ(events.size(), 8u);  // each uid's subscriptions are a run of their own
  EXPECT_EQ(events[0].uid, formatted);
  EXPECT_EQ(events[2].uid, "0A1B2C3D-4E5F-4A6B-8C7D-8E9FA0B1C2D3");
  EXPECT_EQ(events[4].uid, "");
  EXPECT_EQ(events[6].uid, "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2dz");
  for (std::size_t i = 0; i < events.size(); i += 2) {
    EXPECT_EQ(events[i].kind, ClientEventKind::kConnected);
    EXPECT_EQ(events[i].time_ns, 77);
    EXPECT_EQ(events[i].ip_address, "2001:db8::1");
    EXPECT_EQ(events[i].port, 65535);
    EXPECT_EQ(events[i].username, "user name");
    EXPECT_EQ(events[i].protocol_version, 5);
    EXPECT_EQ(events[i].filter, "");
    EXPECT_EQ(events[i + 1].kind, ClientEventKind::kSubscribed);
    EXPECT_EQ(events[i + 1].uid, events[i].uid);
    EXPECT_EQ(events[i + 1].username, "");
    EXPECT_EQ(events[i + 1].ip_address, "2001:db8::1");
    EXPECT_EQ(events[i + 1].count, 2u);
    EXPECT_EQ(events[i + 1].filter, "a/much/longer/filter/+/#");
    EXPECT_EQ(events[i + 1].time_ns, 3);
  }
}

std::size_t HeapBytes() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

// The history's memory is bounded by max_events, and an event costs what it holds: a client
// id of two events (a connect, a run of subscriptions), as the companion keeps them at 15,000
// connections, in under 200 bytes an event with everything around it (it was about 320).
TEST(ClientHistoryTest, ItsMemoryIsBoundedAndAboutWhatItsEventsHold) {
  {
    const std::size_t before = HeapBytes();
    auto probe = std::make_unique<char[]>(1 << 20);
    probe[0] = 1;
    if (HeapBytes() - before < (1 << 20)) {
      GTEST_SKIP() << "the allocator reports no heap in use";
    }
  }
  constexpr std::size_t kMaxEvents = 2000;
  const std::size_t before = HeapBytes();
  std::size_t kept_bytes = 0;
  {
    ClientHistory history({32, kMaxEvents});
    for (int round = 0; round < 10; ++round) {
      for (int i = 0; i < 1000; ++i) {
        auto open = std::make_shared<Connection>();
        open->client_id = "bench-" + std::to_string(round * 1000 + i);
        Uuid uid{};
        uid[0] = static_cast<std::uint8_t>(i);
        uid[1] = static_cast<std::uint8_t>(round);
        open->uid = FormatUuid(uid);
        open->ip_address = "127.0.0.1";
        history.Record(Change(ChangeKind::kOpened, nullptr, open), 1);
        history.Record(
            Change(ChangeKind::kSubscribed, open, open, "queues/bench." + std::to_string(i)), 2);
      }
      const std::size_t bytes = HeapBytes() - before;
      if (round == 1) kept_bytes = bytes;
      // Full since the first round: it grows no more.
      if (round > 1) {
        EXPECT_LT(bytes, kept_bytes + kept_bytes / 20) << "round " << round;
      }
    }
    EXPECT_EQ(history.event_count(), kMaxEvents);
  }
  EXPECT_LT(kept_bytes, kMaxEvents * 200);
}

}  // namespace
}  // namespace mqc
