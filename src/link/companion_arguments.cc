// SPDX-License-Identifier: BSD-3-Clause
#include "link/companion_arguments.h"

#include <charconv>
#include <string_view>
#include <utility>

#include "link/text_util.h"

namespace mqc {
namespace {

constexpr std::string_view kSharedFd = "--shared-fd=";
constexpr std::string_view kBrokerPid = "--broker-pid=";
constexpr std::string_view kBrokerConfig = "--broker-config=";
constexpr std::string_view kBrokerVersion = "--broker-version=";
constexpr std::string_view kOptionsFollow = "--";

bool TakePrefix(std::string_view argument, std::string_view prefix, std::string_view* rest) {
  if (!StartsWith(argument, prefix)) return false;
  *rest = argument.substr(prefix.size());
  return true;
}

// A whole decimal number, nothing before or after it.
template <typename Number>
bool ParseNumber(std::string_view text, Number* out) {
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, *out);
  return !text.empty() && error == std::errc() && stop == end;
}

}  // namespace

std::vector<std::string> WriteCompanionArguments(const CompanionArguments& arguments) {
  std::vector<std::string> list;
  list.reserve(5 + arguments.options.size());
  list.push_back(std::string(kSharedFd) + std::to_string(arguments.shared_fd));
  list.push_back(std::string(kBrokerPid) + std::to_string(arguments.broker_pid));
  if (!arguments.broker_config.empty()) {
    list.push_back(std::string(kBrokerConfig) + arguments.broker_config);
  }
  if (!arguments.broker_version.empty()) {
    list.push_back(std::string(kBrokerVersion) + arguments.broker_version);
  }
  list.push_back(std::string(kOptionsFollow));
  for (std::string& option : WriteOptionArguments(arguments.options)) {
    list.push_back(std::move(option));
  }
  return list;
}

std::vector<std::string> WriteOptionArguments(const OptionPairs& options) {
  std::vector<std::string> list;
  list.reserve(options.size());
  for (const auto& [key, value] : options) list.push_back(key + "=" + value);
  return list;
}

Status ParseCompanionArguments(const std::vector<std::string>& list, CompanionArguments* out) {
  CompanionArguments parsed;
  bool options = false;
  for (const std::string& argument : list) {
    std::string_view value;
    if (options) {
      const std::size_t equals = argument.find('=');
      if (equals == std::string::npos) return InvalidArgument("option without '=': " + argument);
      parsed.options.emplace_back(argument.substr(0, equals), argument.substr(equals + 1));
    } else if (argument == kOptionsFollow) {
      options = true;
    } else if (TakePrefix(argument, kSharedFd, &value)) {
      if (!ParseNumber(value, &parsed.shared_fd) || parsed.shared_fd < 0) {
        return InvalidArgument("not a descriptor: " + argument);
      }
    } else if (TakePrefix(argument, kBrokerPid, &value)) {
      if (!ParseNumber(value, &parsed.broker_pid) || parsed.broker_pid <= 0) {
        return InvalidArgument("not a process id: " + argument);
      }
    } else if (TakePrefix(argument, kBrokerConfig, &value)) {
      parsed.broker_config = std::string(value);
    } else if (TakePrefix(argument, kBrokerVersion, &value)) {
      parsed.broker_version = std::string(value);
    } else {
      return InvalidArgument("unknown argument: " + argument);
    }
  }
  if (parsed.shared_fd < 0 || parsed.broker_pid <= 0) {
    return InvalidArgument(
        "--shared-fd and --broker-pid are required (the plugin starts this program)");
  }
  *out = std::move(parsed);
  return Status();
}

}  // namespace mqc
