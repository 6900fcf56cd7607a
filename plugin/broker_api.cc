// SPDX-License-Identifier: BSD-3-Clause
#include "broker_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "link/text_util.h"

namespace mqc {

namespace {

template <typename Function>
Function Lookup(const char* name) {
  return reinterpret_cast<Function>(dlsym(RTLD_DEFAULT, name));
}

std::string ExecutableBytes() {
  std::ifstream in("/proc/self/exe", std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Mosquitto 2.0's property list (lib/property_mosq.h: struct mqtt5__property and struct
// mqtt__string, the same from tag v2.0.11 to v2.0.22). Read only where a 2.0 build does not
// export mosquitto_property_read_*; 2.1 exports them.
struct PropertyString20 {
  char* v;
  std::uint16_t len;
};
struct Property20 {
  const Property20* next;
  union {
    std::uint8_t i8;
    std::uint16_t i16;
    std::uint32_t i32;
    PropertyString20 s;
  } value;
  PropertyString20 name;
  std::int32_t identifier;
  bool client_generated;
};

bool ReadProperty20(const void* properties, int identifier, std::string* value) {
  for (const auto* property = static_cast<const Property20*>(properties); property != nullptr;
       property = property->next) {
    if (property->identifier != identifier) continue;
    if (property->value.s.v == nullptr) return false;
    value->assign(property->value.s.v, property->value.s.len);
    return true;
  }
  return false;
}

}  // namespace

BrokerApi BrokerApi::Find() {
  BrokerApi api;
  BrokerCapabilities& capabilities = api.capabilities_;
  capabilities.api_2_1 = dlsym(RTLD_DEFAULT, "mosquitto_client_port") != nullptr;
  capabilities.version = FindBrokerVersion(ExecutableBytes());
  // 2.1's mosquitto_acl_check takes eight arguments; the plugin needs it on 2.0 only.
  if (!capabilities.api_2_1) {
    api.acl_check_ = Lookup<AclCheckFunction>("mosquitto_acl_check");
    api.get_state_ = Lookup<GetStateFunction>("mosquitto__get_state");
  } else {
    // 2.1 on: the name is on every build's export list. 2.0 has no function of that name; a
    // symbol of it in some other library would not be the broker's.
    api.client_by_id_ = Lookup<ClientByIdFunction>("mosquitto_client");
  }
  capabilities.acl_check = api.acl_check_ != nullptr;
  capabilities.get_state = api.get_state_ != nullptr;
  capabilities.client_lookup = api.client_by_id_ != nullptr;
  api.read_string_ = Lookup<ReadStringFunction>("mosquitto_property_read_string");
  api.read_binary_ = Lookup<ReadBinaryFunction>("mosquitto_property_read_binary");
  capabilities.property_readers = api.read_string_ != nullptr && api.read_binary_ != nullptr;
  api.strerror_ = Lookup<StrerrorFunction>("mosquitto_strerror");
  return api;
}

int BrokerApi::AclCheck(mosquitto* client, const char* topic, std::uint32_t payload_length,
                        void* payload, std::uint8_t qos, bool retain, int access) const {
  return acl_check_(client, topic, payload_length, payload, qos, retain, access);
}

bool BrokerApi::ReadStringProperty(const void* properties, int identifier,
                                   std::string* value) const {
  if (properties == nullptr || !capabilities_.property_readers) {
    return ReadPropertyWithoutReaders(properties, identifier, value);
  }
  char* text = nullptr;
  if (read_string_(properties, identifier, &text, false) == nullptr) return false;
  // The broker's property reader uses plain calloc.
  const CSmartPtr<char, std::free> owner(text);
  value->assign(text != nullptr ? text : "");
  return true;
}

bool BrokerApi::ReadBinaryProperty(const void* properties, int identifier,
                                   std::string* value) const {
  if (properties == nullptr || !capabilities_.property_readers) {
    return ReadPropertyWithoutReaders(properties, identifier, value);
  }
  void* data = nullptr;
  std::uint16_t length = 0;
  if (read_binary_(properties, identifier, &data, &length, false) == nullptr) return false;
  const CSmartPtr<void, std::free> owner(data);
  value->assign(static_cast<const char*>(data), data != nullptr ? length : 0);
  return true;
}

// No properties, or a broker without the exported readers: on 2.0 the property list is read
// directly (its layout is the same for strings and binary data); 2.1 always exports them.
bool BrokerApi::ReadPropertyWithoutReaders(const void* properties, int identifier,
                                           std::string* value) const {
  return properties != nullptr && !capabilities_.api_2_1 &&
         ReadProperty20(properties, identifier, value);
}

std::string BrokerApi::ErrorText(int code) const {
  if (strerror_ != nullptr) {
    const char* text = strerror_(code);
    if (text != nullptr) return text;
  }
  return BrokerErrorText(code);
}

int BrokerApi::ClientState(const mosquitto* client) const {
  return get_state_ != nullptr ? get_state_(client) : -1;
}

const mosquitto* BrokerApi::ClientById(const char* client_id) const {
  return client_by_id_ != nullptr && client_id != nullptr ? client_by_id_(client_id) : nullptr;
}

}  // namespace mqc
