// SPDX-License-Identifier: BSD-3-Clause
// KubeMQ topic grammar: an MQTT topic or topic filter -> KubeMQ pattern, channel, shared group.
// The contract is docs/topic-mapping.md. Pure functions, safe on any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "link/boxed.h"

namespace mqc {

// The pattern of topics with no recognised prefix (plugin_opt_default_pattern).
enum class DefaultPattern : std::uint8_t { kEvents, kStore, kNone };

// "events", "store" or "none": the values of plugin_opt_default_pattern.
std::string_view DefaultPatternName(DefaultPattern pattern) noexcept;
// One of those names into *out; false (and *out untouched) for any other text.
bool ParseDefaultPattern(std::string_view name, DefaultPattern* out) noexcept;

// KubeMQ patterns. kNone is the empty pattern ("": $reply, other $ topics, invalid mappings).
enum class Pattern : std::uint8_t { kNone, kEvents, kStore, kQueues, kCommands, kQueries };

// "events", "store", "queues", "commands", "queries" or "" for kNone.
std::string_view PatternName(Pattern pattern) noexcept;

struct TopicMapping {
  Pattern pattern = Pattern::kNone;
  std::string channel;       // levels joined by '.', '+' -> '*', '#' -> '>'
  // The two below are rarely set (Boxed): a stored subscription pays a pointer for each.
  Boxed<std::string> shared_group;  // the group of "$share/<group>/queues/..."
  Boxed<std::string> error;  // empty when the mapping is valid; else why it is not (mappingError)
};

// Maps a topic filter as a client sent it in SUBSCRIBE ("$share/<group>/" included).
TopicMapping MapTopicFilter(std::string_view filter, DefaultPattern default_pattern);

// The pattern of a PUBLISH topic, for per-message counting on the broker thread: no allocation,
// no exception. `valid` is false where MapTopicFilter would report an error (empty level, empty
// channel); `pattern` is then still the pattern its prefix names, so that the message counts as
// an error of that operation. `$` topics are kNone, except `$share/<group>/<topic>`, which
// classifies as its topic does (as MapTopicFilter maps it).
struct TopicClass {
  Pattern pattern = Pattern::kNone;
  bool valid = true;
};
TopicClass ClassifyTopic(std::string_view topic, DefaultPattern default_pattern) noexcept;

}  // namespace mqc

namespace mqc {

// MQTT topic matching: whether a PUBLISH topic matches a subscription filter ('+' one level,
// '#' the rest; a "$share/<group>/" prefix is not part of the match; topics starting with '$'
// are not matched by a wildcard in the first level). No allocation.
bool TopicMatchesFilter(std::string_view filter, std::string_view topic) noexcept;

}  // namespace mqc
