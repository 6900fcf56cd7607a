// SPDX-License-Identifier: BSD-3-Clause
// The broker's events, decided: what each callback records and what it answers the broker. The
// callbacks themselves (plugin/broker_events.cc) only hand the broker's event over and catch
// everything; every decision is here, over a Broker (broker.h), so that unit tests drive the
// same code with a FakeBroker (tests/support/fake_broker.h).
//
// Two plugin APIs (docs/broker-versions.md):
//   2.0: a CONNECT is seen at BASIC_AUTH and settled by the next callback; subscriptions and
//        deliveries are ACL checks the broker allowed; the plugin decides authentication and
//        ACLs only where no other source does, as the broker would without it.
//   2.1: CONNECT, SUBSCRIBE, UNSUBSCRIBE, MESSAGE_OUT and CLIENT_OFFLINE report what happened;
//        the plugin answers BASIC_AUTH with MOSQ_ERR_PLUGIN_IGNORE, registers ACL_CHECK only
//        where no other ACL source exists (answering IGNORE too),
//        so it decides nothing, whatever else is configured (global_plugin, plugin_load, ...).
// KubeMQ strict mode (plugin_opt_kubemq_strict, off by default) is the one exception, on both:
// it refuses what KubeMQ would refuse (a SUBSCRIBE at ACL_CHECK, a PUBLISH at MESSAGE), as
// docs/topic-mapping.md says; with it off, every answer stays the neutral one above.
//
// BrokerEvents<B> is a view of the broker core (one reference) built per callback; B is a
// `final` Broker, so the calls of its inline fast paths (OnAclCheck, OnMessage, OnMessageOut,
// 2.1's watched ACL check, TICK's gate) into it are direct; they call nothing else out and
// allocate nothing (tests/broker/per_message_test.cc). Every other path is EventDecisions, out
// of line in broker_events.cc.
//
// Threads: all of this runs on the broker thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "broker/acl_file.h"
#include "broker/broker.h"
#include "broker/broker_core.h"
#include "broker/broker_layout.h"
#include "broker/message_counts.h"
#include "broker/session_table.h"
#include "broker/traffic_meter.h"
#include "link/kubemq_strict.h"
#include "link/plugin_options.h"

