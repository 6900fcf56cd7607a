// SPDX-License-Identifier: BSD-3-Clause
// Tests for the KubeMQ topic grammar (docs/topic-mapping.md): every row and example
// of the spec, the choices topic_mapping.cc documents where the spec is silent, and the
// agreement of ClassifyTopic with MapTopicFilter over generated topics.
#include "link/topic_mapping.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <iterator>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using mqc::ClassifyTopic;
using mqc::DefaultPattern;
using mqc::MapTopicFilter;
using mqc::Pattern;
using mqc::PatternName;
using mqc::TopicClass;
using mqc::TopicMapping;
using namespace std::string_view_literals;

constexpr DefaultPattern kAllDefaults[] = {DefaultPattern::kEvents, DefaultPattern::kStore,
                                           DefaultPattern::kNone};

// Every topic prefix and the pattern it names.
constexpr std::pair<std::string_view, Pattern> kPrefixes[] = {
    {"events", Pattern::kEvents},     {"store", Pattern::kStore},     {"queues", Pattern::kQueues},
    {"commands", Pattern::kCommands}, {"queries", Pattern::kQueries},
};

// A printable form of a topic for SCOPED_TRACE: topics here may hold NUL and non-UTF-8 bytes.
std::string Printable(std::string_view topic) {
  std::string out = "topic \"";
  for (const char c : topic) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  if (out.size() > 200) out = out.substr(0, 200) + "...";
  return out + "\"";
}

std::string DefaultName(DefaultPattern default_pattern) {
  return "default " + std::string(DefaultPatternName(default_pattern));
}

// One expected mapping. An empty `error` means the mapping must be valid; otherwise the error
// must contain it and the mapping must be empty.
struct MappingCase {
  std::string_view filter;
  DefaultPattern default_pattern;
  Pattern pattern;
  std::string_view channel;
  std::string_view shared_group;
  std::string_view error;
};

void ExpectMapping(const MappingCase& c) {
  SCOPED_TRACE(Printable(c.filter) + ", " + DefaultName(c.default_pattern));
  const TopicMapping mapping = MapTopicFilter(c.filter, c.default_pattern);
  if (c.error.empty()) {
    EXPECT_EQ(*mapping.error, "");
    EXPECT_EQ(mapping.pattern, c.pattern) << PatternName(mapping.pattern);
    EXPECT_EQ(mapping.channel, c.channel);
    EXPECT_EQ(*mapping.shared_group, c.shared_group);
  } else {
    EXPECT_NE(mapping.error->find(c.error), std::string::npos)
        << "error \"" << *mapping.error << "\" should contain \"" << c.error << "\"";
    EXPECT_EQ(mapping.pattern, Pattern::kNone);
    EXPECT_EQ(mapping.channel, "");
    EXPECT_EQ(*mapping.shared_group, "");
  }
  EXPECT_EQ(ClassifyTopic(c.filter, c.default_pattern).valid, c.error.empty());
}

void ExpectMappings(const std::vector<MappingCase>& cases) {
  for (const MappingCase& c : cases) ExpectMapping(c);
}

// Filters that map to nothing, validly and without a group, whatever the default pattern.
void ExpectUnmappedUnderEveryDefault(const std::vector<std::string_view>& filters) {
  for (const DefaultPattern d : kAllDefaults) {
    for (const std::string_view filter : filters) {
      ExpectMapping({filter, d, Pattern::kNone, "", "", ""});
    }
  }
}

// A filter that no default pattern makes valid, and a part of the error it must get.
struct InvalidCase {
  std::string_view filter;
  std::string_view error;
};

void ExpectInvalidUnderEveryDefault(const std::vector<InvalidCase>& cases) {
  for (const DefaultPattern d : kAllDefaults) {
    for (const InvalidCase& c : cases) {
      ExpectMapping({c.filter, d, Pattern::kNone, "", "", c.error});
    }
  }
}

constexpr auto kEv = DefaultPattern::kEvents;
constexpr auto kSt = DefaultPattern::kStore;
constexpr auto kNo = DefaultPattern::kNone;

