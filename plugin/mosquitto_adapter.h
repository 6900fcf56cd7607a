// SPDX-License-Identifier: BSD-3-Clause
// The Broker (broker/broker.h) of a running Mosquitto, 2.0 or 2.1: the broker's accessors and
// calls, and the names not every build exports through BrokerApi (broker_api.h), whose
// capabilities tell the two APIs apart. One class for both: every difference between them is
// already a capability the decisions ask about.
//
// The accessors are defined here, inline: the handlers (BrokerEvents<MosquittoBroker>) call them
// directly, as they called the broker before.
//
// Threads: the broker thread only.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "broker/broker.h"
#include "broker_api.h"
#include "client_reader.h"
#include "link/clock.h"

// clang-format off
#include <mosquitto.h>
#include <mosquitto_broker.h>
// clang-format on

namespace mqc {

class MosquittoBroker final : public Broker {
 public:
  explicit MosquittoBroker(const BrokerApi* api) : api_(api) {}

  const BrokerCapabilities& capabilities() const override { return api_->capabilities(); }
  const char* ClientId(const BrokerClient* client) const override {
    return mosquitto_client_id(Native(client));
  }
  const char* ClientUsername(const BrokerClient* client) const override {
    return mosquitto_client_username(Native(client));
  }
  const char* ClientAddress(const BrokerClient* client) const override {
    return mosquitto_client_address(Native(client));
  }
  int ProtocolVersion(const BrokerClient* client) const override {
    return mosquitto_client_protocol_version(Native(client));
  }
  int ClientSocket(const BrokerClient* client) const override {
    return mqc::ClientSocket(Native(client));
  }
  ClientFacts ReadFacts(const BrokerClient* client, const BrokerConfig& config) const override {
    return mqc::ReadFacts(Native(client), config);
  }
  bool PeerAddress(const BrokerClient* client, std::string* ip,
                   std::uint16_t* port) const override {
    return mqc::PeerAddress(Native(client), ip, port);
  }
  std::int64_t IdleMs(const BrokerClient* client) const override {
    return mqc::IdleMs(Native(client));
  }
  int ClientState(const BrokerClient* client) const override {
    return api_->ClientState(Native(client));
  }
  const BrokerClient* FindClient(const char* client_id) const override {
    return reinterpret_cast<const BrokerClient*>(api_->ClientById(client_id));
  }
  int SubCount(const BrokerClient* client) const override {
    return mosquitto_client_sub_count(Native(client));
  }
  bool CleanSession(const BrokerClient* client) const override {
    return mosquitto_client_clean_session(Native(client));
  }
  int Keepalive(const BrokerClient* client) const override {
    return mosquitto_client_keepalive(Native(client));
  }
  std::size_t ClientAllocationSize(const BrokerClient* client) const override {
    return mqc::ClientAllocationSize(Native(client));
  }
  bool ReadClientBytes(const BrokerClient* client, std::size_t offset, std::size_t size,
                       void* out) const override {
    return mqc::ReadClientBytes(Native(client), offset, size, out);
  }
  // A 32-bit int of the client's struct, not bounds checked: for the per-delivery test of
  // broker/queue_drops.h (QueueDrops::MayDrop), at offsets inside a verified layout only.
  std::int32_t ClientInt32(const BrokerClient* client, std::size_t offset) const {
    std::int32_t value = 0;
    std::memcpy(&value, reinterpret_cast<const char*>(client) + offset, sizeof(value));
    return value;
  }
  int AskLaterAclSources(const AclCheckEvent& check) override;
  const BrokerCallbackNode* FindOwnCallback(int event) override;
  bool AnyOlderPlugin(const std::vector<std::string>& paths) const override;
  // The callbacks this plugin registered for BASIC_AUTH and ACL_CHECK on 2.0, with their
  // userdata: what FindOwnCallback looks for.
  void SetOwnCallbacks(BrokerCallbackFn basic_auth, BrokerCallbackFn acl_check,
                       const void* userdata) {
    own_basic_auth_ = basic_auth;
    own_acl_check_ = acl_check;
    own_userdata_ = userdata;
  }
  bool ReadStringProperty(const void* properties, int identifier,
                          std::string* value) const override;
  bool ReadBinaryProperty(const void* properties, int identifier,
                          std::string* value) const override;
  // The watched ACL_CHECK callback (2.1) and what it is registered with: WatchAclChecks's.
  void SetAclWatch(mosquitto_plugin_id_t* identifier, BrokerCallbackFn callback, void* userdata) {
    identifier_ = identifier;
    acl_watch_ = callback;
    acl_watch_userdata_ = userdata;
  }
  int WatchAclChecks(bool on) override;
  int Kick(const std::string& client_id, bool with_will) override;
  bool Publish(const std::string& topic, const std::string& payload, bool retain) override;
  void Log(LogLevel level, const std::string& text) override;
  std::string ErrorText(int code) const override { return api_->ErrorText(code); }
  std::int64_t NowNs() const override { return mqc::NowNs(); }
  std::int64_t MonotonicNs() const override { return mqc::MonotonicNs(); }

  static const mosquitto* Native(const BrokerClient* client) {
    return reinterpret_cast<const mosquitto*>(client);
  }
  static mosquitto* Native(BrokerClient* client) { return reinterpret_cast<mosquitto*>(client); }

 private:
  const BrokerApi* api_;
  BrokerCallbackFn own_basic_auth_ = nullptr;
  BrokerCallbackFn own_acl_check_ = nullptr;
  const void* own_userdata_ = nullptr;
  mosquitto_plugin_id_t* identifier_ = nullptr;
  BrokerCallbackFn acl_watch_ = nullptr;
  void* acl_watch_userdata_ = nullptr;
};

}  // namespace mqc
