// SPDX-License-Identifier: BSD-3-Clause
// The brokers the layout tables and the handlers' tests stand for: a BrokerVersion from its
// three numbers, and the client struct layouts of the matrix's Debian 2.0.21 and 2.1 builds.
#pragma once

#include "broker/broker_capabilities.h"
#include "broker/broker_layout.h"
#include "laid_out_client.h"

namespace mqc {

inline BrokerVersion Version(int major, int minor, int patch) {
  BrokerVersion version;
  version.major = major;
  version.minor = minor;
  version.patch = patch;
  return version;
}

// Debian 13's 2.0.21 (TLS, c-ares, libwebsockets).
inline const BrokerLayout& Debian2021Layout() {
  return *Named(BrokerLayoutCandidates(Version(2, 0, 21)), "2.0.15-2.0.22 TLS ADNS WebSockets");
}

// 2.1.2 built with TLS and its own WebSockets.
inline const BrokerLayout& Builtin21Layout() {
  return *Named(BrokerLayoutCandidates(Version(2, 1, 2)), "2.1 TLS builtin WebSockets");
}

// Upstream's master from 43c27150 on (it says 2.1.2), built as 2.1-cmake is.
inline const BrokerLayout& Master21Layout() {
  return *Named(BrokerLayoutCandidates(Version(2, 1, 2)), "2.1-43c27150 TLS builtin WebSockets");
}

}  // namespace mqc