namespace mqc {

// The event that reports a connection's end.
enum class DisconnectEvent : std::uint8_t {
  kDisconnect,     // 2.0's DISCONNECT (every connection); 2.1's (its session ends with it)
  kClientOffline,  // 2.1's CLIENT_OFFLINE (its session stays)
};

// The answer to a CONNECT a ban refuses. 2.1 answers MOSQ_ERR_BANNED (CONNACK 0x8A for MQTT 5);
// 2.0 has no such answer, and MOSQ_ERR_AUTH is the closest (0x87 Not authorized; 3.1.1: 5, not
// authorised, on both). Enhanced authentication (`enhanced`) answers MOSQ_ERR_AUTH on both:
// 2.1 closes without a CONNACK for any other answer there.
inline int BanRefusalCode(bool api_2_1, bool enhanced) {
  return api_2_1 && !enhanced ? kBrokerErrBanned : kBrokerErrAuth;
}

// The answer to a CONNECT nothing refused, as the broker would give it without this plugin:
// 2.1: IGNORE. 2.0: DEFER where another source decides, else what mosquitto_unpwd_check() does
// when no plugin or password_file is configured.
inline int NeutralBasicAuthAnswer(bool api_2_1, bool decide_basic_auth, bool allow_anonymous) {
  if (api_2_1) return kBrokerErrPluginIgnore;
  if (!decide_basic_auth) return kBrokerErrPluginDefer;
  return allow_anonymous ? kBrokerSuccess : kBrokerErrAuth;
}

// The broker events the plugin registers for. plugin/broker_events.cc gives each the broker's
// code and its callback.
enum class BrokerEventKind : std::uint8_t {
  kBasicAuth,
  kExtAuthStart,
  kConnect,      // 2.1
  kSubscribe,    // 2.1
  kUnsubscribe,  // 2.1
  kMessageIn,    // 2.0's MESSAGE, 2.1's MESSAGE_IN
  kMessageOut,   // 2.1
  kAclCheck,
  kDisconnect,
  kClientOffline,  // 2.1
  kTick,
  kReload,
};

// The events to register for on this broker, in the order they are registered (and
// unregistered in reverse). 2.0 needs ACL_CHECK for every subscription and delivery. 2.1
// reports those once made; its ACL_CHECK is registered only where the plugin watches it (no
// other ACL source, watch_acl_21) or for strict mode: a plugin in the ACL chain may change the
// answer (src/plugin_acl_check.c returns the last callback's answer when none decides, so an
// IGNORE after another plugin's DEFER would turn a denial into an allow).
std::vector<BrokerEventKind> WantedEvents(const BrokerCore& core);

// A client id for one log line: control characters (a newline could forge a line) become '?'.
std::string Printable(const std::string& text);

// The log line of an admin's kick, and whether it is a warning (the kick failed).
std::string KickLogLine(const KickCommand& command, int rc, const std::string& error_text);

// The decisions off the per-message fast paths (broker_events.cc), over the Broker interface:
// their calls into the broker are virtual, which nothing per message pays. BrokerEvents below
// hands them every event but the fast paths; docs/how-it-works.md and docs/broker-versions.md
// have the broker's side of each.
struct EventDecisions {
  // BASIC_AUTH and EXT_AUTH_START: a CONNECT begins (or, at a reload, a re-check).
  static int OnBasicAuth(BrokerCore& core, BrokerClient* client);
  static int OnExtAuthStart(BrokerCore& core, BrokerClient* client, const char* auth_method);
  // 2.1: a CONNECT the broker accepted.
  static int OnConnect21(BrokerCore& core, BrokerClient* client);
  // DISCONNECT and 2.1's CLIENT_OFFLINE.
  static int OnDisconnect(BrokerCore& core, BrokerClient* client, int broker_reason,
                          DisconnectEvent event);
  // 2.1: a subscription made or removed.
  static int OnSubscribe21(BrokerCore& core, BrokerClient* client, bool made,
                           const char* topic_filter, std::uint8_t qos);
  static int OnReload(BrokerCore& core);
  // An admin's disconnect request from the companion.
  static void Kick(BrokerCore& core, const KickCommand& command);
  // TICK's periodic work, and its slices of the message-count sweep and the expiry checks.
  static void TickWork(BrokerCore& core, std::int64_t now);
  static void SweepMessageCounts(BrokerCore& core, std::int64_t now);
  static void FollowUnknownExpiry(BrokerCore& core, std::int64_t now);
  // The per-message handlers' slow paths.
  static int AclCheckInFull(BrokerCore& core, const AclCheckEvent& data);
  static int MessageInFull(BrokerCore& core, const MessageEvent& data);
  static int MessageOutInFull(BrokerCore& core, const MessageEvent& data);
  // 2.1's watched ACL checks: a delivery to an offline session; strict mode's SUBSCRIBE.
  static int OfflineDelivery21(BrokerCore& core, const AclCheckEvent& data);
  static int StrictSubscribe21(BrokerCore& core, const AclCheckEvent& data);
};

template <typename B>
class BrokerEvents {
 public:
  // `core.broker()` is a B.
  explicit BrokerEvents(BrokerCore& core) : core_(core) {}

  // ---- the per-message path: inline, direct calls into B ----

  // 2.0's ACL_CHECK. Most checks: a delivery to a connected client, no CONNECT pending, the
  // message's topic already classified (TryDeliverCached), where no other ACL source decides.
  // Counts what WatchAclCheck would, without it. A publish (WRITE) records nothing here: it is
  // counted at MESSAGE. Nothing here throws or calls out.
  int OnAclCheck(const AclCheckEvent& data) {
    if (core_.settings().decide_acl && !core_.connects().has_unsettled()) {
      // READ first: a publish's deliveries outnumber its WRITE check.
      if (data.access == kAclRead) {
        // A client whose queue may be full goes the full path, which tells a drop
        // (queue_drops.h).
        if (!core_.drops().MayDrop(broker(), data.client) && DeliveredCached(data)) {
          return kBrokerSuccess;
        }
      } else if (data.access == kAclWrite) {
        return kBrokerSuccess;
      }
    }
    return EventDecisions::AclCheckInFull(core_, data);
  }
  // MESSAGE (2.0 and 2.1's MESSAGE_IN). Most publishes: a connected client, no CONNECT
  // pending, a topic already classified. Nothing here throws.
  int OnMessage(const MessageEvent& data) {
    if (!core_.connects().has_unsettled()) {
      ConnectionStatsSlot* const* stats = core_.sessions().OpenStats(data.client);
      if (stats != nullptr &&
          core_.traffic().TryPublishCached(*stats, data.topic, data.payloadlen)) {
        return core_.options().kubemq_strict && core_.traffic().cached_kubemq_refused()
                   ? kBrokerErrAclDenied
                   : kBrokerSuccess;
      }
    }
    return EventDecisions::MessageInFull(core_, data);
  }
  // 2.1: a PUBLISH being sent to a client: a delivery, counted once per packet the broker sends
  // (every copy a client receives, none for a message dropped at max_queued_messages).
  // Resent QoS 1/2 messages of a resumed session count again: each is sent again.
  int OnMessageOut(const MessageEvent& data) {
    if (!core_.connects().has_unsettled() && DeliveredCached(data)) return kBrokerSuccess;
    return EventDecisions::MessageOutInFull(core_, data);
  }
  // 2.1: an ACL check the plugin only watches, registered only where no other ACL source exists
  // (watch_acl_21, set once at init), so that its IGNORE is the broker's answer without it. It
  // sees what MESSAGE_OUT cannot: a QoS 0 message for an offline session, which the broker
  // throws away (counted as dropped, as on 2.0).
  //
  // Strict mode registers it also where other sources exist, to refuse a SUBSCRIBE KubeMQ would
  // refuse, and answers IGNORE to every other check: docs/topic-mapping.md ("Strict mode") has
  // why that is the broker's own answer, and why the plugin must be loaded first.
  int OnAclCheck21(const AclCheckEvent& data) {
    if (data.access == kAclRead) {  // every delivery: tested first
      if (core_.settings().watch_acl_21 && broker().ClientSocket(data.client) < 0 &&
          !core_.sessions().IsOpen(data.client) && !core_.connects().IsPending(data.client)) {
        return EventDecisions::OfflineDelivery21(core_, data);
      }
      return kBrokerErrPluginIgnore;
    }
    if (data.access == kAclSubscribe && core_.options().kubemq_strict) {
      return EventDecisions::StrictSubscribe21(core_, data);
    }
    return kBrokerErrPluginIgnore;
  }

