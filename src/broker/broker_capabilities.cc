// SPDX-License-Identifier: BSD-3-Clause
#include "broker/broker_capabilities.h"

#include <set>
#include <string>
#include <vector>

namespace mqc {

namespace {

// MOSQ_ERR_* codes the plugin names (include/mosquitto/defs.h of 2.1; the 2.0 values are equal).
constexpr int kErrSuccess = 0;
constexpr int kErrNomem = 1;
constexpr int kErrProtocol = 2;
constexpr int kErrInval = 3;
constexpr int kErrNoConn = 4;
constexpr int kErrNotFound = 6;
constexpr int kErrConnLost = 7;
constexpr int kErrNotSupported = 10;
constexpr int kErrAuth = 11;
constexpr int kErrAclDenied = 12;
constexpr int kErrUnknown = 13;
constexpr int kErrPluginDefer = 17;
constexpr int kErrKeepalive = 19;
constexpr int kErrAlreadyExists = 31;
constexpr int kErrPluginIgnore = 32;
constexpr int kErrSessionTakenOver = 142;
constexpr int kErrAdministrativeAction = 152;

// Parses "2.<minor>.<patch>" exactly; false for anything else.
bool ParseVersion(std::string_view text, BrokerVersion* version) {
  int parts[3] = {0, 0, 0};
  int part = 0;
  bool digit_seen = false;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      if (parts[part] > 999) return false;
      parts[part] = parts[part] * 10 + (c - '0');
      digit_seen = true;
    } else if (c == '.' && digit_seen && part < 2) {
      ++part;
      digit_seen = false;
    } else {
      return false;
    }
  }
  if (part != 2 || !digit_seen || parts[0] != 2) return false;
  *version = BrokerVersion{parts[0], parts[1], parts[2]};
  return true;
}

}  // namespace

std::string BrokerVersion::Text() const {
  if (!known()) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

bool BrokerVersion::AtLeast(int at_major, int at_minor, int at_patch) const {
  if (!known()) return false;
  if (major != at_major) return major > at_major;
  if (minor != at_minor) return minor > at_minor;
  return patch >= at_patch;
}

BrokerVersion FindBrokerVersion(std::string_view binary) {
  std::set<std::string_view> found;
  std::size_t begin = 0;
  while (begin < binary.size()) {
    std::size_t end = binary.find('\0', begin);
    if (end == std::string_view::npos) end = binary.size();
    const std::string_view text = binary.substr(begin, end - begin);
    BrokerVersion version;
    // "2.0.11" is 6 bytes; a longer one than 11 ("2.999.999") is something else.
    if (text.size() >= 5 && text.size() <= 11 && text[0] == '2' && ParseVersion(text, &version)) {
      found.insert(text);
    }
    begin = end + 1;
  }
  BrokerVersion version;
  if (found.size() == 1) ParseVersion(*found.begin(), &version);
  return version;
}

std::string BrokerCapabilities::Describe(bool unread_acl_source, bool denials_hidden) const {
  std::string text = "mosquitto_connections: broker " + version.Text() + ", plugin API " +
                     (api_2_1 ? "2.1" : "2.0");
  std::vector<std::string> missing;
  if (!api_2_1) {
    if (!ExactDeliveries(unread_acl_source)) {
      missing.push_back(
          "mosquitto_acl_check (deliveries are counted before the ACL plugins after this one "
          "decide: a message they deny still counts as delivered, a subscription they deny is "
          "still listed, and no denial is shown)");
    }
    if (!get_state) {
      missing.push_back(
          "mosquitto__get_state (a close is CLIENT_DISCONNECT, SESSION_TAKEN_OVER, KICKED or "
          "AUTHENTICATION_FAILED where known, else unspecified)");
    }
  } else if (!client_lookup) {
    missing.push_back(
        "mosquitto_client (an MQTT 5 session's end by expiry is seen only where the client "
        "layout is verified)");
  }
  if (!version.known()) missing.push_back("its version string (per_listener_settings refused)");
  // 2.1 with another ACL source: nothing to export would show a refused request.
  const char* const hidden_21 =
      "; ACL denials are not shown (2.1 reports a subscription or a publish only once every ACL "
      "source allowed it, and this plugin stays out of the ACL chain another source decides)";
  const bool hidden_here = api_2_1 && denials_hidden;
  if (missing.empty()) {
    return text + (hidden_here ? hidden_21 : "; every feature available") + DropsClause();
  }
  text += "; this broker does not export";
  for (std::size_t i = 0; i < missing.size(); ++i) {
    text += (i == 0 ? " " : "; ") + missing[i];
  }
  if (hidden_here) text += hidden_21;
  return text + DropsClause();
}

std::string BrokerCapabilities::DropsClause() const {
  // 2.0 asks the READ ACL check right before it queues a message (broker/queue_drops.h); 2.1
  // queues an open connection's messages with no event before, and sends MESSAGE_OUT only for
  // what it sends. Expiry and the client's maximum packet size are checked as the broker
  // writes a message out, with no event on either (docs/broker-versions.md).
  if (api_2_1) {
    return "; dropped messages: QoS 0 for offline sessions seen (where no other ACL source "
           "exists), full queues, expired and too large hidden";
  }
  return "; dropped messages: full queues (once the client layout is verified) and QoS 0 for "
         "offline sessions seen, expired and too large hidden";
}

CloseReason CloseReasonFromBrokerReason(int reason) {
  switch (reason) {
    case kErrSuccess:
      return CloseReason::kClientDisconnect;
    case kErrSessionTakenOver:
      return CloseReason::kSessionTakenOver;
    case kErrAdministrativeAction:
      return CloseReason::kKicked;
    case kErrAuth:
      // An open client the broker no longer lets in (a reload's re-check).
      return CloseReason::kAccessRevoked;
    case -1:
      return CloseReason::kUnspecified;
    default:
      // Socket errors, end of stream, keepalive, protocol errors: no DISCONNECT packet.
      return CloseReason::kConnectionLost;
  }
}

CloseReason CloseReasonFromClientState(int state) {
  switch (state) {
    case -1:
      return CloseReason::kUnspecified;
    case 2:
    case 18:
      return CloseReason::kClientDisconnect;
    case 17:
      return CloseReason::kSessionTakenOver;
    default:
      return CloseReason::kConnectionLost;
  }
}

bool IsRefusal(bool api_2_1, bool pending, bool has_client_id, int client_state) {
  if (api_2_1) return pending;
  if (!has_client_id) return true;
  if (!pending) return false;
  return client_state < 0 || client_state == 0;
}

std::string BrokerErrorText(int code) {
  switch (code) {
    case kErrSuccess:
      return "no error";
    case kErrNomem:
      return "out of memory";
    case kErrProtocol:
      return "protocol error";
    case kErrInval:
      return "invalid input";
    case kErrNoConn:
      return "not connected";
    case kErrNotFound:
      return "not found";
    case kErrConnLost:
      return "connection lost";
    case kErrNotSupported:
      return "not supported";
    case kErrAuth:
      return "authorisation failed";
    case kErrAclDenied:
      return "access denied by ACL";
    case kErrUnknown:
      return "unknown error";
    case kErrPluginDefer:
      return "plugin deferred";
    case kErrKeepalive:
      return "keepalive exceeded";
    case kErrAlreadyExists:
      return "already exists";
    case kErrPluginIgnore:
      return "plugin ignored";
    default:
      return "error " + std::to_string(code);
  }
}

}  // namespace mqc
