// SPDX-License-Identifier: BSD-3-Clause
// Fixed names of enum values (option values, JSON words, log text) as a table of
// {value, name} pairs beside the code that uses them, with one lookup each way. A table
// replaces a switch that did nothing per case but return a string; a switch whose cases hold
// logic stays a switch.
//
// Unlike a switch, a table gets no compiler warning when an enumerator is missing: the unit
// test of each table's owner names every value (or a static_assert counts them).
// constexpr, no allocation; safe on any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace mqc {

template <typename Enum>
struct NamedValue {
  Enum value;
  // Always a string literal, so that name.data() may be kept and handed to C. A string_view
  // rather than a char pointer: its length is known at compile time, so parsing compares
  // lengths first and never counts characters (PrefixPattern runs per PUBLISH).
  std::string_view name;
};

// The name of `value`, or `fallback` for a value the table does not list (a value read from
// elsewhere, a count or "unspecified" sentinel). The first entry of a value wins.
template <typename Enum, std::size_t N>
constexpr std::string_view NameOf(const NamedValue<Enum> (&table)[N], Enum value,
                                  std::string_view fallback) noexcept {
  for (const NamedValue<Enum>& entry : table) {
    if (entry.value == value) return entry.name;
  }
  return fallback;
}

// The value named exactly `name` (case-sensitive), or nullopt. The first entry of a name wins.
template <typename Enum, std::size_t N>
constexpr std::optional<Enum> ValueNamed(const NamedValue<Enum> (&table)[N],
                                         std::string_view name) noexcept {
  for (const NamedValue<Enum>& entry : table) {
    if (name == entry.name) return entry.value;
  }
  return std::nullopt;
}

}  // namespace mqc
