// SPDX-License-Identifier: BSD-3-Clause
// The admin's actions as the HTTP views ask for them and the companion carries them out: a
// disconnect (broker_disconnect.h) and the bans (broker_bans.h). The views
// (http/disconnect_view.h, http/ban_view.h) read requests into these types and write the
// outcomes back; companion/main.cc hands them the companion's Disconnector and BanAdmin. Plain
// values and functions; nothing here knows HTTP.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "link/ban_list.h"
#include "link/status.h"

namespace mqc {

// Who asks, for the broker's log line: never the token itself.
struct Caller {
  std::string address;     // "127.0.0.1:41234"
  std::string token_line;  // "admin token file line 3"
  // The request's Authorization header, only to forward a disconnect to the fleet peer that
  // holds the connection (never logged).
  std::string authorization;
};

struct DisconnectTarget {  // exactly one of client_id and uid is set
  std::string client_id;
  std::string uid;
  bool prevent_will = false;  // the broker publishes the client's will unless this is set
  // The broker that holds it (DisconnectConnection's nodeId); unset: this one.
  std::optional<std::uint32_t> node_id;
};

struct DisconnectOutcome {
  Status status;  // kNotFound for an unknown (or not open) client
  std::string client_id;
  std::string uid;
};

using Disconnector =
    std::function<DisconnectOutcome(const DisconnectTarget& target, const Caller& caller)>;

struct BanOutcome {
  Status status;
  Ban ban;                 // as it is now in force (or as it was, for a removal)
  std::size_t kicked = 0;  // open connections it concerned, asked to disconnect
};

struct BanAdmin {
  std::function<std::vector<Ban>()> list;
  // `ban` is checked (target, times, texts) and has at_ns; `by` empty: the caller's token line.
  std::function<BanOutcome(Ban ban, const Caller& caller)> add;
  // `target`: kind and canonical who.
  std::function<BanOutcome(const Ban& target, const Caller& caller)> remove;
  std::function<std::uint64_t()> refused_total;  // CONNECTs refused for a ban since start
  std::function<std::int64_t()> now_ns;          // Unix ns (tests set it)
};

}  // namespace mqc
