// SPDX-License-Identifier: BSD-3-Clause
// The cost of one sock_diag dump (src/sock_diag.h): the time of DumpTcpSockets, filtered to one
// local port, median over --repeat dumps.
//
//   mqc_sock_diag_bench --port P [--repeat R]   sockets whose local port is P (a broker's)
//   mqc_sock_diag_bench --open N [--repeat R]   opens N loopback connections itself first
//
// Prints "sockets <found> median_ms <ms> max_ms <ms>"; exits 1 with a message on an error.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_args.h"
#include "companion/sock_diag.h"

namespace {

using mqc::bench::Fail;

// Opens `count` connections to a loopback listener (both ends stay open); its port, or 0.
std::uint16_t OpenConnections(long count, std::vector<int>* fds, std::string* error) {
  rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address;
  std::memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      listen(listener, 128) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    *error = std::string("listener: ") + std::strerror(errno);
    return 0;
  }
  fds->push_back(listener);
  for (long i = 0; i < count; ++i) {
    const int client = socket(AF_INET, SOCK_STREAM, 0);
    if (client < 0 || connect(client, reinterpret_cast<sockaddr*>(&address), length) != 0) {
      *error = "connection " + std::to_string(i) + ": " + std::strerror(errno);
      return 0;
    }
    fds->push_back(client);
    const int server = accept(listener, nullptr, nullptr);
    if (server < 0) {
      *error = std::string("accept: ") + std::strerror(errno);
      return 0;
    }
    fds->push_back(server);
  }
  return ntohs(address.sin_port);
}

}  // namespace

int main(int argc, char** argv) {
  long port = 0;
  long open = 0;
  long repeat = 5;
  const std::string bad = mqc::bench::ParseOptions(argc, argv,
                                                   {{"--port", 0L, 65535L, &port},
                                                    {"--open", 0L, 100000L, &open},
                                                    {"--repeat", 1L, 1000L, &repeat}});
  if (!bad.empty()) return Fail(bad);
  if ((port == 0) == (open == 0)) return Fail("give --port P or --open N");
  std::vector<int> fds;
  if (open > 0) {
    std::string error;
    port = OpenConnections(open, &fds, &error);
    if (port == 0) return Fail(error);
  }
  mqc::SockDiagOptions options;
  options.local_ports = {static_cast<std::uint16_t>(port)};
  std::vector<double> times_ms;
  std::size_t found = 0;
  for (long i = 0; i < repeat; ++i) {
    const auto started = std::chrono::steady_clock::now();
    const mqc::SockDiagResult result = mqc::DumpTcpSockets(options);
    const std::chrono::duration<double, std::milli> took =
        std::chrono::steady_clock::now() - started;
    if (!result.ok()) return Fail(result.error);
    times_ms.push_back(took.count());
    found = result.sockets.size();
  }
  for (const int fd : fds) close(fd);
  std::sort(times_ms.begin(), times_ms.end());
  std::printf("sockets %zu median_ms %.3f max_ms %.3f\n", found, times_ms[times_ms.size() / 2],
              times_ms.back());
  return 0;
}
