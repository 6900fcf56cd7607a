// SPDX-License-Identifier: BSD-3-Clause
// The shared memory that joins the broker-side plugin and the companion process.
//
// The plugin creates it (an anonymous memfd, so nothing is left in /dev/shm after a crash),
// maps it, and hands the descriptor to the companion, which maps the same pages. It outlives
// companion restarts. Who writes what:
//   broker thread: the events ring (producer), `broker`, `operations`, the stats slots
//   companion:     the commands ring (producer), `companion`
// Everything either side reads of the other is an atomic or published through a ring.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "link/connection.h"
#include "link/event_ring.h"
#include "link/status.h"

namespace mqc {

static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "shared counters must be lock-free to be shared between processes");

inline constexpr std::uint64_t kSharedMagic = 0x6d71632d73686d31ULL;  // "mqc-shm1"
inline constexpr std::uint32_t kSharedVersion = 13;

// The companion's life cycle as the broker sees it.
enum class CompanionState : std::uint32_t { kStarting = 0, kServing = 1, kFailed = 2 };

// kubemq_mqtt_operations_total{operation,status}: the order of these enums is the order of the
// counters in the shared region. Exactly the contract's nine operations and three statuses:
// KubeMQ dashboards sum this family by operation, so nothing of the project's own goes here.
enum class Operation : std::uint8_t {
  kPublishEvents,
  kPublishStore,
  kPublishQueues,
  kRpcCommand,
  kRpcQuery,
  kDeliverEvents,
  kDeliverStore,
  kDeliverQueues,
  kRpcResponse,
};
enum class OperationStatus : std::uint8_t { kSuccess, kError, kDropped };
inline constexpr std::size_t kOperationCount = 9;
inline constexpr std::size_t kStatusCount = 3;

// mosquitto_connections_subscribes_total{status}: each SUBSCRIBE filter, made by the broker
// (success) or refused by KubeMQ strict mode (error). The project's own family: KubeMQ has no
// subscribe operation.
enum class SubscribeStatus : std::uint8_t { kSuccess, kError };
inline constexpr std::size_t kSubscribeStatusCount = 2;

// mosquitto_connections_messages_dropped_total{reason}: messages the broker threw away instead
// of queueing them for a subscriber, by cause, where the plugin sees them (broker/queue_drops.h;
// docs/broker-versions.md, "Dropped messages"). The order is the order of the counters.
enum class DropReason : std::uint8_t {
  kQueueFull,  // max_queued_messages / max_queued_bytes reached
  kOffline,    // a QoS 0 message for an offline session (queue_qos0_messages false)
};
inline constexpr std::size_t kDropReasonCount = 2;

