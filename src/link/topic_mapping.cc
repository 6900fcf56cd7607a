// SPDX-License-Identifier: BSD-3-Clause
// KubeMQ topic grammar (see docs/topic-mapping.md). One non-allocating analysis feeds
// both MapTopicFilter and ClassifyTopic, so the two cannot disagree on what is valid.
//
// Where the spec is silent:
// - Wildcard misuse ('+' or '#' sharing a level with other characters, '#' not the last level)
//   is a mapping error. Mosquitto rejects such filters before we see them, but the functions
//   are pure and also meet arbitrary input (fuzzing, replayed configs).
// - `$` topics other than `$share` are the broker's own namespace: they are not mapped, so they
//   are never an error, whatever their levels look like. Every other topic is checked, also
//   unprefixed ones under DefaultPattern::kNone (an empty level is wrong in any topic).
// - Bytes pass through unchanged (no UTF-8 or U+0000 check: Mosquitto validates before the
//   plugin sees a topic). Literal '*' and '>' pass through like literal '.', as lossily as in
//   KubeMQ. There is no length limit.
// - Prefixes are case-sensitive, as MQTT topics are: `Events/x` is unprefixed.
// - `$share/<group>/<rest>`: the group must be non-empty and free of '+' and '#' (MQTT 5,
//   section 4.8.2). <rest> is mapped like a plain filter, except that a `$share` inside it is
//   just a `$` topic (no nesting). The group is kept whenever the mapping is valid, also when
//   <rest> maps to kNone (`$share/g/$SYS/x`, or unprefixed under DefaultPattern::kNone).
// - Error levels are numbered from 1 in the filter as the client sent it, `$share/<group>`
//   included. The first problem from the left is reported; share envelope problems come first.
// - ClassifyTopic follows MapTopicFilter on `$share/...` too (the pattern of <rest>), since the
//   two must agree (a PUBLISH topic starting with `$share` is rare). Where the topic is
//   invalid its pattern is the one it would have once fixed: the prefix's, else the default
//   (also for the empty topic), else kNone when a `$share` envelope has no <rest>.
#include "link/topic_mapping.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "link/name_table.h"