TEST(TopicMappingTest, PatternNameNamesEveryPattern) {
  EXPECT_EQ(PatternName(Pattern::kNone), "");
  for (const auto& [prefix, pattern] : kPrefixes) EXPECT_EQ(PatternName(pattern), prefix);
}

TEST(TopicMappingTest, DefaultPatternNamesParseBack) {
  const std::pair<DefaultPattern, std::string_view> names[] = {
      {DefaultPattern::kEvents, "events"},
      {DefaultPattern::kStore, "store"},
      {DefaultPattern::kNone, "none"},
  };
  for (const auto& [pattern, name] : names) {
    EXPECT_EQ(DefaultPatternName(pattern), name);
    DefaultPattern parsed =
        pattern == DefaultPattern::kEvents ? DefaultPattern::kNone : DefaultPattern::kEvents;
    ASSERT_TRUE(ParseDefaultPattern(DefaultPatternName(pattern), &parsed));
    EXPECT_EQ(parsed, pattern);
  }
  DefaultPattern untouched = DefaultPattern::kStore;
  for (const char* other : {"", "Events", "queues", "none ", "event"}) {
    EXPECT_FALSE(ParseDefaultPattern(other, &untouched)) << other;
  }
  EXPECT_EQ(untouched, DefaultPattern::kStore);
}

// The "Examples" paragraph and the Channel section of the spec, verbatim.
TEST(TopicMappingTest, SpecExamples) {
  ExpectMappings({
      {"events/site1/temp", kEv, Pattern::kEvents, "site1.temp", "", ""},
      {"store/orders/europe", kEv, Pattern::kStore, "orders.europe", "", ""},
      {"$share/workers/queues/jobs/email", kEv, Pattern::kQueues, "jobs.email", "workers", ""},
      {"site1/temp", kEv, Pattern::kEvents, "site1.temp", "", ""},
      {"commands/svc/reboot", kEv, Pattern::kCommands, "svc.reboot", "", ""},
      {"events/+/temp", kEv, Pattern::kEvents, "*.temp", "", ""},
      {"events/site1/#", kEv, Pattern::kEvents, "site1.>", "", ""},
      {"events/#", kEv, Pattern::kEvents, ">", "", ""},
      {"#", kEv, Pattern::kEvents, ">", "", ""},
      {"events/a.b/c", kEv, Pattern::kEvents, "a.b.c", "", ""},
  });
}

// One row per line of the spec's pattern table.
TEST(TopicMappingTest, SpecTableRows) {
  ExpectMappings({
      {"events/a/b", kEv, Pattern::kEvents, "a.b", "", ""},
      {"store/a/b", kEv, Pattern::kStore, "a.b", "", ""},
      {"queues/a/b", kEv, Pattern::kQueues, "a.b", "", ""},
      {"$share/g/queues/a/b", kEv, Pattern::kQueues, "a.b", "g", ""},
      {"commands/a/b", kEv, Pattern::kCommands, "a.b", "", ""},
      {"queries/a/b", kEv, Pattern::kQueries, "a.b", "", ""},
      {"$reply/client-1/a/b", kEv, Pattern::kNone, "", "", ""},
      {"$SYS/#", kEv, Pattern::kNone, "", "", ""},
      {"site1/temp", kEv, Pattern::kEvents, "site1.temp", "", ""},
      {"#", kEv, Pattern::kEvents, ">", "", ""},
      {"site1/temp", kNo, Pattern::kNone, "", "", ""},
  });
}

TEST(TopicMappingTest, EveryPrefixWithOneTwoAndThreeLevels) {
  for (const auto& [prefix, pattern] : kPrefixes) {
    for (const DefaultPattern d : kAllDefaults) {
      const std::string p(prefix);
      ExpectMappings({
          {p + "/x", d, pattern, "x", "", ""},
          {p + "/x/y", d, pattern, "x.y", "", ""},
          {p + "/x/y/z", d, pattern, "x.y.z", "", ""},
          {p + "/" + p, d, pattern, p, "", ""},  // the prefix word as a channel level
      });
    }
  }
}

