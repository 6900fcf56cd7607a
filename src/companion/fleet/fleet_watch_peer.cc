// SPDX-License-Identifier: BSD-3-Clause
// One peer of a fleet watch (see fleet_watch_peer.h).
#include "companion/fleet/fleet_watch_peer.h"

#include <cjson/cJSON.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "companion/http/connect_rpc_proto.h"
#include "companion/http/view_util.h"
#include "companion/json_util.h"

namespace mqc {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kWatchPath[] = "/mqtt.connections.v1.ConnectionsService/WatchConnections";
constexpr std::size_t kMaxHeaderBytes = 64 << 10;
constexpr std::uint8_t kEndStreamFlag = 0x02;

StatusCode CodeOfName(std::string_view name) {
  for (const StatusCode code :
       {StatusCode::kInvalidArgument, StatusCode::kDeadlineExceeded, StatusCode::kResourceExhausted,
        StatusCode::kUnimplemented, StatusCode::kInternal, StatusCode::kNotFound,
        StatusCode::kUnauthenticated, StatusCode::kPermissionDenied, StatusCode::kUnavailable}) {
    if (ConnectRpcCodeName(code) == name) return code;
  }
  return StatusCode::kInternal;
}

}  // namespace

int TakeEnvelope(std::string* buffer, std::size_t max_payload, std::uint8_t* flags,
                 std::string* payload) {
  if (buffer->size() < 5) return 0;
  const auto byte = [buffer](std::size_t i) {
    return static_cast<std::uint32_t>(static_cast<std::uint8_t>((*buffer)[i]));
  };
  const std::size_t size = (byte(1) << 24) | (byte(2) << 16) | (byte(3) << 8) | byte(4);
  if (size > max_payload) return -1;
  if (buffer->size() < 5 + size) return 0;
  *flags = static_cast<std::uint8_t>(byte(0));
  payload->assign(*buffer, 5, size);
  buffer->erase(0, 5 + size);
  return 1;
}

Status EndOfStreamStatus(std::string_view json) {
  const CjsonPtr root = ParseJson(json);
  if (!root || !cJSON_IsObject(root.get())) {
    return Status(StatusCode::kInternal, "the end of the stream is not a JSON object");
  }
  const cJSON* error = cJSON_GetObjectItemCaseSensitive(root.get(), "error");
  if (error == nullptr) return Status();
  const cJSON* code = cJSON_GetObjectItemCaseSensitive(error, "code");
  const cJSON* message = cJSON_GetObjectItemCaseSensitive(error, "message");
  if (!cJSON_IsString(code)) {
    return Status(StatusCode::kInternal, "the end of the stream has an error without a code");
  }
  const StatusCode status = CodeOfName(code->valuestring);
  return Status(status == StatusCode::kOk ? StatusCode::kInternal : status,
                std::string(code->valuestring) + ": " +
                    (cJSON_IsString(message) ? message->valuestring : ""));
}

PeerWatch::PeerWatch(PeerWatchOptions options, std::function<void()> wake)
    : options_(std::move(options)), wake_(std::move(wake)) {}

PeerWatch::~PeerWatch() {
  Stop();
  if (thread_.joinable()) thread_.join();
}

void PeerWatch::Start() {
  thread_ = std::thread([this] {
    try {
      Run();
    } catch (const std::exception& e) {  // out of memory: this peer is lost, not the process
      Lost(Status(StatusCode::kInternal, e.what()), /*giving_up=*/true);
    }
  });
}

void PeerWatch::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  stopped_.notify_all();
}

void PeerWatch::Take(std::deque<PeerWatchEvent>* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (PeerWatchEvent& event : events_) out->push_back(std::move(event));
  events_.clear();
}

bool PeerWatch::Push(PeerWatchEvent event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (events_.size() >= options_.max_buffered) {
      overflowed_.store(true);
    } else {
      events_.push_back(std::move(event));
    }
  }
  wake_();
  return !overflowed_.load();
}

void PeerWatch::Lost(const Status& why, bool giving_up) {
  PeerWatchEvent event;
  event.lost = true;
  event.message.node_id = node_id_;
  event.failure = {options_.peer.Text(), std::string(ConnectRpcCodeName(why.code())),
                   (giving_up ? "no longer watched: " : "") + why.message()};
  Push(std::move(event));
}

