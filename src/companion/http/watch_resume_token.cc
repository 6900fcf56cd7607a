// SPDX-License-Identifier: BSD-3-Clause
// Positions and resume token of a fleet watch (see fleet_watch_position.h).
#include "companion/http/watch_resume_token.h"

#include "link/text_util.h"

namespace mqc {
namespace {

constexpr char kVersion = 'W';

}  // namespace

Status FleetWatchPositions::FromToken(std::string_view token, FleetWatchPositions* out) {
  out->positions_.clear();
  if (token.empty()) return Status();
  const Status malformed = InvalidArgument(
      "malformed resume_token: pass back the resumeToken of a CONNECTION_SCOPE_FLEET watch "
      "message as it was sent");
  std::string decoded;
  if (!DecodeBase64Url(token, &decoded, /*canonical=*/true)) return malformed;
  std::string_view bytes = decoded;
  if (bytes.empty() || bytes.front() != kVersion) return malformed;
  bytes.remove_prefix(1);
  std::uint64_t count = 0;
  if (!GetVarint(&bytes, &count) || count > kMaxFleetWatchBrokers) return malformed;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t node = 0;
    std::uint64_t sequence = 0;
    if (!GetVarint(&bytes, &node) || node > UINT32_MAX || !GetVarint(&bytes, &sequence) ||
        sequence == 0 || !out->positions_.emplace(static_cast<std::uint32_t>(node), sequence).second) {
      out->positions_.clear();
      return malformed;
    }
  }
  if (!bytes.empty()) {
    out->positions_.clear();
    return malformed;
  }
  return Status();
}

std::uint64_t FleetWatchPositions::ResumeAfter(std::uint32_t node_id) const {
  const auto found = positions_.find(node_id);
  return found == positions_.end() ? 0 : found->second;
}

void FleetWatchPositions::Sent(std::uint32_t node_id, ChangeKind kind, std::uint64_t sequence) {
  switch (kind) {
    case ChangeKind::kReset:
      positions_.erase(node_id);
      return;
    case ChangeKind::kCurrent:
    case ChangeKind::kUnspecified:
      return;
    default:
      if (sequence == 0) return;
      if (positions_.size() >= kMaxFleetWatchBrokers && positions_.count(node_id) == 0) return;
      positions_[node_id] = sequence;
      return;
  }
}

std::string FleetWatchPositions::Token() const {
  std::string bytes(1, kVersion);
  PutVarint(positions_.size(), &bytes);
  for (const auto& [node, sequence] : positions_) {
    PutVarint(node, &bytes);
    PutVarint(sequence, &bytes);
  }
  return EncodeBase64Url(bytes);
}

}  // namespace mqc