// kubemq_mqtt_operation_duration_seconds: observed for rpc_command, rpc_query, rpc_response.
inline constexpr std::size_t kDurationOperationCount = 3;  // in that order
inline constexpr double kDurationBuckets[] = {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
inline constexpr std::size_t kDurationBucketCount = 11;  // +Inf is the count

// Everything below is written by the broker thread only, without a locked instruction (there
// is one writer: Bump, or a plain load and store), and read by the companion. Each value is one
// aligned 64-bit word, so a read is never torn; a reader may see a histogram's buckets a few
// observations apart from its count, which a scrape tolerates.
struct SharedHistogram {
  std::atomic<std::uint64_t> buckets[kDurationBucketCount + 1] = {};  // per bucket, not cumulative
  std::atomic<std::uint64_t> sum_ns{0};
  std::atomic<std::uint64_t> count{0};
};

// The two kinds of request an ACL source can refuse a client (its PUBLISH, a SUBSCRIBE filter).
enum class AclAccess : std::uint8_t { kPublish, kSubscribe };
inline constexpr std::size_t kAclAccessCount = 2;
// The bytes of the last refused topic a statistics slot keeps; a longer topic is cut there.
inline constexpr std::size_t kDeniedTopicMax = 96;

struct BrokerCounters {
  std::atomic<std::uint64_t> operations[kOperationCount][kStatusCount] = {};
  SharedHistogram durations[kDurationOperationCount];
  std::atomic<std::uint64_t> connects{0};          // accepted CONNECTs
  std::atomic<std::uint64_t> connects_refused{0};  // refused CONNECTs
  std::atomic<std::uint64_t> disconnects[8] = {};  // by CloseReason, kUnspecified included
  std::atomic<std::uint64_t> received_messages{0};
  std::atomic<std::uint64_t> received_bytes{0};  // PUBLISH payload bytes from clients
  std::atomic<std::uint64_t> delivered_messages{0};
  std::atomic<std::uint64_t> delivered_bytes{0};  // payload bytes queued to subscribers
  std::atomic<std::uint64_t> connects_banned{0};  // CONNECTs refused for a ban (also refused)
  std::atomic<std::uint64_t> subscribes[kSubscribeStatusCount] = {};  // by SubscribeStatus
  // PUBLISHes and SUBSCRIBE filters an ACL source refused (AclAccess), where the broker shows
  // them (RecordDenial; docs/api.md, "Denials").
  std::atomic<std::uint64_t> acl_denials[kAclAccessCount] = {};
  // 1 where every ACL denial reaches the plugin (acl_denials is then exact), else 0: written at
  // start and at each reload (BrokerCore::SetDenialsShown).
  std::atomic<std::uint64_t> acl_denials_shown{0};
  std::atomic<std::uint64_t> messages_dropped[kDropReasonCount] = {};  // by DropReason
};

// Per-connection traffic, in a slot the broker assigns at CONNECT (ConnectionEvent::stats_slot).
// A slot is two parts in two arrays of the region: this one, the words the broker bumps per
// message and the companion reads of every connection each minute, one cache line; and its
// ConnectionRareSlot (below), the words written at TICK or at a denial and read only for a
// connection's details. Apart, a walk over every connection's traffic touches 64 bytes of each
// and not 208 (a third of the pages), and a message's bumps touch one cache line.
// `seq` names the connection that owns the slot now (connection seqs start at 1 and are never
// reused; 0 means "being handed over"); it guards both parts. The broker thread is the only
// writer.
//
// A seqlock in the form of Boehm, "Can seqlocks get along with programming language memory
// models?" (MSPC 2012), with the owner's seq in the role of the even sequence number and 0 in the
// role of the odd one. Every field is an atomic, so no access is a data race.
//   writer, handing the slot over (AssignStatsSlot): seq = 0 (relaxed); release fence; every
//     counter of both parts = 0 (relaxed); seq = owner (release). While it owns the slot, the
//     broker thread bumps counters with relaxed load + store (Bump).
//   reader (ReadStatsSlot, ReadMessageCounts, ReadDenials): seq (acquire) == owner; the
//     counters it reads, of either part (relaxed); acquire fence; seq (relaxed) == owner.
// What it guarantees, by the C++ memory model: if a read returns true, every value it returns
// was written while `owner` held the slot, i.e. it is the owner's reset (0) or one of the
// owner's later updates, never a value of a previous or later owner. Why: the first load reads
// the owner's release store, so the resets before it happen before the counter loads; and if a
// counter load read a value stored after a later hand-over's release fence, that fence
// synchronizes with the reader's acquire fence, so the second seq load sees that hand-over's 0
// (or something later) and the read is refused. It does not make the fields one atomic snapshot
// of a single owner's moment: each counter is read on its own, so publish_count may be one bump
// ahead of publish_bytes; each value is still exact for its own word. The writer never waits
// and uses no locked instruction.
struct alignas(64) ConnectionStatsSlot {
  std::atomic<std::uint64_t> seq{0};
  std::atomic<std::uint64_t> publish_count{0};
  std::atomic<std::uint64_t> publish_bytes{0};
  std::atomic<std::uint64_t> deliver_count{0};
  std::atomic<std::uint64_t> deliver_bytes{0};
  std::atomic<std::uint64_t> request_count{0};
  // Messages to the connection the broker dropped at a full queue (EncodeDrops): bit 63 set
  // once the plugin sees such drops on this broker, the count below it; 0: unknown. Bumped by
  // the broker thread when it predicts the drop (broker/queue_drops.h): on the delivery path,
  // hence here.
  std::atomic<std::uint64_t> dropped_queue_full{0};
  // No idle time here: the companion reads it from the kernel (sock_diag), so that no API
  // request makes the broker thread touch every connection.
};
static_assert(sizeof(ConnectionStatsSlot) == 64, "a slot's traffic is one cache line");

// The rest of a slot (see ConnectionStatsSlot): never written per message.
struct ConnectionRareSlot {
  // The messages the broker holds for the connection (MessageQueue), one word per direction so
  // that what is known and its figures are read together (EncodeMessageQueue); 0: unknown.
  // Refreshed by the broker thread where it touches the client and in slices at TICK
  // (broker/message_counts.h), not counted per message.
  std::atomic<std::uint64_t> messages_out{0};
  std::atomic<std::uint64_t> messages_in{0};
  // ACL denials (RecordDenial, ReadDenials): the counts by AclAccess, and the last refused topic
  // and time behind a seqlock of their own, since a denial writes several words.
  // `denial_state`: bit 0, denials are shown on this broker (set at the hand-over); bit 1, a
  // denial is being written; bits 2 on, the denials written. Written only at a denial.
  std::atomic<std::uint64_t> denied[kAclAccessCount] = {};
  std::atomic<std::uint64_t> denial_state{0};
  std::atomic<std::int64_t> last_denied_ns{0};  // wall clock, ns since the epoch
  std::atomic<std::uint64_t> last_denied_size{0};  // bytes of last_denied_topic in use
  std::atomic<std::uint64_t> last_denied_topic[kDeniedTopicMax / 8] = {};  // a topic's first bytes
};

// The statistics slots of a region (SharedRegion::stats_slots) or of a test: slot i is hot[i]
// and rare[i]. Not owned.
struct StatsSlots {
  ConnectionStatsSlot* hot = nullptr;
  ConnectionRareSlot* rare = nullptr;
  std::size_t count = 0;
};

// The counters of a slot as plain values (RequestStatistics, the connection model's), each
// loaded on its own (relaxed): the one copy from the shared words. The broker thread, the slot's
// writer, calls it directly; any other thread through ReadStatsSlot.
inline RequestStatistics LoadStatsSlot(const ConnectionStatsSlot& slot) noexcept {
  RequestStatistics values;
  values.publish_count = slot.publish_count.load(std::memory_order_relaxed);
  values.publish_bytes = slot.publish_bytes.load(std::memory_order_relaxed);
  values.deliver_count = slot.deliver_count.load(std::memory_order_relaxed);
  values.deliver_bytes = slot.deliver_bytes.load(std::memory_order_relaxed);
  values.request_count = slot.request_count.load(std::memory_order_relaxed);
  return values;
}

// One direction's MessageQueue as one word: bits 62-63 what is known (MessageQueue::Known),
// bits 31-61 queued, bits 0-30 in flight (kSplit) or the total (kTotal). The broker's counts are
// non-negative ints, so 31 bits hold each; 0 is kUnknown.
inline std::uint64_t EncodeMessageQueue(const MessageQueue& queue) noexcept {
  constexpr std::uint64_t kMask = 0x7fffffffu;
  switch (queue.known) {
    case MessageQueue::Known::kSplit:
      return (std::uint64_t{2} << 62) | ((queue.queued & kMask) << 31) | (queue.in_flight & kMask);
    case MessageQueue::Known::kTotal:
      return (std::uint64_t{1} << 62) | (queue.total & kMask);
    default:
      return 0;
  }
}
inline MessageQueue DecodeMessageQueue(std::uint64_t word) noexcept {
  constexpr std::uint64_t kMask = 0x7fffffffu;
  MessageQueue queue;
  switch (word >> 62) {
    case 2:
      queue.known = MessageQueue::Known::kSplit;
      queue.queued = static_cast<std::uint32_t>((word >> 31) & kMask);
      queue.in_flight = static_cast<std::uint32_t>(word & kMask);
      queue.total = queue.queued + queue.in_flight;
      break;
    case 1:
      queue.known = MessageQueue::Known::kTotal;
      queue.total = static_cast<std::uint32_t>(word & kMask);
      break;
    default:
      break;
  }
  return queue;
}

// The drop word of a slot: bit 63 "known", the count below it.
inline constexpr std::uint64_t kDropsKnown = std::uint64_t{1} << 63;
inline MessageDrops DecodeDrops(std::uint64_t word) noexcept {
  MessageDrops drops;
  drops.known = (word & kDropsKnown) != 0;
  drops.queue_full = word & ~kDropsKnown;
  return drops;
}

// The broker thread, where it sees drops at a full queue: the slot says so (its count kept).
inline void MarkDropsKnown(ConnectionStatsSlot& slot) noexcept {
  const std::uint64_t word = slot.dropped_queue_full.load(std::memory_order_relaxed);
  if ((word & kDropsKnown) == 0) {
    slot.dropped_queue_full.store(word | kDropsKnown, std::memory_order_relaxed);
  }
}

// The broker thread's refresh of a slot it owns: two relaxed stores, no locked instruction.
inline void StoreMessageCounts(ConnectionRareSlot& slot, const MessageCounts& counts) noexcept {
  slot.messages_out.store(EncodeMessageQueue(counts.out), std::memory_order_relaxed);
  slot.messages_in.store(EncodeMessageQueue(counts.in), std::memory_order_relaxed);
}

// The seqlock's two fences, and the full fence of the companion's wake-up (WaitForBrokerEvents).
// GCC warns (-Wtsan) that ThreadSanitizer does not model standalone fences: under TSan they
// still execute, but TSan derives no ordering from them. That loses nothing here, since every
// field they order is an atomic (TSan reports no race on atomics whatever their order), and
// every other build keeps the fences' full meaning.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpragmas"  // -Wtsan is GCC 12's
#pragma GCC diagnostic ignored "-Wtsan"
#endif
inline void SeqlockReleaseFence() noexcept { __atomic_thread_fence(__ATOMIC_RELEASE); }
inline void SeqlockAcquireFence() noexcept { __atomic_thread_fence(__ATOMIC_ACQUIRE); }
inline void FullFence() noexcept { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// The writer's hand-over: zeroes the counters of both parts and gives the slot to `owner` (not
// 0). Broker thread only; plain stores and a release fence (a compiler barrier on x86), no
// locked instruction, no syscall.
inline void AssignStatsSlot(ConnectionStatsSlot& slot, ConnectionRareSlot& rare,
                            std::uint64_t owner, bool denials_shown = false) noexcept {
  slot.seq.store(0, std::memory_order_relaxed);
  SeqlockReleaseFence();  // std::atomic_thread_fence(std::memory_order_release)
  for (auto* counter :
       {&slot.publish_count, &slot.publish_bytes, &slot.deliver_count, &slot.deliver_bytes,
        &slot.request_count, &slot.dropped_queue_full, &rare.messages_out, &rare.messages_in,
        &rare.denied[0], &rare.denied[1], &rare.last_denied_size}) {
    counter->store(0, std::memory_order_relaxed);
  }
  rare.last_denied_ns.store(0, std::memory_order_relaxed);
  rare.denial_state.store(denials_shown ? 1 : 0, std::memory_order_relaxed);
  slot.seq.store(owner, std::memory_order_release);
}

// A denial of `access` on `topic` at `now_ns`, by the slot's owner (broker thread only): one
// count, and the topic (its first kDeniedTopicMax bytes) and time under the denial seqlock. Plain
// stores and release fences, no locked instruction, no allocation, no syscall.
inline void RecordDenial(ConnectionRareSlot& slot, AclAccess access, std::string_view topic,
                         std::int64_t now_ns) noexcept {
  auto& count = slot.denied[static_cast<std::size_t>(access)];
  count.store(count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  const std::uint64_t state = slot.denial_state.load(std::memory_order_relaxed);
  slot.denial_state.store(state | 2, std::memory_order_relaxed);
  SeqlockReleaseFence();
  const std::size_t size = topic.size() < kDeniedTopicMax ? topic.size() : kDeniedTopicMax;
  for (std::size_t word = 0; word * 8 < size; ++word) {
    std::uint64_t bytes = 0;
    const std::size_t n = size - word * 8 < 8 ? size - word * 8 : 8;
    std::memcpy(&bytes, topic.data() + word * 8, n);
    slot.last_denied_topic[word].store(bytes, std::memory_order_relaxed);
  }
  slot.last_denied_size.store(size, std::memory_order_relaxed);
  slot.last_denied_ns.store(now_ns, std::memory_order_relaxed);
  slot.denial_state.store((state & ~std::uint64_t{2}) + 4, std::memory_order_release);
}

// The reader's side of the denials, under the owner's check as ReadStatsSlot: false if `owner`
// does not hold the slot. `denials->shown` false: the broker hides denials (nothing else set).
// The topic and time are those of one denial; where the broker wrote one during every attempt
// (a few tries), the counts are kept and the last topic is left out.
inline bool ReadDenials(const ConnectionStatsSlot& owned, const ConnectionRareSlot& slot,
                        std::uint64_t owner, Denials* denials) noexcept {
  if (owned.seq.load(std::memory_order_acquire) != owner) return false;
  Denials read;
  read.shown = (slot.denial_state.load(std::memory_order_relaxed) & 1) != 0;
  read.publish = slot.denied[0].load(std::memory_order_relaxed);
  read.subscribe = slot.denied[1].load(std::memory_order_relaxed);
  for (int attempt = 0; attempt < 4 && read.shown && read.publish + read.subscribe > 0;
       ++attempt) {
    const std::uint64_t before = slot.denial_state.load(std::memory_order_acquire);
    if ((before & 2) != 0) continue;
    std::uint64_t words[kDeniedTopicMax / 8];
    const std::size_t size = std::min<std::uint64_t>(
        slot.last_denied_size.load(std::memory_order_relaxed), kDeniedTopicMax);
    for (std::size_t word = 0; word * 8 < size; ++word) {
      words[word] = slot.last_denied_topic[word].load(std::memory_order_relaxed);
    }
    const std::int64_t at = slot.last_denied_ns.load(std::memory_order_relaxed);
    SeqlockAcquireFence();
    if (slot.denial_state.load(std::memory_order_relaxed) != before) continue;
    read.last_topic.assign(reinterpret_cast<const char*>(words), size);
    read.last_ns = at;
    break;
  }
  SeqlockAcquireFence();
  if (owned.seq.load(std::memory_order_relaxed) != owner) return false;
  *denials = std::move(read);
  return true;
}

// The reader's side: true, with *values filled, if `owner` held the slot before and after the
// reads (so every value is the owner's, as said above); false if the slot belongs to someone else
// or is being handed over. `drops`, when not null, gets the drops (MessageDrops) under the same
// check.
inline bool ReadStatsSlot(const ConnectionStatsSlot& slot, std::uint64_t owner,
                          RequestStatistics* values, MessageDrops* drops = nullptr) noexcept {
  if (slot.seq.load(std::memory_order_acquire) != owner) return false;
  const RequestStatistics read = LoadStatsSlot(slot);
  const std::uint64_t dropped = slot.dropped_queue_full.load(std::memory_order_relaxed);
  SeqlockAcquireFence();  // std::atomic_thread_fence(std::memory_order_acquire)
  if (slot.seq.load(std::memory_order_relaxed) != owner) return false;
  *values = read;
  if (drops != nullptr) *drops = DecodeDrops(dropped);
  return true;
}

// The message counts of the slot's rare part, under the same check of its owner.
inline bool ReadMessageCounts(const ConnectionStatsSlot& owned, const ConnectionRareSlot& slot,
                              std::uint64_t owner, MessageCounts* messages) noexcept {
  if (owned.seq.load(std::memory_order_acquire) != owner) return false;
  const std::uint64_t out = slot.messages_out.load(std::memory_order_relaxed);
  const std::uint64_t in = slot.messages_in.load(std::memory_order_relaxed);
  SeqlockAcquireFence();
  if (owned.seq.load(std::memory_order_relaxed) != owner) return false;
  messages->out = DecodeMessageQueue(out);
  messages->in = DecodeMessageQueue(in);
  return true;
}

struct CompanionControl {
  std::atomic<std::uint32_t> state{0};  // CompanionState
  std::atomic<std::int32_t> http_port{0};
  std::atomic<std::uint64_t> resync_requested{0};  // bumped to ask for a full resync
  std::atomic<std::uint64_t> heartbeat{0};         // bumped by the companion's event loop
  std::atomic<std::uint32_t> waiting{0};  // 1 while the event loop waits for the broker
  std::atomic<std::uint64_t> bans_sent{0};  // the number of the last ban list sent
  char failure[512] = {};  // why it failed; written before state becomes kFailed
};

struct BrokerControl {
  std::atomic<std::uint64_t> resync_started{0};  // the last resync generation begun
  std::atomic<std::uint64_t> events_lost{0};     // events dropped on a full ring
  std::atomic<std::uint64_t> bans_applied{0};  // the number of the last ban list in force
  // A futex word: bumped, and the companion woken, when events wait for a waiting companion.
  std::atomic<std::uint32_t> wake{0};
};
static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t),
              "a futex word is a plain 32-bit integer");

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
  alignas(64) BrokerCounters counters;
  std::uint64_t stats_offset = 0;  // stats_slots ConnectionStatsSlot
  std::uint64_t stats_slots = 0;
  std::uint64_t rare_offset = 0;  // as many ConnectionRareSlot
};

