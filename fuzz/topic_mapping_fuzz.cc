// SPDX-License-Identifier: BSD-3-Clause
// Fuzz target for the KubeMQ topic grammar. The input is one topic or filter, raw bytes. Besides
// crashes and sanitizer reports, it aborts when ClassifyTopic (the per-message path) disagrees
// with MapTopicFilter (what the API shows), since the broker counts by one and shows the other.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "link/topic_mapping.h"

namespace {

[[noreturn]] void Fail(const char* what, std::string_view topic) {
  std::fprintf(stderr, "topic_mapping_fuzz: %s (topic of %zu bytes)\n", what, topic.size());
  std::abort();
}

void Check(std::string_view topic, mqc::DefaultPattern default_pattern) {
  const mqc::TopicMapping mapping = mqc::MapTopicFilter(topic, default_pattern);
  const mqc::TopicClass topic_class = mqc::ClassifyTopic(topic, default_pattern);
  if (!mapping.error->empty()) {
    if (topic_class.valid) Fail("ClassifyTopic is valid where MapTopicFilter errs", topic);
    if (mapping.pattern != mqc::Pattern::kNone || !mapping.channel.empty() ||
        !mapping.shared_group->empty()) {
      Fail("an invalid mapping is not empty", topic);
    }
    return;
  }
  if (!topic_class.valid) Fail("ClassifyTopic is invalid where MapTopicFilter is not", topic);
  if (topic_class.pattern != mapping.pattern) Fail("patterns differ", topic);
  // A mapped channel is never empty and is made of '.'-joined levels only.
  if ((mapping.pattern == mqc::Pattern::kNone) != mapping.channel.empty()) {
    Fail("channel presence does not match the pattern", topic);
  }
  if (mapping.channel.find('/') != std::string_view::npos) Fail("'/' left in channel", topic);
  if (mapping.channel.size() > topic.size()) Fail("channel longer than the topic", topic);
  if (mqc::PatternName(mapping.pattern).empty() != (mapping.pattern == mqc::Pattern::kNone)) {
    Fail("PatternName disagrees with the pattern", topic);
  }
}

}  // namespace

// No try/catch, unlike the plugin's C boundaries: an exception here is a finding to report.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view topic(reinterpret_cast<const char*>(data), size);
  Check(topic, mqc::DefaultPattern::kEvents);
  Check(topic, mqc::DefaultPattern::kStore);
  Check(topic, mqc::DefaultPattern::kNone);
  return 0;
}