TEST(TopicMappingTest, WildcardsInEveryPosition) {
  ExpectMappings({
      // Alone.
      {"+", kEv, Pattern::kEvents, "*", "", ""},
      {"#", kEv, Pattern::kEvents, ">", "", ""},
      {"+", kSt, Pattern::kStore, "*", "", ""},
      {"#", kSt, Pattern::kStore, ">", "", ""},
      {"+", kNo, Pattern::kNone, "", "", ""},
      {"#", kNo, Pattern::kNone, "", "", ""},
      // First level of an unprefixed filter.
      {"+/temp", kEv, Pattern::kEvents, "*.temp", "", ""},
      {"+/+", kEv, Pattern::kEvents, "*.*", "", ""},
      {"+/#", kEv, Pattern::kEvents, "*.>", "", ""},
      // Middle and last levels, unprefixed.
      {"a/+/b", kEv, Pattern::kEvents, "a.*.b", "", ""},
      {"a/+", kEv, Pattern::kEvents, "a.*", "", ""},
      {"a/#", kEv, Pattern::kEvents, "a.>", "", ""},
      {"a/+/+/#", kEv, Pattern::kEvents, "a.*.*.>", "", ""},
      // Right after each prefix (the channel's first level), in the middle, at the end.
      {"events/+", kEv, Pattern::kEvents, "*", "", ""},
      {"events/+/x/+", kEv, Pattern::kEvents, "*.x.*", "", ""},
      {"events/x/+/y", kEv, Pattern::kEvents, "x.*.y", "", ""},
      {"events/x/#", kEv, Pattern::kEvents, "x.>", "", ""},
      {"events/+/#", kEv, Pattern::kEvents, "*.>", "", ""},
      // On prefixes KubeMQ refuses wildcards for: shown anyway (strict mode refuses later).
      {"store/#", kEv, Pattern::kStore, ">", "", ""},
      {"store/a/+", kEv, Pattern::kStore, "a.*", "", ""},
      {"queues/+/jobs", kEv, Pattern::kQueues, "*.jobs", "", ""},
      {"commands/#", kEv, Pattern::kCommands, ">", "", ""},
      {"queries/+", kEv, Pattern::kQueries, "*", "", ""},
      {"$share/g/queues/#", kEv, Pattern::kQueues, ">", "g", ""},
      {"$share/g/queues/+/x", kEv, Pattern::kQueues, "*.x", "g", ""},
      // A wildcard in place of the prefix makes the filter unprefixed.
      {"+/site1", kSt, Pattern::kStore, "*.site1", "", ""},
  });
}

TEST(TopicMappingTest, LiteralDotsAndKubeMqWildcardCharactersPassThrough) {
  ExpectMappings({
      {"events/a.b/c", kEv, Pattern::kEvents, "a.b.c", "", ""},
      {"events/.", kEv, Pattern::kEvents, ".", "", ""},
      {"events/a./.b", kEv, Pattern::kEvents, "a...b", "", ""},
      {"events/...", kEv, Pattern::kEvents, "...", "", ""},
      {"a.b", kEv, Pattern::kEvents, "a.b", "", ""},
      {"events.x/y", kEv, Pattern::kEvents, "events.x.y", "", ""},  // not the events prefix
      {"events/*/>", kEv, Pattern::kEvents, "*.>", "", ""},         // lossy, as in KubeMQ
      {"store/a*b/c>d", kEv, Pattern::kStore, "a*b.c>d", "", ""},
  });
}

TEST(TopicMappingTest, SharedSubscriptions) {
  ExpectMappings({
      {"$share/workers/queues/jobs", kEv, Pattern::kQueues, "jobs", "workers", ""},
      {"$share/workers/queues/jobs/email", kNo, Pattern::kQueues, "jobs.email", "workers", ""},
      {"$share/g.1-x/queues/a.b", kEv, Pattern::kQueues, "a.b", "g.1-x", ""},
      // Other prefixes: shown with the mapping of the rest (refused only in strict mode).
      {"$share/g/events/a/b", kEv, Pattern::kEvents, "a.b", "g", ""},
      {"$share/g/store/a", kEv, Pattern::kStore, "a", "g", ""},
      {"$share/g/commands/a", kEv, Pattern::kCommands, "a", "g", ""},
      {"$share/g/queries/a", kEv, Pattern::kQueries, "a", "g", ""},
      {"$share/g/site1/temp", kEv, Pattern::kEvents, "site1.temp", "g", ""},
      {"$share/g/site1/temp", kSt, Pattern::kStore, "site1.temp", "g", ""},
      {"$share/g/#", kEv, Pattern::kEvents, ">", "g", ""},
      {"$share/g/+", kSt, Pattern::kStore, "*", "g", ""},
      // The rest maps to nothing, yet the mapping is valid and keeps its group.
      {"$share/g/site1/temp", kNo, Pattern::kNone, "", "g", ""},
      {"$share/g/$SYS/#", kEv, Pattern::kNone, "", "g", ""},
      {"$share/g/$reply/c/x", kEv, Pattern::kNone, "", "g", ""},
      {"$share/g/$share/h/queues/x", kEv, Pattern::kNone, "", "g", ""},  // no nesting
      // The group is one level: "queues" there is a group name, not a prefix.
      {"$share/queues/events/x", kEv, Pattern::kEvents, "x", "queues", ""},
  });
}

