// SPDX-License-Identifier: BSD-3-Clause
// A fleet of connections behind the ConnectionSource interface, as the registry serves it to the
// query engine: shared connections in one shared snapshot built once (the registry builds its
// own once per change), lookups by client id, and counts of how each query read it. Shared by the
// query tests, the fuzz targets and the benchmarks.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "companion/connection.h"

namespace mqc {

class FleetSource : public ConnectionSource {
 public:
  explicit FleetSource(const std::vector<Connection>& fleet) : all_(Share(fleet)) {}
  std::vector<Connection> Snapshot() const override {
    ++snapshots;
    std::vector<Connection> copies;
    for (const ConnectionPtr& c : *all_) copies.push_back(*c);
    return copies;
  }
  ConnectionList SharedSnapshot() const override {
    ++shared_snapshots;
    return all_;
  }
  std::vector<ConnectionPtr> FindByClientId(std::string_view client_id) const override {
    ++lookups;
    std::vector<ConnectionPtr> found;
    for (const ConnectionPtr& c : *all_) {
      if (c->client_id == client_id) found.push_back(c);
    }
    return found;
  }

  // Wide enough for a fuzz target's whole run.
  mutable std::int64_t snapshots = 0;
  mutable std::int64_t shared_snapshots = 0;
  mutable std::int64_t lookups = 0;

 private:
  static ConnectionList Share(const std::vector<Connection>& fleet) {
    std::vector<ConnectionPtr> shared;
    shared.reserve(fleet.size());
    for (const Connection& c : fleet) shared.push_back(std::make_shared<const Connection>(c));
    return std::make_shared<const std::vector<ConnectionPtr>>(std::move(shared));
  }

  ConnectionList all_;
};

}  // namespace mqc
