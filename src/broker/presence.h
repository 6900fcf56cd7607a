// SPDX-License-Identifier: BSD-3-Clause
// Presence messages: MQTT messages the broker publishes when a connection opens or closes, on
// EMQX's system topics and with EMQX's payload fields (README, "Presence messages"), so that a
// subscriber written for EMQX works unchanged:
//   $SYS/brokers/<node>/clients/<client id>/connected     (QoS 0, not retained)
//   $SYS/brokers/<node>/clients/<client id>/disconnected  (QoS 0, not retained)
//   $SYS/brokers/<node>/clients/<client id>/state         (retained online/offline, optional)
// Field names: https://docs.emqx.com/en/emqx/latest/observability/mqtt-system-topics.html
// ("Client Online and Offline Events").
//
// Presence follows the SessionTable's own decisions (it is the table's ConnectionObserver): a
// message goes out exactly when the registry counts a connection as opened or closed, so a
// refused CONNECT, a reload's re-check, a restored offline session and a kick's held
// re-checks publish nothing of their own, and a takeover's old connection closes before the new
// one opens.
//
// Publishing from any broker callback is safe: mosquitto_broker_publish only appends the
// message to the broker's list of plugin messages (src/plugin_public.c), which its main loop
// queues to subscribers at the start of its next turn (src/loop.c: queue_plugin_msgs), in
// v2.0.11, v2.0.21 and v2.1.2 alike. So messages are handed over at once, in order, and nothing
// is buffered here.
//
// Threads: the broker thread only (it is called from the SessionTable). Builds topics and
// payloads in reused buffers (the broker copies them); never called per message.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "broker/session_table.h"

namespace mqc {

// Where presence messages go: mosquitto_broker_publish_copy in the plugin, a recorder in tests.
class PresencePublisher {
 public:
  virtual ~PresencePublisher() = default;
  // A QoS 0 message from no client; false when the broker did not take it.
  virtual bool Publish(const std::string& topic, const std::string& payload, bool retain) = 0;
};

struct PresenceOptions {
  bool events = false;    // plugin_opt_presence_events
  bool retained = false;  // plugin_opt_presence_retained: the retained .../state topic too
  std::string node;       // plugin_opt_presence_node; DefaultPresenceNode() when unset
};

// "mosquitto@<host name>", as EMQX names its nodes "emqx@<host>": one topic level, as
// plugin_opt_presence_node must be (link/plugin_options.cc checks that option).
std::string DefaultPresenceNode();

// EMQX's word for why a connection closed, where one matches; the registry's own otherwise
// (docs/presence.md has the table).
const char* PresenceReason(CloseReason reason);

// Whether `client_id` can be one topic level of a presence topic: not empty, no '+' or '#'
// (a '/' is kept, as EMQX does: the topic then has more levels).
bool IsPresenceClientId(std::string_view client_id);

// The JSON payloads. `expiry_interval`: the session expiry in seconds as the broker applies it.
// Times are Unix nanoseconds; the payload shows milliseconds.
void BuildConnectedPayload(const ObservedConnection& connection, std::uint32_t expiry_interval,
                           std::int64_t now_ns, std::string* out);
void BuildDisconnectedPayload(const ObservedConnection& connection, CloseReason reason,
                              std::int64_t close_ns, std::int64_t now_ns, std::string* out);

class Presence : public ConnectionObserver {
 public:
  // `now_ns`: the wall clock (Unix nanoseconds), for "ts".
  Presence(PresenceOptions options, PresencePublisher* publisher,
           std::int64_t (*now_ns)() = nullptr);

  // The broker's persistent_client_expiration in seconds (0: none): the expiry_interval of a
  // session that outlives its connection.
  void SetPersistentClientExpiration(std::int64_t seconds) { persistent_expiration_s_ = seconds; }

  // Whether `topic` is one of the presence topics (a NUL-terminated topic): deliveries of them
  // are counted nowhere. One compare of the prefix.
  bool IsPresenceTopic(const char* topic) const;

  const std::string& prefix() const { return prefix_; }
  std::uint64_t published() const { return published_; }
  std::uint64_t refused() const { return refused_; }  // the broker did not take them
  std::uint64_t skipped() const { return skipped_; }  // client ids that are no topic level

  // ConnectionObserver.
  void Opened(const ObservedConnection& connection) override;
  void Closed(const ObservedConnection& connection, CloseReason reason, std::int64_t close_ns,
              SessionAfterClose after) override;
  void OfflineSessionEnded(std::string_view client_id) override;

 private:
  std::uint32_t ExpiryInterval(const ObservedConnection& connection) const;
  bool Publishable(std::string_view client_id) const;
  void Send(std::string_view client_id, std::string_view kind, const std::string& payload,
            bool retain);

  PresenceOptions options_;
  PresencePublisher* publisher_;
  std::int64_t (*now_ns_)();
  std::string prefix_;  // "$SYS/brokers/<node>/clients/"
  std::int64_t persistent_expiration_s_ = 0;
  std::string topic_;    // reused
  std::string payload_;  // reused
  std::uint64_t published_ = 0;
  std::uint64_t refused_ = 0;
  std::uint64_t skipped_ = 0;
};

}  // namespace mqc
