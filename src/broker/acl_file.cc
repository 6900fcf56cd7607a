// SPDX-License-Identifier: BSD-3-Clause
#include "broker/acl_file.h"

#include <cctype>
#include <fstream>
#include <iterator>
#include <sstream>

#include "link/topic_mapping.h"

namespace mqc {

namespace {

bool IsBlank(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::string_view TrimBlanks(std::string_view text) {
  while (!text.empty() && IsBlank(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsBlank(text.back())) text.remove_suffix(1);
  return text;
}

// The next word of `*rest` up to a space (the broker splits acl_file lines with strtok on " "
// alone: a tab is part of a word), skipping the spaces before it.
std::string_view NextWord(std::string_view* rest) {
  while (!rest->empty() && rest->front() == ' ') rest->remove_prefix(1);
  const std::size_t end = rest->find(' ');
  const std::string_view word = rest->substr(0, end);
  *rest = end == std::string_view::npos ? std::string_view() : rest->substr(end + 1);
  return word;
}

// mosquitto_sub_topic_check: wildcards take a whole level, '#' only the last one.
bool ValidFilter(std::string_view filter) {
  if (filter.empty() || filter.size() > 65535) return false;
  for (std::size_t i = 0; i < filter.size(); ++i) {
    const char c = filter[i];
    if (c == '\0') return false;
    if (c != '+' && c != '#') continue;
    if (i > 0 && filter[i - 1] != '/') return false;
    if (c == '#' && i + 1 != filter.size()) return false;
    if (c == '+' && i + 1 < filter.size() && filter[i + 1] != '/') return false;
  }
  return true;
}

// mosquitto_topic_matches_sub(filter, topic). TopicMatchesFilter strips a "$share/<group>/"
// prefix, which the broker's function does not: such a rule is matched literally.
bool Matches(std::string_view filter, std::string_view topic) {
  constexpr std::string_view kShare = "$share/";
  if (filter.substr(0, kShare.size()) == kShare) {
    return TopicMatchesFilter("x/" + std::string(filter), "x/" + std::string(topic));
  }
  return TopicMatchesFilter(filter, topic);
}

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace

void AclFile::Add(std::vector<Rule>* rules, Rule rule) {
  // The broker puts deny rules first (add__acl, add__acl_pattern): a matching one wins.
  if (rule.access == 0) {
    rules->insert(rules->begin(), std::move(rule));
  } else {
    rules->push_back(std::move(rule));
  }
}

Status AclFile::Parse(std::string_view text, const std::string& path, AclFile* file) {
  AclFile parsed;
  std::optional<std::string> user;
  std::size_t line_number = 0;
  const auto bad = [&](const std::string& what) {
    return Status(StatusCode::kInvalidArgument,
                  path + ":" + std::to_string(line_number) + ": " + what);
  };
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++line_number;
    while (!line.empty() && IsBlank(line.back())) line.remove_suffix(1);
    if (!line.empty() && line.front() == '#') continue;
    std::string_view rest = line;
    const std::string_view keyword = NextWord(&rest);
    if (keyword.empty()) continue;
    if (keyword == "topic" || keyword == "pattern") {
      std::string_view access_text = NextWord(&rest);
      if (access_text.empty()) return bad("empty topic");
      while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
      std::string_view topic;
      if (!rest.empty()) {
        topic = TrimBlanks(rest);
      } else {
        topic = access_text;
        access_text = std::string_view();
      }
      Rule rule;
      if (access_text.empty() || access_text == "readwrite") {
        rule.access = kRead | kWrite;
      } else if (access_text == "read") {
        rule.access = kRead;
      } else if (access_text == "write") {
        rule.access = kWrite;
      } else if (access_text == "deny") {
        rule.access = 0;
      } else {
        return bad("invalid topic access type \"" + std::string(access_text) + "\"");
      }
      if (!ValidFilter(topic)) return bad("invalid ACL topic \"" + std::string(topic) + "\"");
      rule.topic = std::string(topic);
      if (keyword == "pattern") {
        rule.has_client_pattern = Contains(topic, "%c");
        rule.has_user_pattern = Contains(topic, "%u");
        Add(&parsed.patterns_, std::move(rule));
      } else {
        User* entry = nullptr;
        for (User& existing : parsed.users_) {
          if (existing.name == user) entry = &existing;
        }
        if (entry == nullptr) {
          parsed.users_.push_back(User{user, {}});
          entry = &parsed.users_.back();
        }
        Add(&entry->rules, std::move(rule));
      }
    } else if (keyword == "user") {
      const std::string_view name = TrimBlanks(rest);
      if (name.empty()) return bad("missing username");
      user = std::string(name);
    } else {
      return bad("invalid line: " + std::string(line));
    }
  }
  *file = std::move(parsed);
  return Status();
}

Status AclFile::Read(const std::string& path, AclFile* file) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kNotFound, "cannot open the acl_file " + path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return Parse(text, path, file);
}

const AclFile::User* AclFile::UserOf(const char* username) const {
  for (const User& user : users_) {
    if (username == nullptr ? !user.name.has_value() : user.name == username) return &user;
  }
  return nullptr;
}

std::string_view AclFile::Expand(const Rule& rule, std::string_view client_id,
                                 const char* username) const {
  expanded_.clear();
  const std::string& topic = rule.topic;
  for (std::size_t i = 0; i < topic.size(); ++i) {
    if (i + 1 < topic.size() && topic[i] == '%') {
      if (topic[i + 1] == 'c') {
        expanded_.append(client_id);
        ++i;
        continue;
      }
      if (username != nullptr && topic[i + 1] == 'u') {
        expanded_.append(username);
        ++i;
        continue;
      }
    }
    expanded_.push_back(topic[i]);
  }
  return expanded_;
}

bool AclFile::Allows(std::string_view client_id, const char* username, std::string_view topic,
                     int access) const {
  const User* user = UserOf(username);
  if (user == nullptr && patterns_.empty()) return false;
  if (user != nullptr) {
    for (const Rule& rule : user->rules) {
      // A topic starting with '$' is matched only by rules that start with '$' too.
      if (!topic.empty() && topic.front() == '$' && rule.topic.front() != '$') continue;
      if (!Matches(rule.topic, topic)) continue;
      if (rule.access == 0) return false;
      if ((rule.access & access) != 0) return true;
    }
  }
  if (patterns_.empty()) return false;
  // A client id or username with a wildcard could match other clients' patterns.
  if (username != nullptr && std::string_view(username).find_first_of("+#") != std::string_view::npos) {
    return false;
  }
  if (client_id.find_first_of("+#") != std::string_view::npos) return false;
  for (const Rule& rule : patterns_) {
    if (rule.has_user_pattern && username == nullptr) continue;
    if (!Matches(Expand(rule, client_id, username), topic)) continue;
    if (rule.access == 0) return false;
    if ((rule.access & access) != 0) return true;
  }
  return false;
}

}  // namespace mqc
