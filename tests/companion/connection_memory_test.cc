// SPDX-License-Identifier: BSD-3-Clause
// What the companion holds per connection, bounded: the stored connection, the registry around
// it (map entry, index) and the change history's record of each change. The bounds are the
// sizes of 2026-12-04 with a little room (docs/benchmarks.md, "The stored connection without
// padding"): a field or a structure that grows any of them back fails here, not in a served
// figure days later.
#include <malloc.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "companion/connection.h"
#include "companion/connection_changes.h"
#include "companion/connection_registry.h"

namespace mqc {
namespace {

std::size_t HeapBytes() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

// Under a sanitizer's allocator mallinfo2 reports nothing: the heap tests have nothing to read.
bool HeapIsReported() {
  const std::size_t before = HeapBytes();
  auto probe = std::make_unique<char[]>(1 << 20);
  probe[0] = 1;
  return HeapBytes() - before >= (1 << 20);
}

constexpr std::uint64_t kConnections = 3000;

// Connections as bench/mqtt_load.py opens them (bench/list_bench.cc feeds the same): a client
// id of 12 characters, an IPv4 address, two subscriptions.
void Feed(ConnectionRegistry* registry) {
  for (std::uint64_t seq = 1; seq <= kConnections; ++seq) {
    ConnectionEvent open;
    open.seq = seq;
    open.uid[0] = static_cast<std::uint8_t>(seq);
    open.uid[1] = static_cast<std::uint8_t>(seq >> 8);
    open.open_time_ns = 1'000'000'000 + static_cast<std::int64_t>(seq);
    open.protocol_version = 4;
    open.port = static_cast<std::uint16_t>(10000 + seq);
    open.local_port = 1883;
    open.client_id = "bench-" + std::to_string(100000 + seq);
    open.ip_address = "127.0.0.1";
    open.auth_mechanism = AuthMechanism::kAnonymous;
    open.auth_state = AuthState::kSuccess;
    registry->Apply(open);
    const std::string n = std::to_string(seq);
    registry->ApplySubscription(true, SubscriptionEvent{seq, 0, "events/bench/" + n});
    registry->ApplySubscription(true, SubscriptionEvent{seq, 0, "queues/bench." + n});
  }
}

ConnectionRegistryOptions Options() {
  ConnectionRegistryOptions options;
  ListenerConfig listener;
  listener.port = 1883;
  options.listeners.push_back(listener);
  return options;
}

// The registry's bytes per connection, with what `changes` keeps of them. Received as a resync
// (`resync`), the connections are not counted by the flapping tracker (bounded on its own) and
// publish no change.
double RegistryBytesPerConnection(ConnectionChanges* changes, bool resync) {
  ConnectionRegistryOptions options = Options();
  options.changes = changes;
  const std::size_t before = HeapBytes();
  std::size_t bytes = 0;
  {
    ConnectionRegistry registry(options);
    if (resync) registry.BeginResync(ResyncEvent{1});
    Feed(&registry);
    if (resync) registry.EndResync(ResyncEvent{1});
    EXPECT_EQ(registry.open_count(), kConnections);
    bytes = HeapBytes() - before;
  }
  return static_cast<double>(bytes) / static_cast<double>(kConnections);
}

TEST(ConnectionMemoryTest, AConnectionHasNoPaddingBetweenItsMembers) {
  // 856 before its members were ordered by size (a stored connection is one per connection),
  // 816 before its details and TLS facts were kept out of line (Boxed), 456 before its rare
  // texts were (a balancer's address, a bridge's name, an enhanced authentication method).
  EXPECT_LE(sizeof(Connection), 384u);
  // 176 while its shared group, mapping error and KubeMQ refusal were held in line.
  EXPECT_LE(sizeof(Subscription), 104u);
}

TEST(ConnectionMemoryTest, TheRegistryKeepsAConnectionOfTwoSubscriptionsInItsBytes) {
  if (!HeapIsReported()) GTEST_SKIP() << "the allocator reports no heap in use";
  // The connection (400 with its shared count), its uid (48), two subscriptions (224) with
  // their filters, the map's entry (160) and the index's node (48) and bucket: about 965;
  // KubeMQ's refusal of the unshared queue is one text all share (SharedText). 1,110 while each
  // refusal had its own, 1,175 while the connection held its rare texts in line (a balancer's
  // address, a bridge's name, an authentication method), 1,270 while a subscription held its
  // rare texts in line (176 bytes), 1,640 while the connection held its details in line (848
  // with its count), 48 more before that (the index held a shared pointer of its own, the
  // connection 40 bytes of padding).
  EXPECT_LE(RegistryBytesPerConnection(nullptr, true), 980.0);
}

// Each detail is made only where a copy is given it (AddDetails, a peer's answer): the stored
// connection of an open one holds none, and no TLS facts without TLS; a subscription holds a
// shared group, a mapping error or a KubeMQ refusal only where it has one.
TEST(ConnectionMemoryTest, AStoredOpenConnectionHoldsNoDetails) {
  ConnectionRegistry registry(Options());
  Feed(&registry);
  const ConnectionList all = registry.SharedSnapshot();
  ASSERT_EQ(all->size(), kConnections);
  for (const ConnectionPtr& c : *all) {
    ASSERT_FALSE(c->tls.held() || c->network.held() || c->total_statistics.held() ||
                 c->recent_statistics.held() || c->messages.held() || c->drops.held() ||
                 c->flapping.held() || c->denials.held())
        << c->client_id;
    ASSERT_FALSE(c->proxy_address.held() || c->bridge_name.held() ||
                 c->authentication.method.held())
        << c->client_id;
    ASSERT_EQ(c->subscriptions.size(), 2u);
    for (const Subscription& s : c->subscriptions) {
      ASSERT_FALSE(s.mapping.shared_group.held() || s.mapping.error.held()) << s.filter;
    }
    ASSERT_FALSE(c->subscriptions[0].kubemq_error.held()) << c->subscriptions[0].filter;
    // "queues/bench.<n>" at QoS 0: KubeMQ refuses it, in a text every such refusal shares.
    ASSERT_TRUE(c->subscriptions[1].kubemq_error.held()) << c->subscriptions[1].filter;
    ASSERT_EQ(&*c->subscriptions[1].kubemq_error,
              &*all->front()->subscriptions[1].kubemq_error);
  }
  std::vector<Connection> copies = {*all->front()};
  registry.AddDetails(&copies);
  EXPECT_TRUE(copies[0].recent_statistics.held());
}

TEST(ConnectionMemoryTest, ABoxedValueReadsAsItsDefaultUntilWrittenAndCopiesDeep) {
  Connection a;
  const Connection& read = a;
  EXPECT_EQ(read.network->rtt_us, 0u);
  EXPECT_EQ(read.denials->last_topic, "");
  EXPECT_FALSE(a.network.held());  // a const read makes nothing
  a.network->rtt_us = 7;
  a.denials = Denials{true, 1, 2, "a/b", 3};
  EXPECT_TRUE(a.network.held());
  Connection b = a;
  b.network->rtt_us = 8;
  b.denials->last_topic = "c";
  EXPECT_EQ(a.network->rtt_us, 7u);  // the copy has its own
  EXPECT_EQ(a.denials->last_topic, "a/b");
  EXPECT_EQ(b.denials->publish, 1u);
  Connection moved = std::move(b);
  EXPECT_EQ(moved.network->rtt_us, 8u);
  b = a;  // assigned after the move
  EXPECT_EQ(b.network->rtt_us, 7u);
  Connection empty;
  b = empty;
  EXPECT_FALSE(b.network.held());
  EXPECT_EQ(std::as_const(b).network->rtt_us, 0u);
}

TEST(ConnectionMemoryTest, TheChangeHistoryKeepsAChangeInAboutFiftyBytes) {
  if (!HeapIsReported()) GTEST_SKIP() << "the allocator reports no heap in use";
  // Every change kept: an open and two subscriptions per connection, the versions made again
  // (one kept per connection, the registry's own).
  ConnectionChangesOptions options;
  options.history = 3 * kConnections;
  const double alone = RegistryBytesPerConnection(nullptr, false);
  ConnectionChanges changes(options);
  const double with_changes = RegistryBytesPerConnection(&changes, false);
  // Three changes of 48 bytes and their deque: about 155 (about 830 when each change was a
  // shared ConnectionChange with a Subscription inside).
  EXPECT_LE(with_changes - alone, 170.0);
}

}  // namespace
}  // namespace mqc
