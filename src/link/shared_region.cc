// SPDX-License-Identifier: BSD-3-Clause
#include "link/shared_region.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

namespace mqc {

namespace {

bool IsPowerOfTwo(std::uint64_t n) { return n >= 64 && (n & (n - 1)) == 0; }

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

SharedRegion::SharedRegion(int fd, bool owns_fd, void* base, std::size_t size)
    : fd_(fd),
      owns_fd_(owns_fd),
      base_(base),
      size_(size),
      header_(static_cast<SharedHeader*>(base)) {}

SharedRegion::~SharedRegion() {
  if (base_ != nullptr) munmap(base_, size_);
  if (owns_fd_ && fd_ >= 0) close(fd_);
}

std::uint8_t* SharedRegion::events_data() const {
  return static_cast<std::uint8_t*>(base_) + header_->events_offset;
}

std::uint8_t* SharedRegion::commands_data() const {
  return static_cast<std::uint8_t*>(base_) + header_->commands_offset;
}

StatsSlots SharedRegion::stats_slots() const {
  auto* const base = static_cast<std::uint8_t*>(base_);
  return StatsSlots{reinterpret_cast<ConnectionStatsSlot*>(base + header_->stats_offset),
                    reinterpret_cast<ConnectionRareSlot*>(base + header_->rare_offset),
                    header_->stats_slots};
}

bool SharedRegion::ReleaseEventBytes(std::uint64_t offset, std::uint64_t length) const {
  return fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                   static_cast<off_t>(header_->events_offset + offset),
                   static_cast<off_t>(length)) == 0;
}

StatusOr<std::unique_ptr<SharedRegion>> SharedRegion::Create(const SharedRegionSizes& sizes) {
  if (!IsPowerOfTwo(sizes.events_capacity) || !IsPowerOfTwo(sizes.commands_capacity)) {
    return InvalidArgument("ring capacities must be powers of two of at least 64 bytes");
  }
  const std::uint64_t events_offset = (sizeof(SharedHeader) + 4095) & ~std::uint64_t{4095};
  const std::uint64_t commands_offset = events_offset + sizes.events_capacity;
  const std::uint64_t stats_offset = commands_offset + sizes.commands_capacity;
  const std::uint64_t rare_offset = stats_offset + sizes.stats_slots * sizeof(ConnectionStatsSlot);
  const std::uint64_t total = rare_offset + sizes.stats_slots * sizeof(ConnectionRareSlot);

  const int fd = memfd_create("mosquitto_connections", MFD_CLOEXEC);
  if (fd < 0) return Status(StatusCode::kUnavailable, Errno("memfd_create"));
  if (ftruncate(fd, static_cast<off_t>(total)) != 0) {
    Status failed(StatusCode::kUnavailable, Errno("ftruncate"));
    close(fd);
    return failed;
  }
  void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    Status failed(StatusCode::kUnavailable, Errno("mmap"));
    close(fd);
    return failed;
  }
  auto* header = new (base) SharedHeader();
  header->total_size = total;
  header->events_offset = events_offset;
  header->events_capacity = sizes.events_capacity;
  header->commands_offset = commands_offset;
  header->commands_capacity = sizes.commands_capacity;
  header->stats_offset = stats_offset;
  header->stats_slots = sizes.stats_slots;
  header->rare_offset = rare_offset;
  // The slots are zero pages of the memfd: an all-zero slot (both parts) is a valid free one.
  return std::unique_ptr<SharedRegion>(new SharedRegion(fd, true, base, total));
}

StatusOr<std::unique_ptr<SharedRegion>> SharedRegion::Attach(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    return Status(StatusCode::kUnavailable, Errno("fstat of the shared memory descriptor"));
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size < sizeof(SharedHeader)) {
    return InvalidArgument("shared memory is smaller than its header");
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    return Status(StatusCode::kUnavailable, Errno("mmap of the shared memory"));
  }
  const auto* header = static_cast<const SharedHeader*>(base);
  const bool valid =
      header->magic == kSharedMagic && header->version == kSharedVersion &&
      header->header_size == sizeof(SharedHeader) && header->total_size == size &&
      IsPowerOfTwo(header->events_capacity) && IsPowerOfTwo(header->commands_capacity) &&
      header->events_offset + header->events_capacity <= size &&
      header->commands_offset + header->commands_capacity <= size &&
      header->stats_offset % alignof(ConnectionStatsSlot) == 0 &&
      header->stats_offset + header->stats_slots * sizeof(ConnectionStatsSlot) <=
          header->rare_offset &&
      header->rare_offset % alignof(ConnectionRareSlot) == 0 &&
      header->rare_offset + header->stats_slots * sizeof(ConnectionRareSlot) <= size;
  if (!valid) {
    munmap(base, size);
    return InvalidArgument(
        "shared memory has another layout (plugin and companion from different builds?)");
  }
  return std::unique_ptr<SharedRegion>(new SharedRegion(fd, false, base, size));
}

namespace {

std::uint32_t* FutexWord(std::atomic<std::uint32_t>* word) {
  return reinterpret_cast<std::uint32_t*>(word);
}

bool EventsUnread(const SharedHeader& header) {
  return header.events.head.load(std::memory_order_acquire) !=
         header.events.tail.load(std::memory_order_relaxed);
}

}  // namespace

bool PrepareToWait(SharedHeader* header, std::uint32_t* seen) {
  // Read before `waiting` is set: a wake after this point changes the word, and the sleep
  // below then returns at once.
  *seen = header->broker.wake.load(std::memory_order_acquire);
  header->companion.waiting.store(1, std::memory_order_relaxed);
  FullFence();
  if (!EventsUnread(*header)) return true;
  header->companion.waiting.store(0, std::memory_order_relaxed);
  return false;
}

void SleepUntilWoken(SharedHeader* header, std::uint32_t seen, std::int64_t timeout_ns) {
  if (timeout_ns > 0) {
    timespec timeout{};
    timeout.tv_sec = static_cast<time_t>(timeout_ns / 1000000000);
    timeout.tv_nsec = static_cast<long>(timeout_ns % 1000000000);
    // Not FUTEX_PRIVATE_FLAG: the word lies in a mapping two processes share. Any return (woken,
    // the word already changed, the timeout, a signal) ends the wait: the caller polls.
    syscall(SYS_futex, FutexWord(&header->broker.wake), FUTEX_WAIT, seen, &timeout, nullptr, 0);
  }
  header->companion.waiting.store(0, std::memory_order_relaxed);
}

void WaitForBrokerEvents(SharedHeader* header, std::int64_t timeout_ns) {
  if (timeout_ns <= 0) return;
  std::uint32_t seen = 0;
  if (PrepareToWait(header, &seen)) SleepUntilWoken(header, seen, timeout_ns);
}

bool WakeWaitingCompanion(SharedHeader* header) {
  FullFence();
  if (header->companion.waiting.load(std::memory_order_relaxed) == 0) return false;
  if (!EventsUnread(*header)) return false;
  header->companion.waiting.store(0, std::memory_order_relaxed);  // one wake per wait
  auto& wake = header->broker.wake;
  wake.store(wake.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  syscall(SYS_futex, FutexWord(&wake), FUTEX_WAKE, 1, nullptr, nullptr, 0);
  return true;
}

}  // namespace mqc
