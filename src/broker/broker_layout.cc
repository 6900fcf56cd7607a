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
// eclipse-mosquitto/mosquitto; `UT_hash_handle` from the tag's deps/uthash.h) on x86-64 with
// every combination of the options below, in a scratch directory outside this repository; the
// types involved (int, uint16_t, uint32_t, bool, long, time_t, pointers) are aligned alike by
// every LP64 ABI (aarch64 too), and BrokerLayoutCandidates offers nothing elsewhere. Measured
// for v2.0.11 to v2.0.22, v2.1.0 to v2.1.2, and master at 43c27150 and after it (2026-02).
//
// What moves the fields (lib/mosquitto_internal.h):
//   - WITH_EPOLL (2.1: or WITH_KQUEUE) puts `int ident` first. Every Linux build has it (CMake
//     defines it when sys/epoll.h exists; config.mk sets WITH_EPOLL:=yes), and the plugin
//     already relies on `sock` at 4 (plugin/client_reader.h): only epoll layouts are here.
//   - WITH_ADNS, with glibc only (`defined(__GLIBC__) && defined(WITH_ADNS)`), adds
//     `struct gaicb *adns` before `protocol`: everything from `protocol` on moves.
//   - WITH_TLS adds the `ssl` ... `tls_keyform` block before `want_write`: everything from
//     `clean_start` on moves.
//   - WITH_WEBSOCKETS on 2.0 (libwebsockets), and WS_IS_LWS on 2.1, add `struct lws *wsi` after
//     `sub_count`: only `hh_sock` and `remote_port` move ("WebSockets", "libwebsockets").
//     WS_IS_BUILTIN (2.1's default in CMake and in config.mk's WITH_WEBSOCKETS:=yes) embeds
//     `struct ws_data wsd` before `protocol`: everything from `protocol` on moves.
// Which tags change the layout of these fields:
//   - v2.0.12 replaced `subs`/`shared_subs` by one `subs` array and dropped `shared_sub_count`
//     (the subscription rewrite): `sub_count` moves 8 back, `hh_sock` too. Debian 12's
//     2.0.11-1.2+deb12u2 carries that change (debian/patches/CVE-2021-34434.patch) but not the
//     next one: its layout is v2.0.12's, and "2.0.11" offers both.
//   - v2.0.13 split `struct mosquitto_msg_data`'s msg_count/msg_bytes into inflight_* and
//     queued_*: the message counts and everything after them move.
//   - v2.0.15 dropped `bool want_connect`: `clean_start` moves 1 back.
//   - v2.0.21 (`keepalive_next`/`_prev`) and v2.0.22 (`keepalive_add_time`) add fields after
//     these only; v2.0.13 renamed `removed_from_by_id` to `in_by_id` (same place).
//   - v2.1.0 reorders the struct (`last_cmsg_id`, `id_hashv`, `transport`, two alias tables,
//     `is_persisted`, `subs_capacity` before `subs_count`, `remote_port`); v2.1.0 to v2.1.2 lay
//     it out alike.
//   - master after v2.1.2, commit 43c27150 ("Fix password length not being passed", issue
//     #3490), inserts `uint16_t password_len` after `last_mid`: `state` and everything after it
//     move (every field read here from `clean_start` on, 8 bytes), while the version stays
//     2.1.2. No later commit up to master's 7b8aba10 moves these fields. "2.1-43c27150".
//   - `protocol`'s values: 2.0 numbers MQTT 3.1/3.1.1/5 as 1/2/5, 2.1 as 3/4/5.
// The matrix's brokers (docs/broker-versions.md): Debian's 2.0.11 and 2.0.21 are built with
// CMake, -DWITH_ADNS=ON -DWITH_WEBSOCKETS=ON and TLS on by default (debian/rules of
// 2.0.11-1.2+deb12u2 and 2.0.21-1): "TLS ADNS WebSockets". 2.1-make (WITH_ADNS off,
// WITH_WEBSOCKETS=yes) and 2.1-cmake (WITH_ADNS OFF, WITH_WEBSOCKETS and WITH_WEBSOCKETS_BUILTIN
// ON by default): "TLS builtin WebSockets".
//
// `will` lies after `in_packet` and the out-packet pointers, at a fixed distance from
// `keepalive` in each line whatever the options (ADNS and builtin WebSockets come before
// `protocol`, TLS after `will_delay_time`): 88 bytes on 2.0 (last_mid, state, three time_t, a
// 40-byte struct mosquitto__packet, current_out_packet, out_packet), 100 on 2.1.0 to 2.1.2
// (state, transport, three time_t, struct mosquitto__packet_in, out_packet), 108 from 43c27150
// on (password_len moves the time_t fields by 8).
constexpr std::uint16_t kWillAfterKeepalive20 = 88;
constexpr std::uint16_t kWillAfterKeepalive21 = 100;
constexpr std::uint16_t kWillAfterKeepalive21Master = 108;