namespace mqc {
namespace {

enum class Problem : std::uint8_t {
  kNone,
  kEmptyFilter,
  kShareTooShort,
  kEmptyShareGroup,
  kWildcardInShareGroup,
  kEmptyChannel,
  kEmptyLevel,
  kPartialLevelWildcard,  // '+' or '#' with other characters in the same level
  kHashNotLast,
};

// What a filter is, found without allocating. `channel_levels` is what becomes the channel.
struct Analysis {
  Pattern pattern = Pattern::kNone;
  Problem problem = Problem::kNone;
  std::size_t problem_level = 0;  // 1-based, for kEmptyLevel and the wildcard problems
  std::string_view prefix;        // the prefix level, for kEmptyChannel
  std::string_view shared_group;
  std::string_view channel_levels;
  bool builds_channel = false;  // false for `$` topics and unprefixed ones under kNone
};

constexpr std::string_view kSharePrefix = "$share";

// The names are also the topic prefixes. An empty first level parses as kNone, "no prefix",
// as any other unlisted level does.
constexpr NamedValue<Pattern> kPatternNames[] = {
    {Pattern::kNone, ""},         {Pattern::kEvents, "events"},     {Pattern::kStore, "store"},
    {Pattern::kQueues, "queues"}, {Pattern::kCommands, "commands"}, {Pattern::kQueries, "queries"},
};

constexpr NamedValue<DefaultPattern> kDefaultPatternNames[] = {
    {DefaultPattern::kEvents, "events"},
    {DefaultPattern::kStore, "store"},
    {DefaultPattern::kNone, "none"},
};

Pattern PrefixPattern(std::string_view level) noexcept {
  return ValueNamed(kPatternNames, level).value_or(Pattern::kNone);
}

Pattern FromDefault(DefaultPattern default_pattern) noexcept {
  switch (default_pattern) {
    case DefaultPattern::kEvents:
      return Pattern::kEvents;
    case DefaultPattern::kStore:
      return Pattern::kStore;
    case DefaultPattern::kNone:
      break;
  }
  return Pattern::kNone;
}

// Checks the '/'-separated levels of `levels`, the first of which is level `first_level` of the
// whole filter. Records the leftmost problem in `analysis`.
void CheckLevels(std::string_view levels, std::size_t first_level, Analysis& analysis) noexcept {
  std::size_t level_number = first_level;
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = levels.find('/', start);
    const bool last = slash == std::string_view::npos;
    const std::string_view level =
        levels.substr(start, last ? std::string_view::npos : slash - start);
    Problem problem = Problem::kNone;
    if (level.empty()) {
      problem = Problem::kEmptyLevel;
    } else if (level.size() > 1 && level.find_first_of("+#") != std::string_view::npos) {
      problem = Problem::kPartialLevelWildcard;
    } else if (level == "#" && !last) {
      problem = Problem::kHashNotLast;
    }
    if (problem != Problem::kNone) {
      analysis.problem = problem;
      analysis.problem_level = level_number;
      return;
    }
    if (last) return;
    start = slash + 1;
    ++level_number;
  }
}

// Maps a filter that has no `$share` envelope (or the rest after one). `first_level` is the
// number of its first level in the whole filter.
void AnalyzePlain(std::string_view filter, std::size_t first_level, DefaultPattern default_pattern,
                  Analysis& analysis) noexcept {
  if (!filter.empty() && filter.front() == '$') return;  // broker namespace: kNone, valid

  const std::size_t slash = filter.find('/');
  const std::string_view first = filter.substr(0, slash);
  const Pattern prefixed = PrefixPattern(first);
  if (prefixed != Pattern::kNone) {
    analysis.pattern = prefixed;
    analysis.builds_channel = true;
    analysis.prefix = first;
    if (slash == std::string_view::npos || slash + 1 == filter.size()) {
      analysis.problem = Problem::kEmptyChannel;
      return;
    }
    analysis.channel_levels = filter.substr(slash + 1);
    CheckLevels(analysis.channel_levels, first_level + 1, analysis);
    return;
  }

  analysis.pattern = FromDefault(default_pattern);
  analysis.builds_channel = analysis.pattern != Pattern::kNone;
  analysis.channel_levels = filter;
  CheckLevels(filter, first_level, analysis);
}

Analysis Analyze(std::string_view filter, DefaultPattern default_pattern) noexcept {
  Analysis analysis;
  if (filter.empty()) {
    analysis.pattern = FromDefault(default_pattern);
    analysis.problem = Problem::kEmptyFilter;
    return analysis;
  }
  if (filter.substr(0, kSharePrefix.size()) != kSharePrefix ||
      (filter.size() > kSharePrefix.size() && filter[kSharePrefix.size()] != '/')) {
    AnalyzePlain(filter, 1, default_pattern, analysis);
    return analysis;
  }

  // "$share", "$share/..." from here on.
  const std::size_t group_start = kSharePrefix.size() + 1;
  const std::size_t group_end = filter.find('/', group_start);  // npos also past the end
  if (group_end == std::string_view::npos) {
    analysis.problem = Problem::kShareTooShort;
    return analysis;
  }
  // The rest is analysed first so that its pattern is known even when the group is bad.
  AnalyzePlain(filter.substr(group_end + 1), 3, default_pattern, analysis);
  const std::string_view group = filter.substr(group_start, group_end - group_start);
  if (group.empty()) {
    analysis.problem = Problem::kEmptyShareGroup;
  } else if (group.find_first_of("+#") != std::string_view::npos) {
    analysis.problem = Problem::kWildcardInShareGroup;
  }
  analysis.shared_group = group;
  return analysis;
}

std::string Describe(const Analysis& analysis) {
  const std::string level = std::to_string(analysis.problem_level);
  switch (analysis.problem) {
    case Problem::kNone:
      break;
    case Problem::kEmptyFilter:
      return "empty topic filter";
    case Problem::kShareTooShort:
      return "incomplete shared subscription: expected $share/<group>/<topic>";
    case Problem::kEmptyShareGroup:
      return "empty shared subscription group";
    case Problem::kWildcardInShareGroup:
      return "shared subscription group contains a wildcard ('+' or '#')";
    case Problem::kEmptyChannel:
      return "empty channel: nothing after the '" + std::string(analysis.prefix) + "' prefix";
    case Problem::kEmptyLevel:
      return "empty topic level at level " + level;
    case Problem::kPartialLevelWildcard:
      return "wildcard '+' or '#' mixed with other characters at level " + level;
    case Problem::kHashNotLast:
      return "'#' is not the last level (level " + level + ")";
  }
  return "";
}

// Wildcards are whole levels here (CheckLevels made sure), so swapping characters is enough.
std::string BuildChannel(std::string_view levels) {
  std::string channel(levels);
  for (char& c : channel) {
    if (c == '/') {
      c = '.';
    } else if (c == '+') {
      c = '*';
    } else if (c == '#') {
      c = '>';
    }
  }
  return channel;
}

}  // namespace

