// SPDX-License-Identifier: BSD-3-Clause
// The merged fleet stream (see fleet_watch.h).
#include "companion/fleet/fleet_watch.h"

#include <chrono>
#include <limits>
#include <utility>

#include "companion/http/connect_rpc_json.h"
#include "companion/http/connect_rpc_proto.h"

namespace mqc {
namespace {

constexpr std::uint8_t kEndStreamFlag = 0x02;
constexpr char kResumeHint[] = "; call again with resume_token set to the last resumeToken seen";

WatchStreamOptions LocalOptions(WatchStreamOptions options, std::uint64_t resume_after) {
  options.codec = ConnectCodec::kProto;
  options.resume_after = resume_after;
  options.deadline.reset();  // the merged stream keeps the deadline
  return options;
}

}  // namespace

FleetWatchStream::FleetWatchStream(const LiveConnections& live, ConnectionChanges* changes,
                                   const FleetQueryOptions& fleet, WatchStreamOptions options,
                                   std::string filter_text, FleetWatchPositions positions,
                                   std::shared_ptr<void> slot)
    : options_(std::move(options)),
      slot_(std::move(slot)),
      local_(live, changes, LocalOptions(options_, positions.ResumeAfter(options_.node_id)),
             nullptr),
      positions_(std::move(positions)) {
  peers_.reserve(fleet.peers.size());
  for (const PeerUrl& peer : fleet.peers) {
    PeerWatchOptions watch;
    watch.peer = peer;
    watch.token = fleet.token;
    watch.client = fleet.client;
    watch.filter = filter_text;
    watch.end = options_.deadline;
    watch.max_buffered = options_.buffer;
    watch.resume_token = positions_.Token();  // each peer reads its own node's position
    peer_options_.push_back(std::move(watch));
  }
}

FleetWatchStream::~FleetWatchStream() {
  Stop();
  peers_.clear();  // joins their threads before the wake they call goes
}

void FleetWatchStream::SetWake(std::function<void()> wake) {
  local_.SetWake(wake);
  if (!peers_.empty()) return;
  for (PeerWatchOptions& watch : peer_options_) {
    peers_.push_back(std::make_unique<PeerWatch>(std::move(watch), wake));
  }
  peer_options_.clear();
  for (const std::unique_ptr<PeerWatch>& peer : peers_) peer->Start();
}

void FleetWatchStream::Stop() {
  stop_.store(true);
  for (const std::unique_ptr<PeerWatch>& peer : peers_) peer->Stop();
}

HttpBodyStream::Pull FleetWatchStream::Finish(const Status& status, std::string* out) {
  for (const std::unique_ptr<PeerWatch>& peer : peers_) peer->Stop();
  AppendEndOfStream(status, out);
  finished_ = true;
  return Pull::kEnd;
}

void FleetWatchStream::Emit(const DecodedWatchMessage& message, const PeerFailure* lost,
                            std::string* out) {
  if (lost == nullptr && message.node_id != 0) {
    positions_.Sent(message.node_id, message.kind, message.sequence);
  }
  const std::string token = positions_.Token();
  WatchMessage watch;
  watch.sequence = lost != nullptr ? 0 : message.sequence;
  watch.kind = lost != nullptr ? ChangeKind::kPeerLost : message.kind;
  watch.connection = message.has_connection ? &message.connection : nullptr;
  watch.subscription = message.has_subscription ? &message.subscription : nullptr;
  watch.node_id = message.node_id;
  watch.resume_token = token;
  watch.peer_error = lost;
  if (options_.codec == ConnectCodec::kProto) {
    AppendEnvelope(0, EncodeWatchConnectionsResponseProto(watch), out);
  } else {
    AppendEnvelope(0, WatchConnectionsResponseJson(watch), out);
  }
}

HttpBodyStream::Pull FleetWatchStream::Read(std::size_t max, std::string* out) {
  if (finished_) return Pull::kEnd;
  const std::size_t start = out->size();
  if (stop_.load()) {
    return Finish(Status(StatusCode::kUnavailable, std::string("the companion is stopping") +
                                                       kResumeHint),
                  out);
  }
  if (options_.deadline && std::chrono::steady_clock::now() >= *options_.deadline) {
    return Finish(Status(StatusCode::kDeadlineExceeded,
                         "deadline exceeded: the stream ran for its Connect-Timeout-Ms"),
                  out);
  }
  // This broker: whole envelopes of the node stream, decoded and tagged again.
  local_bytes_.clear();
  local_.Read(max, &local_bytes_);
  for (;;) {  // bounded by the bytes the node stream gave
    std::uint8_t flags = 0;
    if (TakeEnvelope(&local_bytes_, std::numeric_limits<std::size_t>::max(), &flags,
                     &payload_) <= 0) {
      break;
    }
    if ((flags & kEndStreamFlag) != 0) {
      const Status ended = EndOfStreamStatus(payload_);
      return Finish(Status(ended.ok() ? StatusCode::kInternal : ended.code(),
                           "this broker's stream ended (" + ended.message() + ")" + kResumeHint),
                    out);
    }
    DecodedWatchMessage message;
    const Status decoded = DecodeWatchConnectionsResponseProto(payload_, "a node message", &message);
    if (!decoded.ok()) return Finish(Status(StatusCode::kInternal, decoded.message()), out);
    message.node_id = options_.node_id;
    Emit(message, nullptr, out);
  }
  // The peers: what their threads read since the last call.
  for (const std::unique_ptr<PeerWatch>& peer : peers_) {
    if (peer->overflowed()) {
      return Finish(Status(StatusCode::kResourceExhausted,
                           "the client reads too slowly: more than " +
                               std::to_string(options_.buffer) + " messages of peer " +
                               peer->peer().Text() + " waiting" + kResumeHint),
                    out);
    }
    peer->Take(&events_);
    for (const PeerWatchEvent& event : events_) {
      Emit(event.message, event.lost ? &event.failure : nullptr, out);
    }
    events_.clear();
  }
  return out->size() == start ? Pull::kWait : Pull::kData;
}

ConnectRpcServiceOptions::FleetWatcher MakeFleetWatcher(const FleetQuery& fleet,
                                                        const LiveConnections& live,
                                                        ConnectionChanges* changes) {
  return [&fleet, &live, changes](const WatchStreamOptions& options, const std::string& filter,
                                  const std::string& resume_token, std::shared_ptr<void> slot)
             -> StatusOr<std::shared_ptr<HttpBodyStream>> {
    FleetWatchPositions positions;
    const Status status = FleetWatchPositions::FromToken(resume_token, &positions);
    if (!status.ok()) return status;
    return std::shared_ptr<HttpBodyStream>(std::make_shared<FleetWatchStream>(
        live, changes, fleet.options(), options, filter, std::move(positions), std::move(slot)));
  };
}

}  // namespace mqc