TEST(TopicMappingTest, DollarTopicsMapToNothingWithoutError) {
  ExpectUnmappedUnderEveryDefault({
      "$reply/client-1/abc",
      "$reply/client-1",
      "$reply",
      "$reply/+/#",
      "$SYS/#",
      "$SYS/broker/uptime",
      "$SYS",
      "$",
      "$foo/bar",
      "$events/x",
      "$sharex/g/queues/x",  // not "$share"
      "$SHARE/g/queues/x",   // case-sensitive
      // The broker's namespace: its grammar is not ours to judge.
      "$SYS//x",
      "$SYS/",
      "$SYS/a#/x",
  });
}

TEST(TopicMappingTest, InvalidFiltersSayWhy) {
  ExpectInvalidUnderEveryDefault({
      // Empty levels, anywhere.
      {"events//x", "empty topic level at level 2"},
      {"events/x/", "empty topic level at level 3"},
      {"/events/x", "empty topic level at level 1"},
      {"events/x//y", "empty topic level at level 3"},
      {"a//b", "empty topic level at level 2"},
      {"a/", "empty topic level at level 2"},
      {"/", "empty topic level at level 1"},
      {"//", "empty topic level at level 1"},
      {"queues/a//", "empty topic level at level 3"},
      {"$share/g/queues//x", "empty topic level at level 4"},
      {"$share/g/", "empty topic level at level 3"},
      {"$share/g/a//b", "empty topic level at level 4"},
      // Empty channels, for every prefix.
      {"events", "empty channel: nothing after the 'events' prefix"},
      {"events/", "empty channel: nothing after the 'events' prefix"},
      {"store", "empty channel: nothing after the 'store' prefix"},
      {"queues/", "empty channel: nothing after the 'queues' prefix"},
      {"commands", "nothing after the 'commands' prefix"},
      {"queries/", "nothing after the 'queries' prefix"},
      {"$share/g/queues", "nothing after the 'queues' prefix"},
      {"$share/g/events/", "nothing after the 'events' prefix"},
      // Shared subscription envelopes.
      {"$share//queues/x", "empty shared subscription group"},
      {"$share//queues", "empty shared subscription group"},
      {"$share//", "empty shared subscription group"},
      {"$share", "expected $share/<group>/<topic>"},
      {"$share/", "expected $share/<group>/<topic>"},
      {"$share/g", "expected $share/<group>/<topic>"},
      {"$share/+/queues/x", "group contains a wildcard"},
      {"$share/#/queues/x", "group contains a wildcard"},
      {"$share/g+/queues/x", "group contains a wildcard"},
      // The empty filter.
      {"", "empty topic filter"},
  });
}

