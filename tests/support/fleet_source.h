// SPDX-License-Identifier: BSD-3-Clause
// A fleet of connections behind the ConnectionSource interface, as the registry serves it to the
// query engine: shared connections, an index by client id, and counts of how each query read
// it. Shared by the query tests, the fuzz targets and the benchmarks.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "companion/connection.h"

namespace mqc {

class FleetSource : public ConnectionSource {
 public:
  explicit FleetSource(const std::vector<Connection>& fleet) {
    for (const Connection& c : fleet) all_.push_back(std::make_shared<const Connection>(c));
  }
  std::vector<Connection> Snapshot() const override {
    ++snapshots;
    std::vector<Connection> copies;
    for (const ConnectionPtr& c : all_) copies.push_back(*c);
    return copies;
  }
  ConnectionList SharedSnapshot() const override {
    ++shared_snapshots;
    return std::make_shared<const std::vector<ConnectionPtr>>(all_);
  }
  std::vector<ConnectionPtr> FindByClientId(std::string_view client_id) const override {
    ++lookups;
    std::vector<ConnectionPtr> found;
    for (const ConnectionPtr& c : all_) {
      if (c->client_id == client_id) found.push_back(c);
    }
    return found;
  }

  // Wide enough for a fuzz target's whole run.
  mutable std::int64_t snapshots = 0;
  mutable std::int64_t shared_snapshots = 0;
  mutable std::int64_t lookups = 0;

 private:
  std::vector<ConnectionPtr> all_;
};

}  // namespace mqc
