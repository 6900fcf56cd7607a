// SPDX-License-Identifier: BSD-3-Clause
#include "companion/client_history.h"

#include <utility>

namespace mqc {

namespace {

ClientEventKind ClosingKind(CloseReason reason) {
  switch (reason) {
    case CloseReason::kKicked:
      return ClientEventKind::kKicked;
    case CloseReason::kSessionTakenOver:
      return ClientEventKind::kTakenOver;
    default:
      return ClientEventKind::kClosed;
  }
}

// An event of `connection` with its identity and address.
ClientEvent EventOf(const Connection& connection, ClientEventKind kind, std::int64_t time_ns) {
  ClientEvent event;
  event.time_ns = time_ns;
  event.kind = kind;
  event.uid = connection.uid;
  event.ip_address = connection.ip_address;
  event.port = static_cast<std::uint16_t>(connection.port);
  return event;
}

}  // namespace

bool ClosesAConnection(ClientEventKind kind) noexcept {
  return kind == ClientEventKind::kRefused || kind == ClientEventKind::kKicked ||
         kind == ClientEventKind::kTakenOver || kind == ClientEventKind::kClosed;
}

std::string_view ClientEventKindName(ClientEventKind kind) noexcept {
  switch (kind) {
    case ClientEventKind::kConnected:
      return "CLIENT_EVENT_KIND_CONNECTED";
    case ClientEventKind::kRefused:
      return "CLIENT_EVENT_KIND_REFUSED";
    case ClientEventKind::kSubscribed:
      return "CLIENT_EVENT_KIND_SUBSCRIBED";
    case ClientEventKind::kUnsubscribed:
      return "CLIENT_EVENT_KIND_UNSUBSCRIBED";
    case ClientEventKind::kKicked:
      return "CLIENT_EVENT_KIND_KICKED";
    case ClientEventKind::kTakenOver:
      return "CLIENT_EVENT_KIND_TAKEN_OVER";
    case ClientEventKind::kClosed:
      return "CLIENT_EVENT_KIND_CLOSED";
    case ClientEventKind::kWentOffline:
      return "CLIENT_EVENT_KIND_WENT_OFFLINE";
    case ClientEventKind::kSessionEnded:
      return "CLIENT_EVENT_KIND_SESSION_ENDED";
    case ClientEventKind::kUnspecified:
      break;
  }
  return "CLIENT_EVENT_KIND_UNSPECIFIED";
}

ClientHistory::ClientHistory(const ClientHistoryOptions& options) : options_(options) {}

void ClientHistory::Record(const ConnectionChange& change, std::int64_t now_ns) {
  if (!enabled()) return;
  switch (change.kind) {
    case ChangeKind::kOpened: {
      const Connection& opened = *change.after;
      ClientEvent event = EventOf(opened, ClientEventKind::kConnected, opened.open_time_ns);
      event.protocol_version = static_cast<std::uint8_t>(opened.protocol_version);
      event.username = opened.username;
      Add(opened.client_id, std::move(event));
      return;
    }
    case ChangeKind::kClosed: {
      const Connection& closed = *change.after;
      // No connection before it: refused at its CONNECT.
      const bool refused = change.before == nullptr;
      ClientEvent event = EventOf(closed,
                                  refused ? ClientEventKind::kRefused
                                          : ClosingKind(closed.close_reason),
                                  closed.close_time_ns != 0 ? closed.close_time_ns : now_ns);
      event.close_reason = closed.close_reason;
      if (refused) {
        event.protocol_version = static_cast<std::uint8_t>(closed.protocol_version);
        event.username = closed.username;
      }
      Add(closed.client_id, std::move(event));
      return;
    }
    case ChangeKind::kSubscribed:
    case ChangeKind::kUnsubscribed: {
      const Connection& connection = change.after ? *change.after : *change.before;
      const ClientEventKind kind = change.kind == ChangeKind::kSubscribed
                                       ? ClientEventKind::kSubscribed
                                       : ClientEventKind::kUnsubscribed;
      ClientEvent event = EventOf(connection, kind, now_ns);
      event.count = 1;
      event.filter = change.subscription.filter;
      Add(connection.client_id, std::move(event));
      return;
    }
    case ChangeKind::kWentOffline: {
      const Connection& session = *change.after;
      Add(session.client_id, EventOf(session, ClientEventKind::kWentOffline,
                                     session.open_time_ns != 0 ? session.open_time_ns : now_ns));
      return;
    }
    case ChangeKind::kExpired: {
      const Connection& session = *change.before;
      Add(session.client_id, EventOf(session, ClientEventKind::kSessionEnded, now_ns));
      return;
    }
    default:
      return;  // a reset says nothing of one client; an update changes no history
  }
}

ClientEvent& ClientHistory::Newest(Entry& entry) {
  const std::size_t size = entry.events.size();
  if (size < options_.per_client || entry.oldest == 0) return entry.events[size - 1];
  return entry.events[entry.oldest - 1];
}

void ClientHistory::Add(const std::string& client_id, ClientEvent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [found, inserted] = entries_.try_emplace(client_id);
  Entry& entry = found->second;
  if (inserted) {
    entry.recency = recency_.insert(recency_.end(), client_id);
  } else {
    recency_.splice(recency_.end(), recency_, entry.recency);
    // A run of subscriptions (or unsubscriptions) of one connection goes on in its event.
    ClientEvent& newest = Newest(entry);
    if (event.count != 0 && newest.kind == event.kind && newest.uid == event.uid) {
      newest.time_ns = event.time_ns;
      newest.count += event.count;
      newest.filter = std::move(event.filter);
      return;
    }
  }
  if (entry.events.size() < options_.per_client) {
    entry.events.push_back(std::move(event));
    ++events_;
  } else {
    entry.events[entry.oldest] = std::move(event);
    entry.oldest = (entry.oldest + 1) % options_.per_client;
    ++entry.dropped;
  }
  while (events_ > options_.max_events && recency_.size() > 1) EvictOldest();
}

void ClientHistory::EvictOldest() {
  const auto found = entries_.find(recency_.front());
  events_ -= found->second.events.size();
  entries_.erase(found);
  recency_.pop_front();
}

bool ClientHistory::Find(std::string_view client_id, std::vector<ClientEvent>* events,
                         std::uint64_t* dropped) const {
  events->clear();
  *dropped = 0;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = entries_.find(std::string(client_id));
  if (found == entries_.end()) return false;
  const Entry& entry = found->second;
  const std::size_t size = entry.events.size();
  events->reserve(size);
  for (std::size_t i = 0; i < size; ++i) events->push_back(entry.events[(entry.oldest + i) % size]);
  *dropped = entry.dropped;
  return true;
}

std::size_t ClientHistory::client_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

std::size_t ClientHistory::event_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_;
}

}  // namespace mqc