// MQTT rejects these before the plugin sees them; the mapping still says what is wrong.
TEST(TopicMappingTest, WildcardMisuseIsAnError) {
  ExpectInvalidUnderEveryDefault({
      {"events/a#", "mixed with other characters at level 2"},
      {"events/#a", "mixed with other characters at level 2"},
      {"events/a+", "mixed with other characters at level 2"},
      {"events/x/+b/y", "mixed with other characters at level 3"},
      {"events/++", "mixed with other characters at level 2"},
      {"events/+#", "mixed with other characters at level 2"},
      {"events/##", "mixed with other characters at level 2"},
      {"events/#/x", "'#' is not the last level (level 2)"},
      {"events/#/#", "'#' is not the last level (level 2)"},
      {"#/x", "'#' is not the last level (level 1)"},
      {"a#", "mixed with other characters at level 1"},
      {"events#/x", "mixed with other characters at level 1"},
      {"$share/g/queues/a#", "mixed with other characters at level 4"},
      {"$share/g/#/x", "'#' is not the last level (level 3)"},
      // The leftmost problem wins.
      {"events/#/a+", "'#' is not the last level (level 2)"},
      {"events/a+//", "mixed with other characters at level 2"},
      {"events//a+", "empty topic level at level 2"},
      {"$share//queues//", "empty shared subscription group"},
  });
}

TEST(TopicMappingTest, DefaultPatternAppliesOnlyToUnprefixedTopics) {
  const std::string_view unprefixed[] = {"site1/temp", "a", "Events/x", "EVENTS/x", "eventsx/y",
                                         "event/x",    "+", "#",        "x/#",      "queue/a"};
  for (const std::string_view topic : unprefixed) {
    std::string channel(topic);
    for (char& c : channel) {
      if (c == '/') c = '.';
      if (c == '+') c = '*';
      if (c == '#') c = '>';
    }
    ExpectMappings({
        {topic, kEv, Pattern::kEvents, channel, "", ""},
        {topic, kSt, Pattern::kStore, channel, "", ""},
        {topic, kNo, Pattern::kNone, "", "", ""},
    });
  }
  for (const DefaultPattern d : kAllDefaults) {
    for (const auto& [prefix, pattern] : kPrefixes) {
      ExpectMapping({std::string(prefix) + "/x", d, pattern, "x", "", ""});
    }
  }
}

TEST(TopicMappingTest, VeryLongTopics) {
  const std::string level_64k(64 * 1024, 'a');
  ExpectMapping({"events/" + level_64k, kEv, Pattern::kEvents, level_64k, "", ""});
  ExpectMapping({level_64k, kSt, Pattern::kStore, level_64k, "", ""});

  std::string topic = "events";
  std::string channel;
  for (int i = 0; i < 10000; ++i) {
    topic += "/l";
    channel += channel.empty() ? "l" : ".l";
  }
  ExpectMapping({topic, kEv, Pattern::kEvents, channel, "", ""});
  ExpectMapping({topic + "/#", kEv, Pattern::kEvents, channel + ".>", "", ""});
  ExpectMapping({"$share/g/" + topic + "/+", kNo, Pattern::kEvents, channel + ".*", "g", ""});
  // Level numbers stay exact far into the topic: "events" is level 1, the last "l" 10001.
  ExpectMapping({topic + "//x", kEv, Pattern::kNone, "", "", "empty topic level at level 10002"});
  ExpectMapping({topic + "/#/x", kEv, Pattern::kNone, "", "", "not the last level (level 10002)"});
  EXPECT_EQ(ClassifyTopic(topic, kNo).pattern, Pattern::kEvents);
  EXPECT_TRUE(ClassifyTopic(topic, kNo).valid);
}

TEST(TopicMappingTest, OddBytesPassThroughUnchanged) {
  ExpectMappings({
      {"events/caf\xc3\xa9/\xe6\xb8\xa9\xe5\xba\xa6", kEv, Pattern::kEvents,
       "caf\xc3\xa9.\xe6\xb8\xa9\xe5\xba\xa6", "", ""},
      {"events/\xf0\x9f\x8c\xa1", kEv, Pattern::kEvents, "\xf0\x9f\x8c\xa1", "", ""},
      {"\xf0\x9f\x8c\xa1/x", kEv, Pattern::kEvents, "\xf0\x9f\x8c\xa1.x", "", ""},
      // Not UTF-8 at all: Mosquitto validates UTF-8 before the plugin, so no check here.
      {"events/\xff\xfe/\x80", kEv, Pattern::kEvents, "\xff\xfe.\x80", "", ""},
      {"events/a\0b"sv, kEv, Pattern::kEvents, "a\0b"sv, "", ""},
      {"\0"sv, kEv, Pattern::kEvents, "\0"sv, "", ""},
      {"events/tab\there/new\nline", kEv, Pattern::kEvents, "tab\there.new\nline", "", ""},
      {"events/ /  ", kEv, Pattern::kEvents, " .  ", "", ""},
      {"$share/gr\xc3\xbcppe/queues/x", kEv, Pattern::kQueues, "x", "gr\xc3\xbcppe", ""},
      {"\x01/\x7f", kSt, Pattern::kStore, "\x01.\x7f", "", ""},
  });
}

