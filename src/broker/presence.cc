// SPDX-License-Identifier: BSD-3-Clause
#include "broker/presence.h"

#include <unistd.h>

#include <charconv>
#include <cstring>
#include <utility>

#include "link/clock.h"
#include "link/json_string.h"
#include "link/name_table.h"

namespace mqc {

namespace {

// MQTT topics are at most 65,535 bytes; a longer one the broker would not route.
constexpr std::size_t kMaxTopicBytes = 65535;

// The longest of the three kinds ("disconnected").
constexpr std::size_t kMaxKindBytes = 12;

void AppendNumber(std::int64_t value, std::string* out) {
  char digits[24];
  const auto result = std::to_chars(digits, digits + sizeof digits, value);
  out->append(digits, static_cast<std::size_t>(result.ptr - digits));
}

// The fields both payloads begin with, in EMQX's names.
void AppendClient(const ObservedConnection& connection, std::string* out) {
  out->assign("{\"clientid\":");
  AppendJsonString(connection.client_id, out);
  // EMQX shows a client without one as "undefined" (4.x) or null (5.x): omitted here.
  if (!connection.username.empty()) {
    out->append(",\"username\":");
    AppendJsonString(connection.username, out);
  }
  out->append(",\"ipaddress\":");
  AppendJsonString(connection.ip_address, out);
  out->append(",\"sockport\":");
  AppendNumber(connection.local_port, out);
  // MQTT 3.1 names its protocol "MQIsdp" in CONNECT; 3.1.1 and 5 "MQTT".
  out->append(connection.protocol_version == 3 ? ",\"proto_name\":\"MQIsdp\",\"proto_ver\":"
                                               : ",\"proto_name\":\"MQTT\",\"proto_ver\":");
  AppendNumber(connection.protocol_version, out);
}

std::int64_t Ms(std::int64_t ns) { return ns / 1000000; }

// kUnspecified, and any number no release names, is "unknown".
constexpr NamedValue<CloseReason> kPresenceReasons[] = {
    {CloseReason::kClientDisconnect, "normal"},
    {CloseReason::kConnectionLost, "tcp_closed"},
    {CloseReason::kSessionTakenOver, "takenover"},
    {CloseReason::kKicked, "kicked"},
    {CloseReason::kAccessRevoked, "access_revoked"},
    {CloseReason::kBrokerShutdown, "shutdown"},
    {CloseReason::kAuthenticationFailed, "not_authorized"},
};

}  // namespace

std::string DefaultPresenceNode() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "mosquitto@localhost";
  std::string node = std::string("mosquitto@") + host;
  // A host name is one topic level already; anything else becomes '_' (never expected).
  for (char& c : node) {
    if (c == '/' || c == '+' || c == '#') c = '_';
  }
  return node;
}

const char* PresenceReason(CloseReason reason) {
  return NameOf(kPresenceReasons, reason, "unknown").data();
}

bool IsPresenceClientId(std::string_view client_id) {
  if (client_id.empty()) return false;
  for (const char c : client_id) {
    if (c == '+' || c == '#' || c == '\0') return false;
  }
  return true;
}

void BuildConnectedPayload(const ObservedConnection& connection, std::uint32_t expiry_interval,
                           std::int64_t now_ns, std::string* out) {
  AppendClient(connection, out);
  out->append(",\"keepalive\":");
  AppendNumber(connection.keep_alive, out);
  out->append(connection.clean_session ? ",\"clean_start\":true" : ",\"clean_start\":false");
  out->append(",\"expiry_interval\":");
  AppendNumber(expiry_interval, out);
  // Only accepted connections are announced: connack is always 0.
  out->append(",\"connack\":0,\"connected_at\":");
  AppendNumber(Ms(connection.open_time_ns), out);
  out->append(",\"ts\":");
  AppendNumber(Ms(now_ns), out);
  out->push_back('}');
}

