// SPDX-License-Identifier: BSD-3-Clause
// Settles CONNECTs into the session table's records. Mosquitto 2.0 has no CONNECT event: a
// CONNECT seen at BASIC_AUTH (or EXT_AUTH_START) stays pending until the next broker callback
// of any kind, which shows it was accepted; the pending client's own DISCONNECT without its id
// shows it was refused; a DISCONNECT of another client meanwhile is that CONNECT's takeover or
// session resume. Also here: a kick's subscription re-checks, held until the next event tells
// whether the client is being disconnected, and a reload's re-checks, which are no CONNECTs.
// docs/architecture.md ("The broker thread's view") and docs/reload.md have the long story.
//
// Threads: the broker thread only. has_unsettled() is read per message: one byte.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/client_facts.h"
#include "broker/session_table.h"

namespace mqc {

class ConnectSettlement {
 public:
  explicit ConnectSettlement(SessionTable* table) : table_(table) {}
  ConnectSettlement(const ConnectSettlement&) = delete;
  ConnectSettlement& operator=(const ConnectSettlement&) = delete;

  // The client whose CONNECT is being handled (its resumed session is being re-checked).
  bool IsPending(const void* client) const { return pending_ && pending_->client == client; }
  // Whether Settle has anything to do: a CONNECT pending, or subscription checks held.
  // One byte kept with them (NoteUnsettled): every delivery, publish and TICK reads it.
  bool has_unsettled() const { return unsettled_; }

  // A CONNECT is being authenticated (BASIC_AUTH, EXT_AUTH_START). A client without a socket
  // is an offline session re-checked at a reload, not a CONNECT: it is ignored.
  void BeginConnect(const void* client, ClientFacts facts, std::int64_t now_ns);

  // Whether an authentication event re-checks a client the broker already holds (open here,
  // without a socket, or pending: an MQTT 5 re-authentication) rather than starting a CONNECT.
  // Settles a pending CONNECT of another client when it is.
  bool IsRecheck(const void* client, bool has_socket);

  // RELOAD: until EndReload (the next TICK), a close of an open connection is the reload
  // revoking it (CloseReason::kAccessRevoked).
  void BeginReload() {
    Settle();
    reloading_ = true;
  }
  void EndReload() { reloading_ = false; }
  bool reloading() const { return reloading_; }

  // At the start of every broker callback but DISCONNECT: the pending CONNECT was accepted,
  // and the held subscription checks apply (no DISCONNECT followed them).
  void Settle() {
    if (!unsettled_) return;  // every TICK: one test
    if (pending_) SettlePending();
    if (held_client_ != nullptr) ResolveHeld(/*disconnecting=*/false);
  }
  // Settle for a SUBSCRIBE check of `client`: its own held checks stay held (a kick re-checks
  // every subscription in a row).
  void SettleExceptHeldOf(const void* client) {
    if (pending_) SettlePending();
    if (held_client_ != nullptr && held_client_ != client) ResolveHeld(/*disconnecting=*/false);
  }
  // Mosquitto 2.1 confirms every CONNECT it accepts (Confirm) and sends no DISCONNECT for one
  // it refuses in enhanced authentication: with confirmed connects, Settle refuses a pending
  // enhanced-authentication CONNECT that was not confirmed.
  void SetConnectsConfirmed(bool confirmed) { connects_confirmed_ = confirmed; }
  void Confirm(const void* client) {
    if (IsPending(client)) Accept();
  }

  // DISCONNECT. `has_client_id` is false for a client the broker refused. A DISCONNECT of
  // another client while a CONNECT is pending happens inside that CONNECT (a takeover or a
  // resume): the old connection closes, the new one stays pending. `expiry`: SessionTable::Close.
  void Disconnect(const void* client, bool has_client_id, CloseReason reason, std::int64_t now_ns,
                  std::int64_t idle_ns = -1, SessionExpiry expiry = {});

  // A subscription the broker allowed. Mosquitto 2.0.12 on (and Debian's 2.0.11) re-checks
  // each subscription of a persistent client it kicks as a QoS 0 SUBSCRIBE check right before
  // its DISCONNECT (src/plugin_public.c: check_subscription_acls). So where such checks reach
  // the plugin (`may_be_recheck`, 2.0's ACL_CHECK), a QoS 0 check of a filter held at a higher
  // QoS is held: that client's DISCONNECT next drops it, any other event applies it.
  void Subscribe(const void* client, std::string_view filter, std::uint8_t qos,
                 bool may_be_recheck = true);
  // A SUBSCRIBE check another ACL source denied at `now_ns` (wall clock): of a held filter, a
  // kick's re-check when the client's DISCONNECT follows (the broker then removed it), else the
  // client's own SUBSCRIBE renewing it; of any other filter, the client's SUBSCRIBE. A denial
  // of the client's own SUBSCRIBE is counted (SessionTable::Denied), a re-check's is not.
  void SubscribeDenied(const void* client, std::string_view filter, std::int64_t now_ns);

  // The client layout was verified: the bridge roles still unknown, of the pending CONNECT and
  // of the open connections (SessionTable::ResolveBridges).
  template <typename RoleOf>
  void ResolveBridges(RoleOf role) {
    if (pending_ && pending_->facts.bridge == BridgeRole::kUnknown) {
      pending_->facts.bridge = role(pending_->client);
    }
    table_->ResolveBridges(role);
  }

 private:
  struct Pending {
    const void* client = nullptr;
    ClientFacts facts;
    std::int64_t begin_ns = 0;
    bool resumes_session = false;  // the broker disconnected the old client of this id for it
  };
  // A subscription check that may be a kick's re-check (Subscribe), of held_client_.
  struct HeldCheck {
    std::string filter;
    bool denied = false;  // else a downgrade to QoS 0
    std::int64_t denied_ns = 0;  // when it was denied (wall clock)
  };

  void Accept();
  void Refuse(std::int64_t now_ns);
  void SettlePending() {
    if (connects_confirmed_ && pending_->facts.mechanism == AuthMechanism::kEnhanced) {
      Refuse(pending_->begin_ns);
    } else {
      Accept();
    }
  }
  // Applies (not `disconnecting`) or drops the held subscription checks.
  void ResolveHeld(bool disconnecting);
  void Hold(const void* client, std::string_view filter, bool denied, std::int64_t denied_ns = 0);

  SessionTable* table_;
  std::optional<Pending> pending_;
  const void* held_client_ = nullptr;
  std::vector<HeldCheck> held_;
  // pending_ or held_client_ set: after every change of either.
  void NoteUnsettled() { unsettled_ = pending_.has_value() || held_client_ != nullptr; }
  bool unsettled_ = false;
  bool reloading_ = false;
  bool connects_confirmed_ = false;
};

}  // namespace mqc
