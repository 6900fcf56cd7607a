// SPDX-License-Identifier: BSD-3-Clause
// Where a few integer fields of Mosquitto's client (`struct mosquitto`, lib/mosquitto_internal.h)
// lie, for each supported broker version and build option set, and a verifier that trusts one
// of those layouts once the broker's own accessors and pointers agreed with it on a real client.
//
// No accessor tells a plugin a client's session expiry, whether it is a bridge, or how many
// messages it has queued or in flight; the struct does, but its layout depends on the version
// and on build options (docs/broker-versions.md, "The client layout"). So:
//   - BrokerLayoutCandidates(version) gives the layouts that may fit (broker_layout.cc holds the
//     table, with the upstream tags and options each one was measured from);
//   - BrokerLayoutVerifier reads, on clients the plugin already touches (CONNECT, SUBSCRIBE,
//     UNSUBSCRIBE; never per message), through each candidate: the pointer-sized fields the
//     broker's accessors return (`id`, `address`, `username`), which must hold the very pointers
//     the accessors give; `hh_sock.key` (the broker's socket hash keys every socket client by
//     its own `sock`), which must point at the client's own `sock`; and the fields that also
//     have an accessor (keepalive, protocol version, clean session, subscription count). A
//     candidate that disagrees once is dropped;
//   - the pointers lie before the fields read and `hh_sock` after them, and no wrong offset
//     holds a heap pointer the accessor returns or the client's own address by chance: one
//     client with an id and a socket (every CONNECT) that agrees verifies the layout, and a field
//     inserted or removed anywhere between `address` and `hh_sock` (as upstream's 43c27150 did)
//     makes every old layout disagree instead of reading wrong figures;
//   - once verified, every later observation checks the layout again: a disagreement (a shift
//     that padding hid from hh_sock) switches it off for good;
//   - until verified, and for ever once no candidate is left, Read() answers nothing (the API
//     says "unknown").
// Only integers inside the client's allocation are read (Broker::ReadClientBytes, whose
// implementation checks the offset against malloc_usable_size); the pointers read are compared,
// never followed; nothing is written.
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

// The fields the layout knows. The verification fields come first, the message counts last.
enum class LayoutField : std::uint8_t {
  kProtocol,  // enum mosquitto__protocol (encoded per line: ProtocolEncoding)
  kKeepalive,
  kCleanStart,
  kSubCount,  // 2.1: subs_count; what mosquitto_client_sub_count returns on both lines
  kSessionExpiryTime,
  kSessionExpiryInterval,
  kIsBridge,
  // The anchors: pointers compared with what the broker's accessors return, never followed.
  kAddress,   // char *address: mosquitto_client_address
  kId,        // char *id: mosquitto_client_id
  kUsername,  // char *username: mosquitto_client_username
  kSockKey,   // hh_sock.key: &client->sock for a client with a socket (struct UT_hash_handle)
  // 2.1: uint16_t remote_port, the peer's port the broker took from the socket or a PROXY
  // header (src/proxy_v1.c, src/proxy_v2.c of v2.1.2). Absent from the 2.0 layouts.
  kRemotePort,
  // struct mosquitto_message_all *will: whether the client has a will (null or not); compared
  // with null only, never followed, so its topic, QoS and retain stay unknown.
  kWill,
  kMsgsInInflightCount,  // 2.0.13 on: msgs_in.inflight_count; the counts come last  // 2.0.13 on:
                         // msgs_in.inflight_count
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

// Where `sock` lies in every layout here: `int ident` first (epoll builds), then `sock`
// (plugin/client_reader.h reads the socket there too). hh_sock.key holds the client's address
// plus this.
constexpr std::size_t kSockOffset = 4;

// Which values `protocol` takes (enum mosquitto__protocol): 2.0 numbers MQTT 3.1, 3.1.1 and 5
// as 1, 2, 5; 2.1 as 3, 4, 5 (lib/mosquitto_internal.h of v2.0.11 and v2.1.2).
enum class ProtocolEncoding : std::uint8_t { k20, k21 };

struct BrokerLayout {
  const char* name;  // "2.0.15-2.0.22 TLS ADNS WebSockets": versions and the options that matter
  ProtocolEncoding protocol;
  std::array<FieldPlace, kLayoutFieldCount> fields;

  const FieldPlace& place(LayoutField field) const {
    return fields[static_cast<std::size_t>(field)];
  }
  // The end of the last field read: the client's allocation must be at least this large.
  std::size_t End() const;
  bool SamePlaces(const BrokerLayout& other) const;
  // Whether every field read for a figure (session expiry, is_bridge, remote_port, the message
  // counts) lies in the same place in `other`: then either gives the same figures, however
  // their verification-only fields differ.
  bool SameFigures(const BrokerLayout& other) const;
};

// The layouts that may fit a broker of this version (2.0.11 to 2.0.22, 2.1.x): one per set of
// the build options that move the fields; for 2.1, also those of upstream's master after 2.1.2
// (commit 43c27150 inserted `password_len`, and master still calls itself 2.1.2: the anchors
// tell them apart, not the version). Empty for another or an unknown version.
std::vector<const BrokerLayout*> BrokerLayoutCandidates(const BrokerVersion& version);

// The MQTT protocol version (3, 4, 5) a raw `protocol` stands for, 0 for any other value, as
// mosquitto_client_protocol_version maps it.
int ProtocolVersionOf(ProtocolEncoding encoding, std::int64_t raw);

class BrokerLayoutVerifier {
 public:
  // Two candidates with different places still agreeing after kMaxObservations (the table
  // never holds such a pair for one version: a test checks it): unknown.
  static constexpr int kMaxObservations = 256;
  // The most bytes the message counts span in any layout (2.0.13 on: 100).
  static constexpr std::size_t kMaxCountsSpan = 128;

  enum class State { kVerifying, kVerified, kUnknown };

  // `candidates` from BrokerLayoutCandidates; `version` names the broker in log lines.
  BrokerLayoutVerifier(const std::vector<const BrokerLayout*>& candidates, BrokerVersion version);

  // Logs why nothing will be read when there is no candidate at all. Call once, at start.
  void Start(Broker& broker);
  // Trusts no layout from now on, with the log line of an unknown one naming `why`
  // (plugin_opt_client_layout off).
  void TurnOff(Broker& broker, const std::string& why) { Fail(broker, why); }

  // One observation of a client the plugin touches anyway (never per message). Compares every
  // live candidate with the broker's accessors; verifies when the client has an id and a socket
  // and the candidates left agree on every place. Once verified, checks the chosen layout
  // again, and switches it off when it disagrees. Logs one line when the state is decided.
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
  // Empty when the candidate agrees with the accessors on this client, else why not.
  // `*anchored`: whether the agreement proves the layout (the id and the socket hash key were
  // there to compare, and the username agreed).
  static std::string Disagreement(const Broker& broker, const BrokerClient* client,
                                  const BrokerLayout& layout, bool* anchored);
  void Fail(Broker& broker, const std::string& why);
  // `proved`: an anchored observation (Disagreement) agreed with a candidate left.
  void Decide(Broker& broker, bool proved);

  // Before verification, the candidates still agreeing; after it, those that agree and give
  // the figures chosen_ gives (chosen_ first): a later disagreement of chosen_ hands over to the
  // next of them (Debian's 2.0.11 and upstream's 2.0.11 without WebSockets differ only in
  // where sub_count lies, and a CONNECT cannot tell them apart).
  std::vector<const BrokerLayout*> candidates_;
  BrokerVersion version_;
  State state_ = State::kVerifying;
  const BrokerLayout* chosen_ = nullptr;
  int observations_ = 0;
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
