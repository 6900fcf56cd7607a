// SPDX-License-Identifier: BSD-3-Clause
#include "broker/presence.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <utility>

#include "link/clock.h"

namespace mqc {

namespace {

// MQTT topics are at most 65,535 bytes; a longer one the broker would not route.
constexpr std::size_t kMaxTopicBytes = 65535;

// The longest of the three kinds ("disconnected").
constexpr std::size_t kMaxKindBytes = 12;

void AppendJsonString(std::string_view text, std::string* out) {
  out->push_back('"');
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (byte < 0x20 || byte == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", byte);
      out->append(escaped);
    } else {
      out->push_back(c);  // MQTT strings are UTF-8 the broker has checked: passed through
    }
  }
  out->push_back('"');
}

void AppendKey(const char* key, std::string* out) {
  if (out->back() != '{') out->push_back(',');
  out->push_back('"');
  out->append(key);
  out->append("\":");
}

void AppendString(const char* key, std::string_view value, std::string* out) {
  AppendKey(key, out);
  AppendJsonString(value, out);
}

void AppendNumber(const char* key, std::int64_t value, std::string* out) {
  AppendKey(key, out);
  out->append(std::to_string(value));
}

void AppendBool(const char* key, bool value, std::string* out) {
  AppendKey(key, out);
  out->append(value ? "true" : "false");
}

// The fields both payloads begin with, in EMQX's names.
void AppendClient(const ConnectionEvent& connection, std::string* out) {
  out->assign("{");
  AppendString("clientid", connection.client_id, out);
  // EMQX shows a client without one as "undefined" (4.x) or null (5.x): omitted here.
  if (!connection.username.empty()) AppendString("username", connection.username, out);
  AppendString("ipaddress", connection.ip_address, out);
  AppendNumber("sockport", connection.local_port, out);
  // MQTT 3.1 names its protocol "MQIsdp" in CONNECT; 3.1.1 and 5 "MQTT".
  AppendString("proto_name", connection.protocol_version == 3 ? "MQIsdp" : "MQTT", out);
  AppendNumber("proto_ver", connection.protocol_version, out);
}

std::int64_t Ms(std::int64_t ns) { return ns / 1000000; }

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

bool IsValidPresenceNode(std::string_view node) {
  if (node.empty() || node.size() > 255) return false;
  for (const char c : node) {
    if (c == '/' || c == '+' || c == '#' || c == '\0') return false;
  }
  return true;
}

const char* PresenceReason(CloseReason reason) {
  switch (reason) {
    case CloseReason::kClientDisconnect:
      return "normal";
    case CloseReason::kConnectionLost:
      return "tcp_closed";
    case CloseReason::kSessionTakenOver:
      return "takenover";
    case CloseReason::kKicked:
      return "kicked";
    case CloseReason::kAccessRevoked:
      return "access_revoked";
    case CloseReason::kBrokerShutdown:
      return "shutdown";
    case CloseReason::kAuthenticationFailed:
      return "not_authorized";
    case CloseReason::kUnspecified:
      break;
  }
  return "unknown";
}

bool IsPresenceClientId(std::string_view client_id) {
  return !client_id.empty() && client_id.find_first_of("+#") == std::string_view::npos &&
         client_id.find('\0') == std::string_view::npos;
}

void BuildConnectedPayload(const ConnectionEvent& connection, std::uint32_t expiry_interval,
                           std::int64_t now_ns, std::string* out) {
  AppendClient(connection, out);
  AppendNumber("keepalive", connection.keep_alive, out);
  AppendBool("clean_start", connection.clean_session, out);
  AppendNumber("expiry_interval", expiry_interval, out);
  AppendNumber("connack", 0, out);  // only accepted connections are announced
  AppendNumber("connected_at", Ms(connection.open_time_ns), out);
  AppendNumber("ts", Ms(now_ns), out);
  out->push_back('}');
}

void BuildDisconnectedPayload(const ConnectionEvent& connection, CloseReason reason,
                              std::int64_t close_ns, std::int64_t now_ns, std::string* out) {
  AppendClient(connection, out);
  AppendString("reason", PresenceReason(reason), out);
  AppendNumber("disconnected_at", Ms(close_ns), out);
  AppendNumber("ts", Ms(now_ns), out);
  out->push_back('}');
}

Presence::Presence(PresenceOptions options, PresencePublisher* publisher,
                   std::int64_t (*now_ns)())
    : options_(std::move(options)), publisher_(publisher), now_ns_(now_ns) {
  if (options_.node.empty()) options_.node = DefaultPresenceNode();
  if (now_ns_ == nullptr) now_ns_ = NowNs;
  prefix_ = "$SYS/brokers/" + options_.node + "/clients/";
}

bool Presence::IsPresenceTopic(const char* topic) const {
  return std::strncmp(topic, prefix_.data(), prefix_.size()) == 0;
}

std::uint32_t Presence::ExpiryInterval(const ConnectionEvent& connection) const {
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

void Presence::Opened(const ConnectionEvent& connection) {
  if (!IsPresenceClientId(connection.client_id) ||
      prefix_.size() + connection.client_id.size() + 1 + kMaxKindBytes > kMaxTopicBytes) {
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

void Presence::Closed(const ConnectionEvent& connection, CloseReason reason, std::int64_t close_ns,
                      SessionAfterClose after) {
  if (!IsPresenceClientId(connection.client_id) ||
      prefix_.size() + connection.client_id.size() + 1 + kMaxKindBytes > kMaxTopicBytes) {
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
  if (!options_.retained || !IsPresenceClientId(client_id) ||
      prefix_.size() + client_id.size() + 1 + kMaxKindBytes > kMaxTopicBytes) {
    return;
  }
  static const std::string kCleared;
  Send(client_id, "state", kCleared, true);
}

}  // namespace mqc