  // ---- everything else: EventDecisions (broker_events.cc) ----

  int OnBasicAuth(BrokerClient* client) { return EventDecisions::OnBasicAuth(core_, client); }
  int OnExtAuthStart(BrokerClient* client, const char* auth_method) {
    return EventDecisions::OnExtAuthStart(core_, client, auth_method);
  }
  int OnConnect21(BrokerClient* client) { return EventDecisions::OnConnect21(core_, client); }
  int OnDisconnect(BrokerClient* client, int broker_reason,
                   DisconnectEvent event = DisconnectEvent::kDisconnect) {
    return EventDecisions::OnDisconnect(core_, client, broker_reason, event);
  }
  int OnSubscribe21(BrokerClient* client, bool made, const char* topic_filter, std::uint8_t qos) {
    return EventDecisions::OnSubscribe21(core_, client, made, topic_filter, qos);
  }
  int OnReload() { return EventDecisions::OnReload(core_); }
  void Kick(const KickCommand& command) { EventDecisions::Kick(core_, command); }
  void SweepMessageCounts(std::int64_t now) { EventDecisions::SweepMessageCounts(core_, now); }
  void FollowUnknownExpiry(std::int64_t now) { EventDecisions::FollowUnknownExpiry(core_, now); }

  // TICK (2.0: every turn of the broker's loop; 2.1: when asked for, plugin/broker_events.cc).
  // A TICK settles what the callbacks before it left open, ends a reload's re-check and wakes
  // the companion for what was written (a compare when nothing was); the periodic work (the
  // companion's commands, resync; its supervision and expiry in the housekeeping tier) is done
  // at most once per TickPacing::kWorkIntervalNs: under load the loop turns every few
  // microseconds.
  int OnTick() {
    core_.connects().Settle();
    core_.connects().EndReload();  // the broker's re-check of its clients is over
    // Every TICK, not only those with the periodic work: what this turn's callbacks and Settle
    // wrote reaches a sleeping companion now, not at the next TICK with the periodic work (on
    // an idle broker, the next turn of its loop: up to ~100 ms later).
    if (BrokerLink* link = core_.link()) link->WakeCompanion();
    const std::int64_t now = broker().MonotonicNs();
    if (now - core_.tick().work_ns < TickPacing::kWorkIntervalNs) return kBrokerSuccess;
    core_.tick().work_ns = now;
    EventDecisions::TickWork(core_, now);
    return kBrokerSuccess;
  }

  B& broker() const { return static_cast<B&>(core_.broker()); }

 private:
  // The per-delivery fast path of ACL_CHECK READ (2.0) and MESSAGE_OUT (2.1), once the caller
  // knows no CONNECT is pending: a connected client the plugin knows and the cached topic,
  // counted as OnDeliver would. False: nothing counted, the full path decides.
  template <typename Event>
  bool DeliveredCached(const Event& data) {
    ConnectionStatsSlot* const* stats = core_.sessions().OpenStats(data.client);
    return stats != nullptr &&
           core_.traffic().TryDeliverCached(*stats, data.topic, data.payloadlen);
  }
  BrokerCore& core_;
};

}  // namespace mqc
