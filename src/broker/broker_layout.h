// SPDX-License-Identifier: BSD-3-Clause
// Where a few integer fields of Mosquitto's client (`struct mosquitto`, lib/mosquitto_internal.h)
// lie, for each supported broker version and build option set, and a verifier that trusts one
// of those layouts only after the broker's own accessors agreed with it on real clients.
//
// No accessor tells a plugin a client's session expiry, whether it is a bridge, or how many
// messages it has queued or in flight; the struct does, but its layout depends on the version
// and on build options (docs/broker-versions.md, "The client layout"). So:
//   - BrokerLayoutCandidates(version) gives the layouts that may fit (broker_layout.cc holds the
//     table, with the upstream tags and options each one was measured from);
//   - BrokerLayoutVerifier reads, on clients the plugin already touches (CONNECT, SUBSCRIBE,
//     UNSUBSCRIBE; never per message), the fields that also have an accessor (keepalive,
//     protocol version, clean session, subscription count) through each candidate and compares;
//     a candidate that disagrees once is dropped;
//   - until one candidate agreed often enough, on enough clients and across subscription
//     changes, and for ever once none is left, Read() answers nothing (the API says "unknown").
// Only integers inside the client's allocation are read (Broker::ReadClientBytes, whose
// implementation checks the offset against malloc_usable_size); no pointer is followed, nothing
// is written.
//
// Threads: the broker thread only (it is fed from the broker's callbacks).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/broker.h"
#include "broker/broker_capabilities.h"
#include "link/connection.h"

namespace mqc {

// The fields the layout knows. The verification fields come first.
enum class LayoutField : std::uint8_t {
  kProtocol,  // enum mosquitto__protocol (encoded per line: ProtocolEncoding)
  kKeepalive,
  kCleanStart,
  kSubCount,  // 2.1: subs_count; what mosquitto_client_sub_count returns on both lines
  kSessionExpiryTime,
  kSessionExpiryInterval,
  kIsBridge,
  kMsgsInInflightCount,  // 2.0.13 on: msgs_in.inflight_count
  kMsgsInQueuedCount,
  kMsgsOutInflightCount,
  kMsgsOutQueuedCount,
  kMsgsInCount,  // 2.0.11, 2.0.12: msgs_in.msg_count (in flight and queued together)
  kMsgsOutCount,
  kCount,
};
constexpr std::size_t kLayoutFieldCount = static_cast<std::size_t>(LayoutField::kCount);

// The field's name in struct mosquitto ("msgs_out.queued_count"), for the log line that says why
// a layout was not trusted.
const char* LayoutFieldName(LayoutField field);

// Where one field lies; size 0: not in this layout.
struct FieldPlace {
  std::uint16_t offset = 0;
  std::uint8_t size = 0;
};

// Which values `protocol` takes (enum mosquitto__protocol): 2.0 numbers MQTT 3.1, 3.1.1 and 5
// as 1, 2, 5; 2.1 as 3, 4, 5 (lib/mosquitto_internal.h of v2.0.11 and v2.1.2).
enum class ProtocolEncoding : std::uint8_t { k20, k21 };

struct BrokerLayout {
  const char* name;  // "2.0.15-2.0.22 TLS ADNS": versions and the build options that matter
  ProtocolEncoding protocol;
  std::array<FieldPlace, kLayoutFieldCount> fields;

  const FieldPlace& place(LayoutField field) const {
    return fields[static_cast<std::size_t>(field)];
  }
  // The end of the last field read: the client's allocation must be at least this large.
  std::size_t End() const;
  bool SamePlaces(const BrokerLayout& other) const;
};

// The layouts that may fit a broker of this version (2.0.11 to 2.0.22, 2.1.x): one per set of
// the build options that move the fields. Empty for another or an unknown version.
std::vector<const BrokerLayout*> BrokerLayoutCandidates(const BrokerVersion& version);

// The MQTT protocol version (3, 4, 5) a raw `protocol` stands for, 0 for any other value, as
// mosquitto_client_protocol_version maps it.
int ProtocolVersionOf(ProtocolEncoding encoding, std::int64_t raw);

class BrokerLayoutVerifier {
 public:
  // Verified after kAgreements agreeing observations of one candidate, over at least kClients
  // distinct clients, of which at least kChanges saw a client's subscription count change since
  // its previous observation: one client, or a broker where nothing changes, proves little
  // (a wrong offset may hold a constant that happens to match). Ambiguous (two candidates
  // with different places still agreeing) after kMaxObservations: unknown.
  static constexpr int kAgreements = 12;
  static constexpr int kClients = 3;
  static constexpr int kChanges = 2;
  static constexpr int kMaxObservations = 256;
  // The most bytes the message counts span in any layout (2.0.13 on: 100).
  static constexpr std::size_t kMaxCountsSpan = 128;

  enum class State { kVerifying, kVerified, kUnknown };

  // `candidates` from BrokerLayoutCandidates; `version` names the broker in log lines.
  BrokerLayoutVerifier(const std::vector<const BrokerLayout*>& candidates, BrokerVersion version);

  // Logs why nothing will be read when there is no candidate at all. Call once, at start.
  void Start(Broker& broker);

  // One observation of a client the plugin touches anyway (never per message). Compares every
  // live candidate with the broker's accessors; logs one line when the state is decided.
  void Observe(Broker& broker, const BrokerClient* client);

  State state() const { return state_; }
  bool verifying() const { return state_ == State::kVerifying; }
  bool verified() const { return state_ == State::kVerified; }
  // The layout in use once verified, else null.
  const BrokerLayout* layout() const { return verified() ? chosen_ : nullptr; }
  // A field of a client, only once verified and where the layout has it; else nothing, and
  // nothing is read.
  std::optional<std::int64_t> Read(const Broker& broker, const BrokerClient* client,
                                   LayoutField field) const;
  // The client's message counts (MessageCounts: split on 2.0.13 on and 2.1, totals only on
  // 2.0.11/2.0.12), once verified: one bounds-checked read of the bytes that hold them, so one
  // allocation-size check per client, not per field. Nothing when unverified, or when the bytes
  // cannot be read or hold a negative count (then no figure is better than a wrong one).
  std::optional<MessageCounts> ReadMessageCounts(const Broker& broker,
                                                 const BrokerClient* client) const;

 private:
  struct Candidate {
    const BrokerLayout* layout = nullptr;
    int agreements = 0;
    int changes = 0;
    std::vector<const BrokerClient*> clients;  // distinct ones seen, at most kClients
  };
  // The subscription count last observed per client (a few recent ones).
  struct LastSeen {
    const BrokerClient* client;
    int sub_count;
  };

  // Empty when the candidate agrees with the accessors on this client, else why not.
  static std::string Disagreement(const Broker& broker, const BrokerClient* client,
                                  const BrokerLayout& layout);
  void Fail(Broker& broker, const std::string& why);
  void Decide(Broker& broker);

  std::vector<Candidate> candidates_;
  BrokerVersion version_;
  State state_ = State::kVerifying;
  const BrokerLayout* chosen_ = nullptr;
  int observations_ = 0;
  std::vector<LastSeen> last_seen_;
  std::string last_refusal_;  // why the last candidate was dropped
  // The bytes of chosen_ that hold the message counts: [counts_offset_, + counts_size_).
  std::size_t counts_offset_ = 0;
  std::size_t counts_size_ = 0;
};

// Reads one field of a client through a layout, bounds checked by the broker; nothing when it
// cannot be read.
std::optional<std::int64_t> ReadLayoutField(const Broker& broker, const BrokerClient* client,
                                            const BrokerLayout& layout, LayoutField field);

}  // namespace mqc
