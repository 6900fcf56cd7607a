// SPDX-License-Identifier: BSD-3-Clause
// Matching sock_diag's sockets to connections, and the short-lived dump cache (network_info.h).
#include "companion/network_info.h"

#include <arpa/inet.h>
#include <netinet/tcp.h>  // TCP_ESTABLISHED

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iterator>
#include <utility>

#include "link/clock.h"

namespace mqc {
namespace {

constexpr std::int64_t kNanosPerMilli = 1'000'000;
// The kernel filter takes at most this many ports (sock_diag.h); more: no filter.
constexpr std::size_t kMaxFilterPorts = 1000;
// Bounds of one dump. Each receive waits at most the timeout (the whole dump about four times
// that); it grows with the connections (about 0.7 µs per socket the kernel walks, and the
// clients' ends of loopback connections are walked too). Room for the sockets the broker
// closes and opens between the registry's view and the dump.
constexpr int kDumpTimeoutBaseMs = 100;
constexpr std::size_t kConnectionsPerExtraMs = 500;
constexpr std::size_t kSpareSockets = 1024;

NetworkInfo FromSocket(const TcpSocketInfo& socket) {
  NetworkInfo info;
  info.known = true;
  info.rtt_us = socket.rtt_us;
  info.rtt_variance_us = socket.rtt_var_us;
  info.retransmits = socket.retransmits;
  info.send_queue_bytes = socket.send_queue_bytes;
  info.receive_queue_bytes = socket.receive_queue_bytes;
  info.since_last_receive_ns = std::int64_t{socket.last_received_ms} * kNanosPerMilli;
  info.since_last_send_ns = std::int64_t{socket.last_sent_ms} * kNanosPerMilli;
  return info;
}

// The socket's remote end: the client's, or behind a load balancer the balancer's (the client's
// own port is no port of this host's sockets, and the socket from that address and port may be
// another connection's).
const std::string& SocketPeer(const Connection& c) {
  return c.proxy_address->empty() ? c.ip_address : *c.proxy_address;
}
int SocketPeerPort(const Connection& c) { return c.proxy_address->empty() ? c.port : c.proxy_port; }

bool IsOpenTcp(const Connection& c) {
  const int peer_port = SocketPeerPort(c);
  return c.state == ConnectionState::kOpen && peer_port > 0 && peer_port <= 65535 &&
         c.local_port > 0 && c.local_port <= 65535;
}

}  // namespace

bool SocketIndex::Key::operator<(const Key& other) const {
  if (address != other.address) return address < other.address;
  if (remote_port != other.remote_port) return remote_port < other.remote_port;
  return local_port < other.local_port;
}

bool SocketIndex::Key::operator==(const Key& other) const {
  return address == other.address && remote_port == other.remote_port &&
         local_port == other.local_port;
}

bool SocketIndex::ParseAddress(std::string_view text, Address* out) {
  char buffer[64];
  if (text.empty() || text.size() >= sizeof buffer) return false;
  std::memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = '\0';
  in_addr v4;
  if (inet_pton(AF_INET, buffer, &v4) == 1) {
    out->fill(0);
    (*out)[10] = 0xff;
    (*out)[11] = 0xff;
    std::memcpy(out->data() + 12, &v4, sizeof v4);
    return true;
  }
  in6_addr v6;
  if (inet_pton(AF_INET6, buffer, &v6) == 1) {
    std::memcpy(out->data(), &v6, sizeof v6);
    return true;
  }
  return false;
}

SocketIndex::SocketIndex(const std::vector<TcpSocketInfo>& sockets) {
  std::vector<std::pair<Row, bool>> rows;  // (row, established)
  rows.reserve(sockets.size());
  for (const TcpSocketInfo& socket : sockets) {
    Row row;
    if (!ParseAddress(socket.remote_address, &row.key.address)) continue;
    row.key.remote_port = socket.remote_port;
    row.key.local_port = socket.local_port;
    row.info = FromSocket(socket);
    rows.emplace_back(std::move(row), socket.state == TCP_ESTABLISHED);
  }
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.first.key < b.first.key; });
  rows_.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t end = i + 1;
    while (end < rows.size() && rows[end].first.key == rows[i].first.key) ++end;
    if (end - i == 1) {
      rows_.push_back(rows[i].first);
    } else {
      // Several sockets on one key (an old one closing beside a new one): the one ESTABLISHED
      // if it is alone in that state, else none.
      const Row* chosen = nullptr;
      std::size_t established = 0;
      for (std::size_t j = i; j < end; ++j) {
        if (rows[j].second) {
          ++established;
          chosen = &rows[j].first;
        }
      }
      Row row = established == 1 ? *chosen : rows[i].first;
      if (established != 1) row.info = NetworkInfo{};
      rows_.push_back(std::move(row));
    }
    i = end;
  }
}

