// SPDX-License-Identifier: BSD-3-Clause
// An end-to-end test of the shared link, both ends in one process: the broker side
// (SessionTable, BrokerLink) and the companion side (CompanionLink, ConnectionRegistry,
// DetailedSource) joined by one real SharedRegion with its event and command rings. No unit is
// stubbed; each unit has its own tests beside its source (event_ring_test, event_records_test,
// session_table_test, connection_registry_test, ...). What it covers:
// - a companion that starts late gets the whole state by a resync;
// - the companion sleeps until the broker wakes it, and no wake-up is lost between its check
//   of the ring and its sleep;
// - a full event ring never blocks the broker, and the loss is repaired by a resync;
// - pages of the event ring the companion has read are given back, unread records stay, also
//   across the ring's wrap;
// - log lines and disconnect requests travel the commands ring to the broker, and a request
//   without a handler is dropped;
// - the companion reports serving or failure in the region's header;
// - a detailed API request writes nothing the broker reads;
// - attaching checks the region's layout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "../support/client_facts_builder.h"
#include "../support/test_region.h"
#include "broker/broker_events.h"
#include "broker/broker_link.h"
#include "broker/connect_settlement.h"
#include "broker/resync_writer.h"
#include "broker/session_table.h"
#include "companion/companion_link.h"
#include "companion/connection_registry.h"
#include "companion/detailed_source.h"
#include "companion/network_info.h"
#include "link/shared_region.h"

namespace mqc {
namespace {

class SharedLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SharedRegionSizes sizes;
    sizes.events_capacity = 4096;  // small, to fill it
    sizes.commands_capacity = 4096;
    region_ = TestRegion(sizes);
    ASSERT_NE(region_, nullptr);
    broker_ = std::make_unique<BrokerLink>(region_.get());
    table_ = std::make_unique<SessionTable>(broker_.get(), 1);
    connects_ = std::make_unique<ConnectSettlement>(table_.get());
    resync_ = std::make_unique<ResyncWriter>(table_.get(), broker_.get());
    companion_ = std::make_unique<CompanionLink>(region_.get());
  }
  std::vector<std::string> OpenIds() {
    std::vector<std::string> ids;
    for (const auto& c : registry_.Snapshot()) {
      if (c.state == ConnectionState::kOpen) ids.push_back(c.client_id);
    }
    std::sort(ids.begin(), ids.end());
    return ids;
  }
  void Connect(const void* client, const std::string& id) {
    connects_->BeginConnect(client, Facts(id), 1);
    connects_->Settle();
  }

  std::unique_ptr<SharedRegion> region_;
  std::unique_ptr<BrokerLink> broker_;
  std::unique_ptr<SessionTable> table_;
  std::unique_ptr<ConnectSettlement> connects_;
  std::unique_ptr<ResyncWriter> resync_;
  std::unique_ptr<CompanionLink> companion_;
  ConnectionRegistry registry_{ConnectionRegistryOptions{}};
  int clients_[200] = {};
};

// Bump adds to the whole 64-bit word (one add to memory on x86-64: shared_region.h).
TEST(BumpTest, AddsToTheWholeWord) {
  std::atomic<std::uint64_t> counter{0xffffffffu};
  Bump(counter);
  EXPECT_EQ(counter.load(), 0x100000000u);
  Bump(counter, 0xffffffff00000000u);
  EXPECT_EQ(counter.load(), 0u);  // wraps as unsigned arithmetic does
  Bump(counter, 5);
  Bump(counter, std::uint64_t{1} << 40);
  EXPECT_EQ(counter.load(), (std::uint64_t{1} << 40) + 5);
}

TEST_F(SharedLinkTest, ACompanionStartingLateGetsTheWholeStateByResync) {
  Connect(&clients_[0], "early");
  companion_->Begin();  // skips what it missed, asks for a resync
  EXPECT_TRUE(ResyncStep(broker_.get(), resync_.get()));
  Connect(&clients_[1], "later");
  companion_->Poll(&registry_, 0);
  EXPECT_TRUE(registry_.synced());
  EXPECT_THAT(OpenIds(), ::testing::ElementsAre("early", "later"));
  // Nothing more is due until asked again.
  const std::uint64_t started = region_->header()->broker.resync_started.load();
  EXPECT_TRUE(ResyncStep(broker_.get(), resync_.get()));
  EXPECT_EQ(region_->header()->broker.resync_started.load(), started);
}

