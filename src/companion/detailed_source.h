// SPDX-License-Identifier: BSD-3-Clause
// What the HTTP views read: the registry as a ConnectionSource.
//
// SyncedSource (the KubeMQ view): the registry's connections. Every read waits briefly (2 s at
// most) for the first resync after a (re)start, so that a request right after a restart sees
// the broker's whole state, not a part of it.
//
// DetailedSource (the rich API, Connect ListConnections): the same, with open connections'
// traffic from the shared statistics slots, and their idle time and network figures from the
// kernel (NetworkInfoCache, one sock_diag dump per second at most). The fast path
// (connection_query.h) reads the stored connections and adds the details to the page only.
// Nothing of a request reaches the broker: it neither waits for a TICK nor makes the broker
// thread touch every connection.
//
// Threads: every call from any thread, several at once.
#pragma once

#include <chrono>
#include <string_view>
#include <vector>

#include "companion/connection.h"
#include "companion/connection_registry.h"
#include "companion/network_info.h"

namespace mqc {

class SyncedSource : public ConnectionSource {
 public:
  // `registry` must outlive the source.
  explicit SyncedSource(const ConnectionRegistry& registry) : registry_(registry) {}

  std::vector<Connection> Snapshot() const override {
    WaitUntilSynced();
    return registry_.Snapshot();
  }
  ConnectionList SharedSnapshot() const override {
    WaitUntilSynced();
    return registry_.SharedSnapshot();
  }
  std::vector<ConnectionPtr> FindByClientId(std::string_view client_id) const override {
    WaitUntilSynced();
    return registry_.FindByClientId(client_id);
  }

 protected:
  const ConnectionRegistry& registry() const { return registry_; }
  void WaitUntilSynced() const { registry_.WaitUntilSynced(std::chrono::seconds(2)); }

 private:
  const ConnectionRegistry& registry_;
};

class DetailedSource : public SyncedSource {
 public:
  // Both must outlive the source.
  DetailedSource(const ConnectionRegistry& registry, NetworkInfoCache* network)
      : SyncedSource(registry), network_(network) {}

  std::vector<Connection> Snapshot() const override {
    WaitUntilSynced();
    std::vector<Connection> all = registry().DetailedSnapshot();
    network_->Fill(&all);
    return all;
  }
  void AddDetails(std::vector<Connection>* connections) const override {
    registry().AddDetails(connections);
    network_->Fill(connections);
  }

 private:
  NetworkInfoCache* network_;
};

}  // namespace mqc
