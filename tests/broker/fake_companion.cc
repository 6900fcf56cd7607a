// SPDX-License-Identifier: BSD-3-Clause
// A stand-in companion for tests/broker/companion_supervisor_test.cc: maps the shared region on
// fd 3 as the real one does and acts as told, so the supervisor is tested against a real child
// process without HTTP. Arguments: log=PATH (appends one line per start: its arguments),
// mode=PATH (a file holding what to do at this start), then key=value options, the last
// http_port=N of which counts. Modes:
//   serve   report serving on http_port (41234 when it is 0), beat the heartbeat every 10 ms
//   stall   report serving, never beat
//   fail    report failed, with the failure "fake failure"
//   exit    exit with status 3 at once
//   silent  map the region and report nothing
// Every mode but exit ends by itself after 30 s, so a lost child cannot linger.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "link/shared_region.h"

namespace {

std::string Value(int argc, char** argv, const std::string& key) {
  std::string value;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument.rfind(key + "=", 0) == 0) value = argument.substr(key.size() + 1);
  }
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  {
    std::ofstream log(Value(argc, argv, "log"), std::ios::app);
    for (int i = 1; i < argc; ++i) log << (i > 1 ? " " : "") << argv[i];
    log << "\n";
  }
  std::ifstream mode_file(Value(argc, argv, "mode"));
  std::string mode;
  mode_file >> mode;
  if (mode == "exit") return 3;

  auto attached = mqc::SharedRegion::Attach(3);
  if (!attached.ok()) return 4;
  const std::unique_ptr<mqc::SharedRegion> region = std::move(attached).value();
  mqc::CompanionControl& control = region->header()->companion;
  if (mode == "fail") {
    std::strncpy(control.failure, "fake failure", sizeof(control.failure) - 1);
    control.state.store(static_cast<std::uint32_t>(mqc::CompanionState::kFailed),
                        std::memory_order_release);
  } else if (mode != "silent") {
    const int port = std::atoi(Value(argc, argv, "http_port").c_str());
    control.http_port.store(port != 0 ? port : 41234, std::memory_order_relaxed);
    control.state.store(static_cast<std::uint32_t>(mqc::CompanionState::kServing),
                        std::memory_order_release);
  }
  for (int i = 0; i < 3000; ++i) {  // 30 s
    if (mode == "serve") control.heartbeat.fetch_add(1, std::memory_order_relaxed);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}
