// SPDX-License-Identifier: BSD-3-Clause
// The plugin's version (CMakeLists.txt's project version), named in the broker's log at start,
// in /metrics (mosquitto_connections_build_info) and by the command line (--version).
#pragma once

namespace mqc {

inline constexpr char kPluginVersion[] = MQC_VERSION_TEXT;

}  // namespace mqc
