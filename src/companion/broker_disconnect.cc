// SPDX-License-Identifier: BSD-3-Clause
// See broker_disconnect.h.
#include "companion/broker_disconnect.h"

#include <chrono>

#include "companion/json_util.h"
#include "link/event_records.h"

namespace mqc {

DisconnectOutcome DisconnectThroughBroker(const ConnectionRegistry& registry, CompanionLink* link,
                                          const DisconnectTarget& target, const Caller& caller) {
  DisconnectOutcome outcome;
  registry.WaitUntilSynced(std::chrono::seconds(2));
  // By the client id index, or over the shared snapshot (pointers, no copy) for a uid.
  const auto find_open = [&registry, &target]() -> ConnectionPtr {
    const auto open = [](const ConnectionPtr& c) { return c->state == ConnectionState::kOpen; };
    if (target.uid.empty()) {
      for (ConnectionPtr& c : registry.FindByClientId(target.client_id)) {
        if (open(c)) return c;
      }
      return nullptr;
    }
    const ConnectionList all = registry.SharedSnapshot();
    for (const ConnectionPtr& c : *all) {
      if (open(c) && c->uid == target.uid) return c;
    }
    return nullptr;
  };
  const ConnectionPtr found = find_open();
  if (!found) {
    outcome.status =
        Status(StatusCode::kNotFound,
               target.uid.empty()
                   ? "no open connection with client id " + QuoteForMessage(target.client_id)
                   : "no open connection with uid " + QuoteForMessage(target.uid));
    return outcome;
  }
  outcome.client_id = found->client_id;
  outcome.uid = found->uid;
  KickCommand command;
  command.client_id = found->client_id;
  command.caller = caller.address;
  command.token_line = caller.token_line;
  command.with_will = !target.prevent_will;
  if (!link->RequestKick(command)) {
    outcome.status = Status(StatusCode::kResourceExhausted, "the broker's request queue is full");
    return outcome;
  }
  // Woken by every change of the registry, not by a clock: the answer goes out as soon as
  // the close is applied.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  if (registry.WaitUntilNotOpen(found->seq, deadline)) return outcome;
  outcome.status =
      Status(StatusCode::kDeadlineExceeded, "the broker has not closed the connection within 5 s");
  return outcome;
}

}  // namespace mqc
