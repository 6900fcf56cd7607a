// SPDX-License-Identifier: BSD-3-Clause
// WatchConnections with CONNECTION_SCOPE_FLEET (docs/fleet.md, "Watching the fleet"): this
// broker's node stream and one node stream per peer (fleet_watch_peer.h), merged in the order
// their messages arrive, each message tagged with its broker's node_id and a resume token that
// holds every broker's position (fleet_watch_position.h).
//
// What a client sees: per broker, what its node stream says (RESET, CURRENT..., SYNCED, then
// changes), tagged with node_id; RESET concerns that node's connections alone. A peer that
// cannot be watched gives a PEER_LOST with peer_error, and its messages go on once it is
// watched again (resumed from where they stopped, or RESET first). The stream ends as a node
// stream does: the client reads too slowly (its own node stream, or more than the stream's
// buffer of messages waiting from one peer: resource_exhausted), Connect-Timeout-Ms
// (deadline_exceeded), or the companion stops (unavailable); the client then resumes with the
// last resume_token it saw.
//
// This broker's part is a node WatchStream in the binary codec, read on the merged stream's
// thread and decoded again: the node stream's rules (fresh state, resumption, the cut-off of a
// slow client) hold for it unchanged.
//
// Threads: built on an HTTP thread; SetWake once, before Read (it starts the peers' threads);
// Read on the server's threads, one at a time; Stop from any thread. The destructor stops and
// joins the peers' threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "companion/connection_changes.h"
#include "companion/fleet/fleet_query.h"
#include "companion/fleet/fleet_watch_peer.h"
#include "companion/http/watch_resume_token.h"
#include "companion/http/connect_rpc_service.h"
#include "companion/http/watch_stream.h"

namespace mqc {

class FleetWatchStream : public HttpBodyStream {
 public:
  // `live` and `changes` must outlive the stream. `options`: the node stream's (codec, parsed
  // filter, deadline, buffer, this broker's node id); `filter_text`: the filter as the peers
  // get it.
  FleetWatchStream(const LiveConnections& live, ConnectionChanges* changes,
                   const FleetQueryOptions& fleet, WatchStreamOptions options,
                   std::string filter_text, FleetWatchPositions positions,
                   std::shared_ptr<void> slot);
  ~FleetWatchStream() override;

  void SetWake(std::function<void()> wake) override;
  Pull Read(std::size_t max, std::string* out) override;
  void Stop() override;

 private:
  void Emit(const DecodedWatchMessage& message, const PeerFailure* lost, std::string* out);
  Pull Finish(const Status& status, std::string* out);

  const WatchStreamOptions options_;
  const std::shared_ptr<void> slot_;
  WatchStream local_;  // this broker, in the binary codec
  std::vector<PeerWatchOptions> peer_options_;  // until SetWake starts the peers
  std::vector<std::unique_ptr<PeerWatch>> peers_;
  std::atomic<bool> stop_{false};
  // Only the thread in Read:
  FleetWatchPositions positions_;
  bool finished_ = false;
  std::string local_bytes_;
  std::string payload_;
  std::deque<PeerWatchEvent> events_;
};

// The FleetWatcher of ConnectRpcServiceOptions for `fleet` (which, with `live` and `changes`,
// must outlive the service and its streams). A resume token that is not one:
// kInvalidArgument.
ConnectRpcServiceOptions::FleetWatcher MakeFleetWatcher(const FleetQuery& fleet,
                                                        const LiveConnections& live,
                                                        ConnectionChanges* changes);

}  // namespace mqc
