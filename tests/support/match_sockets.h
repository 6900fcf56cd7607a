// SPDX-License-Identifier: BSD-3-Clause
// The socket matching of network_info.h in one call, over the records of a dump: an index of
// `sockets`, then FillNetworkInfo. Only tests want the two steps as one (the companion keeps the
// index of a dump for many requests), so this lives here and not in src/.
#pragma once

#include <cstdint>
#include <vector>

#include "companion/connection.h"
#include "companion/network_info.h"
#include "companion/sock_diag.h"

namespace mqc {

inline void MatchSockets(const std::vector<TcpSocketInfo>& sockets, std::int64_t age_ns,
                         std::vector<Connection>* connections) {
  FillNetworkInfo(SocketIndex(sockets), age_ns, connections);
}

}  // namespace mqc
