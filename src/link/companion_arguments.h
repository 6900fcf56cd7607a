// SPDX-License-Identifier: BSD-3-Clause
// The companion's command line, written by the plugin when it starts the companion and parsed
// by the companion: one definition for both sides, so that a new argument cannot be written
// by one and unknown to the other.
//
//   mosquitto_connections_companion --shared-fd=3 --broker-pid=PID [--broker-config=PATH]
//       [--broker-version=2.0.21] -- key=value ...   (the plugin_opt_ options of mosquitto.conf)
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "link/plugin_options.h"
#include "link/status.h"

namespace mqc {

struct CompanionArguments {
  int shared_fd = -1;          // the shared region, inherited from the broker
  pid_t broker_pid = 0;        // the broker; the companion dies with it
  std::string broker_config;   // the broker's configuration file; empty: not passed
  std::string broker_version;  // as the plugin read it from the broker; empty: not passed
  OptionPairs options;         // the plugin_opt_ pairs, after "--"
};

// The argument list after the program's name. An option's key cannot hold '=' (the parser
// splits each pair at its first '='); mosquitto.conf's option names never do.
std::vector<std::string> WriteCompanionArguments(const CompanionArguments& arguments);

// Only the key=value arguments of `options`: a later start of the companion appends them to
// the list above, after the options there (the last value of an option wins).
std::vector<std::string> WriteOptionArguments(const OptionPairs& options);

// Parses the argument list after the program's name. A bad argument is refused with a message
// naming it; --shared-fd and --broker-pid are required.
Status ParseCompanionArguments(const std::vector<std::string>& list, CompanionArguments* out);

}  // namespace mqc