// The companion's event loop sleeps until the broker has written, so that an idle broker costs
// nothing: the companion says it waits (CompanionControl::waiting), checks the events ring once
// more, and sleeps on BrokerControl::wake (a futex in the shared mapping) up to a timeout; the
// broker thread, at TICK (never per message), wakes it only when it waits and unread events are
// there: at most one syscall per TICK, none while the companion is busy. Both sides put a full
// fence between their store and their load (the companion's `waiting` and the broker's ring
// head), so that one of the two always sees the other; and the companion sleeps only while the
// wake word still holds the value it read before it said it waits, so a wake that comes between
// its check and its sleep ends the sleep at once (no lost wake-up). The events are read at the
// latest one TICK after they were written.
//
// The companion, in two steps (WaitForBrokerEvents runs both): PrepareToWait says it waits and
// checks the ring: false when events are unread (then it must not sleep; `waiting` is cleared),
// else true with the wake word it saw in *seen. SleepUntilWoken then sleeps until the broker
// changes that word, `timeout_ns` passes or a signal comes, and clears `waiting`.
bool PrepareToWait(SharedHeader* header, std::uint32_t* seen);
void SleepUntilWoken(SharedHeader* header, std::uint32_t seen, std::int64_t timeout_ns);
// Returns once events are unread, it was woken, or `timeout_ns` passed.
void WaitForBrokerEvents(SharedHeader* header, std::int64_t timeout_ns);
// The broker thread at TICK: wakes a waiting companion when unread events are there; true
// when it did (one futex syscall).
bool WakeWaitingCompanion(SharedHeader* header);