// ClassifyTopic on PUBLISH topics: the pattern the prefix names, valid or not.
TEST(TopicMappingTest, ClassifyTopicNamesThePatternEvenWhenInvalid) {
  struct ClassifyCase {
    std::string_view topic;
    DefaultPattern default_pattern;
    Pattern pattern;
    bool valid;
  };
  const ClassifyCase cases[] = {
      {"events/site1/temp", kEv, Pattern::kEvents, true},
      {"store/orders/europe", kEv, Pattern::kStore, true},
      {"queues/jobs", kEv, Pattern::kQueues, true},
      {"commands/svc/reboot", kEv, Pattern::kCommands, true},
      {"queries/svc/status", kNo, Pattern::kQueries, true},
      {"site1/temp", kEv, Pattern::kEvents, true},
      {"site1/temp", kSt, Pattern::kStore, true},
      {"site1/temp", kNo, Pattern::kNone, true},
      {"$reply/client-1/x", kEv, Pattern::kNone, true},
      {"$SYS/broker/uptime", kEv, Pattern::kNone, true},
      {"$anything", kSt, Pattern::kNone, true},
      {"$share/g/queues/jobs", kEv, Pattern::kQueues, true},
      {"$share/g/site1", kSt, Pattern::kStore, true},
      {"$share/g/$SYS/x", kEv, Pattern::kNone, true},
      // Invalid: the pattern is still the one the prefix names.
      {"events//x", kEv, Pattern::kEvents, false},
      {"events", kEv, Pattern::kEvents, false},
      {"events/", kNo, Pattern::kEvents, false},
      {"store/x/", kEv, Pattern::kStore, false},
      {"queues", kSt, Pattern::kQueues, false},
      {"commands//", kEv, Pattern::kCommands, false},
      {"queries", kEv, Pattern::kQueries, false},
      {"events/a#", kEv, Pattern::kEvents, false},
      {"/events/x", kEv, Pattern::kEvents, false},  // unprefixed: the default pattern
      {"/events/x", kSt, Pattern::kStore, false},
      {"/events/x", kNo, Pattern::kNone, false},
      {"a//b", kSt, Pattern::kStore, false},
      {"", kEv, Pattern::kEvents, false},
      {"", kNo, Pattern::kNone, false},
      {"$share//queues/x", kEv, Pattern::kQueues, false},
      {"$share/g/queues", kEv, Pattern::kQueues, false},
      {"$share/g", kEv, Pattern::kNone, false},
      {"$share", kEv, Pattern::kNone, false},
  };
  for (const ClassifyCase& c : cases) {
    SCOPED_TRACE(Printable(c.topic) + ", " + DefaultName(c.default_pattern));
    const TopicClass topic_class = ClassifyTopic(c.topic, c.default_pattern);
    EXPECT_EQ(topic_class.pattern, c.pattern) << PatternName(topic_class.pattern);
    EXPECT_EQ(topic_class.valid, c.valid);
  }
}

TEST(TopicMappingTest, ClassifyTopicIsNoexcept) {
  static_assert(noexcept(ClassifyTopic(std::string_view(), DefaultPattern::kEvents)));
  static_assert(noexcept(PatternName(Pattern::kNone)));
}