std::string_view DefaultPatternName(DefaultPattern pattern) noexcept {
  return NameOf(kDefaultPatternNames, pattern, "none");
}

bool ParseDefaultPattern(std::string_view name, DefaultPattern* out) noexcept {
  const std::optional<DefaultPattern> pattern = ValueNamed(kDefaultPatternNames, name);
  if (pattern) *out = *pattern;
  return pattern.has_value();
}

std::string_view PatternName(Pattern pattern) noexcept {
  return NameOf(kPatternNames, pattern, "");
}

TopicMapping MapTopicFilter(std::string_view filter, DefaultPattern default_pattern) {
  const Analysis analysis = Analyze(filter, default_pattern);
  TopicMapping mapping;
  if (analysis.problem != Problem::kNone) {
    mapping.error = Describe(analysis);
    return mapping;
  }
  mapping.pattern = analysis.pattern;
  SetUnlessEmpty(&mapping.shared_group, std::string(analysis.shared_group));
  if (analysis.builds_channel) mapping.channel = BuildChannel(analysis.channel_levels);
  return mapping;
}

TopicClass ClassifyTopic(std::string_view topic, DefaultPattern default_pattern) noexcept {
  const Analysis analysis = Analyze(topic, default_pattern);
  return TopicClass{analysis.pattern, analysis.problem == Problem::kNone};
}

}  // namespace mqc

namespace mqc {

bool TopicMatchesFilter(std::string_view filter, std::string_view topic) noexcept {
  constexpr std::string_view kShare = "$share/";
  if (filter.substr(0, kShare.size()) == kShare) {
    const std::size_t group_end = filter.find('/', kShare.size());
    if (group_end == std::string_view::npos) return false;
    filter.remove_prefix(group_end + 1);
  }
  if (!topic.empty() && topic.front() == '$' && !filter.empty() &&
      (filter.front() == '+' || filter.front() == '#')) {
    return false;
  }
  while (true) {
    const std::size_t filter_end = filter.find('/');
    const std::string_view level = filter.substr(0, filter_end);
    if (level == "#") return true;  // also matches the parent level ("a/#" matches "a")
    const std::size_t topic_end = topic.find('/');
    if (level != "+" && level != topic.substr(0, topic_end)) return false;
    if (filter_end == std::string_view::npos || topic_end == std::string_view::npos) {
      // "a/#" matches "a": the filter may end in "/#" where the topic ends.
      return filter_end == std::string_view::npos ? topic_end == std::string_view::npos
                                                  : filter.substr(filter_end + 1) == "#";
    }
    filter.remove_prefix(filter_end + 1);
    topic.remove_prefix(topic_end + 1);
  }
}

}  // namespace mqc