#if defined(__SANITIZE_THREAD__)  // GCC's name; clang's below
#define MQC_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MQC_THREAD_SANITIZER 1
#endif
#endif

// Adds to a counter that only the broker thread writes: no lock, and readers see the old or
// the new value whole. On x86-64 one add to memory (an aligned 8-byte store is atomic there),
// where the relaxed load and store are three instructions: the per-delivery path bumps four or
// five counters. Elsewhere, and under ThreadSanitizer (which sees no asm), the load and store.
inline void Bump(std::atomic<std::uint64_t>& counter, std::uint64_t by = 1) noexcept {
#if defined(__x86_64__) && !defined(MQC_THREAD_SANITIZER)
  static_assert(sizeof(counter) == sizeof(std::uint64_t) && alignof(decltype(counter)) == 8);
  __asm__("addq %1, %0" : "+m"(counter) : "er"(by) : "cc");
#else
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
#endif
}

struct SharedRegionSizes {
  std::uint64_t events_capacity = 16u << 20;   // power of two
  std::uint64_t commands_capacity = 1u << 20;  // power of two
  std::uint64_t stats_slots = 1u << 18;        // connections with traffic statistics at once
};

// A mapping of the region. Move-only; unmaps on destruction (the descriptor is owned apart).
class SharedRegion {
 public:
  // Creates a new region in a memfd. Ring capacities that are no powers of two are
  // kInvalidArgument; a memfd, its size or its mapping refused by the system is kUnavailable.
  static StatusOr<std::unique_ptr<SharedRegion>> Create(const SharedRegionSizes& sizes);
  // Maps a region created by another process; checks magic, version and sizes. A descriptor the
  // system cannot stat or map is kUnavailable; a region of another layout (or too small for its
  // header) is kInvalidArgument.
  static StatusOr<std::unique_ptr<SharedRegion>> Attach(int fd);

  ~SharedRegion();
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  int fd() const { return fd_; }
  SharedHeader* header() const { return header_; }
  std::uint8_t* events_data() const;
  std::uint8_t* commands_data() const;
  StatsSlots stats_slots() const;  // header()->stats_slots of them

  // Gives the memory of the events ring's bytes [offset, offset + length) back to the system
  // (a hole punched in the memfd: whole pages are freed in every process that maps them, and
  // read as zeros until written again). Only for bytes the consumer has read. One syscall;
  // false when the kernel refused, and then nothing changed.
  bool ReleaseEventBytes(std::uint64_t offset, std::uint64_t length) const;

 private:
  SharedRegion(int fd, bool owns_fd, void* base, std::size_t size);
  int fd_;
  bool owns_fd_;
  void* base_;
  std::size_t size_;
  SharedHeader* header_;
};

}  // namespace mqc
