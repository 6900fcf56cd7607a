// SPDX-License-Identifier: BSD-3-Clause
#include "link/event_records.h"

#include <cstring>
#include <type_traits>

namespace mqc {

namespace {

class ByteWriter {
 public:
  explicit ByteWriter(std::string* out) : out_(out) { out_->clear(); }

  template <typename T>
  void Put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out_->append(bytes, sizeof(T));
  }
  void PutString(std::string_view s) {
    Put(static_cast<std::uint32_t>(s.size()));
    out_->append(s.data(), s.size());
  }

 private:
  std::string* out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}

  template <typename T>
  bool Get(T* value) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (bytes_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetString(std::string* s) {
    std::uint32_t size = 0;
    if (!Get(&size) || bytes_.size() - pos_ < size) return false;
    s->assign(bytes_.data() + pos_, size);
    pos_ += size;
    return true;
  }
  template <typename E>
  bool GetEnum(E* value, E max) {
    std::underlying_type_t<E> raw{};
    if (!Get(&raw) || raw > static_cast<std::underlying_type_t<E>>(max)) return false;
    *value = static_cast<E>(raw);
    return true;
  }
  bool Done() const { return pos_ == bytes_.size(); }

 private:
  std::string_view bytes_;
  std::size_t pos_ = 0;
};

}  // namespace

void Encode(const ConnectionEvent& e, std::string* out) {
  ByteWriter w(out);
  w.Put(e.seq);
  w.Put(e.uid);
  w.Put(e.open_time_ns);
  w.Put(e.close_time_ns);
  w.Put(e.close_reason);
  w.Put(e.protocol_version);
  w.Put(static_cast<std::uint8_t>(e.clean_session));
  w.Put(e.auth_mechanism);
  w.Put(e.auth_state);
  w.Put(e.keep_alive);
  w.Put(e.port);
  w.Put(e.local_port);
  w.Put(e.stats_slot);
  w.PutString(e.client_id);
  w.PutString(e.username);
  w.PutString(e.ip_address);
  w.PutString(e.auth_method);
  w.PutString(e.peer_certificate_subject);
  w.Put(e.bridge);
}

bool Decode(std::string_view bytes, ConnectionEvent* e) {
  ByteReader r(bytes);
  std::uint8_t clean = 0;
  const bool ok =
      r.Get(&e->seq) && r.Get(&e->uid) && r.Get(&e->open_time_ns) && r.Get(&e->close_time_ns) &&
      r.GetEnum(&e->close_reason, CloseReason::kAccessRevoked) && r.Get(&e->protocol_version) &&
      r.Get(&clean) && clean <= 1 && r.GetEnum(&e->auth_mechanism, AuthMechanism::kEnhanced) &&
      r.GetEnum(&e->auth_state, AuthState::kFailure) && r.Get(&e->keep_alive) && r.Get(&e->port) &&
      r.Get(&e->local_port) && r.Get(&e->stats_slot) && r.GetString(&e->client_id) &&
      r.GetString(&e->username) && r.GetString(&e->ip_address) && r.GetString(&e->auth_method) &&
      r.GetString(&e->peer_certificate_subject) &&
      r.GetEnum(&e->bridge, BridgeRole::kIncoming) && r.Done();
  e->clean_session = clean != 0;
  return ok;
}

void Encode(const CloseEvent& e, std::string* out) {
  ByteWriter w(out);
  w.Put(e.seq);
  w.Put(e.close_time_ns);
  w.Put(e.reason);
  w.Put(e.totals);
  w.Put(e.idle_ns);
}

bool Decode(std::string_view bytes, CloseEvent* e) {
  ByteReader r(bytes);
  return r.Get(&e->seq) && r.Get(&e->close_time_ns) &&
         r.GetEnum(&e->reason, CloseReason::kAccessRevoked) && r.Get(&e->totals) &&
         r.Get(&e->idle_ns) && r.Done();
}

void Encode(const SubscriptionEvent& e, std::string* out) {
  ByteWriter w(out);
  w.Put(e.seq);
  w.Put(e.qos);
  w.PutString(e.filter);
}

bool Decode(std::string_view bytes, SubscriptionEvent* e) {
  ByteReader r(bytes);
  return r.Get(&e->seq) && r.Get(&e->qos) && e->qos <= 2 && r.GetString(&e->filter) && r.Done();
}

void Encode(const OfflineSessionEvent& e, std::string* out) {
  ByteWriter w(out);
  w.Put(e.seq);
  w.Put(e.uid);
  w.Put(e.since_ns);
  w.Put(e.expiry_time_ns);
  w.Put(e.protocol_version);
  w.PutString(e.client_id);
  w.PutString(e.username);
}

