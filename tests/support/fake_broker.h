// SPDX-License-Identifier: BSD-3-Clause
// A Broker (broker/broker.h) for the broker-side unit tests: clients are FakeClient objects the
// test fills in, the later ACL sources answer what the test sets, kicks, publishes and log lines
// are recorded, the clocks are the test's. `final`, as the plugin's MosquittoBroker is, so that
// BrokerEvents<FakeBroker> makes the same direct calls the plugin's handlers make.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "broker/broker.h"
#include "broker/broker_layout.h"
#include "client_facts_builder.h"

namespace mqc {

// A test client; its address is the BrokerClient the handlers see.
struct FakeClient {
  ClientFacts facts;
  bool has_id = true;  // false: the broker reports no client id (null)
  int socket = 7;      // -1: an offline session
  int state = -1;      // mosquitto__get_state, -1: unknown
  std::int64_t idle_ms = -1;
  std::string peer_ip;  // getpeername of its socket; empty: none
  std::uint16_t peer_port = 0;
  int sub_count = 0;                  // mosquitto_client_sub_count
  std::vector<unsigned char> memory;  // the broker's struct, as broker/broker_layout.h reads it
  // Where the broker's struct holds the pointers its accessors return, and hh_sock.key: the
  // fake writes them into what ReadClientBytes reads, as they are at that moment (they depend
  // on where the FakeClient lives). Null: none written.
  const BrokerLayout* anchors = nullptr;
  // Set: the struct's `username` holds this string's pointer, not the accessor's answer (an
  // outgoing bridge's context, whose accessor answers its bridge's local_username).
  std::string struct_username;

  BrokerClient* handle() { return reinterpret_cast<BrokerClient*>(this); }
};

class FakeBroker final : public Broker {
 public:
  BrokerCapabilities caps;
  // What mosquitto_acl_check answers, and the checks it was asked. `inside_later_acl` runs
  // inside it, as the broker's nested callback chain would (it may call the handler again).
  int later_acl_answer = kBrokerSuccess;
  std::vector<AclCheckEvent> later_acl_checks;
  std::function<void(const AclCheckEvent&)> inside_later_acl;
  // What a kick answers; the client ids kicked. `inside_kick` runs inside the kick, where the
  // broker sends the client's DISCONNECT.
  int kick_answer = kBrokerSuccess;
  std::vector<std::string> kicked;
  std::vector<bool> kicked_with_will;  // beside kicked: each kick's with_will
  std::function<void(const std::string&)> inside_kick;
  // What registering or unregistering the watched ACL_CHECK answers; each call (true: register)
  // and whether it is registered.
  int watch_answer = kBrokerSuccess;
  std::vector<bool> acl_watch_calls;
  bool acl_watched = false;
  std::vector<std::pair<LogLevel, std::string>> log;
  std::vector<std::string> published;
  std::int64_t now_ns = 1000;
  std::int64_t monotonic_ns = 1000;
  mutable int bytes_reads = 0;  // ReadClientBytes calls that read
  mutable int peer_reads = 0;   // PeerAddress calls

  static FakeBroker Api20(bool acl_check = true) {
    FakeBroker broker;
    broker.caps.acl_check = acl_check;
    broker.caps.get_state = acl_check;
    broker.caps.property_readers = acl_check;
    return broker;
  }
  static FakeBroker Api21() {
    FakeBroker broker;
    broker.caps.api_2_1 = true;
    broker.caps.property_readers = true;
    broker.caps.client_lookup = true;
    return broker;
  }

  static const FakeClient& Of(const BrokerClient* client) {
    return *reinterpret_cast<const FakeClient*>(client);
  }

