// SPDX-License-Identifier: BSD-3-Clause
// What KubeMQ's MQTT side accepts, from docs/topic-mapping.md's table ("KubeMQ accepts").
// Where the table is silent:
// - `$reply/<client_id>/...` is the requester's reply namespace: anyone may publish there (the
//   responder does), only the client whose id is the second level may subscribe to it.
// - Other `$` topics are the broker's own: KubeMQ has none, so strict mode refuses them (a
//   client that reads `$SYS` would break on KubeMQ). A PUBLISH on `$SYS` or `$share` never gets
//   here: the broker refuses those itself.
// - With plugin_opt_default_pattern none, an unprefixed topic names no KubeMQ pattern: refused.
#include "link/kubemq_strict.h"

#include "link/text_util.h"

namespace mqc {
namespace {

constexpr std::string_view kReplyPrefix = "$reply/";
constexpr std::string_view kSharePrefix = "$share/";

// Whether a level of the filter is a wildcard ('+' or '#'); the channel cannot tell, since
// literal '*' and '>' pass through it.
bool HasWildcard(std::string_view filter) {
  std::size_t start = 0;
  while (start <= filter.size()) {
    std::size_t end = filter.find('/', start);
    if (end == std::string_view::npos) end = filter.size();
    const std::string_view level = filter.substr(start, end - start);
    if (level == "+" || level == "#") return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

std::string KubemqSubscribeRefusal(std::string_view filter, const TopicMapping& mapping, int qos,
                                   int protocol_version, std::string_view client_id) {
  if (!mapping.error->empty()) return "no KubeMQ channel: " + *mapping.error;
  const bool shared = StartsWith(filter, kSharePrefix);
  if (!shared && !filter.empty() && filter.front() == '$') {
    if (StartsWith(filter, kReplyPrefix)) {
      std::string_view rest = filter.substr(kReplyPrefix.size());
      const std::size_t slash = rest.find('/');
      if (rest.substr(0, slash) == client_id && slash != std::string_view::npos) return "";
      return "$reply/<client id>/... is the reply namespace of the client it names";
    }
    return "KubeMQ has no $ topics besides $share and $reply";
  }
  // The filter after the share envelope, prefix level first.
  std::string_view topic = filter;
  if (shared) {
    topic = filter.substr(kSharePrefix.size());
    topic = topic.substr(topic.find('/') + 1);  // valid mapping: the group has its '/'
  }
  switch (mapping.pattern) {
    case Pattern::kNone:
      if (shared && !topic.empty() && topic.front() == '$') {
        return "KubeMQ has no $ topics besides $share and $reply";
      }
      return "no KubeMQ pattern: the topic has no prefix and plugin_opt_default_pattern is none";
    case Pattern::kEvents:
      if (shared) return "KubeMQ shares only queues subscriptions ($share/<group>/queues/...)";
      return "";
    case Pattern::kStore:
      if (shared) return "KubeMQ shares only queues subscriptions ($share/<group>/queues/...)";
      if (HasWildcard(topic)) return "KubeMQ's store pattern takes no wildcards";
      return "";
    case Pattern::kQueues:
      if (!shared) {
        return "KubeMQ receives queues only through a shared subscription "
               "($share/<group>/queues/...)";
      }
      if (HasWildcard(topic)) return "KubeMQ's queues pattern takes no wildcards";
      if (protocol_version != 5) return "KubeMQ's queues subscriptions need MQTT 5";
      if (qos < 1) return "KubeMQ's queues subscriptions need QoS 1 or 2";
      return "";
    case Pattern::kCommands:
    case Pattern::kQueries:
      return std::string("KubeMQ's ") + std::string(PatternName(mapping.pattern)) +
             " pattern is publish only";
  }
  return "";
}

KubemqPublishVerdict KubemqPublishVerdictOf(std::string_view topic,
                                            TopicClass topic_class) noexcept {
  if (!topic.empty() && topic.front() == '$') {
    return StartsWith(topic, kReplyPrefix) ? KubemqPublishVerdict::kAccept
                                           : KubemqPublishVerdict::kRefuse;
  }
  if (!topic_class.valid) return KubemqPublishVerdict::kRefuse;
  switch (topic_class.pattern) {
    case Pattern::kEvents:
    case Pattern::kStore:
    case Pattern::kQueues:
      return KubemqPublishVerdict::kAccept;
    case Pattern::kCommands:
    case Pattern::kQueries:
      return KubemqPublishVerdict::kAcceptIfRpcRequest;
    case Pattern::kNone:
      break;
  }
  return KubemqPublishVerdict::kRefuse;
}

}  // namespace mqc
