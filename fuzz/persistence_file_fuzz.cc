// SPDX-License-Identifier: BSD-3-Clause
// Fuzz target for the reader of Mosquitto's persistence file (mosquitto.db). The input is a
// whole file. Besides crashes and sanitizer reports, it aborts when a file is refused without a
// message or with a code the reader does not promise, or an accepted one holds an entry the
// broker could not have restored.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "broker/persistence_file.h"

namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "persistence_file_fuzz: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  mqc::PersistenceLimits limits;
  limits.max_sessions = 1000;
  limits.max_subscriptions = 1000;
  limits.max_chunks = 10000;
  const mqc::StatusOr<std::vector<mqc::PersistedSession>> read =
      mqc::ReadPersistedSessions(in, limits);
  if (!read.ok()) {
    if (read.status().message().empty()) Fail("refused without a message");
    const mqc::StatusCode code = read.status().code();
    if (code != mqc::StatusCode::kInvalidArgument && code != mqc::StatusCode::kResourceExhausted &&
        code != mqc::StatusCode::kUnavailable) {
      Fail("refused with a code the reader does not promise");
    }
    return 0;
  }
  const std::vector<mqc::PersistedSession>& sessions = *read;
  std::size_t subscriptions = 0;
  for (const auto& session : sessions) {
    if (session.client_id.empty()) Fail("a session without a client id");
    for (const auto& subscription : session.subscriptions) {
      if (subscription.filter.empty()) Fail("an empty topic filter");
      if (subscription.qos > 2) Fail("QoS above 2");
      ++subscriptions;
    }
  }
  if (sessions.size() > limits.max_sessions || subscriptions > limits.max_subscriptions) {
    Fail("more than the limits");
  }
  return 0;
}
