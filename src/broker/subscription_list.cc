// SPDX-License-Identifier: BSD-3-Clause
#include "broker/subscription_list.h"

#include <algorithm>

#include "link/topic_mapping.h"

namespace mqc {

std::size_t SubscriptionList::size() const {
  std::size_t count = 0;
  ForEach([&count](const Entry&) { ++count; });
  return count;
}

SubscriptionList::Entry SubscriptionList::At(std::size_t at) const {
  const auto byte = [this](std::size_t i) { return static_cast<std::uint8_t>(data_[i]); };
  const std::size_t length = std::size_t{byte(at + 1)} | std::size_t{byte(at + 2)} << 8;
  return Entry{std::string_view(data_).substr(at + kHead, length), byte(at)};
}

std::size_t SubscriptionList::Find(std::string_view filter) const {
  std::size_t at = 0;
  while (at < data_.size()) {
    const Entry entry = At(at);
    if (entry.filter == filter) return at;
    at += kHead + entry.filter.size();
  }
  return data_.size();
}

bool SubscriptionList::Set(std::string_view filter, std::uint8_t qos) {
  const std::size_t at = Find(filter);
  if (at < data_.size()) {
    if (At(at).qos == qos) return false;
    data_[at] = static_cast<char>(qos);
    return true;
  }
  Append(filter, qos);
  ShrinkToFit();  // a client's subscriptions change rarely: no spare capacity kept
  return true;
}

void SubscriptionList::Append(std::string_view filter, std::uint8_t qos) {
  // MQTT strings are at most 65,535 bytes: the length fits its two bytes.
  const std::size_t length = std::min<std::size_t>(filter.size(), 0xffff);
  data_.push_back(static_cast<char>(qos));
  data_.push_back(static_cast<char>(length & 0xff));
  data_.push_back(static_cast<char>(length >> 8));
  data_.append(filter.substr(0, length));
}

bool SubscriptionList::Remove(std::string_view filter, std::uint8_t* qos) {
  const std::size_t at = Find(filter);
  if (at == data_.size()) return false;
  *qos = At(at).qos;
  data_.erase(at, kHead + filter.size());
  if (data_.empty()) std::string().swap(data_);  // give the buffer back
  return true;
}

bool SubscriptionList::Get(std::string_view filter, std::uint8_t* qos) const {
  const std::size_t at = Find(filter);
  if (at == data_.size()) return false;
  *qos = At(at).qos;
  return true;
}

bool SubscriptionList::MaxMatchingQos(std::string_view topic, std::uint8_t* qos) const {
  bool matched = false;
  std::uint8_t highest = 0;
  ForEach([&](const Entry& entry) {
    if (TopicMatchesFilter(entry.filter, topic)) {
      matched = true;
      highest = std::max(highest, entry.qos);
    }
  });
  *qos = highest;
  return matched;
}

std::size_t SubscriptionList::CountMatching(std::string_view topic, std::uint8_t* qos) const {
  std::size_t matches = 0;
  ForEach([&](const Entry& entry) {
    if (TopicMatchesFilter(entry.filter, topic)) {
      ++matches;
      *qos = entry.qos;
    }
  });
  return matches;
}

}  // namespace mqc
