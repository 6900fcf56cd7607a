// SPDX-License-Identifier: BSD-3-Clause
// An admin's disconnect (DELETE /api/mqtt/connections/{id}, DisconnectConnection) as the
// companion carries it out: it finds the open connection (the client id index, or the shared
// snapshot for a uid), queues a KickCommand on the commands ring for the broker thread, which
// kicks the client at its next TICK, and waits, at most 5 s, until the registry shows the
// connection closed. The views are in http/disconnect_view.h (companion/main.cc hands them this
// as their Disconnector); the broker's side in plugin/broker_events.cc (Kick).
//
// Threads: any HTTP thread, several at once (the registry and CompanionLink::RequestKick are
// safe to call concurrently).
#pragma once

#include "companion/admin_actions.h"
#include "companion/companion_link.h"
#include "companion/connection_registry.h"

namespace mqc {

// kNotFound for no open connection by that client id or uid, kResourceExhausted when the
// commands ring is full, kDeadlineExceeded when the broker has not closed it within 5 s.
DisconnectOutcome DisconnectThroughBroker(const ConnectionRegistry& registry, CompanionLink* link,
                                          const DisconnectTarget& target, const Caller& caller);

}  // namespace mqc