// The property the broker relies on, plus the shape every mapping must have. Returns false (and
// records a failure) on the first violation so that loops over many topics stay readable.
bool CheckAgreement(std::string_view topic) {
  for (const DefaultPattern d : kAllDefaults) {
    const TopicMapping mapping = MapTopicFilter(topic, d);
    const TopicClass topic_class = ClassifyTopic(topic, d);
    const bool ok = mapping.error->empty()
                        ? topic_class.valid && topic_class.pattern == mapping.pattern &&
                              mapping.channel.find('/') == std::string::npos &&
                              (mapping.pattern == Pattern::kNone) == mapping.channel.empty()
                        : !topic_class.valid && mapping.pattern == Pattern::kNone &&
                              mapping.channel.empty() && mapping.shared_group->empty();
    if (!ok) {
      ADD_FAILURE() << Printable(topic) << ", " << DefaultName(d) << ": mapping {"
                    << PatternName(mapping.pattern) << ", \"" << mapping.channel << "\", \""
                    << *mapping.shared_group << "\", error \"" << *mapping.error << "\"}, class {"
                    << PatternName(topic_class.pattern) << ", " << topic_class.valid << "}";
      return false;
    }
  }
  return true;
}

// Every topic of up to four levels over tokens that hit each branch of the grammar.
TEST(TopicMappingTest, ClassifyAgreesWithMapOnAllShortTopics) {
  const std::string_view tokens[] = {"",        "events", "store", "queues", "commands",
                                     "queries", "$share", "$SYS",  "g",      "a.b",
                                     "+",       "#",      "a#",    "+b",     "\xff"};
  std::size_t checked = 0;
  std::vector<std::string> topics = {""};
  for (int levels = 1; levels <= 4; ++levels) {
    std::vector<std::string> longer;
    for (const std::string& prefix : topics) {
      for (const std::string_view token : tokens) {
        longer.push_back(levels == 1 ? std::string(token) : prefix + "/" + std::string(token));
      }
    }
    for (const std::string& topic : longer) {
      ASSERT_TRUE(CheckAgreement(topic));
      ++checked;
    }
    topics = std::move(longer);
  }
  EXPECT_GT(checked, std::size_t{50000});
}

// Random strings over the characters that matter to the grammar, with a fixed seed.
TEST(TopicMappingTest, ClassifyAgreesWithMapOnRandomTopics) {
  constexpr char kAlphabet[] = {'/', '/', '/', '+', '#', '$', '.', 'a', 'e', '\0', '\xc3'};
  const std::string_view words[] = {"events",  "store",  "queues", "commands",
                                    "queries", "$share", "$reply", "$SYS"};
  std::mt19937 random(20240531);
  std::uniform_int_distribution<std::size_t> length(0, 12);
  std::uniform_int_distribution<std::size_t> pick_char(0, sizeof(kAlphabet) - 1);
  std::uniform_int_distribution<std::size_t> pick_word(0, std::size(words) - 1);
  std::uniform_int_distribution<int> coin(0, 3);
  for (int i = 0; i < 100000; ++i) {
    std::string topic;
    const std::size_t n = length(random);
    for (std::size_t j = 0; j < n; ++j) {
      if (coin(random) == 0) {
        topic += words[pick_word(random)];
      } else {
        topic += kAlphabet[pick_char(random)];
      }
    }
    ASSERT_TRUE(CheckAgreement(topic));
  }
}

}  // namespace

namespace mqc {
namespace {

TEST(TopicMatchesFilterTest, MqttMatchingRules) {
  struct Case {
    const char* filter;
    const char* topic;
    bool matches;
  } const cases[] = {
      {"a/b", "a/b", true},
      {"a/b", "a/c", false},
      {"a/+", "a/b", true},
      {"a/+", "a/b/c", false},
      {"a/+/c", "a/b/c", true},
      {"a/#", "a/b/c", true},
      {"a/#", "a", true},
      {"#", "a/b", true},
      {"+", "a", true},
      {"+", "a/b", false},
      {"+/+", "a/b", true},
      {"a/b", "a/b/c", false},
      {"a/b/c", "a/b", false},
      {"#", "$SYS/x", false},
      {"+/x", "$SYS/x", false},
      {"$SYS/#", "$SYS/x", true},
      {"a//b", "a//b", true},
      {"a/+/b", "a//b", true},
      {"$share/g/a/+", "a/b", true},
      {"$share/g/#", "x/y", true},
      {"$share/g", "g", false},
      {"a/", "a/", true},
      {"a/+", "a/", true},
      {"", "", true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.filter) + " ~ " + c.topic);
    EXPECT_EQ(TopicMatchesFilter(c.filter, c.topic), c.matches);
  }
}

}  // namespace
}  // namespace mqc