void PeerWatch::Run() {
  std::chrono::milliseconds backoff = kPeerWatchFirstBackoff;
  int failures = 0;
  bool reported = false;  // the current loss was reported
  while (!stop_.load() && !overflowed_.load()) {
    if (options_.end && Clock::now() >= *options_.end) return;
    bool progressed = false;
    const Status status = Watch(&progressed);
    if (stop_.load() || overflowed_.load()) return;
    if (progressed) {
      failures = 0;
      backoff = kPeerWatchFirstBackoff;
      reported = false;
    }
    if (status.ok()) continue;  // a planned end: resume at once
    ++failures;
    if (failures >= kPeerWatchMaxAttempts) {
      Lost(Status(status.code(), status.message() + " (" + std::to_string(failures) +
                                     " attempts in a row)"),
           /*giving_up=*/true);
      return;
    }
    if (!reported) {
      Lost(status, /*giving_up=*/false);
      reported = true;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    stopped_.wait_for(lock, backoff, [this] { return stop_.load(); });
    backoff = std::min(backoff * 2, std::chrono::milliseconds(kPeerWatchMaxBackoff));
  }
}

Status PeerWatch::Watch(bool* progressed) {
  const Clock::time_point start = Clock::now();
  Clock::time_point segment_end = start + kPeerWatchSegment;
  if (options_.end) segment_end = std::min(segment_end, *options_.end);
  connections_v1::WatchConnectionsRequest message;
  message.set_filter(options_.filter);
  if (position_known_) {
    message.set_resume_after(position_);
  } else {
    message.set_resume_token(options_.resume_token);
  }
  message.set_scope(connections_v1::CONNECTION_SCOPE_NODE);
  const std::string bytes = message.SerializeAsString();
  PeerRequest request;
  request.path = kWatchPath;
  request.body.push_back('\0');
  for (int shift = 24; shift >= 0; shift -= 8) {
    request.body.push_back(static_cast<char>((bytes.size() >> shift) & 0xff));
  }
  request.body += bytes;
  // The peer ends its call a little before ours, with deadline_exceeded: a planned end.
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(segment_end - start);
  request.headers = {{"Content-Type", "application/connect+proto"},
                     {"Connect-Protocol-Version", "1"},
                     {"Connect-Timeout-Ms", std::to_string(std::max<long long>(1, left.count()))}};
  if (!options_.token.empty()) request.headers.emplace_back("Authorization", "Bearer " + options_.token);
  request.deadline = segment_end + std::chrono::seconds(1);
  request.connect_deadline = start + kPeerWatchConnectTimeout;

  // A fresh state starts at once (RESET first); a resumed stream may rightly stay silent, and
  // its server may hold the headers back until its first message: only the former is timed.
  const bool fresh = position_known_ ? position_ == 0 : options_.resume_token.empty();
  std::string pending;
  bool headers_done = false;
  Status outcome;  // set when the sink stops reading
  bool ended = false;
  std::string payload;
  request.stream_sink = [&](std::string_view chunk) {
    if (stop_.load()) return false;
    pending.append(chunk);
    if (!headers_done) {
      const std::size_t end = pending.find("\r\n\r\n");
      if (end == std::string::npos) {
        if (pending.size() > kMaxHeaderBytes) {
          outcome = Status(StatusCode::kInternal, "the answer's headers are too long");
          return false;
        }
        if (fresh && Clock::now() >= start + kPeerWatchConnectTimeout) {
          outcome = Status(StatusCode::kDeadlineExceeded,
                           "no answer within " +
                               std::to_string(kPeerWatchConnectTimeout.count()) + " ms");
          return false;
        }
        return true;
      }
      StatusOr<PeerResponse> head = ParseHttpResponse(std::string_view(pending).substr(0, end + 4));
      if (!head.ok()) {
        outcome = head.status();
        return false;
      }
      if (head->status != 200 || head->content_type.rfind("application/connect+proto", 0) != 0) {
        outcome = Status(StatusCode::kInternal,
                         "the peer answered HTTP " + std::to_string(head->status) +
                             " with Content-Type " + QuoteForMessage(head->content_type) +
                             ", not a WatchConnections stream");
        return false;
      }
      pending.erase(0, end + 4);
      headers_done = true;
    }
    for (;;) {  // bounded by the bytes pending
      std::uint8_t flags = 0;
      const int taken = TakeEnvelope(&pending, kMaxPeerWatchMessage, &flags, &payload);
      if (taken == 0) return true;
      if (taken < 0) {
        outcome = Status(StatusCode::kInternal, "a message over " +
                                                    std::to_string(kMaxPeerWatchMessage) + " bytes");
        return false;
      }
      if ((flags & kEndStreamFlag) != 0) {
        outcome = EndOfStreamStatus(payload);
        ended = true;
        return false;
      }
      PeerWatchEvent event;
      const Status decoded =
          DecodeWatchConnectionsResponseProto(payload, "the peer's message", &event.message);
      if (!decoded.ok()) {
        outcome = Status(StatusCode::kInternal, decoded.message());
        return false;
      }
      DecodedWatchMessage& m = event.message;
      if (m.node_id == 0 && m.has_connection) m.node_id = m.connection.node_id;
      if (m.node_id != 0) node_id_ = m.node_id;
      m.node_id = node_id_;
      if (m.kind == ChangeKind::kReset) {
        position_ = 0;
      } else if (m.kind != ChangeKind::kCurrent && m.sequence != 0) {
        position_ = m.sequence;
      }
      position_known_ = true;
      *progressed = true;
      if (!Push(std::move(event))) return false;
    }
  };
  const StatusOr<PeerResponse> response = options_.client->Post(options_.peer, request);
  if (stop_.load() || overflowed_.load()) return Status();
  if (!response.ok()) return response.status();
  if (!outcome.ok()) {
    // The peer's own end at the segment's deadline is planned; any other error is a loss.
    if (ended && outcome.code() == StatusCode::kDeadlineExceeded &&
        Clock::now() >= segment_end - std::chrono::seconds(1)) {
      return Status();
    }
    return outcome;
  }
  if (!headers_done) return Status(StatusCode::kUnavailable, "the peer closed without answering");
  if (!ended) return Status(StatusCode::kUnavailable, "the stream was cut off");
  return Status(StatusCode::kUnavailable, "the peer ended the stream");
}

}  // namespace mqc
