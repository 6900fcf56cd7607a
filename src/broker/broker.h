// SPDX-License-Identifier: BSD-3-Clause
// What the broker-side decisions (broker_events.h) need from the broker, without a Mosquitto
// header: a client's facts, the ACL sources after this plugin, kick, publish, log, the clock and
// what this broker build can do. plugin/mosquitto_adapter.h implements it over Mosquitto's plugin
// API (2.0 and 2.1, their differences behind BrokerCapabilities); tests/support/fake_broker.h
// implements it for the unit tests.
//
// The handlers are templates over the implementation (BrokerEvents<B>), and both implementations
// are `final`: the per-message path makes the same direct calls it made before this interface,
// no virtual one.
//
// The codes, access values and the two event layouts below are Mosquitto's public plugin ABI
// (include/mosquitto.h, include/mosquitto_broker.h of v2.0.11; include/mosquitto/broker.h of
// v2.1.2 keeps them): plugin/broker_events.cc checks each against the real headers at compile
// time.
//
// Threads: the broker thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <vector>

#include "broker/broker_capabilities.h"
#include "broker/callback_chain.h"
#include "broker/client_facts.h"
#include "link/broker_config.h"
#include "link/event_records.h"

namespace mqc {

// A client as the broker knows it (Mosquitto's struct mosquitto), never looked into here.
struct BrokerClient;

// The broker's answers (MOSQ_ERR_*).
constexpr int kBrokerSuccess = 0;
constexpr int kBrokerErrAuth = 11;
constexpr int kBrokerErrAclDenied = 12;
constexpr int kBrokerErrPluginDefer = 17;
// 2.1's MOSQ_ERR_PLUGIN_IGNORE: "as if this plugin were not there".
constexpr int kBrokerErrPluginIgnore = 32;
// 2.1's MOSQ_ERR_BANNED: from BASIC_AUTH, CONNACK 0x8A (Banned) for MQTT 5 and 5 (not
// authorised) for 3.1.1 (src/handle_connect.c, v2.1.0 on). 2.0 has no such answer.
constexpr int kBrokerErrBanned = 138;

// The events whose callback chains 2.0 combines (MOSQ_EVT_*).
constexpr int kEventAclCheck = 2;
constexpr int kEventBasicAuth = 3;

// An ACL check's access (MOSQ_ACL_*).
constexpr int kAclRead = 1;
constexpr int kAclWrite = 2;
constexpr int kAclSubscribe = 4;
constexpr int kAclUnsubscribe = 8;

// MQTT 5 property identifiers read from a publish (MQTT_PROP_*).
constexpr int kPropertyResponseTopic = 8;
constexpr int kPropertyCorrelationData = 9;

// struct mosquitto_evt_acl_check, laid out alike (2.0 and 2.1): the callback hands the broker's
// own struct over, nothing is copied on the per-message path.
struct AclCheckEvent {
  void* future;
  BrokerClient* client;
  const char* topic;
  const void* payload;
  const void* properties;
  int access;
  std::uint32_t payloadlen;
  std::uint8_t qos;
  bool retain;
  void* future2[4];
};

// struct mosquitto_evt_message (MESSAGE, 2.1's MESSAGE_OUT), laid out alike.
struct MessageEvent {
  void* future;
  BrokerClient* client;
  char* topic;
  void* payload;
  const void* properties;
  char* reason_string;
  std::uint32_t payloadlen;
  std::uint8_t qos;
  std::uint8_t reason_code;
  bool retain;
  std::uint8_t padding;
  void* future2[4];
};

class Broker {
 public:
  virtual ~Broker() = default;

  virtual const BrokerCapabilities& capabilities() const = 0;
  bool api_2_1() const { return capabilities().api_2_1; }

