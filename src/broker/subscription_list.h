// SPDX-License-Identifier: BSD-3-Clause
// A client's subscriptions in one buffer of records (QoS: 1 byte, filter length: 2 bytes,
// little-endian, then the filter), so that a connection's or an offline session's subscriptions
// cost one allocation of about their text. A client holds few filters and changes them rarely:
// a linear walk beats an index here, and no spare capacity is kept.
//
// Filters are MQTT strings, at most 65,535 bytes: a longer one is cut there by Append (the
// broker never hands one).
//
// Threads: one owner (SessionTable, the broker thread); no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mqc {

class SubscriptionList {
 public:
  struct Entry {
    std::string_view filter;
    std::uint8_t qos = 0;
  };

  // Calls visit(Entry) for each filter, in the order they were added. Entry's filter views the
  // list's own buffer: valid until the list changes.
  template <typename Visit>
  void ForEach(Visit visit) const {
    for (std::size_t at = 0; at < data_.size();) {
      const Entry entry = At(at);
      visit(entry);
      at += kHead + entry.filter.size();
    }
  }
  bool empty() const { return data_.empty(); }
  // The number of filters (a walk: not for a hot path).
  std::size_t size() const;
  // Adds the filter, or sets its QoS; false when it was there with this QoS already.
  bool Set(std::string_view filter, std::uint8_t qos);
  // Adds the filter without looking for it first (a list read from a file), in amortized
  // constant time; ShrinkToFit once done.
  void Append(std::string_view filter, std::uint8_t qos);
  void ShrinkToFit() { data_.shrink_to_fit(); }
  // Removes the filter; false when it was not there. `*qos`: the QoS it had.
  bool Remove(std::string_view filter, std::uint8_t* qos);
  // The filter's QoS; false when it is not there.
  bool Get(std::string_view filter, std::uint8_t* qos) const;
  // The highest QoS of the filters matching `topic` (TopicMatchesFilter: '+', '#', "$share/",
  // and '$' topics unmatched by a first-level wildcard); false when none does.
  bool MaxMatchingQos(std::string_view topic, std::uint8_t* qos) const;
  // How many filters match `topic` (as MaxMatchingQos), `*qos` the last one's QoS.
  std::size_t CountMatching(std::string_view topic, std::uint8_t* qos) const;

 private:
  static constexpr std::size_t kHead = 3;
  Entry At(std::size_t at) const;
  std::size_t Find(std::string_view filter) const;  // data_.size() when absent
  std::string data_;
};

}  // namespace mqc