NetworkInfo SocketIndex::Find(std::string_view remote_ip, int remote_port, int local_port) const {
  Address address;
  if (!ParseAddress(remote_ip, &address)) return NetworkInfo{};
  return Find(address, remote_port, local_port);
}

NetworkInfo SocketIndex::Find(const Address& remote, int remote_port, int local_port) const {
  if (remote_port <= 0 || remote_port > 65535 || local_port <= 0 || local_port > 65535) {
    return NetworkInfo{};
  }
  Row probe;
  probe.key.address = remote;
  probe.key.remote_port = static_cast<std::uint16_t>(remote_port);
  probe.key.local_port = static_cast<std::uint16_t>(local_port);
  const auto it = std::lower_bound(rows_.begin(), rows_.end(), probe,
                                   [](const Row& a, const Row& b) { return a.key < b.key; });
  if (it == rows_.end() || !(it->key == probe.key)) return NetworkInfo{};
  return it->info;
}

void FillNetworkInfo(const SocketIndex& index, std::int64_t age_ns,
                     std::vector<Connection>* connections) {
  const std::int64_t age = std::max<std::int64_t>(age_ns, 0);
  // Clients often share an address (one host, a NAT, a load balancer): parse each run once.
  const std::string* parsed_text = nullptr;
  bool parsed = false;
  SocketIndex::Address address;
  for (Connection& c : *connections) {
    if (!IsOpenTcp(c)) continue;
    const std::string& peer = SocketPeer(c);
    if (parsed_text == nullptr || *parsed_text != peer) {
      parsed = SocketIndex::ParseAddress(peer, &address);
      parsed_text = &peer;
    }
    if (!parsed) continue;
    NetworkInfo info = index.Find(address, SocketPeerPort(c), c.local_port);
    if (!info.known) continue;
    info.since_last_receive_ns += age;
    info.since_last_send_ns += age;
    info.proxy_socket = !c.proxy_address->empty();
    c.network = info;
    c.idle_ns = info.since_last_receive_ns;
  }
}

NetworkInfoCache::NetworkInfoCache(NetworkInfoCacheOptions options)
    : options_(std::move(options)) {}

