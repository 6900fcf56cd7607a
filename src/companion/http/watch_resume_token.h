// SPDX-License-Identifier: BSD-3-Clause
// WatchConnectionsRequest.resume_token (docs/fleet.md, "Watching the fleet"): where each
// broker's part of a merged fleet stream stands, so that a client that resumes gets every
// broker resumed from its own point. A fleet stream makes it (companion/fleet/fleet_watch.h);
// a node stream reads its own node's position from it (a fleet stream asks its peers so, as
// only the peer knows its node id).
//
// A position is the node-scope resume_after of one broker: the sequence of the last message of
// that broker the client was sent after its SYNCED, 0 while its state is being sent (a resume
// then gets a fresh state of that broker: RESET first, never a silent gap). Brokers are keyed by
// node id (plugin_opt_node_id), not by URL, so that a token taken at one broker can be resumed
// at another of the same fleet; a node's sequences start at the Unix time in microseconds, so a
// restarted companion never takes an old position for one of its own (its node watch answers
// a fresh state).
//
// Token format, version 'W': URL-safe base64 without padding of
//   u8 'W' | LEB128 count | per broker: LEB128 node id, LEB128 sequence
// (at most kMaxFleetWatchBrokers). Neither a page token ('F', or a node token's version 1)
// passes for it, nor it for them.
//
// Threads: a value type; one instance per stream, used by the thread reading that stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "companion/connection_changes.h"
#include "link/status.h"

namespace mqc {

inline constexpr std::size_t kMaxFleetWatchBrokers = 4096;

class FleetWatchPositions {
 public:
  // The positions of `token` (empty: every broker from a fresh state). kInvalidArgument
  // "malformed resume_token" otherwise.
  static Status FromToken(std::string_view token, FleetWatchPositions* out);

  // Where to resume node `node_id` from: the node-scope resume_after (0: a fresh state).
  std::uint64_t ResumeAfter(std::uint32_t node_id) const;

  // A message of `node_id` went to the client: RESET forgets its position (its state follows),
  // SYNCED and every change set it to the message's sequence, CURRENT leaves it (the state is
  // not complete yet).
  void Sent(std::uint32_t node_id, ChangeKind kind, std::uint64_t sequence);

  // The token of the positions now.
  std::string Token() const;

  std::size_t size() const { return positions_.size(); }

 private:
  std::map<std::uint32_t, std::uint64_t> positions_;  // node id -> sequence (never 0)
};

}  // namespace mqc