// The companion's wait for the broker (WaitForBrokerEvents): it times out when nothing comes,
// returns at once when events are unread, and the broker's wake ends it early. Bounds are loose:
// a loaded machine may run the threads late, never early.
TEST_F(SharedLinkTest, TheCompanionSleepsUntilTheBrokerWakesItOrItsTimeout) {
  companion_->Begin();
  ASSERT_TRUE(ResyncStep(broker_.get(), resync_.get()));
  companion_->Poll(&registry_, 0);
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  companion_->WaitForEvents(50'000'000);
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(45));
  EXPECT_EQ(region_->header()->companion.waiting.load(), 0u);
  EXPECT_FALSE(broker_->WakeCompanion());  // not waiting

  Connect(&clients_[0], "news");
  start = Clock::now();
  companion_->WaitForEvents(5'000'000'000);  // unread events: no wait at all
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  companion_->Poll(&registry_, 0);

  std::thread waiter([this] { companion_->WaitForEvents(10'000'000'000); });
  // The broker's TICK, once the companion waits and an event is written.
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (region_->header()->companion.waiting.load() == 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  start = Clock::now();
  Connect(&clients_[1], "later");
  EXPECT_TRUE(broker_->WakeCompanion());
  waiter.join();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

// The lost wake-up: the broker writes after the companion checked the ring and before it sleeps.
// The broker sees the companion wait and changes the wake word, so the sleep, which only begins
// while the word still holds what the companion read before its check, returns at once.
TEST_F(SharedLinkTest, AWriteBetweenTheCompanionsCheckAndItsSleepEndsTheSleepAtOnce) {
  companion_->Begin();
  ASSERT_TRUE(ResyncStep(broker_.get(), resync_.get()));
  companion_->Poll(&registry_, 0);
  EXPECT_FALSE(broker_->WakeCompanion());  // what the resync wrote: the companion is not waiting
  SharedHeader* header = region_->header();
  std::uint32_t seen = 0;
  ASSERT_TRUE(PrepareToWait(header, &seen));  // nothing unread: it is about to sleep
  EXPECT_EQ(header->companion.waiting.load(), 1u);
  EXPECT_FALSE(broker_->WakeCompanion()) << "a TICK that wrote nothing woke the companion";
  Connect(&clients_[0], "between");  // the broker's write, then its TICK
  EXPECT_TRUE(broker_->WakeCompanion());
  EXPECT_NE(header->broker.wake.load(), seen);
  const auto start = std::chrono::steady_clock::now();
  SleepUntilWoken(header, seen, 10'000'000'000);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(header->companion.waiting.load(), 0u);
  EXPECT_GT(companion_->Poll(&registry_, 0), 0u);
  EXPECT_THAT(OpenIds(), ::testing::ElementsAre("between"));

  // Written before the check: the companion does not sleep, and the broker, seeing no waiter,
  // makes no syscall.
  Connect(&clients_[1], "before");
  ASSERT_FALSE(PrepareToWait(header, &seen));
  EXPECT_EQ(header->companion.waiting.load(), 0u);
  EXPECT_FALSE(broker_->WakeCompanion());
  EXPECT_GT(companion_->Poll(&registry_, 0), 0u);
}

// The protocol under real threads: a writer that writes one record at a time, each when the
// reader has read the one before (so the reader goes to sleep right as the next is written), and
// a reader that sleeps up to 10 s when the ring is empty. A lost wake-up would leave a record
// unread for those 10 s: every round must finish well before.
TEST(SharedLinkWakeTest, NoWakeIsLostBetweenAWriterAndAReaderThatSleeps) {
  const std::unique_ptr<SharedRegion> region = TestRegion({4096, 4096, 0});
  ASSERT_NE(region, nullptr);
  SharedHeader* header = region->header();
  BrokerLink broker(region.get());
  RingWriter writer(&header->events, region->events_data(), header->events_capacity);
  RingReader reader(&header->events, region->events_data(), header->events_capacity);
  constexpr int kRounds = 500;
  std::atomic<int> read{0};
  std::thread companion([&] {
    while (read.load() < kRounds) {
      RingRecord record;
      while (reader.Peek(&record)) {
        reader.Pop();
        read.fetch_add(1);
      }
      if (read.load() < kRounds) WaitForBrokerEvents(header, 10'000'000'000);
    }
  });
  using Clock = std::chrono::steady_clock;
  auto slowest = Clock::duration::zero();
  for (int i = 0; i < kRounds; ++i) {
    const std::uint64_t value = static_cast<std::uint64_t>(i);
    ASSERT_TRUE(writer.TryWrite(1, &value, sizeof(value)));
    broker.WakeCompanion();  // the TICK after the write
    const auto start = Clock::now();
    while (read.load() <= i && Clock::now() - start < std::chrono::seconds(20)) {
      std::this_thread::yield();
    }
    slowest = std::max(slowest, Clock::now() - start);
  }
  companion.join();
  EXPECT_EQ(read.load(), kRounds);
  EXPECT_LT(slowest, std::chrono::seconds(5)) << "a record waited for the reader's timeout";
}

// The admin's answer waits until the broker has the ban list it was sent (BansCommand::sequence,
// acknowledged in BrokerControl::bans_applied): a later list acknowledges an earlier one too.
TEST_F(SharedLinkTest, ABanListIsInForceOnceTheBrokerAcknowledgesItsNumber) {
  const std::uint64_t first = companion_->SendBans({});
  const std::uint64_t second = companion_->SendBans({});
  ASSERT_EQ(second, first + 1);
  EXPECT_EQ(companion_->bans_sent(), second);
  EXPECT_FALSE(companion_->WaitForBans(first, 1'000'000));
  std::vector<std::uint64_t> applied;
  broker_->DrainCommands(nullptr, nullptr, [&](BansCommand&& command) {
    applied.push_back(command.sequence);
    region_->header()->broker.bans_applied.store(command.sequence);
  });
  EXPECT_EQ(applied, (std::vector<std::uint64_t>{first, second}));
  EXPECT_TRUE(companion_->WaitForBans(first, 0));
  EXPECT_TRUE(companion_->WaitForBans(second, 0));
}

TEST_F(SharedLinkTest, AFullRingNeverBlocksAndTheLossIsRepairedByAResync) {
  companion_->Begin();
  ASSERT_TRUE(ResyncStep(broker_.get(), resync_.get()));
  companion_->Poll(&registry_, 0);
  // The companion stalls while 200 clients connect: the ring overflows.
  for (int i = 0; i < 200; ++i) Connect(&clients_[i], "client-" + std::to_string(i));
  EXPECT_GT(broker_->events_lost(), 0u);
  for (int i = 0; i < 100; ++i) {
    connects_->Disconnect(&clients_[i], true, CloseReason::kClientDisconnect, 2);
  }
  // The companion catches up on what did fit, then the next TICK's resync repairs the rest;
  // a resync that does not fit yet is tried again after the companion has read more.
  bool repaired = false;
  for (int tick = 0; tick < 100 && !repaired; ++tick) {
    companion_->Poll(&registry_, 0);
    repaired = ResyncStep(broker_.get(), resync_.get());
  }
  ASSERT_TRUE(repaired);
  companion_->Poll(&registry_, 0);
  const auto ids = OpenIds();
  ASSERT_EQ(ids.size(), 100u);
  EXPECT_EQ(ids.front(), "client-100");
  EXPECT_EQ(ids.back(), "client-199");
}

// Pages of the event ring the companion has read go back to the system; what it has not read
// yet stays intact, also across the ring's wrap.
TEST(SharedLinkReleaseTest, ReadPagesOfTheRingAreGivenBackAndUnreadRecordsStay) {
  const std::unique_ptr<SharedRegion> region = TestRegion({256 * 1024, 4096, 0});
  ASSERT_NE(region, nullptr);
  BrokerLink broker(region.get());
  SessionTable table(&broker, 1);
  ConnectSettlement connects(&table);
  ResyncWriter resync(&table, &broker);
  CompanionLink companion(region.get());
  ConnectionRegistry registry{ConnectionRegistryOptions{}};
  const auto resident_kib = [&region] {
    struct stat st {};
    EXPECT_EQ(fstat(region->fd(), &st), 0);
    return st.st_blocks / 2;
  };
  const auto open_count = [&registry] {
    std::size_t open = 0;
    for (const auto& c : registry.Snapshot()) open += c.state == ConnectionState::kOpen;
    return open;
  };
  companion.Begin();
  ASSERT_TRUE(ResyncStep(&broker, &resync));
  companion.Poll(&registry, 0);
  const long at_start = resident_kib();
  static int clients[6000];
  int connected = 0;
  const auto connect_next = [&] {
    connects.BeginConnect(&clients[connected], Facts("client-" + std::to_string(connected)), 1);
    connects.Settle();
    ++connected;
  };
  // About 150 KiB of events, read by the companion: nothing given back before they are read.
  for (int i = 0; i < 1500; ++i) connect_next();
  const long written = resident_kib();
  EXPECT_GT(written - at_start, 100);
  EXPECT_EQ(broker.ReleaseReadPages(), 0u);
  companion.Poll(&registry, 0);
  // Unread records of later connections stay while the read pages go.
  for (int i = 0; i < 100; ++i) connect_next();
  EXPECT_GE(broker.ReleaseReadPages(), BrokerLink::kReleaseStep);
  EXPECT_LT(resident_kib(), written - 100);
  companion.Poll(&registry, 0);
  EXPECT_EQ(open_count(), 1600u);
  // Round the ring several times, releasing between reads: nothing lost, nothing corrupt.
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 100; ++i) connect_next();
    broker.ReleaseReadPages();
    companion.Poll(&registry, 0);
    broker.ReleaseReadPages();
  }
  EXPECT_EQ(broker.events_lost(), 0u);
  EXPECT_EQ(open_count(), 5600u);
  EXPECT_LT(resident_kib(), written);
}

TEST_F(SharedLinkTest, LogLinesComeBackToTheBrokerInOrder) {
  EXPECT_TRUE(companion_->Log(LogLevel::kWarning, "first"));
  EXPECT_TRUE(companion_->Log(LogLevel::kError, "second"));
  std::vector<std::string> lines;
  broker_->DrainCommands([&](const LogCommand& c) {
    lines.push_back(std::to_string(static_cast<int>(c.level)) + " " + c.text);
  });
  EXPECT_THAT(lines, ::testing::ElementsAre("4 mosquitto_connections: first",
                                            "8 mosquitto_connections: second"));
}

TEST_F(SharedLinkTest, DisconnectRequestsReachTheBrokerCheckedAndNeverWithoutAHandler) {
  KickCommand kick;
  kick.client_id = "sensor-1";
  kick.caller = "127.0.0.1:41234";
  kick.token_line = "admin token file line 3";
  EXPECT_TRUE(companion_->RequestKick(kick));
  std::vector<std::string> seen;
  std::vector<std::string> lines;
  const auto log = [&](const LogCommand& c) { lines.push_back(c.text); };
  broker_->DrainCommands(log, [&](const KickCommand& c) {
    seen.push_back(c.client_id + "|" + c.caller + "|" + c.token_line);
  });
  EXPECT_THAT(seen, ::testing::ElementsAre("sensor-1|127.0.0.1:41234|admin token file line 3"));
  // At init and cleanup (no handler) a request is dropped, not kept for later.
  EXPECT_TRUE(companion_->RequestKick(kick));
  EXPECT_EQ(broker_->DrainCommands(log), 1u);
  EXPECT_EQ(broker_->DrainCommands(log, [&](const KickCommand&) { seen.push_back("late"); }), 0u);
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_TRUE(lines.empty());
}

TEST_F(SharedLinkTest, ACompanionReportsServingOrFailure) {
  companion_->ReportServing(18080);
  EXPECT_EQ(region_->header()->companion.state.load(),
            static_cast<std::uint32_t>(CompanionState::kServing));
  EXPECT_EQ(region_->header()->companion.http_port.load(), 18080);
  companion_->ReportFailed(std::string(2000, 'x'));  // longer than the slot: cut, terminated
  EXPECT_EQ(std::string(region_->header()->companion.failure).size(), 511u);
}

// A rich API request is answered by the companion alone: the broker used to sample TCP_INFO of
// every connection at its next TICK when asked; now a request writes nothing the broker reads
// (the region is byte for byte the same after it), so the broker thread has nothing to do for
// it and the request waits for no TICK.
TEST_F(SharedLinkTest, ADetailedRequestAsksNothingOfTheBroker) {
  SessionTable table(broker_.get(), 1, region_->stats_slots());
  ConnectSettlement connects(&table);
  ResyncWriter resync(&table, broker_.get());
  const ClientFacts facts = Facts("detailed");  // from 127.0.0.1:50000 to the listener on 1883
  connects.BeginConnect(&clients_[0], facts, 1);
  connects.Settle();
  ConnectionRegistryOptions options;
  options.stats = region_->stats_slots();
  ConnectionRegistry registry(options);
  companion_->Begin();
  ASSERT_TRUE(ResyncStep(broker_.get(), &resync));
  companion_->Poll(&registry, 0);
  ASSERT_TRUE(registry.synced());
  companion_->Heartbeat();  // what the companion's loop writes anyway, before the copy

  NetworkInfoCacheOptions cache_options;
  cache_options.dump = [](const SockDiagOptions&) {
    SockDiagResult result;
    TcpSocketInfo socket;
    socket.family = AF_INET;
    socket.remote_address = "127.0.0.1";
    socket.remote_port = 50000;
    socket.local_port = 1883;
    socket.state = 1;  // ESTABLISHED
    socket.last_received_ms = 1500;
    result.sockets.push_back(socket);
    return result;
  };
  cache_options.max_age_ns = 0;  // a dump for every request
  NetworkInfoCache cache(cache_options);
  const DetailedSource source(registry, &cache);
  const auto* bytes = reinterpret_cast<const char*>(region_->header());
  const std::string before(bytes, region_->header()->total_size);
  for (int i = 0; i < 20; ++i) {
    const std::vector<Connection> all = source.Snapshot();
    ASSERT_EQ(all.size(), 1u);
    EXPECT_TRUE(all[0].network->known);
    EXPECT_GE(all[0].idle_ns, 1'500'000'000);
  }
  EXPECT_EQ(cache.dumps(), 20u);
  EXPECT_TRUE(std::string(bytes, region_->header()->total_size) == before)
      << "a request wrote into the shared region";
  EXPECT_EQ(broker_->DrainCommands([](const LogCommand&) {}), 0u);
}

TEST(SharedRegionTest, AttachChecksTheLayout) {
  auto created = SharedRegion::Create(SharedRegionSizes{});
  ASSERT_TRUE(created.ok()) << created.status().message();
  const std::unique_ptr<SharedRegion>& region = *created;
  auto attached = SharedRegion::Attach(region->fd());
  ASSERT_TRUE(attached.ok()) << attached.status().message();
  EXPECT_EQ((*attached)->header()->events_capacity, region->header()->events_capacity);
  region->header()->version = 99;
  attached = SharedRegion::Attach(region->fd());
  ASSERT_FALSE(attached.ok());
  EXPECT_EQ(attached.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(attached.status().message(), ::testing::HasSubstr("another layout"));
  SharedRegionSizes bad;
  bad.events_capacity = 1000;
  const auto refused = SharedRegion::Create(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(),
            "ring capacities must be powers of two of at least 64 bytes");
}

}  // namespace
}  // namespace mqc