// The arguments, in the struct's order: protocol (4), address (then id and username, 8 each),
// keepalive (2), clean_start (1), session_expiry_time (8; session_expiry_interval 8 and
// is_bridge 14 after it), sub_count (4), msgs_in (struct mosquitto_msg_data; msgs_out follows
// it), hh_sock (struct UT_hash_handle, 56 bytes; its `key` at 40) and, on 2.1, remote_port (2).

constexpr FieldPlace F(std::uint16_t offset, std::uint8_t size) { return FieldPlace{offset, size}; }
constexpr FieldPlace kAbsent{};
// UT_hash_handle's `key` (deps/uthash.h of every tag here: tbl, prev, next, hh_prev, hh_next,
// then key).
constexpr std::uint16_t kHashKey = 40;

// The fields every layout has, before the message counts.
constexpr std::array<FieldPlace, kLayoutFieldCount> Common(
    std::uint16_t protocol, std::uint16_t address, std::uint16_t keepalive,
    std::uint16_t clean_start, std::uint16_t expiry, std::uint16_t sub_count, std::uint16_t hh_sock,
    std::uint16_t remote_port, std::uint16_t will_after_keepalive) {
  std::array<FieldPlace, kLayoutFieldCount> fields{};
  auto at = [&fields](LayoutField field) -> FieldPlace& {
    return fields[static_cast<std::size_t>(field)];
  };
  at(LayoutField::kProtocol) = F(protocol, 4);
  at(LayoutField::kKeepalive) = F(keepalive, 2);
  at(LayoutField::kCleanStart) = F(clean_start, 1);
  at(LayoutField::kSubCount) = F(sub_count, 4);
  at(LayoutField::kSessionExpiryTime) = F(expiry, 8);
  at(LayoutField::kSessionExpiryInterval) = F(expiry + 8, 4);
  at(LayoutField::kIsBridge) = F(expiry + 14, 1);
  at(LayoutField::kAddress) = F(address, 8);
  at(LayoutField::kId) = F(address + 8, 8);
  at(LayoutField::kUsername) = F(address + 16, 8);
  at(LayoutField::kSockKey) = F(hh_sock + kHashKey, 8);
  at(LayoutField::kRemotePort) = remote_port != 0 ? F(remote_port, 2) : kAbsent;
  at(LayoutField::kWill) = F(keepalive + will_after_keepalive, 8);
  return fields;
}

// 2.0.11 and 2.0.12: one message count per direction (struct mosquitto_msg_data is 48 bytes,
// msg_count at 32).
constexpr BrokerLayout Layout20Old(const char* name, std::uint16_t protocol, std::uint16_t address,
                                   std::uint16_t keepalive, std::uint16_t clean_start,
                                   std::uint16_t expiry, std::uint16_t sub_count,
                                   std::uint16_t msgs_in, std::uint16_t hh_sock) {
  BrokerLayout layout{name, ProtocolEncoding::k20,
                      Common(protocol, address, keepalive, clean_start, expiry, sub_count, hh_sock,
                             0, kWillAfterKeepalive20)};
  layout.fields[static_cast<std::size_t>(LayoutField::kMsgsInCount)] = F(msgs_in + 32, 4);
  layout.fields[static_cast<std::size_t>(LayoutField::kMsgsOutCount)] = F(msgs_in + 48 + 32, 4);
  return layout;
}

