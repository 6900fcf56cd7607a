// SPDX-License-Identifier: BSD-3-Clause
#include "companion/client_history.h"

#include <algorithm>
#include <optional>
#include <utility>

namespace mqc {

namespace {

// A string's length as a StoredEvent keeps it; longer ones (none the broker sends: client ids,
// user names and filters are at most 65,535 bytes in MQTT) are cut there.
std::uint16_t Length16(std::string_view text) {
  return static_cast<std::uint16_t>(std::min<std::size_t>(text.size(), 0xffff));
}

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

ClientHistory::ClientHistory(const ClientHistoryOptions& options) : options_(options) {}

void ClientHistory::Record(const ConnectionChange& change, std::int64_t now_ns) {
  if (!enabled()) return;
  switch (change.kind) {
    case ChangeKind::kOpened: {
      const Connection& opened = *change.after;
      ClientEvent event = EventOf(opened, ClientEventKind::kConnected, opened.open_time_ns);
      event.protocol_version = static_cast<std::uint8_t>(opened.protocol_version);
      event.username = opened.username;
      Add(opened.client_id, event);
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
      Add(closed.client_id, event);
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
      Add(connection.client_id, event);
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

ClientHistory::StoredEvent ClientHistory::StoredEvent::From(const ClientEvent& event) {
  StoredEvent stored;
  stored.time_ns = event.time_ns;
  stored.count = event.count;
  stored.port = event.port;
  stored.kind = event.kind;
  stored.close_reason = event.close_reason;
  stored.protocol_version = event.protocol_version;
  const std::optional<Uuid> uid = ParseFormattedUuid(event.uid);
  const std::string_view uid_text =
      uid ? std::string_view() : std::string_view(event.uid).substr(0, 0xffff);
  if (uid) stored.uid = *uid;
  stored.uid_in_text = !uid;
  const std::string_view ip = std::string_view(event.ip_address).substr(0, 0xffff);
  const std::string_view username = std::string_view(event.username).substr(0, 0xffff);
  stored.uid_length = Length16(uid_text);
  stored.ip_length = Length16(ip);
  stored.username_length = Length16(username);
  stored.text.reserve(uid_text.size() + ip.size() + username.size() + event.filter.size());
  stored.text.append(uid_text).append(ip).append(username).append(event.filter);
  return stored;
}

ClientEvent ClientHistory::StoredEvent::ToEvent() const {
  ClientEvent event;
  event.time_ns = time_ns;
  event.kind = kind;
  event.close_reason = close_reason;
  event.protocol_version = protocol_version;
  event.port = port;
  event.count = count;
  std::string_view rest = text;
  event.uid = uid_in_text ? std::string(rest.substr(0, uid_length)) : FormatUuid(uid);
  rest.remove_prefix(uid_length);
  event.ip_address = rest.substr(0, ip_length);
  rest.remove_prefix(ip_length);
  event.username = rest.substr(0, username_length);
  rest.remove_prefix(username_length);
  event.filter = rest;
  return event;
}

bool ClientHistory::StoredEvent::SameConnection(const StoredEvent& other) const {
  return uid_in_text == other.uid_in_text && uid == other.uid &&
         std::string_view(text).substr(0, uid_length) ==
             std::string_view(other.text).substr(0, other.uid_length);
}

void ClientHistory::StoredEvent::SetFilter(std::string_view filter) {
  text.resize(std::size_t{uid_length} + ip_length + username_length);
  text.append(filter);
}

ClientHistory::StoredEvent& ClientHistory::Newest(Entry& entry) {
  const std::size_t size = entry.events.size();
  if (size < options_.per_client || entry.oldest == 0) return entry.events[size - 1];
  return entry.events[entry.oldest - 1];
}

void ClientHistory::Unlink(Node* node) {
  Entry& entry = node->second;
  (entry.older != nullptr ? entry.older->second.newer : oldest_) = entry.newer;
  (entry.newer != nullptr ? entry.newer->second.older : newest_) = entry.older;
  entry.older = entry.newer = nullptr;
}

void ClientHistory::LinkNewest(Node* node) {
  node->second.older = newest_;
  node->second.newer = nullptr;
  (newest_ != nullptr ? newest_->second.newer : oldest_) = node;
  newest_ = node;
}

void ClientHistory::Add(const std::string& client_id, const ClientEvent& event) {
  StoredEvent stored = StoredEvent::From(event);
  std::lock_guard<std::mutex> lock(mutex_);
  auto [found, inserted] = entries_.try_emplace(client_id);
  Node* node = &*found;
  Entry& entry = node->second;
  if (!inserted) {
    Unlink(node);
    LinkNewest(node);
    // A run of subscriptions (or unsubscriptions) of one connection goes on in its event.
    StoredEvent& newest = Newest(entry);
    if (stored.count != 0 && newest.kind == stored.kind && newest.SameConnection(stored)) {
      newest.time_ns = stored.time_ns;
      newest.count += stored.count;
      newest.SetFilter(event.filter);
      return;
    }
  } else {
    LinkNewest(node);
  }
  if (entry.events.size() < options_.per_client) {
    entry.events.push_back(std::move(stored));
    ++events_;
  } else {
    entry.events[entry.oldest] = std::move(stored);
    entry.oldest = (entry.oldest + 1) % options_.per_client;
    ++entry.dropped;
  }
  while (events_ > options_.max_events && oldest_ != newest_) EvictOldest();
}

void ClientHistory::EvictOldest() {
  Node* node = oldest_;
  Unlink(node);
  events_ -= node->second.events.size();
  entries_.erase(entries_.find(node->first));
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
  for (std::size_t i = 0; i < size; ++i) {
    events->push_back(entry.events[(entry.oldest + i) % size].ToEvent());
  }
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
