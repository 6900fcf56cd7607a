// SPDX-License-Identifier: BSD-3-Clause
// The broker functions the plugin calls that not every supported broker exports, looked up once
// at start (dlsym), each with a fallback; and the 2.1 event data the 2.0 headers lack.
//
// The plugin links only names that Mosquitto 2.0's own export list (src/linker.syms, 34 names)
// and 2.1's share: a name outside it makes the .so fail to load ("undefined symbol") into every
// build that exports just the list (2.0.19 on, every Makefile build, Debian 13's 2.0.21, 2.1's
// Makefile build). scripts/check-broker-symbols.py checks the .so against each broker of the
// test matrix. docs/broker-versions.md says what each build exports and hides.
//
// One binary serves 2.0 and 2.1: the event data of the events both send is laid out alike (2.1
// renamed TICK's next_ns to next_ms and kept its place), and the 2.1 events are declared below
// from 2.1's include/mosquitto/broker.h (tag v2.1.2).
//
// Threads: the broker thread only.
#pragma once

#include <cstdint>
#include <string>

#include "broker/broker_capabilities.h"

struct mosquitto;
struct mqtt5__property;

namespace mqc {

// 2.1's events (include/mosquitto/broker.h, enum mosquitto_plugin_event).
constexpr int kEventConnect = 11;
constexpr int kEventSubscribe = 12;
constexpr int kEventUnsubscribe = 13;
constexpr int kEventMessageOut = 27;
constexpr int kEventClientOffline = 28;
// 2.1's answer codes the 2.0 headers lack are in broker/broker.h (kBrokerErrPluginIgnore,
// kBrokerErrBanned).

// struct mosquitto_evt_connect (2.1).
struct EventConnect21 {
  void* future;
  mosquitto* client;
  void* future2[4];
};

// struct mosquitto_evt_client_offline and struct mosquitto_evt_disconnect (2.1: with a real
// reason; 2.0 has the same layout and always sends -1).
struct EventDisconnect21 {
  void* future;
  mosquitto* client;
  int reason;
  void* future2[4];
};

// struct mosquitto_subscription (2.1).
struct Subscription21 {
  char* client_id;
  char* topic_filter;
  void* properties;
  std::uint32_t identifier;
  std::uint8_t options;  // the granted QoS in its low two bits (MQTT 5 subscription options)
  std::uint8_t padding[3];
  void* future2[8];
};

// struct mosquitto_evt_subscribe and struct mosquitto_evt_unsubscribe (2.1).
struct EventSubscribe21 {
  void* future;
  mosquitto* client;
  Subscription21 data;
  void* future2[8];
};

class BrokerApi {
 public:
  // Looks everything up; reads the broker's version from its executable.
  static BrokerApi Find();

  const BrokerCapabilities& capabilities() const { return capabilities_; }
  bool api_2_1() const { return capabilities_.api_2_1; }

  // mosquitto_acl_check of 2.0; only when capabilities().acl_check.
  int AclCheck(mosquitto* client, const char* topic, std::uint32_t payload_length, void* payload,
               std::uint8_t qos, bool retain, int access) const;
  // MQTT 5 string and binary properties of a message; false when absent.
  bool ReadStringProperty(const void* properties, int identifier, std::string* value) const;
  bool ReadBinaryProperty(const void* properties, int identifier, std::string* value) const;
  // The text of a MOSQ_ERR_* code.
  std::string ErrorText(int code) const;
  // The broker's state of a client (2.0: mosquitto__get_state), or -1 where unknown.
  int ClientState(const mosquitto* client) const;
  // The client the broker holds under `client_id` (2.1's mosquitto_client), or null; always
  // null where capabilities().client_lookup is false.
  const mosquitto* ClientById(const char* client_id) const;

 private:
  bool ReadPropertyWithoutReaders(const void* properties, int identifier, std::string* value) const;

  using AclCheckFunction = int (*)(mosquitto*, const char*, std::uint32_t, void*, std::uint8_t,
                                   bool, int);
  using ReadStringFunction = const void* (*)(const void*, int, char**, bool);
  using ReadBinaryFunction = const void* (*)(const void*, int, void**, std::uint16_t*, bool);
  using StrerrorFunction = const char* (*)(int);
  using GetStateFunction = int (*)(const mosquitto*);
  // include/mosquitto/broker.h of v2.1.2: struct mosquitto *mosquitto_client(const char *).
  using ClientByIdFunction = mosquitto* (*)(const char*);

  BrokerCapabilities capabilities_;
  AclCheckFunction acl_check_ = nullptr;
  ReadStringFunction read_string_ = nullptr;
  ReadBinaryFunction read_binary_ = nullptr;
  StrerrorFunction strerror_ = nullptr;
  GetStateFunction get_state_ = nullptr;
  ClientByIdFunction client_by_id_ = nullptr;
};

}  // namespace mqc