// 2.0.13 on and 2.1: in-flight and queued counts per direction (struct mosquitto_msg_data is
// 72 bytes; its inflight_count at 32, queued_count at 56).
constexpr BrokerLayout LayoutSplit(const char* name, ProtocolEncoding encoding,
                                   std::uint16_t protocol, std::uint16_t address,
                                   std::uint16_t keepalive, std::uint16_t clean_start,
                                   std::uint16_t expiry, std::uint16_t sub_count,
                                   std::uint16_t msgs_in, std::uint16_t hh_sock,
                                   std::uint16_t remote_port, std::uint16_t will_after_keepalive) {
  BrokerLayout layout{name, encoding,
                      Common(protocol, address, keepalive, clean_start, expiry, sub_count, hh_sock,
                             remote_port, will_after_keepalive)};
  auto at = [&layout](LayoutField field) -> FieldPlace& {
    return layout.fields[static_cast<std::size_t>(field)];
  };
  at(LayoutField::kMsgsInInflightCount) = F(msgs_in + 32, 4);
  at(LayoutField::kMsgsInQueuedCount) = F(msgs_in + 56, 4);
  at(LayoutField::kMsgsOutInflightCount) = F(msgs_in + 72 + 32, 4);
  at(LayoutField::kMsgsOutQueuedCount) = F(msgs_in + 72 + 56, 4);
  return layout;
}
constexpr BrokerLayout LayoutSplit20(const char* name, std::uint16_t protocol,
                                     std::uint16_t address, std::uint16_t keepalive,
                                     std::uint16_t clean_start, std::uint16_t expiry,
                                     std::uint16_t sub_count, std::uint16_t msgs_in,
                                     std::uint16_t hh_sock) {
  return LayoutSplit(name, ProtocolEncoding::k20, protocol, address, keepalive, clean_start, expiry,
                     sub_count, msgs_in, hh_sock, 0, kWillAfterKeepalive20);
}
constexpr BrokerLayout LayoutSplit21(const char* name, std::uint16_t protocol,
                                     std::uint16_t address, std::uint16_t keepalive,
                                     std::uint16_t clean_start, std::uint16_t expiry,
                                     std::uint16_t sub_count, std::uint16_t msgs_in,
                                     std::uint16_t hh_sock, std::uint16_t remote_port) {
  return LayoutSplit(name, ProtocolEncoding::k21, protocol, address, keepalive, clean_start, expiry,
                     sub_count, msgs_in, hh_sock, remote_port, kWillAfterKeepalive21);
}
// The same after 43c27150: `will` lies 8 bytes further from `keepalive`.
constexpr BrokerLayout LayoutSplit21Master(const char* name, std::uint16_t protocol,
                                           std::uint16_t address, std::uint16_t keepalive,
                                           std::uint16_t clean_start, std::uint16_t expiry,
                                           std::uint16_t sub_count, std::uint16_t msgs_in,
                                           std::uint16_t hh_sock, std::uint16_t remote_port) {
  return LayoutSplit(name, ProtocolEncoding::k21, protocol, address, keepalive, clean_start, expiry,
                     sub_count, msgs_in, hh_sock, remote_port, kWillAfterKeepalive21Master);
}

