// SPDX-License-Identifier: BSD-3-Clause
// Matching sock_diag's sockets to connections (MatchSockets), and the dump cache
// (NetworkInfoCache) with a stand-in dump and clock.
#include "companion/network_info.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <vector>

#include "../support/connection_builder.h"
#include "../support/match_sockets.h"

namespace mqc {
namespace {

constexpr std::int64_t kMs = 1'000'000;
constexpr std::uint8_t kEstablished = 1;
constexpr std::uint8_t kFinWait1 = 4;

TcpSocketInfo Socket(int family, const std::string& remote, std::uint16_t remote_port,
                     std::uint16_t local_port, std::uint32_t rtt_us = 50) {
  TcpSocketInfo s;
  s.family = family;
  s.local_address = family == AF_INET ? "127.0.0.1" : "::1";
  s.local_port = local_port;
  s.remote_address = remote;
  s.remote_port = remote_port;
  s.state = kEstablished;
  s.rtt_us = rtt_us;
  s.rtt_var_us = rtt_us / 2;
  s.retransmits = 3;
  s.send_queue_bytes = 10;
  s.receive_queue_bytes = 20;
  s.last_received_ms = 1500;
  s.last_sent_ms = 200;
  return s;
}

Connection Open(const std::string& ip, int port, int local_port) {
  Connection c = TestConnection(1);
  c.ip_address = ip;
  c.port = port;
  c.local_port = local_port;
  return c;
}

TEST(MatchSocketsTest, AnIpv4ConnectionGetsItsSocketsFigures) {
  std::vector<Connection> connections = {Open("127.0.0.1", 50000, 1883)};
  MatchSockets(
      {Socket(AF_INET, "127.0.0.1", 50001, 1883, 7), Socket(AF_INET, "127.0.0.1", 50000, 1883, 42)},
      0, &connections);
  const Connection& c = connections[0];
  ASSERT_TRUE(c.network->known);
  EXPECT_EQ(c.network->rtt_us, 42u);
  EXPECT_EQ(c.network->rtt_variance_us, 21u);
  EXPECT_EQ(c.network->retransmits, 3u);
  EXPECT_EQ(c.network->send_queue_bytes, 10u);
  EXPECT_EQ(c.network->receive_queue_bytes, 20u);
  EXPECT_EQ(c.network->since_last_receive_ns, 1500 * kMs);
  EXPECT_EQ(c.network->since_last_send_ns, 200 * kMs);
  EXPECT_EQ(c.idle_ns, 1500 * kMs);  // idleDuration is the time since data last arrived
}

TEST(MatchSocketsTest, DurationsAreAdvancedByTheDumpsAge) {
  std::vector<Connection> connections = {Open("127.0.0.1", 50000, 1883)};
  MatchSockets({Socket(AF_INET, "127.0.0.1", 50000, 1883)}, 300 * kMs, &connections);
  EXPECT_EQ(connections[0].network->since_last_receive_ns, 1800 * kMs);
  EXPECT_EQ(connections[0].network->since_last_send_ns, 500 * kMs);
  EXPECT_EQ(connections[0].idle_ns, 1800 * kMs);
}

// Two connections and their two sockets: each connection gets the rtt of its own socket,
// whatever the spelling or family of the addresses, and whatever the order of the dump.
TEST(MatchSocketsTest, EachConnectionFindsItsOwnSocket) {
  struct Case {
    const char* name;
    std::vector<Connection> connections;
    std::vector<TcpSocketInfo> sockets;  // rtt 11 for the first connection, 12 for the second
  };
  const Case cases[] = {
      {"an IPv6 address matches whatever its spelling",
       {Open("::1", 50000, 1883), Open("2001:db8::1", 50001, 1883)},
       {Socket(AF_INET6, "::1", 50000, 1883, 11),
        Socket(AF_INET6, "2001:0db8:0:0::0001", 50001, 1883, 12)}},
      // A client on a dual-stack listener is an IPv6 socket with a mapped address to the kernel;
      // the broker may write its address either way.
      {"an IPv4-mapped address matches its IPv4 form",
       {Open("::ffff:127.0.0.1", 50000, 1883), Open("10.0.0.7", 50001, 1883)},
       {Socket(AF_INET, "127.0.0.1", 50000, 1883, 11),
        Socket(AF_INET6, "::ffff:10.0.0.7", 50001, 1883, 12)}},
      // One client address and port may reach two listeners (two sockets): the local port tells.
      {"two listeners are told apart by the local port",
       {Open("127.0.0.1", 50000, 1883), Open("127.0.0.1", 50000, 8883)},
       {Socket(AF_INET, "127.0.0.1", 50000, 8883, 12),
        Socket(AF_INET, "127.0.0.1", 50000, 1883, 11)}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<Connection> connections = c.connections;
    MatchSockets(c.sockets, 0, &connections);
    EXPECT_EQ(connections[0].network->rtt_us, 11u);
    EXPECT_EQ(connections[1].network->rtt_us, 12u);
  }
}

TEST(MatchSocketsTest, AnotherAddressWithTheSamePortsIsNotTheConnections) {
  std::vector<Connection> other = {Open("127.0.0.2", 50000, 1883)};
  MatchSockets({Socket(AF_INET6, "::ffff:127.0.0.1", 50000, 1883)}, 0, &other);
  EXPECT_FALSE(other[0].network->known);
}

// Behind a load balancer (a PROXY protocol listener) the broker's socket is the balancer's: the
// connection gets that socket's figures, marked as the proxy's, and never those of another
// socket that happens to come from the client's own address and port (here a client of the same
// host connected straight to the listener from the port the balancer reported).
TEST(MatchSocketsTest, AProxiedConnectionGetsTheBalancersSocketMarkedAsSuch) {
  Connection proxied = Open("127.0.0.7", 50709, 1884);
  proxied.proxy_address = "127.0.0.1";
  proxied.proxy_port = 41000;
  std::vector<Connection> connections = {proxied, Open("127.0.0.1", 50001, 1884)};
  MatchSockets({Socket(AF_INET, "127.0.0.7", 50709, 1884, 7),
                Socket(AF_INET, "127.0.0.1", 41000, 1884, 42),
                Socket(AF_INET, "127.0.0.1", 50001, 1884, 9)},
               0, &connections);
  ASSERT_TRUE(connections[0].network->known);
  EXPECT_EQ(connections[0].network->rtt_us, 42u);
  EXPECT_TRUE(connections[0].network->proxy_socket);
  ASSERT_TRUE(connections[1].network->known);
  EXPECT_EQ(connections[1].network->rtt_us, 9u);
  EXPECT_FALSE(connections[1].network->proxy_socket);

  // The client's own port unknown (the broker's client layout not verified): the balancer's
  // socket is still known.
  proxied.port = 0;
  connections = {proxied};
  MatchSockets({Socket(AF_INET, "127.0.0.1", 41000, 1884, 42)}, 0, &connections);
  ASSERT_TRUE(connections[0].network->known);
  EXPECT_EQ(connections[0].network->rtt_us, 42u);
  // And without the balancer's socket in the dump, nothing.
  connections = {proxied};
  connections[0].port = 50709;
  MatchSockets({Socket(AF_INET, "127.0.0.7", 50709, 1884, 7)}, 0, &connections);
  EXPECT_FALSE(connections[0].network->known);
}

TEST(MatchSocketsTest, UnknownPortsUnixSocketsAndClosedConnectionsGetNothing) {
  Connection closed = Open("127.0.0.1", 50000, 1883);
  closed.state = ConnectionState::kClosed;
  closed.idle_ns = 9 * kMs;  // at close: kept
  Connection offline;
  offline.state = ConnectionState::kOffline;
  std::vector<Connection> connections = {
      Open("127.0.0.1", 0, 1883),    // the broker could not tell the remote port
      Open("127.0.0.1", 50001, 0),   // nor the listener's
      Open("/run/mqtt.sock", 0, 0),  // a Unix socket listener
      Open("not an address", 50002, 1883), closed, offline};
  MatchSockets(
      {Socket(AF_INET, "127.0.0.1", 50000, 1883), Socket(AF_INET, "127.0.0.1", 50001, 1883),
       Socket(AF_INET, "127.0.0.1", 50002, 1883), Socket(AF_INET, "0.0.0.0", 0, 1883)},
      0, &connections);
  for (const Connection& c : connections) EXPECT_FALSE(c.network->known);
  EXPECT_EQ(connections[0].idle_ns, -1);
  EXPECT_EQ(connections[4].idle_ns, 9 * kMs);
}

TEST(MatchSocketsTest, ASocketSharingItsKeyCountsOnlyWhenItAloneIsEstablished) {
  TcpSocketInfo closing = Socket(AF_INET, "127.0.0.1", 50000, 1883, 1);
  closing.state = kFinWait1;
  std::vector<Connection> connections = {Open("127.0.0.1", 50000, 1883),
                                         Open("127.0.0.1", 50001, 1883)};
  MatchSockets(
      {closing, Socket(AF_INET, "127.0.0.1", 50000, 1883, 2),
       Socket(AF_INET, "127.0.0.1", 50001, 1883, 3), Socket(AF_INET, "127.0.0.1", 50001, 1883, 4)},
      0, &connections);
  EXPECT_EQ(connections[0].network->rtt_us, 2u);
  EXPECT_FALSE(connections[1].network->known);  // two established: which one is unknown
}

// --- the cache ------------------------------------------------------------------------------

class NetworkInfoCacheTest : public ::testing::Test {
 protected:
  NetworkInfoCacheOptions Options() {
    NetworkInfoCacheOptions options;
    options.max_age_ns = 1000 * kMs;
    options.clock = [this] { return now_; };
    options.wall_clock = [this] { return wall_offset_ + now_; };
    options.dump = [this](const SockDiagOptions& request) {
      requests_.push_back(request);
      SockDiagResult result;
      result.error = error_;
      if (error_.empty()) {
        TcpSocketInfo s = Socket(AF_INET, "127.0.0.1", 50000, 1883, rtt_);
        result.sockets.push_back(s);
        s.local_port = 8883;
        result.sockets.push_back(s);
      }
      return result;
    };
    options.log = [this](const std::string& line) { log_.push_back(line); };
    return options;
  }
  std::vector<Connection> Fill(NetworkInfoCache* cache, int local_port = 1883) {
    std::vector<Connection> connections = {Open("127.0.0.1", 50000, local_port)};
    cache->Fill(&connections);
    return connections;
  }

  std::int64_t now_ = 5'000 * kMs;
  std::int64_t wall_offset_ = 1'767'225'600'000 * kMs;  // 2026-01-01T00:00:00Z at now_ 0
  std::uint32_t rtt_ = 40;
  std::string error_;
  std::vector<SockDiagOptions> requests_;
  std::vector<std::string> log_;
};

TEST_F(NetworkInfoCacheTest, ABurstOfRequestsCostsOneDump) {
  NetworkInfoCache cache(Options());
  EXPECT_EQ(Fill(&cache)[0].network->rtt_us, 40u);
  rtt_ = 41;
  now_ += 999 * kMs;
  const std::vector<Connection> later = Fill(&cache);
  EXPECT_EQ(later[0].network->rtt_us, 40u);  // the same dump
  EXPECT_EQ(later[0].network->since_last_receive_ns, (1500 + 999) * kMs);
  EXPECT_EQ(cache.dumps(), 1u);
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_THAT(requests_[0].local_ports, ::testing::ElementsAre(1883));
  EXPECT_GE(requests_[0].max_sockets, 2u);
  EXPECT_GT(requests_[0].timeout_ms, 0);
  now_ += 1 * kMs;  // a second old: taken again
  EXPECT_EQ(Fill(&cache)[0].network->rtt_us, 41u);
  EXPECT_EQ(cache.dumps(), 2u);
}

// While requests keep coming the event loop dumps ahead of them; after a quiet spell it stops.
TEST_F(NetworkInfoCacheTest, RequestsInUseKeepTheDumpFreshInTheBackground) {
  NetworkInfoCache cache(Options());
  cache.RefreshIfDue();  // nothing asked yet
  EXPECT_EQ(cache.dumps(), 0u);
  Fill(&cache);  // the first request dumps
  now_ += 700 * kMs;
  cache.RefreshIfDue();
  EXPECT_EQ(cache.dumps(), 1u);
  now_ += 100 * kMs;  // three quarters of a second old
  rtt_ = 41;
  cache.RefreshIfDue();
  EXPECT_EQ(cache.dumps(), 2u);
  EXPECT_THAT(requests_.back().local_ports, ::testing::ElementsAre(1883));
  now_ += 900 * kMs;  // 1.7 s after the first dump, 0.9 s after the second: no wait
  const std::vector<Connection> later = Fill(&cache);
  EXPECT_EQ(later[0].network->rtt_us, 41u);
  EXPECT_EQ(later[0].network->since_last_receive_ns, (1500 + 900) * kMs);
  EXPECT_EQ(cache.dumps(), 2u);
  for (int i = 0; i < 20; ++i) {  // 20 s without a request
    now_ += 1000 * kMs;
    cache.RefreshIfDue();
  }
  EXPECT_LE(cache.dumps(), 2u + 10u);  // kept fresh for 10 s after the last request, then not
  const std::uint64_t quiet = cache.dumps();
  now_ += 5000 * kMs;
  cache.RefreshIfDue();
  EXPECT_EQ(cache.dumps(), quiet);
}

// Once requests stop and the dump is too old for any request, it is given back (15,000 sockets
// are about 1 MB): the event loop is woken for that, and the next request takes its own.
TEST_F(NetworkInfoCacheTest, AQuietCacheGivesItsStaleDumpBack) {
  NetworkInfoCache cache(Options());
  Fill(&cache);
  EXPECT_EQ(cache.held_sockets(), 2u);
  now_ += 9000 * kMs;  // quiet, but not yet for keep_fresh_ns: kept (and refreshed)
  cache.RefreshIfDue();
  EXPECT_EQ(cache.held_sockets(), 2u);
  const std::uint64_t dumps = cache.dumps();
  EXPECT_LE(cache.RefreshDueInNs(), 1000 * kMs);  // the loop wakes to give it back
  now_ += 1000 * kMs;
  cache.RefreshIfDue();
  EXPECT_EQ(cache.held_sockets(), 0u);
  EXPECT_EQ(cache.dumps(), dumps);  // given back, not taken again
  EXPECT_EQ(cache.RefreshDueInNs(), NetworkInfoCache::kNoRefreshDue);
  rtt_ = 42;
  EXPECT_EQ(Fill(&cache)[0].network->rtt_us, 42u);  // the next request dumps
  EXPECT_EQ(cache.dumps(), dumps + 1);
  EXPECT_EQ(cache.held_sockets(), 2u);
}

// A client that connected after the dump began is not in it: a request takes a new dump for it,
// once the last is a quarter second old (churn costs at most four dumps a second).
TEST_F(NetworkInfoCacheTest, AConnectionNewerThanTheDumpTakesANewOneAfterAQuarterSecond) {
  NetworkInfoCache cache(Options());
  Fill(&cache);
  Connection newer = Open("127.0.0.1", 50000, 1883);
  newer.open_time_ns = wall_offset_ + now_ + 1;
  std::vector<Connection> connections = {newer};
  now_ += 200 * kMs;
  cache.Fill(&connections);
  EXPECT_EQ(cache.dumps(), 1u);
  now_ += 50 * kMs;
  cache.Fill(&connections);
  EXPECT_EQ(cache.dumps(), 2u);
  now_ += 300 * kMs;  // in the new dump now: no more
  cache.Fill(&connections);
  EXPECT_EQ(cache.dumps(), 2u);
}

TEST_F(NetworkInfoCacheTest, APortTheLastDumpDidNotCoverTakesANewOne) {
  NetworkInfoCache cache(Options());
  Fill(&cache, 1883);
  EXPECT_EQ(Fill(&cache, 8883)[0].network->rtt_us, 40u);
  EXPECT_EQ(cache.dumps(), 2u);
  // The new dump covered both listeners: neither takes another within the second.
  EXPECT_THAT(requests_.back().local_ports, ::testing::ElementsAre(1883, 8883));
  Fill(&cache, 1883);
  std::vector<Connection> both = {Open("127.0.0.1", 50000, 8883), Open("127.0.0.1", 50000, 1883)};
  cache.Fill(&both);
  EXPECT_TRUE(both[0].network->known);
  EXPECT_TRUE(both[1].network->known);
  EXPECT_EQ(cache.dumps(), 2u);
}

TEST_F(NetworkInfoCacheTest, NoOpenTcpConnectionNoDump) {
  NetworkInfoCache cache(Options());
  Connection closed = Open("127.0.0.1", 50000, 1883);
  closed.state = ConnectionState::kClosed;
  std::vector<Connection> connections = {closed, Open("/run/mqtt.sock", 0, 0)};
  cache.Fill(&connections);
  EXPECT_EQ(cache.dumps(), 0u);
}

TEST_F(NetworkInfoCacheTest, AFailedDumpLeavesTheFieldsUnknownIsToldOnceAndWaitsToRetry) {
  error_ = "sock_diag socket: Protocol not supported";
  NetworkInfoCache cache(Options());
  std::vector<Connection> connections = Fill(&cache);
  EXPECT_FALSE(connections[0].network->known);
  EXPECT_EQ(connections[0].idle_ns, -1);
  Fill(&cache);
  now_ += 500 * kMs;
  Connection newer = Open("127.0.0.1", 50001, 1883);  // not even for a new client
  newer.open_time_ns = wall_offset_ + now_;
  std::vector<Connection> with_newer = {newer};
  cache.Fill(&with_newer);
  cache.RefreshIfDue();
  EXPECT_EQ(cache.dumps(), 1u);  // not tried again for every request
  now_ += 500 * kMs;
  Fill(&cache);
  EXPECT_EQ(cache.dumps(), 2u);
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_THAT(log_[0], ::testing::HasSubstr("Protocol not supported"));
  error_.clear();  // netlink works again
  now_ += 1000 * kMs;
  EXPECT_TRUE(Fill(&cache)[0].network->known);
}

}  // namespace
}  // namespace mqc
