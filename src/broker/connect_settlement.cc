// SPDX-License-Identifier: BSD-3-Clause
#include "broker/connect_settlement.h"

#include <utility>

namespace mqc {

void ConnectSettlement::BeginConnect(const void* client, ClientFacts facts, std::int64_t now_ns) {
  Settle();
  if (!facts.has_socket) return;
  pending_ = Pending{client, std::move(facts), now_ns, false};
  NoteUnsettled();
}

bool ConnectSettlement::IsRecheck(const void* client, bool has_socket) {
  if (IsPending(client)) return true;  // its CONNECT is still being handled
  if (!table_->IsOpen(client) && has_socket) return false;
  Settle();
  return true;
}

void ConnectSettlement::Accept() {
  Pending pending = std::move(*pending_);
  pending_.reset();
  NoteUnsettled();
  table_->Open(pending.client, pending.facts, pending.begin_ns, pending.resumes_session);
}

void ConnectSettlement::Refuse(std::int64_t now_ns) {
  Pending pending = std::move(*pending_);
  pending_.reset();
  NoteUnsettled();
  table_->RecordRefused(pending.facts, pending.begin_ns, now_ns);
}

void ConnectSettlement::Disconnect(const void* client, bool has_client_id, CloseReason reason,
                                   std::int64_t now_ns, std::int64_t idle_ns,
                                   SessionExpiry expiry) {
  if (held_client_ != nullptr) ResolveHeld(/*disconnecting=*/held_client_ == client);
  if (pending_ && pending_->client == client) {
    if (!has_client_id) {
      Refuse(now_ns);
      return;
    }
    Accept();  // accepted, and gone again before any other callback
  }
  // A pending CONNECT stays pending: when this DISCONNECT is its takeover of the old client,
  // the broker re-checks the resumed session's queued messages next, and those checks must
  // still be recognised as happening inside that CONNECT (IsPending).
  const std::string* connecting_id = pending_ ? &pending_->facts.client_id : nullptr;
  if (table_->Close(client, reason, now_ns, idle_ns, expiry, connecting_id, reloading_)) {
    pending_->resumes_session = true;
  }
}

void ConnectSettlement::Subscribe(const void* client, std::string_view filter, std::uint8_t qos,
                                  bool may_be_recheck) {
  std::uint8_t held_qos = 0;
  if (may_be_recheck && qos == 0 && table_->SubscribedQos(client, filter, &held_qos) &&
      held_qos > 0) {
    Hold(client, filter, /*denied=*/false);
    return;
  }
  table_->Subscribe(client, filter, qos);
}

void ConnectSettlement::SubscribeDenied(const void* client, std::string_view filter,
                                        std::int64_t now_ns) {
  if (table_->HoldsSubscription(client, filter)) {
    Hold(client, filter, /*denied=*/true, now_ns);
  } else {
    table_->Denied(client, AclAccess::kSubscribe, filter, now_ns);
  }
}

void ConnectSettlement::Hold(const void* client, std::string_view filter, bool denied,
                             std::int64_t denied_ns) {
  if (held_client_ != nullptr && held_client_ != client) ResolveHeld(/*disconnecting=*/false);
  held_client_ = client;
  NoteUnsettled();
  held_.push_back(HeldCheck{std::string(filter), denied, denied_ns});
}

void ConnectSettlement::ResolveHeld(bool disconnecting) {
  const void* const client = held_client_;
  std::vector<HeldCheck> held;
  held.swap(held_);
  held_client_ = nullptr;
  NoteUnsettled();
  for (const HeldCheck& check : held) {
    // A kick removes what was denied and keeps the rest; a real SUBSCRIBE is the other way
    // round (a denied one leaves the existing subscription as it was).
    if (check.denied && !disconnecting) {
      table_->Denied(client, AclAccess::kSubscribe, check.filter, check.denied_ns);
    }
    if (check.denied == disconnecting) {
      if (check.denied) {
        table_->Unsubscribe(client, check.filter);
      } else {
        table_->Subscribe(client, check.filter, 0);
      }
    }
  }
}

}  // namespace mqc
