// SPDX-License-Identifier: BSD-3-Clause
#include "mosquitto_broker.h"

#include <string>

namespace mqc {

int MosquittoBroker::AskLaterAclSources(const AclCheckEvent& check) {
  return api_->AclCheck(Native(check.client), check.topic, check.payloadlen,
                        const_cast<void*>(check.payload), check.qos, check.retain, check.access);
}

bool MosquittoBroker::ReadStringProperty(const void* properties, int identifier,
                                         std::string* value) const {
  return api_->ReadStringProperty(properties, identifier, value);
}

bool MosquittoBroker::ReadBinaryProperty(const void* properties, int identifier,
                                         std::string* value) const {
  return api_->ReadBinaryProperty(properties, identifier, value);
}

int MosquittoBroker::Kick(const std::string& client_id) {
  return mosquitto_kick_client_by_clientid(client_id.c_str(), false);
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