  const BrokerCapabilities& capabilities() const override { return caps; }
  const char* ClientId(const BrokerClient* client) const override {
    return Of(client).has_id ? Of(client).facts.client_id.c_str() : nullptr;
  }
  const char* ClientUsername(const BrokerClient* client) const override {
    const std::string& name = Of(client).facts.username;
    return name.empty() ? nullptr : name.c_str();
  }
  const char* ClientAddress(const BrokerClient* client) const override {
    return Of(client).facts.ip_address.c_str();
  }
  int ProtocolVersion(const BrokerClient* client) const override {
    return Of(client).facts.protocol_version;
  }
  int ClientSocket(const BrokerClient* client) const override { return Of(client).socket; }
  ClientFacts ReadFacts(const BrokerClient* client, const BrokerConfig&) const override {
    ClientFacts facts = Of(client).facts;
    facts.has_socket = Of(client).socket >= 0;
    return facts;
  }
  bool PeerAddress(const BrokerClient* client, std::string* ip,
                   std::uint16_t* port) const override {
    const FakeClient& fake = Of(client);
    ++peer_reads;
    if (fake.socket < 0 || fake.peer_ip.empty()) return false;
    *ip = fake.peer_ip;
    *port = fake.peer_port;
    return true;
  }
  std::int64_t IdleMs(const BrokerClient* client) const override { return Of(client).idle_ms; }
  int ClientState(const BrokerClient* client) const override { return Of(client).state; }
  // What mosquitto_client(id) finds (only with caps.client_lookup), and how often it was asked.
  std::map<std::string, const FakeClient*> clients_by_id;
  mutable int client_lookups = 0;
  const BrokerClient* FindClient(const char* client_id) const override {
    ++client_lookups;
    if (!caps.client_lookup) return nullptr;
    const auto found = clients_by_id.find(client_id);
    return found == clients_by_id.end() ? nullptr
                                        : reinterpret_cast<const BrokerClient*>(found->second);
  }
  int SubCount(const BrokerClient* client) const override { return Of(client).sub_count; }
  bool CleanSession(const BrokerClient* client) const override {
    return Of(client).facts.clean_session;
  }
  int Keepalive(const BrokerClient* client) const override { return Of(client).facts.keep_alive; }
  std::size_t ClientAllocationSize(const BrokerClient* client) const override {
    return Of(client).memory.size();
  }
  // The per-delivery read of QueueDrops::MayDrop (MosquittoBroker's is not bounds checked):
  // counted in int_reads, not bytes_reads. 0 outside the memory.
  mutable int int_reads = 0;
  std::int32_t ClientInt32(const BrokerClient* client, std::size_t offset) const {
    const std::vector<unsigned char>& memory = Of(client).memory;
    std::int32_t value = 0;
    ++int_reads;
    if (offset > memory.size() || sizeof(value) > memory.size() - offset) return 0;
    std::memcpy(&value, memory.data() + offset, sizeof(value));
    return value;
  }
  bool ReadClientBytes(const BrokerClient* client, std::size_t offset, std::size_t size,
                       void* out) const override {
    const FakeClient& fake = Of(client);
    const std::vector<unsigned char>& memory = fake.memory;
    if (size == 0 || offset > memory.size() || size > memory.size() - offset) return false;
    std::memcpy(out, memory.data() + offset, size);
    if (fake.anchors != nullptr) WriteAnchors(client, offset, size, out);
    ++bytes_reads;
    return true;
  }
  // What FindOwnCallback finds for each event (null: nothing), how often it was asked, and
  // what AnyOlderPlugin answers.
  std::map<int, const BrokerCallbackNode*> own_callbacks;
  mutable int own_callback_lookups = 0;
  bool older_plugin = false;
  const BrokerCallbackNode* FindOwnCallback(int event) override {
    ++own_callback_lookups;
    const auto found = own_callbacks.find(event);
    return found != own_callbacks.end() ? found->second : nullptr;
  }
  bool AnyOlderPlugin(const std::vector<std::string>&) const override { return older_plugin; }
  // The anchors' values (see FakeClient::anchors) over the bytes [offset, offset + size) read.
  void WriteAnchors(const BrokerClient* client, std::size_t offset, std::size_t size,
                    void* out) const {
    const FakeClient& fake = Of(client);
    auto value = [](const void* pointer) { return reinterpret_cast<std::uintptr_t>(pointer); };
    const struct {
      LayoutField field;
      std::uintptr_t value;
      bool present;
    } anchors[] = {
        {LayoutField::kId, value(ClientId(client)), true},
        {LayoutField::kAddress, value(ClientAddress(client)), true},
        {LayoutField::kUsername,
         fake.struct_username.empty() ? value(ClientUsername(client))
                                      : value(fake.struct_username.c_str()),
         true},
        {LayoutField::kSockKey, value(reinterpret_cast<const char*>(client) + kSockOffset),
         fake.socket >= 0},
    };
    for (const auto& anchor : anchors) {
      const FieldPlace& place = fake.anchors->place(anchor.field);
      if (!anchor.present || place.size != sizeof(anchor.value)) continue;
      for (std::size_t i = 0; i < sizeof(anchor.value); ++i) {
        const std::size_t at = place.offset + i;
        if (at >= offset && at < offset + size) {
          static_cast<unsigned char*>(out)[at - offset] =
              reinterpret_cast<const unsigned char*>(&anchor.value)[i];
        }
      }
    }
  }
  int AskLaterAclSources(const AclCheckEvent& check) override {
    later_acl_checks.push_back(check);
    if (inside_later_acl) inside_later_acl(check);
    return later_acl_answer;
  }
  bool ReadStringProperty(const void*, int, std::string*) const override { return false; }
  bool ReadBinaryProperty(const void*, int, std::string*) const override { return false; }
  int WatchAclChecks(bool on) override {
    acl_watch_calls.push_back(on);
    if (watch_answer == kBrokerSuccess) acl_watched = on;
    return watch_answer;
  }
  int Kick(const std::string& client_id, bool with_will) override {
    kicked.push_back(client_id);
    kicked_with_will.push_back(with_will);
    if (inside_kick) inside_kick(client_id);
    return kick_answer;
  }
  bool Publish(const std::string& topic, const std::string&, bool) override {
    published.push_back(topic);
    return true;
  }
  void Log(LogLevel level, const std::string& text) override { log.emplace_back(level, text); }
  std::string ErrorText(int code) const override { return "error " + std::to_string(code); }
  std::int64_t NowNs() const override { return now_ns; }
  std::int64_t MonotonicNs() const override { return monotonic_ns; }
};

// A test client with the plain facts (client_facts_builder.h).
inline FakeClient Client(const std::string& id, std::uint8_t version = 4) {
  FakeClient client;
  client.facts = Facts(id, true, version);
  return client;
}

// The events a test hands to the handlers, as the broker lays them out.
inline AclCheckEvent AclCheck(FakeClient* client, int access, const char* topic,
                              std::uint8_t qos = 0, std::uint32_t payloadlen = 64) {
  AclCheckEvent event{};
  event.client = client->handle();
  event.topic = topic;
  event.access = access;
  event.payloadlen = payloadlen;
  event.qos = qos;
  return event;
}

inline MessageEvent Message(FakeClient* client, const char* topic, std::uint32_t payloadlen = 64,
                            std::uint8_t qos = 0) {
  MessageEvent event{};
  event.client = client->handle();
  event.topic = const_cast<char*>(topic);  // the broker's field is not const; nothing writes it
  event.payloadlen = payloadlen;
  event.qos = qos;
  return event;
}

}  // namespace mqc
