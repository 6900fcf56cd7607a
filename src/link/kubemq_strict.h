// SPDX-License-Identifier: BSD-3-Clause
// KubeMQ strict mode (plugin_opt_kubemq_strict, docs/topic-mapping.md "Strict mode"): whether
// KubeMQ's MQTT side would accept a SUBSCRIBE filter or a PUBLISH topic. The broker side refuses
// what these refuse when the option is on; the companion shows the subscription verdict
// (kubemqValid, kubemqError) in every mode. One unit, so that the two cannot disagree.
// Pure functions, safe on any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "link/topic_mapping.h"

namespace mqc {

// Why KubeMQ would refuse `filter` (as the client sent it, `$share/<group>/` included) with
// this granted QoS from a client of this protocol version (3, 4 or 5) and id; empty when it
// accepts it. `mapping` is MapTopicFilter(filter, default_pattern), already at hand where this
// is called.
std::string KubemqSubscribeRefusal(std::string_view filter, const TopicMapping& mapping, int qos,
                                   int protocol_version, std::string_view client_id);

// A PUBLISH topic, from its class (ClassifyTopic) alone: accepted, refused, or accepted only
// as an RPC request (commands/queries: MQTT 5 with a ResponseTopic, KubemqAcceptsRpcRequest).
// No allocation: the broker thread calls it once per new topic (the meter caches it).
enum class KubemqPublishVerdict : std::uint8_t { kAccept, kRefuse, kAcceptIfRpcRequest };
KubemqPublishVerdict KubemqPublishVerdictOf(std::string_view topic,
                                            TopicClass topic_class) noexcept;

inline bool KubemqAcceptsRpcRequest(int protocol_version, bool has_response_topic) noexcept {
  return protocol_version == 5 && has_response_topic;
}

}  // namespace mqc