std::int64_t NetworkInfoCache::Now() const {
  if (options_.clock) return options_.clock();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::int64_t NetworkInfoCache::WallNow() const {
  return options_.wall_clock ? options_.wall_clock() : NowNs();
}

void NetworkInfoCache::LogOnce(bool* told, const std::string& line) {
  if (*told) return;
  *told = true;
  if (options_.log) options_.log(line);
}

SockDiagResult NetworkInfoCache::RunDump(const std::vector<std::uint16_t>& ports,
                                         std::size_t open_connections,
                                         std::size_t* max_sockets) const {
  SockDiagOptions request;
  if (ports.size() <= kMaxFilterPorts) request.local_ports = ports;
  request.max_sockets = 2 * open_connections + kSpareSockets;
  request.timeout_ms =
      kDumpTimeoutBaseMs + static_cast<int>(open_connections / kConnectionsPerExtraMs);
  *max_sockets = request.max_sockets;
  return options_.dump ? options_.dump(request) : DumpTcpSockets(request);
}

NetworkInfoCache::Dump NetworkInfoCache::Record(const SockDiagResult& result,
                                                std::vector<std::uint16_t> ports,
                                                std::size_t max_sockets, std::int64_t taken_ns,
                                                std::int64_t began_wall_ns) {
  ++dumps_;
  Dump dump;
  dump.taken_ns = taken_ns;
  dump.began_wall_ns = began_wall_ns;
  dump.ports = std::move(ports);
  if (!result.ok()) {
    LogOnce(&told_failure_, "networkInfo and idleDuration unknown: " + result.error +
                                " (told once; tried again at most once a second)");
    return dump;
  }
  if (result.truncated) {
    LogOnce(&told_truncated_, "sock_diag: more than " + std::to_string(max_sockets) +
                                  " sockets on the listeners' ports; networkInfo left out for "
                                  "the rest (told once)");
  }
  dump.index = std::make_shared<const SocketIndex>(result.sockets);
  return dump;
}

void NetworkInfoCache::Fill(std::vector<Connection>* connections) {
  std::vector<std::uint16_t> ports;
  std::size_t open = 0;
  std::int64_t newest_open_ns = 0;
  for (const Connection& c : *connections) {
    if (!IsOpenTcp(c)) continue;
    ++open;
    ports.push_back(static_cast<std::uint16_t>(c.local_port));
    newest_open_ns = std::max(newest_open_ns, c.open_time_ns);
  }
  if (open == 0) return;
  std::sort(ports.begin(), ports.end());
  ports.erase(std::unique(ports.begin(), ports.end()), ports.end());

  std::shared_ptr<const SocketIndex> index;
  std::int64_t taken_ns = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::int64_t now = Now();
    last_request_ns_ = now;
    last_open_ = open;
    const std::int64_t age = now - last_.taken_ns;
    // (A failed dump waits its second whatever comes.)
    const bool misses_new_connection = last_.index != nullptr &&
                                       newest_open_ns >= last_.began_wall_ns &&
                                       age >= options_.new_connection_min_age_ns;
    const bool fresh =
        have_dump_ && age < options_.max_age_ns && !misses_new_connection &&
        std::includes(last_.ports.begin(), last_.ports.end(), ports.begin(), ports.end());
    if (!fresh) {
      // The listeners' ports are few and stable: keep covering those seen before, so that
      // requests for connections on different listeners do not take turns dumping.
      std::vector<std::uint16_t> covered;
      std::set_union(ports.begin(), ports.end(), last_.ports.begin(), last_.ports.end(),
                     std::back_inserter(covered));
      std::size_t max_sockets = 0;
      const std::int64_t began_wall_ns = WallNow();
      const SockDiagResult result = RunDump(covered, open, &max_sockets);
      last_ = Record(result, std::move(covered), max_sockets, Now(), began_wall_ns);
      have_dump_ = true;
    }
    index = last_.index;
    taken_ns = last_.taken_ns;
  }
  if (index == nullptr) return;
  FillNetworkInfo(*index, Now() - taken_ns, connections);
}

std::int64_t NetworkInfoCache::RefreshDueInNs() {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::int64_t now = Now();
  if (!have_dump_ || last_.index == nullptr) return kNoRefreshDue;
  // Requests stopped: the dump is given back once no request can use it.
  const std::int64_t release_ns = std::max(last_request_ns_ + options_.keep_fresh_ns,
                                           last_.taken_ns + options_.max_age_ns);
  if (now - last_request_ns_ >= options_.keep_fresh_ns) {
    return std::max<std::int64_t>(0, release_ns - now);
  }
  return std::max<std::int64_t>(
      0, std::min(release_ns, last_.taken_ns + options_.max_age_ns / 4 * 3) - now);
}

void NetworkInfoCache::RefreshIfDue() {
  std::vector<std::uint16_t> ports;
  std::size_t open = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::int64_t now = Now();
    // After a failure the next request tries again, a second on.
    if (!have_dump_ || last_.index == nullptr) return;
    if (now - last_request_ns_ >= options_.keep_fresh_ns) {
      // Requests stopped, and a dump max_age_ns old serves none (the next takes its own): it is
      // given back rather than kept (15,000 sockets are about 1 MB). Like a failed dump, a null
      // index is then neither refreshed nor, being stale, served.
      if (now - last_.taken_ns >= options_.max_age_ns) last_.index.reset();
      return;
    }
    if (now - last_.taken_ns < options_.max_age_ns / 4 * 3) return;
    ports = last_.ports;
    open = last_open_;
  }
  std::size_t max_sockets = 0;
  const std::int64_t began_wall_ns = WallNow();
  const SockDiagResult result = RunDump(ports, open, &max_sockets);
  const std::int64_t taken_ns = Now();
  std::lock_guard<std::mutex> lock(mutex_);
  Dump dump = Record(result, std::move(ports), max_sockets, taken_ns, began_wall_ns);
  // A request's own dump meanwhile may be newer, or cover a new listener: keep that one.
  if (dump.taken_ns >= last_.taken_ns &&
      std::includes(dump.ports.begin(), dump.ports.end(), last_.ports.begin(), last_.ports.end())) {
    last_ = std::move(dump);
  }
}

std::uint64_t NetworkInfoCache::dumps() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dumps_;
}

std::size_t NetworkInfoCache::held_sockets() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_.index != nullptr ? last_.index->size() : 0;
}

}  // namespace mqc