  // The broker's accessors (mosquitto_client_*); the id and username may be null.
  virtual const char* ClientId(const BrokerClient* client) const = 0;
  virtual const char* ClientUsername(const BrokerClient* client) const = 0;
  virtual const char* ClientAddress(const BrokerClient* client) const = 0;
  virtual int ProtocolVersion(const BrokerClient* client) const = 0;
  // The client's socket, or -1 (offline session, WebSockets client).
  virtual int ClientSocket(const BrokerClient* client) const = 0;
  // Everything known about the client at CONNECT (plugin/client_reader.h).
  virtual ClientFacts ReadFacts(const BrokerClient* client, const BrokerConfig& config) const = 0;
  // The peer of the client's socket (getpeername): for the broker's own bridge context, the
  // remote broker. False when there is no socket or it has no IP peer.
  virtual bool PeerAddress(const BrokerClient* client, std::string* ip,
                           std::uint16_t* port) const = 0;
  // Milliseconds since the client last sent data, or -1 when the socket cannot tell.
  virtual std::int64_t IdleMs(const BrokerClient* client) const = 0;
  // The broker's state of a client (2.0: mosquitto__get_state), or -1 where unknown.
  virtual int ClientState(const BrokerClient* client) const = 0;
  // The client object the broker holds under `client_id` (2.1's mosquitto_client), connected
  // or offline; null when it holds none, and always null where capabilities().client_lookup is
  // false. Never per message: the plugin asks at TICK, a bounded number of ids each time.
  virtual const BrokerClient* FindClient(const char* client_id) const = 0;
  // mosquitto_client_sub_count, mosquitto_client_clean_session, mosquitto_client_keepalive:
  // what broker/broker_layout.h checks its reads against.
  virtual int SubCount(const BrokerClient* client) const = 0;
  virtual bool CleanSession(const BrokerClient* client) const = 0;
  virtual int Keepalive(const BrokerClient* client) const = 0;
  // The usable size of the client's allocation (the broker callocs each client), 0 when it
  // cannot tell.
  virtual std::size_t ClientAllocationSize(const BrokerClient* client) const = 0;
  // Copies `size` bytes at `offset` inside the client's own struct to `out`; false, and nothing
  // read, unless they lie inside its allocation. Integers only: broker/broker_layout.h decides
  // what to read, and only once its layout agreed with the accessors above.
  virtual bool ReadClientBytes(const BrokerClient* client, std::size_t offset, std::size_t size,
                               void* out) const = 0;

  // The answer of the ACL sources after this plugin (2.0's mosquitto_acl_check); only when
  // capabilities().acl_check. The broker calls this plugin's ACL callback again inside it.
  virtual int AskLaterAclSources(const AclCheckEvent& check) = 0;
  // 2.0: this plugin's own node in the broker's chain of `event`'s callbacks (kEventBasicAuth,
  // kEventAclCheck), found from inside that callback (FindCallerNode); null where not found.
  virtual const BrokerCallbackNode* FindOwnCallback(int event) = 0;
  // Whether any of these plugin files, as the broker loaded them, is not a version 5 plugin
  // (no mosquitto_plugin_version): 2.0 asks those after every callback, through their v4
  // functions. True also where a file cannot be told (never assume nothing checks).
  virtual bool AnyOlderPlugin(const std::vector<std::string>& paths) const = 0;
  // MQTT 5 string and binary properties of a message; false when absent.
  virtual bool ReadStringProperty(const void* properties, int identifier,
                                  std::string* value) const = 0;
  virtual bool ReadBinaryProperty(const void* properties, int identifier,
                                  std::string* value) const = 0;

  // 2.1: registers (`on`) or unregisters this plugin's watched ACL_CHECK callback
  // (BrokerEvents::OnAclCheck21; broker/offline_watch.h says when). A MOSQ_ERR_* code.
  virtual int WatchAclChecks(bool on) = 0;

  // mosquitto_kick_client_by_clientid: the client's DISCONNECT event comes before it returns;
  // `with_will` false sets the client's state to disconnecting first, so its will is dropped.
  // A MOSQ_ERR_* code.
  virtual int Kick(const std::string& client_id, bool with_will) = 0;
  // mosquitto_broker_publish_copy: queued for the broker's next turn.
  virtual bool Publish(const std::string& topic, const std::string& payload, bool retain) = 0;
  virtual void Log(LogLevel level, const std::string& text) = 0;
  // The text of a MOSQ_ERR_* code.
  virtual std::string ErrorText(int code) const = 0;

  // Wall clock (for records) and monotonic clock (for intervals), in nanoseconds.
  virtual std::int64_t NowNs() const = 0;
  virtual std::int64_t MonotonicNs() const = 0;
};

}  // namespace mqc
