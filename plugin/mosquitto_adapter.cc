// SPDX-License-Identifier: BSD-3-Clause
#include "mosquitto_adapter.h"

#include <dlfcn.h>

#include <string>
#include <vector>

namespace mqc {

int MosquittoBroker::AskLaterAclSources(const AclCheckEvent& check) {
  return api_->AclCheck(Native(check.client), check.topic, check.payloadlen,
                        const_cast<void*>(check.payload), check.qos, check.retain, check.access);
}

// Called from inside the callback (BrokerEvents), so that the broker's loop is on the stack.
const BrokerCallbackNode* MosquittoBroker::FindOwnCallback(int event) {
  const BrokerCallbackFn own = event == kEventAclCheck    ? own_acl_check_
                               : event == kEventBasicAuth ? own_basic_auth_
                                                          : nullptr;
  if (own == nullptr || own_userdata_ == nullptr) return nullptr;
  return FindCallerNode(own, own_userdata_);
}

// 2.0 loads a file as a version 5 plugin when it exports mosquitto_plugin_version, else
// through mosquitto_auth_plugin_version (src/security.c: security__load_v2..v5, v2.0.11). The
// file is already loaded: RTLD_NOLOAD finds it without running anything of it.
bool MosquittoBroker::AnyOlderPlugin(const std::vector<std::string>& paths) const {
  for (const std::string& path : paths) {
    void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) return true;
    const bool version_5 = dlsym(handle, "mosquitto_plugin_version") != nullptr;
    dlclose(handle);
    if (!version_5) return true;
  }
  return false;
}

bool MosquittoBroker::ReadStringProperty(const void* properties, int identifier,
                                         std::string* value) const {
  return api_->ReadStringProperty(properties, identifier, value);
}

bool MosquittoBroker::ReadBinaryProperty(const void* properties, int identifier,
                                         std::string* value) const {
  return api_->ReadBinaryProperty(properties, identifier, value);
}

// 2.1.2 appends a registered callback to the end of the chain (src/plugin_callbacks.c): this
// one answers IGNORE to every check, and is registered only where no other ACL source exists.
int MosquittoBroker::WatchAclChecks(bool on) {
  if (identifier_ == nullptr || acl_watch_ == nullptr) return MOSQ_ERR_INVAL;
  return on ? mosquitto_callback_register(identifier_, MOSQ_EVT_ACL_CHECK, acl_watch_, nullptr,
                                          acl_watch_userdata_)
            : mosquitto_callback_unregister(identifier_, MOSQ_EVT_ACL_CHECK, acl_watch_, nullptr);
}

int MosquittoBroker::Kick(const std::string& client_id, bool with_will) {
  return mosquitto_kick_client_by_clientid(client_id.c_str(), with_will);
}

// mosquitto_broker_publish_copy: exported by every supported broker (src/linker.syms of v2.0.11,
// v2.0.21 and v2.1.2; tests/check_broker_symbols.py checks the binaries). It copies the payload
// and appends the message to the broker's plugin message list, queued to subscribers at the
// start of the main loop's next turn: safe from any callback (broker/presence.h).
bool MosquittoBroker::Publish(const std::string& topic, const std::string& payload, bool retain) {
  return mosquitto_broker_publish_copy(nullptr, topic.c_str(), static_cast<int>(payload.size()),
                                       payload.data(), 0, retain, nullptr) == MOSQ_ERR_SUCCESS;
}

void MosquittoBroker::Log(LogLevel level, const std::string& text) {
  mosquitto_log_printf(static_cast<int>(level), "%s", text.c_str());
}

}  // namespace mqc
