// SPDX-License-Identifier: BSD-3-Clause
#include "companion/http/watch_stream.h"

#include <utility>

#include "companion/http/connect_rpc_json.h"
#include "companion/http/connect_rpc_proto.h"
#include "companion/http/view_util.h"
#include "companion/json_writer.h"

namespace mqc {

namespace {

constexpr std::uint8_t kEndStreamFlag = 0x02;
constexpr std::size_t kBatch = 256;  // changes read from the feed at a time

}  // namespace

std::shared_ptr<void> WatchSlots::TryTake() {
  std::size_t used = in_use_.load();
  do {
    if (used >= max_) return nullptr;
  } while (!in_use_.compare_exchange_weak(used, used + 1));
  // Non-null, so that a taken slot tests true; the deleter gives it back.
  return std::shared_ptr<void>(static_cast<void*>(this), [this](void*) { in_use_.fetch_sub(1); });
}

void AppendEnvelope(std::uint8_t flags, std::string_view payload, std::string* out) {
  const auto size = static_cast<std::uint32_t>(payload.size());
  out->push_back(static_cast<char>(flags));
  out->push_back(static_cast<char>(size >> 24));
  out->push_back(static_cast<char>(size >> 16));
  out->push_back(static_cast<char>(size >> 8));
  out->push_back(static_cast<char>(size));
  out->append(payload);
}

void AppendEndOfStream(const Status& status, std::string* out) {
  std::string end;
  JsonWriter json(&end);
  json.BeginObject();
  if (!status.ok()) {
    json.Key("error").BeginObject();
    json.Key("code").String(ConnectRpcCodeName(status.code()));
    json.Key("message").String(status.message());
    json.EndObject();
  }
  json.EndObject();
  AppendEnvelope(kEndStreamFlag, end, out);
}

WatchStream::WatchStream(const LiveConnections& live, ConnectionChanges* changes,
                         WatchStreamOptions options, std::shared_ptr<void> slot)
    : live_(live), changes_(changes), options_(std::move(options)), slot_(std::move(slot)) {}

WatchStream::~WatchStream() {
  if (waiter_ != 0) changes_->RemoveWaiter(waiter_);
}

void WatchStream::SetWake(std::function<void()> wake) {
  if (waiter_ == 0) waiter_ = changes_->AddWaiter(std::move(wake));
}

void WatchStream::Append(std::uint64_t sequence, ChangeKind kind, const Connection* connection,
                         const Subscription* subscription, std::string* out) {
  WatchMessage message;
  message.sequence = sequence;
  message.kind = kind;
  message.connection = connection;
  message.subscription = subscription;
  message.node_id = options_.node_id;
  if (options_.codec == ConnectCodec::kProto) {
    AppendEnvelope(0, EncodeWatchConnectionsResponseProto(message), out);
  } else {
    AppendEnvelope(0, WatchConnectionsResponseJson(message), out);
  }
}

HttpBodyStream::Pull WatchStream::Finish(const Status& status, std::string* out) {
  AppendEndOfStream(status, out);
  phase_ = Phase::kFinished;
  state_.reset();
  return Pull::kEnd;
}

void WatchStream::StartFresh(std::string* out) {
  state_ = live_.LiveSnapshot(&cursor_);
  state_index_ = 0;
  phase_ = Phase::kState;
  Append(cursor_, ChangeKind::kReset, nullptr, nullptr, out);
}

HttpBodyStream::Pull WatchStream::Read(std::size_t max, std::string* out) {
  if (phase_ == Phase::kFinished) return Pull::kEnd;
  const std::size_t start = out->size();
  if (stop_.load()) {
    return Finish(Status(StatusCode::kUnavailable,
                         "the companion is stopping; call again with resume_after set to the "
                         "last sequence seen"),
                  out);
  }
  if (options_.deadline && std::chrono::steady_clock::now() >= *options_.deadline) {
    return Finish(Status(StatusCode::kDeadlineExceeded,
                         "deadline exceeded: the stream ran for its Connect-Timeout-Ms"),
                  out);
  }
  if (phase_ == Phase::kStart) {
    if (!live_.synced()) return Pull::kWait;  // the first resync's end wakes the stream
    if (options_.resume_after != 0 &&
        changes_->ReadAfter(options_.resume_after, 1, &batch_) != ConnectionChanges::Read::kGap) {
      cursor_ = options_.resume_after;
      phase_ = Phase::kChanges;
    } else {
      StartFresh(out);
    }
  }
  // A message may pass `max` a little: the server sends the rest from its own buffer.
  while (out->size() - start < max) {
    if (phase_ == Phase::kState) {
      if (state_index_ < state_->size()) {
        const Connection& connection = *(*state_)[state_index_++];
        if (options_.filter.Matches(connection)) {
          Append(cursor_, ChangeKind::kCurrent, &connection, nullptr, out);
        }
        continue;
      }
      Append(cursor_, ChangeKind::kSynced, nullptr, nullptr, out);
      state_.reset();
      phase_ = Phase::kChanges;
      continue;
    }
    const ConnectionChanges::Read read = changes_->ReadAfter(cursor_, kBatch, &batch_);
    if (read == ConnectionChanges::Read::kNothing) break;
    if (read == ConnectionChanges::Read::kGap) {
      StartFresh(out);
      continue;
    }
    // Behind is measured from the oldest change the client still has to read: changes the
    // filter skips are nothing to read, however many came since the last call (a server woken
    // late after a burst of them is not a slow client).
    const std::uint64_t newest = changes_->last_sequence();
    for (const ConnectionChangePtr& change : batch_) {
      cursor_ = change->sequence;
      const bool matches = (change->before && options_.filter.Matches(*change->before)) ||
                           (change->after && options_.filter.Matches(*change->after));
      if (!matches) continue;
      const std::uint64_t behind = newest - change->sequence + 1;
      if (behind > options_.buffer) {
        batch_.clear();
        return Finish(Status(StatusCode::kResourceExhausted,
                             "the client reads too slowly: " + std::to_string(behind) +
                                 " changes behind, at most " + std::to_string(options_.buffer) +
                                 " allowed; call again with resume_after set to the last "
                                 "sequence seen"),
                      out);
      }
      const Connection* connection = change->after ? change->after.get() : change->before.get();
      const bool subscription_change =
          change->kind == ChangeKind::kSubscribed || change->kind == ChangeKind::kUnsubscribed;
      Append(change->sequence, change->kind, connection,
             subscription_change ? &change->subscription : nullptr, out);
    }
    batch_.clear();
  }
  return out->size() == start ? Pull::kWait : Pull::kData;
}

}  // namespace mqc
