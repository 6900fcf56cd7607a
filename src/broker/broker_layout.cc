// SPDX-License-Identifier: BSD-3-Clause
#include "broker/broker_layout.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <iterator>
#include <tuple>
#include <utility>

#include "link/name_table.h"

namespace mqc {

namespace {

// ---- The table ----
//
// Offsets in `struct mosquitto` (lib/mosquitto_internal.h) as a broker build lays it out
// (WITH_BROKER), measured with offsetof() against upstream's header of each tag (the mirror of
// eclipse-mosquitto/mosquitto) on x86-64 with every combination of the options below; the
// types involved (int, uint16_t, uint32_t, bool, long, time_t, pointers) are aligned alike by
// every LP64 ABI (aarch64 too), and BrokerLayoutCandidates offers nothing elsewhere.
//
// What moves the fields (lib/mosquitto_internal.h):
//   - WITH_EPOLL (2.1: or WITH_KQUEUE) puts `int ident` first. Every Linux build has it (CMake
//     defines it when sys/epoll.h exists; config.mk sets WITH_EPOLL:=yes), and the plugin
//     already relies on `sock` at 4 (plugin/client_reader.h): only epoll layouts are here.
//   - WITH_ADNS, with glibc only (`defined(__GLIBC__) && defined(WITH_ADNS)`), adds
//     `struct gaicb *adns` before `protocol`: everything from `protocol` on moves.
//   - WITH_TLS adds the `ssl` ... `tls_keyform` block before `want_write`: everything from
//     `clean_start` on moves.
//   - WITH_WEBSOCKETS on 2.0 (libwebsockets) adds `struct lws *wsi` after `sub_count`: it moves
//     none of these fields, so it has no layouts of its own. On 2.1 the same holds for
//     WS_IS_LWS; WS_IS_BUILTIN (2.1's default in CMake and in config.mk's WITH_WEBSOCKETS:=yes)
//     embeds `struct ws_data wsd` before `protocol`: everything from `protocol` on moves.
// Which tags change the layout of these fields:
//   - v2.0.12 replaced `subs`/`shared_subs` by one `subs` array and dropped `shared_sub_count`
//     (the subscription rewrite): `sub_count` moves 8 back. Debian 12's 2.0.11-1.2+deb12u2
//     carries that change (debian/patches/CVE-2021-34434.patch) but not the next one: its
//     layout is v2.0.12's, and "2.0.11" offers both.
//   - v2.0.13 split `struct mosquitto_msg_data`'s msg_count/msg_bytes into inflight_* and
//     queued_*: the message counts and everything after them move.
//   - v2.0.15 dropped `bool want_connect`: `clean_start` moves 1 back.
//   - v2.0.21 (`keepalive_next`/`_prev`) and v2.0.22 (`keepalive_add_time`) add fields after
//     these only; v2.0.13 renamed `removed_from_by_id` to `in_by_id` (same place).
//   - v2.1.0 reorders the struct (`last_cmsg_id`, `id_hashv`, `transport`, two alias tables,
//     `is_persisted`, `subs_capacity` before `subs_count`); v2.1.0 to v2.1.2 lay it out alike.
//   - `protocol`'s values: 2.0 numbers MQTT 3.1/3.1.1/5 as 1/2/5, 2.1 as 3/4/5.
// The matrix's brokers (docs/broker-versions.md): Debian's 2.0.11 and 2.0.21 are built with
// CMake, -DWITH_ADNS=ON -DWITH_WEBSOCKETS=ON and TLS on by default (debian/rules of
// 2.0.11-1.2+deb12u2 and 2.0.21-1): "TLS ADNS". 2.1-make (WITH_ADNS off, WITH_WEBSOCKETS=yes)
// and 2.1-cmake (WITH_ADNS OFF, WITH_WEBSOCKETS and WITH_WEBSOCKETS_BUILTIN ON by default):
// "TLS builtin WebSockets".
//
// Field order: protocol (4), keepalive (2), clean_start (1), sub_count (4),
// session_expiry_time (8), session_expiry_interval (4), is_bridge (1), then the message counts
// (int, 4 each).

constexpr FieldPlace F(std::uint16_t offset, std::uint8_t size) { return FieldPlace{offset, size}; }
constexpr FieldPlace kAbsent{};

// 2.0.11 and 2.0.12: one message count per direction (struct mosquitto_msg_data is 48 bytes,
// msg_count at 24). `expiry`: session_expiry_time.
constexpr BrokerLayout Layout20Old(const char* name, std::uint16_t protocol,
                                   std::uint16_t keepalive, std::uint16_t clean_start,
                                   std::uint16_t expiry, std::uint16_t sub_count,
                                   std::uint16_t msgs_in) {
  return BrokerLayout{name,
                      ProtocolEncoding::k20,
                      {F(protocol, 4), F(keepalive, 2), F(clean_start, 1), F(sub_count, 4),
                       F(expiry, 8), F(expiry + 8, 4), F(expiry + 14, 1), kAbsent, kAbsent, kAbsent,
                       kAbsent, F(msgs_in, 4), F(msgs_in + 48, 4)}};
}

// 2.0.13 on and 2.1: in-flight and queued counts per direction (struct mosquitto_msg_data is
// 72 bytes; its inflight_count at 24, queued_count at 48). `expiry`: session_expiry_time.
constexpr BrokerLayout LayoutSplit(const char* name, ProtocolEncoding encoding,
                                   std::uint16_t protocol, std::uint16_t keepalive,
                                   std::uint16_t clean_start, std::uint16_t expiry,
                                   std::uint16_t sub_count, std::uint16_t msgs_in_inflight) {
  return BrokerLayout{
      name,
      encoding,
      {F(protocol, 4), F(keepalive, 2), F(clean_start, 1), F(sub_count, 4), F(expiry, 8),
       F(expiry + 8, 4), F(expiry + 14, 1), F(msgs_in_inflight, 4), F(msgs_in_inflight + 24, 4),
       F(msgs_in_inflight + 72, 4), F(msgs_in_inflight + 96, 4), kAbsent, kAbsent}};
}

constexpr ProtocolEncoding k20 = ProtocolEncoding::k20;
constexpr ProtocolEncoding k21 = ProtocolEncoding::k21;

// v2.0.11 (upstream's own tag).
constexpr BrokerLayout kV2011[] = {
    Layout20Old("2.0.11", 12, 48, 186, 192, 360, 248),
    Layout20Old("2.0.11 TLS", 12, 48, 310, 312, 480, 368),
    Layout20Old("2.0.11 ADNS", 24, 64, 202, 208, 376, 264),
    Layout20Old("2.0.11 TLS ADNS", 24, 64, 326, 328, 496, 384),
};
// v2.0.12, and Debian's 2.0.11 (see above).
constexpr BrokerLayout kV2012[] = {
    Layout20Old("2.0.12", 12, 48, 186, 192, 352, 248),
    Layout20Old("2.0.12 TLS", 12, 48, 310, 312, 472, 368),
    Layout20Old("2.0.12 ADNS", 24, 64, 202, 208, 368, 264),
    Layout20Old("2.0.12 TLS ADNS", 24, 64, 326, 328, 488, 384),
};
// v2.0.13, v2.0.14.
constexpr BrokerLayout kV2013[] = {
    LayoutSplit("2.0.13-2.0.14", k20, 12, 48, 186, 192, 400, 248),
    LayoutSplit("2.0.13-2.0.14 TLS", k20, 12, 48, 310, 312, 520, 368),
    LayoutSplit("2.0.13-2.0.14 ADNS", k20, 24, 64, 202, 208, 416, 264),
    LayoutSplit("2.0.13-2.0.14 TLS ADNS", k20, 24, 64, 326, 328, 536, 384),
};
// v2.0.15 to v2.0.22.
constexpr BrokerLayout kV2015[] = {
    LayoutSplit("2.0.15-2.0.22", k20, 12, 48, 185, 192, 400, 248),
    LayoutSplit("2.0.15-2.0.22 TLS", k20, 12, 48, 309, 312, 520, 368),
    LayoutSplit("2.0.15-2.0.22 ADNS", k20, 24, 64, 201, 208, 416, 264),
    LayoutSplit("2.0.15-2.0.22 TLS ADNS", k20, 24, 64, 325, 328, 536, 384),
};
// v2.1.0 to v2.1.2. "builtin WebSockets": WITH_WEBSOCKETS=WS_IS_BUILTIN.
constexpr BrokerLayout kV21[] = {
    LayoutSplit("2.1", k21, 24, 68, 234, 240, 452, 296),
    LayoutSplit("2.1 TLS", k21, 24, 68, 366, 368, 580, 424),
    LayoutSplit("2.1 ADNS", k21, 32, 76, 242, 248, 460, 304),
    LayoutSplit("2.1 TLS ADNS", k21, 32, 76, 374, 376, 588, 432),
    LayoutSplit("2.1 builtin WebSockets", k21, 80, 124, 290, 296, 508, 352),
    LayoutSplit("2.1 TLS builtin WebSockets", k21, 80, 124, 422, 424, 636, 480),
    LayoutSplit("2.1 ADNS builtin WebSockets", k21, 88, 132, 298, 304, 516, 360),
    LayoutSplit("2.1 TLS ADNS builtin WebSockets", k21, 88, 132, 430, 432, 644, 488),
};

template <std::size_t N>
void Append(const BrokerLayout (&layouts)[N], std::vector<const BrokerLayout*>* out) {
  for (const BrokerLayout& layout : layouts) out->push_back(&layout);
}

bool IsBool(std::int64_t value) { return value == 0 || value == 1; }

constexpr NamedValue<LayoutField> kLayoutFieldNames[] = {
    {LayoutField::kProtocol, "protocol"},
    {LayoutField::kKeepalive, "keepalive"},
    {LayoutField::kCleanStart, "clean_start"},
    {LayoutField::kSubCount, "sub_count"},
    {LayoutField::kSessionExpiryTime, "session_expiry_time"},
    {LayoutField::kSessionExpiryInterval, "session_expiry_interval"},
    {LayoutField::kIsBridge, "is_bridge"},
    {LayoutField::kMsgsInInflightCount, "msgs_in.inflight_count"},
    {LayoutField::kMsgsInQueuedCount, "msgs_in.queued_count"},
    {LayoutField::kMsgsOutInflightCount, "msgs_out.inflight_count"},
    {LayoutField::kMsgsOutQueuedCount, "msgs_out.queued_count"},
    {LayoutField::kMsgsInCount, "msgs_in.msg_count"},
    {LayoutField::kMsgsOutCount, "msgs_out.msg_count"},
};
static_assert(std::size(kLayoutFieldNames) == kLayoutFieldCount, "a layout field has no name");

}  // namespace

const char* LayoutFieldName(LayoutField field) {
  return NameOf(kLayoutFieldNames, field, "an unknown field").data();
}

std::size_t BrokerLayout::End() const {
  std::size_t end = 0;
  for (const FieldPlace& place : fields) {
    if (place.size != 0) end = std::max<std::size_t>(end, place.offset + place.size);
  }
  return end;
}

bool BrokerLayout::SamePlaces(const BrokerLayout& other) const {
  if (protocol != other.protocol) return false;
  for (std::size_t i = 0; i < kLayoutFieldCount; ++i) {
    if (fields[i].offset != other.fields[i].offset || fields[i].size != other.fields[i].size) {
      return false;
    }
  }
  return true;
}

std::vector<const BrokerLayout*> BrokerLayoutCandidates(const BrokerVersion& version) {
  std::vector<const BrokerLayout*> out;
  // Measured for LP64 only.
  if (sizeof(void*) != 8 || sizeof(long) != 8 || sizeof(std::time_t) != 8) return out;
  if (version.major != 2) return out;
  if (version.minor == 1) {
    Append(kV21, &out);
  } else if (version.minor == 0) {
    if (version.patch == 11) {
      Append(kV2012, &out);  // Debian's 2.0.11 first: the one this project runs on
      Append(kV2011, &out);
    } else if (version.patch == 12) {
      Append(kV2012, &out);
    } else if (version.patch == 13 || version.patch == 14) {
      Append(kV2013, &out);
    } else if (version.patch >= 15 && version.patch <= 22) {
      Append(kV2015, &out);
    }
  }
  return out;
}

int ProtocolVersionOf(ProtocolEncoding encoding, std::int64_t raw) {
  if (raw == 5) return 5;
  if (encoding == ProtocolEncoding::k20) {
    if (raw == 1) return 3;
    if (raw == 2) return 4;
  } else {
    if (raw == 3) return 3;
    if (raw == 4) return 4;
  }
  return 0;
}

std::optional<std::int64_t> ReadLayoutField(const Broker& broker, const BrokerClient* client,
                                            const BrokerLayout& layout, LayoutField field) {
  const FieldPlace& place = layout.place(field);
  unsigned char bytes[8] = {};
  if (place.size == 0 || place.size > sizeof(bytes) ||
      !broker.ReadClientBytes(client, place.offset, place.size, bytes)) {
    return std::nullopt;
  }
  // The broker's own byte order: the plugin runs in its process.
  switch (place.size) {
    case 1:
      return static_cast<std::int64_t>(bytes[0]);
    case 2: {
      std::uint16_t value = 0;
      std::memcpy(&value, bytes, sizeof(value));
      return value;
    }
    case 4: {
      std::int32_t value = 0;
      std::memcpy(&value, bytes, sizeof(value));
      // An unsigned 32-bit field (session_expiry_interval) keeps its value.
      if (field == LayoutField::kSessionExpiryInterval) return static_cast<std::uint32_t>(value);
      return value;
    }
    case 8: {
      std::int64_t value = 0;
      std::memcpy(&value, bytes, sizeof(value));
      return value;
    }
    default:
      return std::nullopt;
  }
}

BrokerLayoutVerifier::BrokerLayoutVerifier(const std::vector<const BrokerLayout*>& candidates,
                                           BrokerVersion version)
    : version_(version) {
  for (const BrokerLayout* layout : candidates) {
    Candidate candidate;
    candidate.layout = layout;
    candidates_.push_back(std::move(candidate));
  }
}

void BrokerLayoutVerifier::Start(Broker& broker) {
  if (state_ == State::kVerifying && candidates_.empty()) {
    Fail(broker, "no layout is known for Mosquitto " + version_.Text());
  }
}

std::string BrokerLayoutVerifier::Disagreement(const Broker& broker, const BrokerClient* client,
                                               const BrokerLayout& layout) {
  const std::size_t allocation = broker.ClientAllocationSize(client);
  if (allocation < layout.End()) {
    return "it reads up to byte " + std::to_string(layout.End()) +
           ", the client's allocation has " + std::to_string(allocation);
  }
  std::int64_t raw[kLayoutFieldCount] = {};
  for (std::size_t i = 0; i < kLayoutFieldCount; ++i) {
    const auto field = static_cast<LayoutField>(i);
    if (layout.place(field).size == 0) continue;
    const std::optional<std::int64_t> value = ReadLayoutField(broker, client, layout, field);
    if (!value) return "its " + std::string(LayoutFieldName(field)) + " cannot be read";
    raw[i] = *value;
  }
  auto at = [&raw](LayoutField field) { return raw[static_cast<std::size_t>(field)]; };
  auto differs = [](const std::string& name, std::int64_t read, std::int64_t accessor) {
    return name + " reads " + std::to_string(read) + ", the broker says " +
           std::to_string(accessor);
  };
  const int version = broker.ProtocolVersion(client);
  if (ProtocolVersionOf(layout.protocol, at(LayoutField::kProtocol)) != version) {
    return differs("protocol", at(LayoutField::kProtocol), version);
  }
  if (at(LayoutField::kKeepalive) != broker.Keepalive(client)) {
    return differs("keepalive", at(LayoutField::kKeepalive), broker.Keepalive(client));
  }
  const int clean = broker.CleanSession(client) ? 1 : 0;
  if (at(LayoutField::kCleanStart) != clean) {
    return differs("clean_start", at(LayoutField::kCleanStart), clean);
  }
  if (at(LayoutField::kSubCount) != broker.SubCount(client)) {
    return differs("sub_count", at(LayoutField::kSubCount), broker.SubCount(client));
  }
  // No accessor for the rest: what their types allow.
  if (!IsBool(at(LayoutField::kIsBridge))) {
    return "is_bridge reads " + std::to_string(at(LayoutField::kIsBridge));
  }
  for (std::size_t i = static_cast<std::size_t>(LayoutField::kMsgsInInflightCount);
       i < kLayoutFieldCount; ++i) {
    if (raw[i] < 0) {
      return std::string(LayoutFieldName(static_cast<LayoutField>(i))) + " reads " +
             std::to_string(raw[i]);
    }
  }
  if (at(LayoutField::kSessionExpiryTime) < 0) {
    return std::string(LayoutFieldName(LayoutField::kSessionExpiryTime)) + " reads " +
           std::to_string(at(LayoutField::kSessionExpiryTime));
  }
  return "";
}

void BrokerLayoutVerifier::Observe(Broker& broker, const BrokerClient* client) {
  if (state_ != State::kVerifying || client == nullptr) return;
  ++observations_;
  // Whether this client's subscription count changed since its last observation.
  const int sub_count = broker.SubCount(client);
  bool changed = false;
  auto seen = std::find_if(last_seen_.begin(), last_seen_.end(),
                           [client](const LastSeen& entry) { return entry.client == client; });
  if (seen != last_seen_.end()) {
    changed = seen->sub_count != sub_count;
    seen->sub_count = sub_count;
  } else {
    if (last_seen_.size() >= 16) last_seen_.erase(last_seen_.begin());
    last_seen_.push_back(LastSeen{client, sub_count});
  }

  for (auto it = candidates_.begin(); it != candidates_.end();) {
    const std::string why = Disagreement(broker, client, *it->layout);
    if (!why.empty()) {
      last_refusal_ = std::string(it->layout->name) + ": " + why;
      it = candidates_.erase(it);
      continue;
    }
    ++it->agreements;
    if (changed) ++it->changes;
    if (it->clients.size() < static_cast<std::size_t>(kClients) &&
        std::find(it->clients.begin(), it->clients.end(), client) == it->clients.end()) {
      it->clients.push_back(client);
    }
    ++it;
  }
  Decide(broker);
}

void BrokerLayoutVerifier::Decide(Broker& broker) {
  if (candidates_.empty()) {
    Fail(broker, "no layout for Mosquitto " + version_.Text() + " matches its accessors (" +
                     last_refusal_ + ")");
    return;
  }
  const Candidate* ready = nullptr;
  for (const Candidate& candidate : candidates_) {
    if (candidate.agreements >= kAgreements &&
        candidate.clients.size() >= static_cast<std::size_t>(kClients) &&
        candidate.changes >= kChanges) {
      ready = &candidate;
      break;
    }
  }
  if (ready == nullptr) {
    if (observations_ >= kMaxObservations) {
      Fail(broker, "no layout for Mosquitto " + version_.Text() + " was confirmed after " +
                       std::to_string(observations_) + " observations");
    }
    return;
  }
  // Every other candidate still in the running must put the fields in the same places.
  for (const Candidate& candidate : candidates_) {
    if (!candidate.layout->SamePlaces(*ready->layout)) {
      if (observations_ >= kMaxObservations) {
        Fail(broker, std::string("layouts ") + ready->layout->name + " and " +
                         candidate.layout->name + " both match Mosquitto " + version_.Text());
      }
      return;
    }
  }
  chosen_ = ready->layout;
  state_ = State::kVerified;
  std::size_t begin = SIZE_MAX;
  std::size_t end = 0;
  for (std::size_t i = static_cast<std::size_t>(LayoutField::kMsgsInInflightCount);
       i < kLayoutFieldCount; ++i) {
    const FieldPlace& place = chosen_->fields[i];
    if (place.size == 0) continue;
    begin = std::min<std::size_t>(begin, place.offset);
    end = std::max<std::size_t>(end, place.offset + place.size);
  }
  if (end > begin) {
    counts_offset_ = begin;
    counts_size_ = end - begin;
  }
  broker.Log(LogLevel::kNotice, "mosquitto_connections: broker layout: verified " +
                                    std::string(chosen_->name) + " for Mosquitto " +
                                    version_.Text() + " (" + std::to_string(ready->agreements) +
                                    " observations of " + std::to_string(ready->clients.size()) +
                                    " clients, " + std::to_string(ready->changes) +
                                    " subscription changes agreed with the "
                                    "broker's accessors)");
  candidates_.clear();
  last_seen_.clear();
}

void BrokerLayoutVerifier::Fail(Broker& broker, const std::string& why) {
  state_ = State::kUnknown;
  chosen_ = nullptr;
  candidates_.clear();
  last_seen_.clear();
  broker.Log(LogLevel::kWarning,
             "mosquitto_connections: broker layout: unknown: " + why +
                 "; session expiry, bridges and message queues are shown as unknown");
}

std::optional<std::int64_t> BrokerLayoutVerifier::Read(const Broker& broker,
                                                       const BrokerClient* client,
                                                       LayoutField field) const {
  if (!verified() || client == nullptr) return std::nullopt;
  if (broker.ClientAllocationSize(client) < chosen_->End()) return std::nullopt;
  return ReadLayoutField(broker, client, *chosen_, field);
}

std::optional<MessageCounts> BrokerLayoutVerifier::ReadMessageCounts(
    const Broker& broker, const BrokerClient* client) const {
  if (!verified() || client == nullptr || counts_size_ == 0) return std::nullopt;
  unsigned char bytes[kMaxCountsSpan];
  if (counts_size_ > sizeof(bytes) ||
      !broker.ReadClientBytes(client, counts_offset_, counts_size_, bytes)) {
    return std::nullopt;
  }
  bool negative = false;
  // A 4-byte int of the span, in the broker's own byte order; absent fields read as 0.
  auto count = [&](LayoutField field) -> std::uint32_t {
    const FieldPlace& place = chosen_->place(field);
    if (place.size != 4) return 0;
    std::int32_t value = 0;
    std::memcpy(&value, bytes + (place.offset - counts_offset_), sizeof(value));
    if (value < 0) negative = true;
    return value < 0 ? 0 : static_cast<std::uint32_t>(value);
  };
  MessageCounts counts;
  if (chosen_->place(LayoutField::kMsgsOutQueuedCount).size != 0) {
    for (auto [queue, queued, in_flight] :
         {std::tuple{&counts.out, LayoutField::kMsgsOutQueuedCount,
                     LayoutField::kMsgsOutInflightCount},
          std::tuple{&counts.in, LayoutField::kMsgsInQueuedCount,
                     LayoutField::kMsgsInInflightCount}}) {
      queue->known = MessageQueue::Known::kSplit;
      queue->queued = count(queued);
      queue->in_flight = count(in_flight);
      queue->total = queue->queued + queue->in_flight;
    }
  } else if (chosen_->place(LayoutField::kMsgsOutCount).size != 0) {
    counts.out.known = MessageQueue::Known::kTotal;
    counts.out.total = count(LayoutField::kMsgsOutCount);
    counts.in.known = MessageQueue::Known::kTotal;
    counts.in.total = count(LayoutField::kMsgsInCount);
  } else {
    return std::nullopt;
  }
  if (negative) return std::nullopt;
  return counts;
}

}  // namespace mqc
