// SPDX-License-Identifier: BSD-3-Clause
// A BrokerVersion from its three numbers, as the layout tables and the handlers' tests name the
// brokers they stand for.
#pragma once

#include "broker/broker_capabilities.h"

namespace mqc {

inline BrokerVersion Version(int major, int minor, int patch) {
  BrokerVersion version;
  version.major = major;
  version.minor = minor;
  version.patch = patch;
  return version;
}

}  // namespace mqc