// v2.0.11 (upstream's own tag).
constexpr BrokerLayout kV2011[] = {
    Layout20Old("2.0.11", 12, 16, 48, 186, 192, 360, 216, 432),
    Layout20Old("2.0.11 WebSockets", 12, 16, 48, 186, 192, 360, 216, 440),
    Layout20Old("2.0.11 ADNS", 24, 32, 64, 202, 208, 376, 232, 448),
    Layout20Old("2.0.11 ADNS WebSockets", 24, 32, 64, 202, 208, 376, 232, 456),
    Layout20Old("2.0.11 TLS", 12, 16, 48, 310, 312, 480, 336, 552),
    Layout20Old("2.0.11 TLS WebSockets", 12, 16, 48, 310, 312, 480, 336, 560),
    Layout20Old("2.0.11 TLS ADNS", 24, 32, 64, 326, 328, 496, 352, 568),
    Layout20Old("2.0.11 TLS ADNS WebSockets", 24, 32, 64, 326, 328, 496, 352, 576),
};
// v2.0.12, and Debian's 2.0.11 (see above).
constexpr BrokerLayout kV2012[] = {
    Layout20Old("2.0.12", 12, 16, 48, 186, 192, 352, 216, 424),
    Layout20Old("2.0.12 WebSockets", 12, 16, 48, 186, 192, 352, 216, 432),
    Layout20Old("2.0.12 ADNS", 24, 32, 64, 202, 208, 368, 232, 440),
    Layout20Old("2.0.12 ADNS WebSockets", 24, 32, 64, 202, 208, 368, 232, 448),
    Layout20Old("2.0.12 TLS", 12, 16, 48, 310, 312, 472, 336, 544),
    Layout20Old("2.0.12 TLS WebSockets", 12, 16, 48, 310, 312, 472, 336, 552),
    Layout20Old("2.0.12 TLS ADNS", 24, 32, 64, 326, 328, 488, 352, 560),
    Layout20Old("2.0.12 TLS ADNS WebSockets", 24, 32, 64, 326, 328, 488, 352, 568),
};
// v2.0.13, v2.0.14.
constexpr BrokerLayout kV2013[] = {
    LayoutSplit20("2.0.13-2.0.14", 12, 16, 48, 186, 192, 400, 216, 472),
    LayoutSplit20("2.0.13-2.0.14 WebSockets", 12, 16, 48, 186, 192, 400, 216, 480),
    LayoutSplit20("2.0.13-2.0.14 ADNS", 24, 32, 64, 202, 208, 416, 232, 488),
    LayoutSplit20("2.0.13-2.0.14 ADNS WebSockets", 24, 32, 64, 202, 208, 416, 232, 496),
    LayoutSplit20("2.0.13-2.0.14 TLS", 12, 16, 48, 310, 312, 520, 336, 592),
    LayoutSplit20("2.0.13-2.0.14 TLS WebSockets", 12, 16, 48, 310, 312, 520, 336, 600),
    LayoutSplit20("2.0.13-2.0.14 TLS ADNS", 24, 32, 64, 326, 328, 536, 352, 608),
    LayoutSplit20("2.0.13-2.0.14 TLS ADNS WebSockets", 24, 32, 64, 326, 328, 536, 352, 616),
};
// v2.0.15 to v2.0.22.
constexpr BrokerLayout kV2015[] = {
    LayoutSplit20("2.0.15-2.0.22", 12, 16, 48, 185, 192, 400, 216, 472),
    LayoutSplit20("2.0.15-2.0.22 WebSockets", 12, 16, 48, 185, 192, 400, 216, 480),
    LayoutSplit20("2.0.15-2.0.22 ADNS", 24, 32, 64, 201, 208, 416, 232, 488),
    LayoutSplit20("2.0.15-2.0.22 ADNS WebSockets", 24, 32, 64, 201, 208, 416, 232, 496),
    LayoutSplit20("2.0.15-2.0.22 TLS", 12, 16, 48, 309, 312, 520, 336, 592),
    LayoutSplit20("2.0.15-2.0.22 TLS WebSockets", 12, 16, 48, 309, 312, 520, 336, 600),
    LayoutSplit20("2.0.15-2.0.22 TLS ADNS", 24, 32, 64, 325, 328, 536, 352, 608),
    LayoutSplit20("2.0.15-2.0.22 TLS ADNS WebSockets", 24, 32, 64, 325, 328, 536, 352, 616),
};
// v2.1.0 to v2.1.2. "builtin WebSockets": WITH_WEBSOCKETS=WS_IS_BUILTIN; "libwebsockets":
// WS_IS_LWS.
constexpr BrokerLayout kV21[] = {
    LayoutSplit21("2.1", 24, 32, 68, 234, 240, 452, 264, 520, 592),
    LayoutSplit21("2.1 libwebsockets", 24, 32, 68, 234, 240, 452, 264, 528, 600),
    LayoutSplit21("2.1 builtin WebSockets", 80, 88, 124, 290, 296, 508, 320, 584, 656),
    LayoutSplit21("2.1 ADNS", 32, 40, 76, 242, 248, 460, 272, 528, 600),
    LayoutSplit21("2.1 ADNS libwebsockets", 32, 40, 76, 242, 248, 460, 272, 536, 608),
    LayoutSplit21("2.1 ADNS builtin WebSockets", 88, 96, 132, 298, 304, 516, 328, 592, 664),
    LayoutSplit21("2.1 TLS", 24, 32, 68, 366, 368, 580, 392, 648, 720),
    LayoutSplit21("2.1 TLS libwebsockets", 24, 32, 68, 366, 368, 580, 392, 656, 728),
    LayoutSplit21("2.1 TLS builtin WebSockets", 80, 88, 124, 422, 424, 636, 448, 712, 784),
    LayoutSplit21("2.1 TLS ADNS", 32, 40, 76, 374, 376, 588, 400, 656, 728),
    LayoutSplit21("2.1 TLS ADNS libwebsockets", 32, 40, 76, 374, 376, 588, 400, 664, 736),
    LayoutSplit21("2.1 TLS ADNS builtin WebSockets", 88, 96, 132, 430, 432, 644, 456, 720, 792),
};
// Upstream's master from commit 43c27150 on (`password_len` after `last_mid`), which still
// says 2.1.2.
constexpr BrokerLayout kV21Master[] = {
    LayoutSplit21Master("2.1-43c27150", 24, 32, 68, 242, 248, 460, 272, 528, 600),
    LayoutSplit21Master("2.1-43c27150 libwebsockets", 24, 32, 68, 242, 248, 460, 272, 536, 608),
    LayoutSplit21Master("2.1-43c27150 builtin WebSockets", 80, 88, 124, 298, 304, 516, 328, 592,
                        664),
    LayoutSplit21Master("2.1-43c27150 ADNS", 32, 40, 76, 250, 256, 468, 280, 536, 608),
    LayoutSplit21Master("2.1-43c27150 ADNS libwebsockets", 32, 40, 76, 250, 256, 468, 280, 544,
                        616),
    LayoutSplit21Master("2.1-43c27150 ADNS builtin WebSockets", 88, 96, 132, 306, 312, 524, 336,
                        600, 672),
    LayoutSplit21Master("2.1-43c27150 TLS", 24, 32, 68, 374, 376, 588, 400, 656, 728),
    LayoutSplit21Master("2.1-43c27150 TLS libwebsockets", 24, 32, 68, 374, 376, 588, 400, 664, 736),
    LayoutSplit21Master("2.1-43c27150 TLS builtin WebSockets", 80, 88, 124, 430, 432, 644, 456, 720,
                        792),
    LayoutSplit21Master("2.1-43c27150 TLS ADNS", 32, 40, 76, 382, 384, 596, 408, 664, 736),
    LayoutSplit21Master("2.1-43c27150 TLS ADNS libwebsockets", 32, 40, 76, 382, 384, 596, 408, 672,
                        744),
    LayoutSplit21Master("2.1-43c27150 TLS ADNS builtin WebSockets", 88, 96, 132, 438, 440, 652, 464,
                        728, 800),
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
    {LayoutField::kAddress, "address"},
    {LayoutField::kId, "id"},
    {LayoutField::kUsername, "username"},
    {LayoutField::kSockKey, "hh_sock.key"},
    {LayoutField::kRemotePort, "remote_port"},
    {LayoutField::kWill, "will"},
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

bool BrokerLayout::SameFigures(const BrokerLayout& other) const {
  if (protocol != other.protocol) return false;
  for (std::size_t i = 0; i < kLayoutFieldCount; ++i) {
    switch (static_cast<LayoutField>(i)) {
      case LayoutField::kProtocol:
      case LayoutField::kKeepalive:
      case LayoutField::kCleanStart:
      case LayoutField::kSubCount:
      case LayoutField::kAddress:
      case LayoutField::kId:
      case LayoutField::kUsername:
      case LayoutField::kSockKey:
        continue;  // read to verify only
      default:
        break;
    }
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
    Append(kV21Master, &out);
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
    : candidates_(candidates), version_(version) {}

void BrokerLayoutVerifier::Start(Broker& broker) {
  if (state_ == State::kVerifying && candidates_.empty()) {
    Fail(broker, "no layout is known for Mosquitto " + version_.Text());
  }
}

std::string BrokerLayoutVerifier::Disagreement(const Broker& broker, const BrokerClient* client,
                                               const BrokerLayout& layout, bool* anchored) {
  *anchored = false;
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
  // The pointers: what the struct holds at the place, against what the accessor returns (both
  // as numbers; neither is followed).
  auto pointer = [](const void* p) {
    return static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(p));
  };
  auto pointer_differs = [](LayoutField field) {
    return std::string(LayoutFieldName(field)) + " does not hold the pointer the broker's " +
           "accessor returns";
  };
  const char* id = broker.ClientId(client);
  if (at(LayoutField::kId) != pointer(id)) return pointer_differs(LayoutField::kId);
  if (at(LayoutField::kAddress) != pointer(broker.ClientAddress(client))) {
    return pointer_differs(LayoutField::kAddress);
  }
  // mosquitto_client_username answers for an outgoing bridge's own context with the bridge's
  // local_username (src/plugin_public.c, 2.0.11 to 2.1.2): a difference proves nothing there,
  // so it only keeps this observation from verifying.
  const bool username_agrees = at(LayoutField::kUsername) == pointer(broker.ClientUsername(client));
  // Every socket client is in the broker's socket hash, keyed by its own `sock`
  // (src/context.c: context__init, src/websockets.c; HASH_ADD(hh_sock, ..., sock, ...)).
  const bool has_socket = broker.ClientSocket(client) >= 0;
  if (has_socket &&
      at(LayoutField::kSockKey) != pointer(reinterpret_cast<const char*>(client) + kSockOffset)) {
    return std::string(LayoutFieldName(LayoutField::kSockKey)) +
           " does not point at the client's own sock";
  }
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
  *anchored = id != nullptr && has_socket && username_agrees;
  return "";
}

void BrokerLayoutVerifier::Observe(Broker& broker, const BrokerClient* client) {
  if (state_ == State::kUnknown || client == nullptr) return;
  bool anchored = false;
  if (state_ == State::kVerified) {
    // Checked again on every client observed: a field moved by a few bytes that padding hid
    // from hh_sock shows here as soon as one of the accessors' fields disagrees. An alternate
    // that gives the same figures takes over silently.
    std::string why;
    for (auto it = candidates_.begin(); it != candidates_.end();) {
      why = Disagreement(broker, client, **it, &anchored);
      if (why.empty()) {
        ++it;
        continue;
      }
      if (*it == chosen_) last_refusal_ = why;
      it = candidates_.erase(it);
    }
    if (candidates_.empty()) {
      Fail(broker, std::string("the verified layout ") + chosen_->name + " disagrees now (" +
                       last_refusal_ + ")");
      return;
    }
    chosen_ = candidates_.front();
    return;
  }
  ++observations_;
  bool proved = false;
  for (auto it = candidates_.begin(); it != candidates_.end();) {
    const std::string why = Disagreement(broker, client, **it, &anchored);
    if (!why.empty()) {
      last_refusal_ = std::string((*it)->name) + ": " + why;
      it = candidates_.erase(it);
      continue;
    }
    proved = proved || anchored;
    ++it;
  }
  Decide(broker, proved);
}

void BrokerLayoutVerifier::Decide(Broker& broker, bool proved) {
  if (candidates_.empty()) {
    Fail(broker, "no layout for Mosquitto " + version_.Text() + " matches its accessors (" +
                     last_refusal_ + ")");
    return;
  }
  // Every candidate still in the running must give the same figures.
  const BrokerLayout* first = candidates_.front();
  for (const BrokerLayout* candidate : candidates_) {
    if (!candidate->SameFigures(*first)) {
      if (observations_ >= kMaxObservations) {
        Fail(broker, std::string("layouts ") + first->name + " and " + candidate->name +
                         " both match Mosquitto " + version_.Text());
      }
      return;
    }
  }
  if (!proved) {
    if (observations_ >= kMaxObservations) {
      Fail(broker, "no client of Mosquitto " + version_.Text() + " proved a layout after " +
                       std::to_string(observations_) + " observations");
    }
    return;
  }
  chosen_ = first;
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
  std::string alternates;
  for (const BrokerLayout* candidate : candidates_) {
    if (candidate != chosen_) {
      alternates += std::string(alternates.empty() ? "" : ", ") + candidate->name;
    }
  }
  broker.Log(LogLevel::kNotice,
             "mosquitto_connections: broker layout: verified " + std::string(chosen_->name) +
                 " for Mosquitto " + version_.Text() + " (after " + std::to_string(observations_) +
                 (observations_ == 1 ? " observation" : " observations") +
                 ": a client's id, address, username and socket-hash pointers and its protocol, "
                 "keepalive, clean start and subscription count agreed with the broker's "
                 "accessors" +
                 (alternates.empty() ? "" : "; " + alternates + " would give the same figures") +
                 ")");
}

void BrokerLayoutVerifier::Fail(Broker& broker, const std::string& why) {
  state_ = State::kUnknown;
  chosen_ = nullptr;
  candidates_.clear();
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