bool Decode(std::string_view bytes, OfflineSessionEvent* e) {
  ByteReader r(bytes);
  return r.Get(&e->seq) && r.Get(&e->uid) && r.Get(&e->since_ns) && r.Get(&e->expiry_time_ns) &&
         r.Get(&e->protocol_version) && e->protocol_version <= 5 && r.GetString(&e->client_id) &&
         r.GetString(&e->username) && r.Done();
}

void Encode(const OfflineSessionEndEvent& e, std::string* out) {
  ByteWriter w(out);
  w.Put(e.seq);
}

bool Decode(std::string_view bytes, OfflineSessionEndEvent* e) {
  ByteReader r(bytes);
  return r.Get(&e->seq) && r.Done();
}

void Encode(const ResyncEvent& e, std::string* out) {
  ByteWriter w(out);
  w.Put(e.generation);
}

bool Decode(std::string_view bytes, ResyncEvent* e) {
  ByteReader r(bytes);
  return r.Get(&e->generation) && r.Done();
}

void Encode(const SettingsEvent& e, std::string* out) {
  ByteWriter w(out);
  w.Put(e.default_pattern);
  w.Put(e.closed_max);
  w.Put(e.closed_ttl_ns);
}

bool Decode(std::string_view bytes, SettingsEvent* e) {
  ByteReader r(bytes);
  return r.GetEnum(&e->default_pattern, DefaultPattern::kNone) && r.Get(&e->closed_max) &&
         r.Get(&e->closed_ttl_ns) && e->closed_ttl_ns >= 0 && r.Done();
}

void Encode(const BridgeEvent& e, std::string* out) {
  ByteWriter w(out);
  w.Put(e.seq);
  w.Put(e.role);
}

bool Decode(std::string_view bytes, BridgeEvent* e) {
  ByteReader r(bytes);
  return r.Get(&e->seq) && r.GetEnum(&e->role, BridgeRole::kIncoming) &&
         (e->seq != 0 || e->role == BridgeRole::kNone) && r.Done();
}

void Encode(const LogCommand& c, std::string* out) {
  ByteWriter w(out);
  w.Put(c.level);
  w.PutString(c.text);
}

bool Decode(std::string_view bytes, LogCommand* c) {
  ByteReader r(bytes);
  std::uint8_t level = 0;
  if (!r.Get(&level) || !r.GetString(&c->text) || !r.Done()) return false;
  switch (static_cast<LogLevel>(level)) {
    case LogLevel::kInfo:
    case LogLevel::kNotice:
    case LogLevel::kWarning:
    case LogLevel::kError:
      c->level = static_cast<LogLevel>(level);
      return true;
  }
  return false;
}

void Encode(const KickCommand& c, std::string* out) {
  ByteWriter w(out);
  w.PutString(c.client_id);
  w.PutString(c.caller);
  w.PutString(c.token_line);
}

namespace {

bool IsPrintableAscii(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

}  // namespace

bool Decode(std::string_view bytes, KickCommand* c) {
  ByteReader r(bytes);
  if (!r.GetString(&c->client_id) || !r.GetString(&c->caller) || !r.GetString(&c->token_line) ||
      !r.Done()) {
    return false;
  }
  return !c->client_id.empty() && c->client_id.size() <= kMaxKickClientIdBytes &&
         c->client_id.find('\0') == std::string::npos && c->caller.size() <= kMaxKickCallerBytes &&
         c->token_line.size() <= kMaxKickCallerBytes && IsPrintableAscii(c->caller) &&
         IsPrintableAscii(c->token_line);
}

void Encode(const BansCommand& c, std::string* out) {
  ByteWriter w(out);
  w.Put(static_cast<std::uint32_t>(c.bans.size()));
  for (const Ban& ban : c.bans) {
    w.PutString(ban.as());
    w.PutString(ban.who);
    w.Put(ban.until_ns);
  }
}

bool Decode(std::string_view bytes, BansCommand* c) {
  ByteReader r(bytes);
  std::uint32_t count = 0;
  if (!r.Get(&count) || count > kMaxBans) return false;
  c->bans.clear();
  c->bans.reserve(count);
  std::string as;
  std::string who;
  for (std::uint32_t i = 0; i < count; ++i) {
    Ban ban;
    if (!r.GetString(&as) || !r.GetString(&who) || !r.Get(&ban.until_ns)) return false;
    if (!ParseBanTarget(as, who, &ban).ok() || ban.who != who || ban.as() != as) return false;
    c->bans.push_back(std::move(ban));
  }
  return r.Done();
}

std::string FormatUuid(const Uuid& uuid) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[uuid[i] >> 4]);
    out.push_back(kHex[uuid[i] & 0xf]);
  }
  return out;
}

}  // namespace mqc
