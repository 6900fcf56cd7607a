// The shared memory that joins the broker-side plugin and the companion process.
//
// The plugin creates it (an anonymous memfd, so nothing is left in /dev/shm after a crash),
// maps it, and hands the descriptor to the companion, which maps the same pages. It outlives
// companion restarts. Who writes what:
//   broker thread: the events ring (producer), `broker`, `operations`, the stats slots
//   companion:     the commands ring (producer), `companion`
// Everything either side reads of the other is an atomic or published through a ring.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "event_ring.h"

namespace mqc {

inline constexpr std::uint64_t kSharedMagic = 0x6d71632d73686d31ULL;  // "mqc-shm1"
inline constexpr std::uint32_t kSharedVersion = 1;

// The companion's life cycle as the broker sees it.
enum class CompanionState : std::uint32_t { kStarting = 0, kServing = 1, kFailed = 2 };

// The operation counters of kubemq_mqtt_operations_total, by [operation][status].
inline constexpr std::size_t kOperationCount = 9;
inline constexpr std::size_t kStatusCount = 3;

struct CompanionControl {
  std::atomic<std::uint32_t> state{0};  // CompanionState
  std::atomic<std::int32_t> http_port{0};
  std::atomic<std::uint64_t> resync_requested{0};  // bumped to ask for a full resync
  std::atomic<std::uint32_t> pid{0};
  char failure[512] = {};  // why it failed; written before state becomes kFailed
};

struct BrokerControl {
  std::atomic<std::uint64_t> resync_started{0};  // the last resync generation begun
  std::atomic<std::uint64_t> events_lost{0};     // events dropped on a full ring
  std::atomic<std::uint64_t> ticks{0};
};

struct SharedHeader {
  std::uint64_t magic = kSharedMagic;
  std::uint32_t version = kSharedVersion;
  std::uint32_t header_size = sizeof(SharedHeader);
  std::uint64_t total_size = 0;
  std::uint64_t events_offset = 0;
  std::uint64_t events_capacity = 0;
  std::uint64_t commands_offset = 0;
  std::uint64_t commands_capacity = 0;
  RingIndices events;
  RingIndices commands;
  alignas(64) CompanionControl companion;
  alignas(64) BrokerControl broker;
  // Written by the broker thread only (plain load + store: no locked instruction), read by the
  // companion: each value is a single aligned 64-bit word, so a read is never torn.
  alignas(64) std::atomic<std::uint64_t> operations[kOperationCount][kStatusCount] = {};
};

struct SharedRegionSizes {
  std::uint64_t events_capacity = 16u << 20;   // power of two
  std::uint64_t commands_capacity = 1u << 20;  // power of two
};

// A mapping of the region. Move-only; unmaps on destruction (the descriptor is owned apart).
class SharedRegion {
 public:
  // Creates a new region in a memfd. On failure returns nullptr and sets *error.
  static std::unique_ptr<SharedRegion> Create(const SharedRegionSizes& sizes, std::string* error);
  // Maps a region created by another process; checks magic, version and sizes.
  static std::unique_ptr<SharedRegion> Attach(int fd, std::string* error);

  ~SharedRegion();
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  int fd() const { return fd_; }
  SharedHeader* header() const { return header_; }
  std::uint8_t* events_data() const;
  std::uint8_t* commands_data() const;

 private:
  SharedRegion(int fd, bool owns_fd, void* base, std::size_t size);
  int fd_;
  bool owns_fd_;
  void* base_;
  std::size_t size_;
  SharedHeader* header_;
};

}  // namespace mqc
