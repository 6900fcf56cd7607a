// What the rich API (Connect ListConnections) lists: the registry's connections with open
// connections' traffic from the shared statistics slots, and their idle time and network
// figures from the kernel (NetworkInfoCache, one sock_diag dump per second at most). The fast
// path (connection_query.h) reads the stored connections and adds the details to the page only.
// Nothing
// of a request reaches the broker: it neither waits for a TICK nor makes the broker thread
// touch every connection.
//
// Threads: Snapshot from any thread, several at once.
#pragma once

#include <chrono>
#include <string_view>
#include <vector>

#include "companion/connection_registry.h"
#include "companion/network_info.h"
#include "link/connection.h"

namespace mqc {

class DetailedSource : public ConnectionSource {
 public:
  // Both must outlive the source.
  DetailedSource(const ConnectionRegistry& registry, NetworkInfoCache* network)
      : registry_(registry), network_(network) {}

  // Waits briefly (2 s at most) for the first resync after a (re)start, so that a request right
  // after a restart sees the broker's whole state, not a part of it.
  std::vector<Connection> Snapshot() const override {
    registry_.WaitUntilSynced(std::chrono::seconds(2));
    std::vector<Connection> all = registry_.DetailedSnapshot();
    network_->Fill(&all);
    return all;
  }
  ConnectionList SharedSnapshot() const override {
    registry_.WaitUntilSynced(std::chrono::seconds(2));
    return registry_.SharedSnapshot();
  }
  std::vector<ConnectionPtr> FindByClientId(std::string_view client_id) const override {
    registry_.WaitUntilSynced(std::chrono::seconds(2));
    return registry_.FindByClientId(client_id);
  }
  void AddDetails(std::vector<Connection>* connections) const override {
    registry_.AddDetails(connections);
    network_->Fill(connections);
  }

 private:
  const ConnectionRegistry& registry_;
  NetworkInfoCache* network_;
};

}  // namespace mqc
