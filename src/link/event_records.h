// SPDX-License-Identifier: BSD-3-Clause
// The records that cross the shared rings, and their byte encoding.
//
// events ring (broker thread -> companion): what happened to connections, in broker order.
// commands ring (companion -> broker thread): log lines and requests, acted on at TICK.
// The encoding is little more than the fields in order, strings as u32 length + bytes; a decoder
// rejects any record that is short, long or out of range, so a bug on one side cannot make the
// other read out of bounds.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "link/ban_list.h"
#include "link/connection.h"
#include "link/topic_mapping.h"

namespace mqc {

enum class EventType : std::uint16_t {
  kConnection = 1,   // a connection, open or (refused) closed, with everything known at CONNECT
  kClose = 2,        // an open connection ended
  kSubscribe = 3,    // a subscription added or its QoS changed
  kUnsubscribe = 4,  // a subscription removed
  kResyncBegin = 5,  // a full state follows: forget everything known before
  kResyncEnd = 6,    // the full state is complete
  // A persistent session without a connection (restored from the broker's persistence file
  // at start, or left by a disconnect); its subscriptions follow as kSubscribe of its seq.
  kOfflineSession = 7,
  kOfflineSessionEnd = 8,  // that session is gone: resumed, cleaned by a connect, forgotten
  kSettings = 9,           // the registry's options, changed by a configuration reload
  // The bridge role of open connections, learnt after their kConnection (the client layout
  // was verified since): BridgeEvent.
  kBridge = 10,
};

enum class CommandType : std::uint16_t {
  kLog = 1,   // a line for the broker's log
  kKick = 2,  // disconnect a client (an admin's request through the HTTP API)
  kBans = 3,  // the whole ban list, replacing the one the broker holds (BansCommand)
};

using Uuid = std::array<std::uint8_t, 16>;

inline constexpr std::uint32_t kNoStatsSlot = 0xffffffff;

struct ConnectionEvent {
  std::uint64_t seq = 0;
  Uuid uid{};
  std::int64_t open_time_ns = 0;
  std::int64_t close_time_ns = 0;  // non-zero: the connection was refused (closed at once)
  CloseReason close_reason = CloseReason::kUnspecified;
  std::uint8_t protocol_version = 0;
  bool clean_session = true;
  AuthMechanism auth_mechanism = AuthMechanism::kUnspecified;
  AuthState auth_state = AuthState::kUnspecified;
  std::uint16_t keep_alive = 0;
  std::uint16_t port = 0;                   // remote port; 0 when unknown
  std::uint16_t local_port = 0;             // the listener's port; 0 when unknown
  std::uint32_t stats_slot = kNoStatsSlot;  // its ConnectionStatsSlot in the shared region
  std::string client_id;
  std::string username;
  std::string ip_address;
  std::string auth_method;
  std::string peer_certificate_subject;  // on require_certificate listeners
  BridgeRole bridge = BridgeRole::kUnknown;
  // Behind a load balancer (a PROXY protocol listener): the socket's peer, the balancer, whose
  // socket the kernel's figures describe; empty and 0 otherwise (broker/client_facts.h).
  std::string proxy_address;
  std::uint16_t proxy_port = 0;
  WillState will = WillState::kUnknown;  // whether it sent a will (link/connection.h)
};

struct CloseEvent {
  std::uint64_t seq = 0;
  std::int64_t close_time_ns = 0;
  CloseReason reason = CloseReason::kUnspecified;
  RequestStatistics totals;   // the connection's traffic, final (its slot is reused after this)
  std::int64_t idle_ns = -1;  // time since the client last sent data, at close; -1 unknown
};

struct SubscriptionEvent {  // kSubscribe and kUnsubscribe
  std::uint64_t seq = 0;
  std::uint8_t qos = 0;
  std::string filter;
};

struct OfflineSessionEvent {
  std::uint64_t seq = 0;  // from the same sequence as connections
  Uuid uid{};
  std::int64_t since_ns = 0;          // when it went offline, or was restored at start
  std::int64_t expiry_time_ns = 0;    // when it expires by its own expiry interval; 0 unknown
  std::uint8_t protocol_version = 0;  // 0 when unknown (restored from the file)
  std::string client_id;
  std::string username;
};

struct OfflineSessionEndEvent {
  std::uint64_t seq = 0;
};

struct ResyncEvent {  // kResyncBegin and kResyncEnd
  std::uint64_t generation = 0;
};

struct SettingsEvent {  // kSettings: the options of the registry that a reload can change
  DefaultPattern default_pattern = DefaultPattern::kEvents;
  std::uint32_t closed_max = 0;
  std::int64_t closed_ttl_ns = 0;
};

// kBridge: an open connection's bridge role (kUnknown: it could not be read); seq 0 (role
// kNone): every open connection whose role is still unknown is no bridge (sent once, before
// the kBridge of each exception among them).
struct BridgeEvent {
  std::uint64_t seq = 0;
  BridgeRole role = BridgeRole::kUnknown;
};

// Log levels as the broker's MOSQ_LOG_* values, so the plugin passes them through unchanged.
enum class LogLevel : std::uint8_t { kInfo = 0x01, kNotice = 0x02, kWarning = 0x04, kError = 0x08 };

struct LogCommand {
  LogLevel level = LogLevel::kInfo;
  std::string text;
};

// kKick: the broker thread checks it again (KickCommand bounds below), kicks the client by id
// at its next TICK and logs who asked. Never carries the token, only which line of which file.
struct KickCommand {
  std::string client_id;   // 1 to kMaxKickClientIdBytes bytes, no NUL
  std::string caller;      // the HTTP peer, "127.0.0.1:41234"; at most kMaxKickCallerBytes
  std::string token_line;  // "admin token file line 3"; at most kMaxKickCallerBytes
  // Whether the broker publishes the client's will: MQTT publishes the will of a connection the
  // server closes, so only an admin's preventWill turns it off.
  bool with_will = true;
};
inline constexpr std::size_t kMaxKickClientIdBytes = 65535;
inline constexpr std::size_t kMaxKickCallerBytes = 128;

// kBans: every ban the broker refuses CONNECTs for, as a whole (at most kMaxBans), sent at every
// change and when a companion starts. Only what the broker needs: kind, who, until.
struct BansCommand {
  std::vector<Ban> bans;
  // The companion's number of this list (CompanionControl::bans_sent), which the broker thread
  // acknowledges once it is in force (BrokerControl::bans_applied).
  std::uint64_t sequence = 0;
};

// Encoders append to *out (cleared first); decoders return false on a malformed record.
void Encode(const ConnectionEvent& event, std::string* out);
void Encode(const CloseEvent& event, std::string* out);
void Encode(const SubscriptionEvent& event, std::string* out);
void Encode(const OfflineSessionEvent& event, std::string* out);
void Encode(const OfflineSessionEndEvent& event, std::string* out);
void Encode(const ResyncEvent& event, std::string* out);
void Encode(const SettingsEvent& event, std::string* out);
void Encode(const BridgeEvent& event, std::string* out);
void Encode(const LogCommand& command, std::string* out);
void Encode(const KickCommand& command, std::string* out);
void Encode(const BansCommand& command, std::string* out);

bool Decode(std::string_view bytes, ConnectionEvent* event);
bool Decode(std::string_view bytes, CloseEvent* event);
bool Decode(std::string_view bytes, SubscriptionEvent* event);
bool Decode(std::string_view bytes, OfflineSessionEvent* event);
bool Decode(std::string_view bytes, OfflineSessionEndEvent* event);
bool Decode(std::string_view bytes, ResyncEvent* event);
bool Decode(std::string_view bytes, SettingsEvent* event);
bool Decode(std::string_view bytes, BridgeEvent* event);
bool Decode(std::string_view bytes, LogCommand* command);
// Also false when a field is out of its bounds, or holds a NUL or (caller, token_line) a byte
// that is not printable ASCII: what reaches the broker's log is one clean line.
bool Decode(std::string_view bytes, KickCommand* command);
// Also false for more than kMaxBans bans, or a ban whose target ParseBanTarget refuses or does
// not give back as it was sent (the canonical form).
bool Decode(std::string_view bytes, BansCommand* command);

// "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx"
std::string FormatUuid(const Uuid& uuid);
// The bytes of a text FormatUuid wrote; nothing for any other text (upper case included).
std::optional<Uuid> ParseFormattedUuid(std::string_view text);

}  // namespace mqc