void BuildDisconnectedPayload(const ObservedConnection& connection, CloseReason reason,
                              std::int64_t close_ns, std::int64_t now_ns, std::string* out) {
  AppendClient(connection, out);
  out->append(",\"reason\":\"");
  out->append(PresenceReason(reason));  // plain words: no escape needed
  out->append("\",\"disconnected_at\":");
  AppendNumber(Ms(close_ns), out);
  out->append(",\"ts\":");
  AppendNumber(Ms(now_ns), out);
  out->push_back('}');
}

Presence::Presence(PresenceOptions options, PresencePublisher* publisher, std::int64_t (*now_ns)())
    : options_(std::move(options)), publisher_(publisher), now_ns_(now_ns) {
  if (options_.node.empty()) options_.node = DefaultPresenceNode();
  if (now_ns_ == nullptr) now_ns_ = NowNs;
  prefix_ = "$SYS/brokers/" + options_.node + "/clients/";
}

bool Presence::IsPresenceTopic(const char* topic) const {
  return std::strncmp(topic, prefix_.data(), prefix_.size()) == 0;
}

bool Presence::Publishable(std::string_view client_id) const {
  return prefix_.size() + client_id.size() + 1 + kMaxKindBytes <= kMaxTopicBytes &&
         IsPresenceClientId(client_id);
}

std::uint32_t Presence::ExpiryInterval(const ObservedConnection& connection) const {
  // A clean session ends with its connection. A session the client asked to keep (clean
  // session / clean start false) lasts until the broker's persistent_client_expiration, or for
  // ever (MQTT 5's 0xffffffff). An MQTT 5 client's own Session Expiry Interval is not visible
  // to plugins (2.0 and 2.1): the broker's limit is shown for it.
  if (connection.clean_session) return 0;
  if (persistent_expiration_s_ <= 0 || persistent_expiration_s_ >= 0xffffffffLL) {
    return 0xffffffffU;
  }
  return static_cast<std::uint32_t>(persistent_expiration_s_);
}

void Presence::Send(std::string_view client_id, std::string_view kind, const std::string& payload,
                    bool retain) {
  topic_.assign(prefix_);
  topic_.append(client_id);
  topic_.push_back('/');
  topic_.append(kind);
  if (publisher_->Publish(topic_, payload, retain)) {
    ++published_;
  } else {
    ++refused_;
  }
}

void Presence::Opened(const ObservedConnection& connection) {
  if (!Publishable(connection.client_id)) {
    ++skipped_;
    return;
  }
  if (options_.events) {
    BuildConnectedPayload(connection, ExpiryInterval(connection), now_ns_(), &payload_);
    Send(connection.client_id, "connected", payload_, false);
  }
  if (options_.retained) {
    static const std::string kOnline = "online";
    Send(connection.client_id, "state", kOnline, true);
  }
}

void Presence::Closed(const ObservedConnection& connection, CloseReason reason,
                      std::int64_t close_ns, SessionAfterClose after) {
  if (!Publishable(connection.client_id)) {
    return;  // counted as skipped when it opened
  }
  if (options_.events) {
    BuildDisconnectedPayload(connection, reason, close_ns, now_ns_(), &payload_);
    Send(connection.client_id, "disconnected", payload_, false);
  }
  if (!options_.retained) return;
  switch (after) {
    case SessionAfterClose::kTakenOver:
      break;  // the new connection's "online" follows at once
    case SessionAfterClose::kKeptOffline: {
      static const std::string kOffline = "offline";
      Send(connection.client_id, "state", kOffline, true);
      break;
    }
    case SessionAfterClose::kEnds: {
      static const std::string kCleared;  // an empty retained message removes the retained one
      Send(connection.client_id, "state", kCleared, true);
      break;
    }
  }
}

void Presence::OfflineSessionEnded(std::string_view client_id) {
  if (!options_.retained || !Publishable(client_id)) {
    return;
  }
  static const std::string kCleared;
  Send(client_id, "state", kCleared, true);
}

}  // namespace mqc
