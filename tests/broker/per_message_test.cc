// SPDX-License-Identifier: BSD-3-Clause
// The broker thread's per-message path allocates nothing: the calls the ACL_CHECK (READ) and
// MESSAGE callbacks make for every delivery and publish, counted with a replaced global
// operator new that counts only while a test asks it to.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "broker/session_table.h"
#include "broker/traffic_meter.h"

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace mqc {
namespace {

class NullSink : public EventSink {
 public:
  bool Emit(EventType, const std::string&) override { return true; }
  bool Fits(const std::vector<std::size_t>&) const override { return true; }
};

class NoDetails : public PublishDetails {
 public:
  int ProtocolVersion() override { return 4; }
  bool ResponseTopic(std::string*) override { return false; }
  bool CorrelationData(std::string*) override { return false; }
  std::int64_t MonotonicNs() override { return 0; }
};

// What broker_events.cc does per delivery to a connected client and per publish, on the
// topics of every pattern, the first time (classified) and again (cached): the fast paths
// (TryPublishCached, TryDeliverCached) first, the general ones when they decline. The session
// table holds many clients, so that the lookups walk grown, colliding probe chains, and some
// clients have no statistics slot.
TEST(PerMessageTest, DeliveriesAndPublishesAllocateNothing) {
  NullSink sink;
  std::vector<ConnectionStatsSlot> slots(100);
  BrokerCounters counters;
  SessionTable table(&sink, 1, slots.data(), slots.size(), &counters);
  TrafficMeter meter(&counters, DefaultPattern::kEvents, RpcTracker::Options{});
  NoDetails details;
  std::vector<int> clients(1000);
  ClientFacts facts;
  for (std::size_t i = 0; i < clients.size(); ++i) {
    facts.client_id = "client-" + std::to_string(i);
    table.BeginConnect(&clients[i], facts, 1);
    table.Settle();
  }
  ASSERT_EQ(table.open_count(), clients.size());
  int unknown = 0;  // never connected: not found
  // Two subscribers with a statistics slot, two without, and one unknown client.
  std::vector<const void*> subscribers = {&clients[1], &clients[50], &clients[500], &clients[999],
                                          &unknown};
  const void* publisher = &clients[0];
  const std::string long_topic = "events/" + std::string(40, 'x');
  const char* topics[] = {"events/a", "store/b",     "queues/c",         "site/d",
                          "$SYS/x",   "events//bad", long_topic.c_str(), "events/a/much/longer"};

  std::uint64_t deliveries = 0;
  counting = true;
  for (int round = 0; round < 3; ++round) {
    for (const char* topic : topics) {
      const SessionTable::ClientView from = table.View(publisher);
      if (!from.open || !meter.TryPublishCached(from.stats, topic, 64)) {
        table.Settle();
        meter.OnPublish(publisher, from.stats, topic, 64, details);
      }
      for (const void* subscriber : subscribers) {
        const SessionTable::ClientView to = table.View(subscriber);
        if (!to.open || !meter.TryDeliverCached(to.stats, topic, 64)) {
          table.Settle();
          meter.OnDeliver(subscriber, to.stats, to.open, topic, 64, 1, details);
        }
        ++deliveries;
      }
    }
  }
  counting = false;

  EXPECT_EQ(allocations.load(), 0);
  EXPECT_EQ(counters.delivered_messages.load(), deliveries);
  EXPECT_EQ(counters.received_messages.load(), 24u);
  EXPECT_EQ(slots[1].deliver_count.load(), 24u);
}

// The counter itself counts: the test above would pass with a counter that never counts.
TEST(PerMessageTest, TheCountingAllocatorSeesAnAllocation) {
  counting = true;
  auto* text = new std::string(100, 'x');
  counting = false;
  delete text;
  EXPECT_GE(allocations.exchange(0), 1);
}

}  // namespace
}  // namespace mqc
