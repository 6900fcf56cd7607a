// SPDX-License-Identifier: BSD-3-Clause
#include "link/event_records.h"

#include <cstring>
#include <type_traits>

namespace mqc {

namespace {

// A record's fields are listed once, in a Fields function that a ByteWriter walks to write them
// and a ByteReader walks to read and check them, so the two directions cannot drift apart. On
// the writer every call returns true; on the reader false as soon as a field is missing or out
// of range.
class ByteWriter {
 public:
  static constexpr bool kWrites = true;

  explicit ByteWriter(std::string* out) : out_(out) { out_->clear(); }

  template <typename T>
  bool Field(const T& value) {
    Put(value);
    return true;
  }
  bool Field(std::string_view s) {
    Put(static_cast<std::uint32_t>(s.size()));
    out_->append(s.data(), s.size());
    return true;
  }
  bool Field(const std::string& s) { return Field(std::string_view(s)); }
  bool Bool(bool value) { return Field(static_cast<std::uint8_t>(value)); }
  template <typename E>
  bool Enum(E value, E /*max*/) {
    return Field(value);
  }
  // A check the reader makes of what it read: the writer writes what it is given.
  bool Valid(bool /*holds*/) { return true; }

 private:
  template <typename T>
  void Put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out_->append(bytes, sizeof(T));
  }

  std::string* out_;
};

class ByteReader {
 public:
  static constexpr bool kWrites = false;

  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}

  template <typename T>
  bool Field(T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (bytes_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool Field(std::string& s) {
    std::uint32_t size = 0;
    if (!Field(size) || bytes_.size() - pos_ < size) return false;
    s.assign(bytes_.data() + pos_, size);
    pos_ += size;
    return true;
  }
  bool Bool(bool& value) {
    std::uint8_t raw = 0;
    if (!Field(raw) || raw > 1) return false;
    value = raw != 0;
    return true;
  }
  template <typename E>
  bool Enum(E& value, E max) {
    std::underlying_type_t<E> raw{};
    if (!Field(raw) || raw > static_cast<std::underlying_type_t<E>>(max)) return false;
    value = static_cast<E>(raw);
    return true;
  }
  bool Valid(bool holds) { return holds; }
  bool Done() const { return pos_ == bytes_.size(); }

 private:
  std::string_view bytes_;
  std::size_t pos_ = 0;
};

// A record as a codec sees it: read-only when writing, filled in when reading.
template <typename Codec, typename Record>
using RecordRef = std::conditional_t<Codec::kWrites, const Record&, Record&>;

template <typename Codec>
bool Fields(Codec& c, RecordRef<Codec, ConnectionEvent> e) {
  return c.Field(e.seq) && c.Field(e.uid) && c.Field(e.open_time_ns) && c.Field(e.close_time_ns) &&
         c.Enum(e.close_reason, CloseReason::kAccessRevoked) && c.Field(e.protocol_version) &&
         c.Bool(e.clean_session) && c.Enum(e.auth_mechanism, AuthMechanism::kEnhanced) &&
         c.Enum(e.auth_state, AuthState::kFailure) && c.Field(e.keep_alive) && c.Field(e.port) &&
         c.Field(e.local_port) && c.Field(e.stats_slot) && c.Field(e.client_id) &&
         c.Field(e.username) && c.Field(e.ip_address) && c.Field(e.auth_method) &&
         c.Field(e.peer_certificate_subject) && c.Enum(e.bridge, BridgeRole::kIncoming) &&
         c.Field(e.proxy_address) && c.Field(e.proxy_port) && c.Enum(e.will, WillState::kSet);
}

template <typename Codec>
bool Fields(Codec& c, RecordRef<Codec, CloseEvent> e) {
  return c.Field(e.seq) && c.Field(e.close_time_ns) &&
         c.Enum(e.reason, CloseReason::kAccessRevoked) && c.Field(e.totals) && c.Field(e.idle_ns);
}

template <typename Codec>
bool Fields(Codec& c, RecordRef<Codec, SubscriptionEvent> e) {
  return c.Field(e.seq) && c.Field(e.qos) && c.Valid(e.qos <= 2) && c.Field(e.filter);
}

template <typename Codec>
bool Fields(Codec& c, RecordRef<Codec, OfflineSessionEvent> e) {
  return c.Field(e.seq) && c.Field(e.uid) && c.Field(e.since_ns) && c.Field(e.expiry_time_ns) &&
         c.Field(e.protocol_version) && c.Valid(e.protocol_version <= 5) && c.Field(e.client_id) &&
         c.Field(e.username);
}

template <typename Codec>
bool Fields(Codec& c, RecordRef<Codec, OfflineSessionEndEvent> e) {
  return c.Field(e.seq);
}

template <typename Codec>
bool Fields(Codec& c, RecordRef<Codec, ResyncEvent> e) {
  return c.Field(e.generation);
}

template <typename Codec>
bool Fields(Codec& c, RecordRef<Codec, SettingsEvent> e) {
  return c.Enum(e.default_pattern, DefaultPattern::kNone) && c.Field(e.closed_max) &&
         c.Field(e.closed_ttl_ns) && c.Valid(e.closed_ttl_ns >= 0);
}

// Seq 0 (the broker's own bridge, seen before it is listed) only ever says "not a bridge".
template <typename Codec>
bool Fields(Codec& c, RecordRef<Codec, BridgeEvent> e) {
  return c.Field(e.seq) && c.Enum(e.role, BridgeRole::kIncoming) &&
         c.Valid(e.seq != 0 || e.role == BridgeRole::kNone);
}

template <typename Codec>
bool Fields(Codec& c, RecordRef<Codec, KickCommand> e) {
  return c.Field(e.client_id) && c.Field(e.caller) && c.Field(e.token_line) && c.Bool(e.with_will);
}

template <typename Record>
void EncodeFields(const Record& record, std::string* out) {
  ByteWriter writer(out);
  Fields(writer, record);
}

template <typename Record>
bool DecodeFields(std::string_view bytes, Record* record) {
  ByteReader reader(bytes);
  return Fields(reader, *record) && reader.Done();
}

}  // namespace

void Encode(const ConnectionEvent& e, std::string* out) { EncodeFields(e, out); }
bool Decode(std::string_view bytes, ConnectionEvent* e) { return DecodeFields(bytes, e); }
void Encode(const CloseEvent& e, std::string* out) { EncodeFields(e, out); }
bool Decode(std::string_view bytes, CloseEvent* e) { return DecodeFields(bytes, e); }
void Encode(const SubscriptionEvent& e, std::string* out) { EncodeFields(e, out); }
bool Decode(std::string_view bytes, SubscriptionEvent* e) { return DecodeFields(bytes, e); }
void Encode(const OfflineSessionEvent& e, std::string* out) { EncodeFields(e, out); }
bool Decode(std::string_view bytes, OfflineSessionEvent* e) { return DecodeFields(bytes, e); }
void Encode(const OfflineSessionEndEvent& e, std::string* out) { EncodeFields(e, out); }
bool Decode(std::string_view bytes, OfflineSessionEndEvent* e) { return DecodeFields(bytes, e); }
void Encode(const ResyncEvent& e, std::string* out) { EncodeFields(e, out); }
bool Decode(std::string_view bytes, ResyncEvent* e) { return DecodeFields(bytes, e); }
void Encode(const SettingsEvent& e, std::string* out) { EncodeFields(e, out); }
bool Decode(std::string_view bytes, SettingsEvent* e) { return DecodeFields(bytes, e); }
void Encode(const BridgeEvent& e, std::string* out) { EncodeFields(e, out); }
bool Decode(std::string_view bytes, BridgeEvent* e) { return DecodeFields(bytes, e); }
void Encode(const KickCommand& c, std::string* out) { EncodeFields(c, out); }

void Encode(const LogCommand& c, std::string* out) {
  ByteWriter w(out);
  w.Field(c.level);
  w.Field(c.text);
}

bool Decode(std::string_view bytes, LogCommand* c) {
  ByteReader r(bytes);
  std::uint8_t level = 0;
  if (!r.Field(level) || !r.Field(c->text) || !r.Done()) return false;
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

namespace {

bool IsPrintableAscii(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

}  // namespace

bool Decode(std::string_view bytes, KickCommand* c) {
  return DecodeFields(bytes, c) && !c->client_id.empty() &&
         c->client_id.size() <= kMaxKickClientIdBytes &&
         c->client_id.find('\0') == std::string::npos && c->caller.size() <= kMaxKickCallerBytes &&
         c->token_line.size() <= kMaxKickCallerBytes && IsPrintableAscii(c->caller) &&
         IsPrintableAscii(c->token_line);
}

void Encode(const BansCommand& c, std::string* out) {
  ByteWriter w(out);
  w.Field(c.sequence);
  w.Field(static_cast<std::uint32_t>(c.bans.size()));
  for (const Ban& ban : c.bans) {
    w.Field(ban.as());
    w.Field(ban.who);
    w.Field(ban.until_ns);
  }
}

bool Decode(std::string_view bytes, BansCommand* c) {
  ByteReader r(bytes);
  std::uint32_t count = 0;
  if (!r.Field(c->sequence) || !r.Field(count) || count > kMaxBans) return false;
  c->bans.clear();
  c->bans.reserve(count);
  std::string as;
  std::string who;
  for (std::uint32_t i = 0; i < count; ++i) {
    Ban ban;
    if (!r.Field(as) || !r.Field(who) || !r.Field(ban.until_ns)) return false;
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

namespace {

int LowerHexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::optional<Uuid> ParseFormattedUuid(std::string_view text) {
  if (text.size() != 36) return std::nullopt;
  Uuid uuid{};
  std::size_t at = 0;
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) {
      if (text[at++] != '-') return std::nullopt;
    }
    const int high = LowerHexDigit(text[at++]);
    const int low = LowerHexDigit(text[at++]);
    if (high < 0 || low < 0) return std::nullopt;
    uuid[i] = static_cast<std::uint8_t>(high << 4 | low);
  }
  return uuid;
}

}  // namespace mqc
