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
// BrokerEvents<B> is a view (one reference) built per callback; B is a `final` Broker, so the
// calls into it are direct, and it is reached only on the paths that call out. The per-message fast
// paths (OnAclCheck, OnMessage, OnMessageOut) call nothing out and allocate nothing
// (tests/broker/per_message_test.cc).
//
// Threads: all of this runs on the broker thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/acl_file.h"
#include "broker/ban_gate.h"
#include "broker/broker.h"
#include "broker/broker_layout.h"
#include "broker/broker_link.h"
#include "broker/companion_supervisor.h"
#include "broker/configuration.h"
#include "broker/message_counts.h"
#include "broker/presence.h"
#include "broker/round_pace.h"
#include "broker/session_table.h"
#include "broker/traffic_meter.h"
#include "link/broker_config.h"
#include "link/kubemq_strict.h"
#include "link/plugin_options.h"
#include "link/shared_region.h"

namespace mqc {

// The broker side's state that the decisions read and write (the plugin's PluginState extends
// it with what only the entry points need). Touched by the broker thread only.
struct BrokerEventsState {
  // The broker (the plugin's MosquittoBroker, a test's FakeBroker); BrokerEvents<B> reaches it
  // as the B it is, only on the paths that call out.
  Broker* broker = nullptr;

  PluginOptions options;
  BrokerConfig broker_config;
  std::string config_path;  // the broker's configuration file, read again at every reload
  std::string own_path;     // this plugin's .so, to find its own plugin line

  // Auth neutrality on 2.0: decide only where the broker has no other decision maker, and then
  // exactly as the broker itself would without this plugin (DecideAuth). 2.1 never decides.
  bool decide_basic_auth = false;
  bool allow_anonymous = false;
  bool decide_acl = false;
  // The broker's acl_file as the plugin reads it, where it needs it (plugin.cc: ReadAclFile).
  std::unique_ptr<AclFile> acl_file;
  // Set while the ACL_CHECK handler asks the broker for the later sources' answer: the nested
  // call reaches this plugin's callback again, which must then defer.
  bool acl_check_nested = false;
  // 2.0: this plugin's place in the broker's chains of BASIC_AUTH and ACL_CHECK callbacks
  // (callback_chain.h), looked for at the first call of each, and whether a plugin in scope is
  // asked through 2.0's older interface after every callback (then the chains alone do not tell
  // the broker's answer; unknown until the first chain is looked for).
  CallbackChain basic_auth_chain;
  CallbackChain acl_chain;
  std::optional<bool> older_plugins;
  // Set while the plugin kicks a client for an admin: the broker sends that client's
  // DISCONNECT from inside the kick, and it closes as KICKED.
  bool kicking = false;

  std::unique_ptr<SharedRegion> region;
  std::unique_ptr<BrokerLink> link;
  std::unique_ptr<SessionTable> sessions;
  std::unique_ptr<TrafficMeter> traffic;
  std::unique_ptr<CompanionSupervisor> companion;
  // Presence messages; null when off.
  std::unique_ptr<PresencePublisher> presence_publisher;
  std::unique_ptr<Presence> presence;
  std::unique_ptr<BanGate> bans;  // the companion's ban list, asked at CONNECT
  // Where struct mosquitto's integers lie, trusted once verified (broker_layout.h); fed at
  // CONNECT, SUBSCRIBE and UNSUBSCRIBE (checked again there once verified). Null: not set up (nothing is read).
  std::unique_ptr<BrokerLayoutVerifier> layout;
  // Walks the open connections at TICK to refresh their message counts (message_counts.h).
  MessageCountSweep message_sweep;
  // Paces TICK's checks of the offline sessions whose expiry the broker did not tell
  // (BrokerEvents::FollowUnknownExpiry): every one once a second, at most kMaxExpiryChecks a TICK.
  static constexpr std::int64_t kExpiryRoundNs = 1000000000;
  static constexpr std::size_t kMaxExpiryChecks = 1024;
  RoundPace expiry_pace{kExpiryRoundNs, kMaxExpiryChecks};

  // 2.1: whether the plugin watches ACL checks (no other ACL source: its IGNORE is neutral).
  bool watch_acl_21 = false;

  bool settings_pending = false;  // reloaded options the running companion has not been sent

  // The last TICK that did the periodic work (MonotonicNs).
  std::int64_t tick_work_ns = 0;
  static constexpr std::int64_t kTickWorkIntervalNs = 1000000;
};

// The event that reports a connection's end.
enum class DisconnectEvent : std::uint8_t {
  kDisconnect,     // 2.0's DISCONNECT (every connection); 2.1's (its session ends with it)
  kClientOffline,  // 2.1's CLIENT_OFFLINE (its session stays)
};

// A delivery of a presence message: counted nowhere (README, "Presence messages").
inline bool IsPresenceDelivery(const BrokerEventsState& state, const char* topic) {
  return state.presence != nullptr && topic[0] == '$' && state.presence->IsPresenceTopic(topic);
}

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

// Sends reloaded registry options to the running companion; false while the ring is full.
bool SendSettingsIfPending(BrokerEventsState* state);

// At TICK: starts the resync the link says is due (BrokerLink::TakeResyncDue) and carries an
// unfinished one on as far as the ring has room (SessionTable's full state). True when no
// resync is due or under way any more. A resync the ring refuses is due again (Emit).
bool ResyncStep(BrokerLink* link, SessionTable* table);

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
std::vector<BrokerEventKind> WantedEvents(const BrokerEventsState& state);

// Whether an ACL source after the plugin decides what the plugin cannot learn (2.0 without
// mosquitto_acl_check, and an ACL plugin other than the acl_file): logged at start.
inline bool UnreadAclSource(const BrokerEventsState& state) {
  const BrokerCapabilities& capabilities = state.broker->capabilities();
  return !capabilities.api_2_1 && !state.decide_acl && !kCanReadCallbackChains &&
         !capabilities.acl_check && state.acl_file == nullptr;
}

// Presence messages, when an option asks for them (after the session table exists): published
// through the broker (Broker::Publish), told of every open and close by the session table.
// Logs one line saying what is published.
void SetUpPresence(BrokerEventsState* state);

// A client id for one log line: control characters (a newline could forge a line) become '?'.
std::string Printable(const std::string& text);

// The log line of an admin's kick, and whether it is a warning (the kick failed).
std::string KickLogLine(const KickCommand& command, int rc, const std::string& error_text);

template <typename B>
class BrokerEvents {
 public:
  // `state.broker` is a B.
  explicit BrokerEvents(BrokerEventsState& state) : state_(state) {}

  // ---- the per-message path ----

  // 2.0's ACL_CHECK. Most checks: a delivery to a connected client, no CONNECT pending, the
  // message's topic already classified (TryDeliverCached), where no other ACL source decides.
  // Counts what WatchAclCheck would, without it. A publish (WRITE) records nothing here: it is
  // counted at MESSAGE. Nothing here throws or calls out.
  int OnAclCheck(const AclCheckEvent& data) {
    if (state_.decide_acl && !state_.sessions->has_unsettled()) {
      if (data.access == kAclWrite) return kBrokerSuccess;
      if (data.access == kAclRead && DeliveredCached(data)) return kBrokerSuccess;
    }
    return AclCheckInFull(state_, data);
  }

  // MESSAGE (2.0 and 2.1's MESSAGE_IN). Most publishes: a connected client, no CONNECT
  // pending, a topic already classified. Nothing here throws.
  int OnMessage(const MessageEvent& data) {
    if (!state_.sessions->has_unsettled()) {
      ConnectionStatsSlot* const* stats = state_.sessions->OpenStats(data.client);
      if (stats != nullptr &&
          state_.traffic->TryPublishCached(*stats, data.topic, data.payloadlen)) {
        return state_.options.kubemq_strict && state_.traffic->cached_kubemq_refused()
                   ? kBrokerErrAclDenied
                   : kBrokerSuccess;
      }
    }
    return MessageInFull(state_, data);
  }

  // 2.1: a PUBLISH being sent to a client: a delivery, counted once per packet the broker sends
  // (every copy a client receives, none for a message dropped at max_queued_messages).
  // Resent QoS 1/2 messages of a resumed session count again: each is sent again.
  int OnMessageOut(const MessageEvent& data) {
    if (!state_.sessions->has_unsettled() && DeliveredCached(data)) return kBrokerSuccess;
    return MessageOutInFull(state_, data);
  }

  // 2.1: an ACL check the plugin only watches, registered only where no other ACL source exists
  // (watch_acl_21, set once at init), so that its IGNORE is the broker's answer without it. It
  // sees what MESSAGE_OUT cannot: a QoS 0 message for an offline session, which the broker
  // throws away (counted as dropped, as on 2.0).
  //
  // Strict mode registers it also where other sources exist, to refuse a SUBSCRIBE that KubeMQ
  // would refuse: 2.1's loop (src/plugin_acl_check.c: plugin__acl_check) ends at the first
  // answer that is neither DEFER nor IGNORE, and handle_subscribe turns ACL_DENIED into 0x80
  // (MQTT 3.1.1) or 0x87 (MQTT 5). Every other check still answers IGNORE: the acl_file's
  // callback and those of plugins loaded later come after this one (src/plugin_init.c: plugins
  // first, then mosquitto_security_init_default; callbacks are appended), so the last of them
  // decides, and where no other ACL callback exists (a password-only plugin) IGNORE is the
  // broker's own allow, where DEFER would turn every check into a denial. Behind an ACL plugin
  // loaded before this one (the start log warns when it is not first) an IGNORE answered last
  // would allow what that plugin deferred: strict mode assumes the plugin is loaded first.
  // Watching READ checks stays for the case without other sources.
  int OnAclCheck21(const AclCheckEvent& data) {
    if (data.access == kAclSubscribe && state_.options.kubemq_strict) {
      return StrictRefusesSubscribe(data) ? kBrokerErrAclDenied : kBrokerErrPluginIgnore;
    }
    if (data.access != kAclRead || !state_.watch_acl_21) return kBrokerErrPluginIgnore;
    try {
      SessionTable& sessions = *state_.sessions;
      if (broker().ClientSocket(data.client) < 0 && !sessions.IsOpen(data.client) &&
          !sessions.IsPending(data.client)) {
        // The check carries the message's QoS; the session gets it at most at its
        // subscription's.
        const std::uint8_t qos = std::min<std::uint8_t>(
            data.qos, sessions.OfflineQos(data.client, IdOf(data.client), data.topic));
        if (qos == 0 && !IsPresenceDelivery(state_, data.topic)) {
          Details clock(broker(), data.client, nullptr);
          state_.traffic->OnDeliver(data.client, nullptr, /*online=*/false, data.topic,
                                    data.payloadlen, 0, clock);
        }
      }
    } catch (...) {
    }
    return kBrokerErrPluginIgnore;
  }

  // ---- connections ----

  // BASIC_AUTH: a CONNECT begins (or, at a reload, the broker re-checks a client it holds).
  int OnBasicAuth(BrokerClient* client) {
    int banned = 0;
    try {
      // At a configuration reload the broker re-checks every client it holds (docs/reload.md):
      // the connection stays what it was, and the decision below is the broker's own again.
      // Observed first: the observation that verifies the layout tells this client's bridge bit.
      ObserveLayout(client);
      if (!state_.sessions->IsRecheck(client, broker().ClientSocket(client) >= 0)) {
        ClientFacts facts = ReadFacts(client);
        if (facts.mechanism == AuthMechanism::kPassword) {
          facts.credentials_checked = !state_.decide_basic_auth;
        }
        facts.bridge = BridgeAtConnect(client);
        state_.sessions->BeginConnect(client, std::move(facts), broker().NowNs());
        if (state_.bans->active()) banned = BanRefusal(client, false);
      }
    } catch (...) {
      // Watching must never change the outcome: fall through to the decision.
    }
    if (banned != 0) return banned;
    return BasicAuthAnswer();
  }

  // EXT_AUTH_START: a CONNECT with MQTT 5 enhanced authentication, or a re-authentication.
  int OnExtAuthStart(BrokerClient* client, const char* auth_method) {
    const int neutral = broker().api_2_1() ? kBrokerErrPluginIgnore : kBrokerErrPluginDefer;
    try {
      // An AUTH with reason 0x19 on an open connection (re-authentication) is sent to plugins
      // as EXT_AUTH_START too (src/handle_auth.c, 2.0 and 2.1): the connection stays what it
      // was. On 2.0 a refused re-authentication ends the connection with the broker's
      // DISCONNECT.
      if (state_.sessions->IsRecheck(client, broker().ClientSocket(client) >= 0)) return neutral;
      ObserveLayout(client);
      ClientFacts facts = ReadFacts(client);
      facts.mechanism = AuthMechanism::kEnhanced;
      facts.auth_method = auth_method != nullptr ? auth_method : "";
      facts.bridge = BridgeAtConnect(client);
      state_.sessions->BeginConnect(client, std::move(facts), broker().NowNs());
      if (state_.bans->active()) {
        const int banned = BanRefusal(client, true);
        if (banned != 0) return banned;
      }
    } catch (...) {
    }
    // With every callback deferring (2.1: ignoring) the broker answers "not supported", as
    // with none.
    return neutral;
  }

  // 2.1: a CONNECT the broker accepted (after its CONNACK). It settles the CONNECT that
  // BASIC_AUTH began; a client whose authentication the plugin did not see (use_identity_as_
  // username listeners) is added here.
  int OnConnect21(BrokerClient* client) {
    try {
      ObserveLayout(client);
      SessionTable& sessions = *state_.sessions;
      if (!sessions.IsPending(client) && !sessions.IsOpen(client)) {
        sessions.Settle();
        ClientFacts facts = ReadFacts(client);
        facts.bridge = BridgeAtConnect(client);
        sessions.BeginConnect(client, std::move(facts), broker().NowNs());
      }
      sessions.Confirm(client);
      RefreshMessages(client, sessions.View(client).stats);
    } catch (...) {
    }
    return kBrokerSuccess;
  }

  // DISCONNECT (2.0: every connection; 2.1: sessions that end with it) and 2.1's
  // CLIENT_OFFLINE (a persistent session's connection ends, the session stays). 2.1 passes the
  // reason; 2.0 passes -1, and the client's state tells (mosquitto__get_state, where exported).
  // What becomes of the session: ExpiryAtClose.
  int OnDisconnect(BrokerClient* client, int broker_reason,
                   DisconnectEvent event = DisconnectEvent::kDisconnect) {
    try {
      SessionTable& sessions = *state_.sessions;
      const bool pending = sessions.IsPending(client);
      const bool refused =
          IsRefusal(broker().api_2_1(), pending, broker().ClientId(client) != nullptr,
                    pending ? broker().ClientState(client) : -1);
      const std::int64_t idle_ms = broker().IdleMs(client);  // the socket is still open here
      CloseReason reason = CloseReason::kUnspecified;
      if (state_.kicking) {
        reason = CloseReason::kKicked;
      } else if (broker().api_2_1()) {
        reason = CloseReasonFromBrokerReason(broker_reason);
      } else {
        reason = CloseReasonFromClientState(broker().ClientState(client));
      }
      sessions.Disconnect(client, !refused, reason, broker().NowNs(),
                          idle_ms < 0 ? -1 : idle_ms * 1000000, ExpiryAtClose(client, event));
    } catch (...) {
    }
    return kBrokerSuccess;
  }

  // 2.1: a subscription the broker made (`made`), or removed (after every ACL source allowed
  // it). `qos`: the granted QoS.
  int OnSubscribe21(BrokerClient* client, bool made, const char* topic_filter, std::uint8_t qos) {
    try {
      SessionTable& sessions = *state_.sessions;
      sessions.Settle();
      if (topic_filter == nullptr) return kBrokerSuccess;
      const SessionTable::ClientView view = ViewOrDiscover(client);
      if (made) {
        sessions.Subscribe(client, topic_filter, qos, /*may_be_recheck=*/false);
        state_.traffic->OnSubscribe(view.stats, /*made=*/true);
      } else {
        sessions.Unsubscribe(client, topic_filter);
        TrafficMeter::OnRequest(view.stats);
      }
      ObserveLayout(client);
      RefreshMessages(client, view.stats);
    } catch (...) {
    }
    return kBrokerSuccess;  // anything else would refuse the subscription
  }

  // RELOAD (configuration.h: ReloadConfiguration). The broker re-checks every client it holds
  // next (mosquitto_security_apply): those BASIC_AUTH events are no CONNECTs, and the clients
  // it closes lost their access.
  int OnReload() {
    try {
      state_.sessions->BeginReload();
      ReloadConfiguration(&state_);
      SendSettingsIfPending(&state_);
    } catch (...) {
      // A reload must never take the broker down: whatever was not applied stays as it was.
    }
    return ReloadAnswer(broker().api_2_1());
  }

  // An admin's disconnect request from the companion (already bounds-checked by its decoder).
  // The broker's own kick: an MQTT 5 client gets DISCONNECT 0x98 (administrative action), its
  // will is sent unless the admin asked not to, and the client's DISCONNECT event comes before
  // the call returns.
  void Kick(const KickCommand& command) {
    state_.kicking = true;
    const int rc = broker().Kick(command.client_id, command.with_will);
    state_.kicking = false;
    broker().Log(rc == kBrokerSuccess ? LogLevel::kNotice : LogLevel::kWarning,
                 KickLogLine(command, rc, rc == kBrokerSuccess ? "" : broker().ErrorText(rc)));
  }

  // Puts a ban list from the companion in force (at TICK, and while the companion starts).
  void ApplyBans(BansCommand&& command) {
    const std::uint64_t sequence = command.sequence;
    broker().Log(LogLevel::kInfo, state_.bans->Replace(std::move(command)));
    // In force: the companion's answer to the admin waits for this (CompanionLink::WaitForBans).
    if (state_.region != nullptr) {
      state_.region->header()->broker.bans_applied.store(sequence, std::memory_order_release);
    }
  }

  // TICK's slice (part of its periodic work) of the walk over the open connections that keeps their
  // message counts fresh.
  void SweepMessageCounts(std::int64_t now) {
    const BrokerLayoutVerifier* layout = state_.layout.get();
    if (layout == nullptr || !layout->verified()) return;
    SessionTable& sessions = *state_.sessions;
    const std::size_t slots = state_.message_sweep.SlotsNow(now, sessions.open_table_slots());
    sessions.SweepOpen(slots, [this, layout](const void* client, ConnectionStatsSlot* slot) {
      RefreshMessageCounts(layout, broker(), static_cast<const BrokerClient*>(client), slot);
    });
  }

  // TICK's slice of the check of the offline sessions whose expiry the broker did not tell (2.1
  // without a verified client layout): the broker expires them without a plugin event, and the
  // plugin asks it, a bounded number a TICK (expiry_pace), whether it still holds each one
  // (Broker::FindClient; SessionTable::EndGoneOffline). A session ends within about a second
  // of the broker's expiry while a round fits kMaxExpiryChecks a TICK. Nothing where the broker
  // cannot be asked (2.0) or no session is of unknown expiry (every one, where the layout is
  // verified: its expiry is read at the close and followed by ExpireOffline).
  void FollowUnknownExpiry(std::int64_t now) {
    SessionTable& sessions = *state_.sessions;
    const std::size_t unknown = sessions.unknown_expiry_count();
    if (unknown == 0 || !broker().capabilities().client_lookup) return;
    sessions.EndGoneOffline(
        state_.expiry_pace.ItemsNow(now, unknown),
        [this](const std::string& id) { return broker().FindClient(id.c_str()); });
  }

  // TICK (2.0: every turn of the broker's loop; 2.1: when asked for, plugin/broker_events.cc).
  // A TICK settles what the callbacks before it left open and ends a reload's re-check; the
  // periodic work (the companion's commands, its supervision, resync, expiry) is done at most
  // once per kTickWorkIntervalNs: under load the loop turns every few microseconds.
  int OnTick() {
    try {
      state_.sessions->Settle();
      state_.sessions->EndReload();  // the broker's re-check of its clients is over
      const std::int64_t now = broker().MonotonicNs();
      if (now - state_.tick_work_ns < BrokerEventsState::kTickWorkIntervalNs) {
        return kBrokerSuccess;
      }
      state_.tick_work_ns = now;
      SendSettingsIfPending(&state_);
      state_.link->DrainCommands(
          [this](const LogCommand& command) { broker().Log(command.level, command.text); },
          [this](const KickCommand& command) { Kick(command); },
          [this](BansCommand&& command) { ApplyBans(std::move(command)); });
      state_.companion->Tick(now);  // delays and stall checks: no wall-clock jumps
      state_.traffic->OnTick(now);
      state_.sessions->ExpireOffline(broker().NowNs());
      FollowUnknownExpiry(now);
      if (state_.companion->serving()) ResyncStep(state_.link.get(), state_.sessions.get());
      SweepMessageCounts(now);
      state_.link->ReleaseReadPages();
      state_.link->WakeCompanion();  // after every event this TICK wrote
    } catch (...) {
    }
    return kBrokerSuccess;
  }

 private:
  // MQTT 5 properties and the clock, read only for the messages that need them (RPC).
  class Details : public PublishDetails {
   public:
    Details(B& broker, const BrokerClient* client, const void* properties)
        : broker_(broker), client_(client), properties_(properties) {}
    int ProtocolVersion() override { return broker_.ProtocolVersion(client_); }
    bool ResponseTopic(std::string* topic) override {
      return broker_.ReadStringProperty(properties_, kPropertyResponseTopic, topic);
    }
    bool CorrelationData(std::string* data) override {
      return broker_.ReadBinaryProperty(properties_, kPropertyCorrelationData, data);
    }
    std::int64_t MonotonicNs() override { return broker_.MonotonicNs(); }

   private:
    B& broker_;
    const BrokerClient* client_;
    const void* properties_;
  };

  // The per-delivery fast path of ACL_CHECK READ (2.0) and MESSAGE_OUT (2.1), once the caller
  // knows no CONNECT is pending: a connected client the plugin knows and the cached topic,
  // counted as OnDeliver would. False: nothing counted, the full path decides.
  template <typename Event>
  bool DeliveredCached(const Event& data) {
    ConnectionStatsSlot* const* stats = state_.sessions->OpenStats(data.client);
    return stats != nullptr &&
           state_.traffic->TryDeliverCached(*stats, data.topic, data.payloadlen);
  }

  const char* IdOf(const BrokerClient* client) const {
    const char* id = broker().ClientId(client);
    return id != nullptr ? id : "";
  }

  // A client the session table never saw connect, added now: on listeners with
  // use_identity_as_username or use_subject_as_username the broker skips BASIC_AUTH, and the
  // broker's own bridge contexts send their CONNECT instead of receiving one. Such a client is
  // listed from its first message or subscription on (its connect time is then that moment).
  // Offline sessions (no socket) and a client whose CONNECT is being handled are not such
  // clients. Out of line: the per-message path only calls it for a client it does not find
  // open; what is read here is read once per connection.
  [[gnu::noinline, gnu::cold]] SessionTable::ClientView Discover(const BrokerClient* client) {
    SessionTable& sessions = *state_.sessions;
    if (sessions.IsPending(client) || broker().ClientSocket(client) < 0 ||
        broker().ClientId(client) == nullptr) {
      return SessionTable::ClientView{};
    }
    ClientFacts facts = ReadFacts(client);
    facts.bridge = BridgeAtConnect(client);
    if (facts.ip_address.empty() && facts.bridge != BridgeRole::kNone) {
      // A connected client without an address is the broker's own bridge context: both
      // versions give every accepted socket its peer's address before any event
      // (src/net.c: net__socket_accept) and never give a bridge context one (src/bridge.c).
      // Its socket is the one it connected to the remote broker with, open while it carries a
      // message: its peer is the remote broker.
      facts.bridge = BridgeRole::kOutgoing;
      std::string ip;
      std::uint16_t port = 0;
      if (broker().PeerAddress(client, &ip, &port)) {
        facts.ip_address = std::move(ip);
        facts.port = port;
      }
    }
    sessions.BeginConnect(client, std::move(facts), broker().NowNs());
    sessions.Settle();
    return sessions.View(client);
  }

  // The client as the session table knows it, discovered first when it is not (Discover).
  SessionTable::ClientView ViewOrDiscover(const BrokerClient* client) {
    const SessionTable::ClientView view = state_.sessions->View(client);
    return view.open ? view : Discover(client);
  }

  // A CONNECT a ban refuses (BanGate): the broker's answer for it (BanRefusalCode), else 0.
  // Asked only while bans are in force, for new CONNECTs (not a reload's re-check: a banned
  // open client is kicked by the companion instead).
  [[gnu::noinline]] int BanRefusal(const BrokerClient* client, bool enhanced) {
    const Ban* ban =
        state_.bans->Refuses(broker().ClientId(client), broker().ClientUsername(client),
                             broker().ClientAddress(client), broker().NowNs());
    if (ban == nullptr) return 0;
    return BanRefusalCode(broker().api_2_1(), enhanced);
  }

  // The answer to a CONNECT nothing here refused, as the broker would give it without this
  // plugin (NeutralBasicAuthAnswer). On 2.0 where the configuration names another plugin, the
  // chain tells whether any other callback is there to answer: with none (a plugin that only
  // checks ACLs), the broker answers as with no callback at all.
  int BasicAuthAnswer() {
    if (!broker().api_2_1() && !state_.decide_basic_auth) {
      try {
        const CallbackChain* chain = ReadableChain(kEventBasicAuth);
        if (chain != nullptr && !chain->HasOthers()) {
          return state_.allow_anonymous ? kBrokerSuccess : kBrokerErrAuth;
        }
      } catch (...) {
      }
    }
    return NeutralBasicAuthAnswer(broker().api_2_1(), state_.decide_basic_auth,
                                  state_.allow_anonymous);
  }

  // 2.0: the chain of `event`'s callbacks where it tells the broker's answer (found, and no
  // plugin of the older interface in scope); null otherwise. Looked for once, from inside the
  // callback (the broker's loop must be on the stack).
  const CallbackChain* ReadableChain(int event) {
    CallbackChain& chain = event == kEventAclCheck ? state_.acl_chain : state_.basic_auth_chain;
    if (chain.state() == CallbackChain::State::kUnknown) LookForChain(event, &chain);
    return chain.known() && !state_.older_plugins.value_or(true) ? &chain : nullptr;
  }

  [[gnu::noinline, gnu::cold]] void LookForChain(int event, CallbackChain* chain) {
    if (!state_.older_plugins) {
      state_.older_plugins = true;  // until the files tell otherwise
      state_.older_plugins = broker().AnyOlderPlugin(
          OtherPlugins(ScopeOf(state_.broker_config, state_.own_path), state_.own_path));
    }
    chain->Found(broker().FindOwnCallback(event));
    const std::string name = event == kEventAclCheck ? "ACL_CHECK" : "BASIC_AUTH";
    if (!chain->known()) {
      broker().Log(LogLevel::kWarning,
                   "mosquitto_connections: cannot read the broker's " + name +
                       " callbacks: this plugin defers to the other plugins the configuration "
                       "names, and where none of them answers " + name +
                       " the broker refuses (docs/how-it-works.md)");
    } else if (*state_.older_plugins) {
      std::string text = "mosquitto_connections: a plugin of the older interface "
                         "(mosquitto_auth_*) answers " + name +
                         " after every callback: this plugin defers to it";
      if (event == kEventAclCheck && !broker().capabilities().acl_check) {
        text += "; this broker does not export mosquitto_acl_check: a subscription or delivery "
                "that plugin refuses is still listed and counted";
      }
      broker().Log(LogLevel::kNotice, text);
    } else {
      broker().Log(LogLevel::kInfo, "mosquitto_connections: read the broker's " + name +
                                        " callbacks: this plugin answers as the broker would "
                                        "without it");
    }
  }

  // 2.0 with another plugin configured: whether the ACL_CHECK chain shows no other callback,
  // so that the broker, without this plugin, would allow every check.
  bool NoOtherAclCallback() {
    try {
      const CallbackChain* chain = ReadableChain(kEventAclCheck);
      return chain != nullptr && !chain->HasOthers();
    } catch (...) {
      return false;
    }
  }

  // The broker's answer to this check from every ACL source after this plugin (the acl_file
  // check, plugins loaded later). Where the chain is read (callback_chain.h) the plugin asks
  // the callbacks after its own itself, in order, as the broker's loop would have, and answers
  // with the first answer: the broker then asks none of them again. Otherwise the broker's own
  // mosquitto_acl_check runs the callback chain
  // again, and this plugin's callback steps aside in that nested call (`acl_check_nested`).
  // Returning that answer to the outer call ends its loop, so every other callback still runs
  // once per check: the nested call takes the place of the rest of the outer loop. When every
  // later source defers, the nested call answers ACL_DENIED, which is what the outer loop would
  // have answered after them. mosquitto_acl_check never answers DEFER.
  // Where the broker does not export mosquitto_acl_check, the acl_file's answer is worked out
  // from the file (the acl_file allows every SUBSCRIBE and UNSUBSCRIBE in 2.0); with another
  // ACL plugin the answer stays unknown, and the check is recorded as if allowed
  // (UnreadAclSource, logged at start). The broker asks those sources itself: the callback then
  // defers.
  // `*exact`: whether the answer is the broker's (false: worked out from the acl_file, or
  // unknown and taken as allowed).
  int AskLaterAclSources(const AclCheckEvent& data, bool* exact) {
    if (const CallbackChain* chain = ReadableChain(kEventAclCheck)) {
      *exact = true;
      const int answer = chain->AskAfter(kEventAclCheck, data, kBrokerErrPluginDefer);
      // Every callback deferred (other callbacks are there: NoOtherAclCallback): a denial.
      return answer == kBrokerErrPluginDefer ? kBrokerErrAclDenied : answer;
    }
    *exact = broker().capabilities().acl_check;
    if (!broker().capabilities().acl_check) {
      if (state_.acl_file == nullptr || data.access != kAclRead) return kBrokerSuccess;
      return state_.acl_file->Allows(IdOf(data.client), broker().ClientUsername(data.client),
                                     data.topic, AclFile::kRead)
                 ? kBrokerSuccess
                 : kBrokerErrAclDenied;
    }
    state_.acl_check_nested = true;
    const int answer = broker().AskLaterAclSources(data);
    state_.acl_check_nested = false;
    return answer;
  }

  // What an ACL check tells once the broker allows it: a delivery queued (READ), a
  // subscription made or removed (SUBSCRIBE, UNSUBSCRIBE). Publishes are counted at MESSAGE,
  // once they passed every check. With kAskLater (another ACL source decides), that source is
  // asked first (AskLaterAclSources), `*answer` becomes its answer, and nothing is recorded
  // unless it allows; otherwise the answer is the broker's without plugins (allow) and `answer`
  // is not used. One template, so that the path without another source stays what it was.
  template <bool kAskLater>
  [[gnu::noinline]] void WatchAclCheck(const AclCheckEvent& data, int* answer) {
    SessionTable& sessions = *state_.sessions;
    // A READ or WRITE check for the client whose CONNECT is being handled is the broker
    // re-checking the messages of the session it resumes (src/handle_connect.c:
    // connection_check_acl, 2.0.12 on: the client's unfinished QoS 2 PUBLISHes as WRITE, then
    // the messages queued or in flight to it as READ): they were counted when first queued,
    // and that CONNECT is not over yet, so none of them settles it.
    if ((data.access == kAclRead || data.access == kAclWrite) && sessions.IsPending(data.client)) {
      return;
    }
    if (data.access == kAclSubscribe) {
      sessions.SettleExceptHeldOf(data.client);  // a kick re-checks them all in a row
    } else {
      sessions.Settle();
    }
    if (data.access == kAclWrite) return;
    if constexpr (kAskLater) {
      bool exact = false;
      const int later = AskLaterAclSources(data, &exact);
      // Unknown without the chain or mosquitto_acl_check: the others decide, and the check is
      // recorded.
      if (exact) *answer = later;
      if (later != kBrokerSuccess) {
        if (data.access == kAclSubscribe) sessions.SubscribeDenied(data.client, data.topic);
        return;
      }
    }
    const SessionTable::ClientView view = ViewOrDiscover(data.client);
    switch (data.access) {
      case kAclRead: {
        if (IsPresenceDelivery(state_, data.topic)) break;  // counted nowhere
        // The check carries the message's QoS; an offline session gets it at most at its
        // subscription's QoS, and the broker throws a QoS 0 message for it away.
        std::uint8_t qos = data.qos;
        if (!view.open && qos > 0) {
          qos = std::min<std::uint8_t>(
              qos, sessions.OfflineQos(data.client, IdOf(data.client), data.topic));
        }
        Details clock(broker(), data.client, nullptr);
        state_.traffic->OnDeliver(data.client, view.stats, view.open, data.topic, data.payloadlen,
                                  qos, clock);
        break;
      }
      case kAclSubscribe:
        sessions.Subscribe(data.client, data.topic, data.qos);
        state_.traffic->OnSubscribe(view.stats, /*made=*/true);
        ObserveLayout(data.client);
        RefreshMessages(data.client, view.stats);
        break;
      case kAclUnsubscribe:
        sessions.Unsubscribe(data.client, data.topic);
        TrafficMeter::OnRequest(view.stats);
        ObserveLayout(data.client);
        RefreshMessages(data.client, view.stats);
        break;
      default:
        break;
    }
  }

  // Strict mode (plugin_opt_kubemq_strict, docs/topic-mapping.md): whether KubeMQ would refuse
  // this SUBSCRIBE filter (KubemqSubscribeRefusal decides); a refused one is counted as an
  // error of mosquitto_connections_subscribes_total. A filter the client already holds is a
  // re-check (a kick's, 2.0.12 on) or a renewal of a subscription accepted when it was made:
  // never refused here.
  [[gnu::noinline, gnu::cold]] bool StrictRefusesSubscribe(const AclCheckEvent& data) {
    try {
      SessionTable& sessions = *state_.sessions;
      sessions.SettleExceptHeldOf(data.client);
      if (data.topic == nullptr || sessions.HoldsSubscription(data.client, data.topic)) {
        return false;
      }
      const std::string refusal = KubemqSubscribeRefusal(
          data.topic, MapTopicFilter(data.topic, state_.options.default_pattern), data.qos,
          broker().ProtocolVersion(data.client), IdOf(data.client));
      if (refusal.empty()) return false;
      const SessionTable::ClientView view = ViewOrDiscover(data.client);
      state_.traffic->OnSubscribe(view.stats, /*made=*/false);
      return true;
    } catch (...) {
      return false;  // unknown: the broker decides as without strict mode
    }
  }

  // The slow paths of the per-message handlers, out of line and static: the fast path then
  // keeps no BrokerEvents in memory, saves no registers and ends here with a jump.
  [[gnu::noinline]] static int AclCheckInFull(BrokerEventsState& state, const AclCheckEvent& data) {
    return BrokerEvents(state).AclCheckInFull(data);
  }
  [[gnu::noinline]] static int MessageInFull(BrokerEventsState& state, const MessageEvent& data) {
    return BrokerEvents(state).MessageInFull(data);
  }
  [[gnu::noinline]] static int MessageOutInFull(BrokerEventsState& state,
                                                const MessageEvent& data) {
    return BrokerEvents(state).MessageOutInFull(data);
  }

  // Every ACL check but the fast paths of OnAclCheck.
  int AclCheckInFull(const AclCheckEvent& data) {
    // Strict mode answers before any other source is asked (this plugin's nested call
    // excepted: the outer call already decided).
    if (data.access == kAclSubscribe && state_.options.kubemq_strict && !state_.acl_check_nested &&
        StrictRefusesSubscribe(data)) {
      return kBrokerErrAclDenied;
    }
    // This plugin's own nested call (AskLaterAclSources): let the rest of the chain decide.
    if (state_.acl_check_nested && !state_.decide_acl) return kBrokerErrPluginDefer;
    if (state_.decide_acl || NoOtherAclCallback()) {
      // No other ACL source: the broker allows everything (mosquitto_acl_check()).
      try {
        WatchAclCheck<false>(data, nullptr);
      } catch (...) {
        // Watching must never change the outcome.
      }
      return kBrokerSuccess;
    }
    // A check that records nothing is left to the other sources.
    int answer = kBrokerErrPluginDefer;
    try {
      WatchAclCheck<true>(data, &answer);
    } catch (...) {
      // Watching must never change the outcome: the answer is set before anything can throw.
    }
    return answer;
  }

  // Every publish but the fast path of OnMessage.
  int MessageInFull(const MessageEvent& data) {
    try {
      state_.sessions->Settle();
      const SessionTable::ClientView view = ViewOrDiscover(data.client);
      Details details(broker(), data.client, data.properties);
      const bool kubemq_accepts =
          state_.traffic->OnPublish(data.client, view.stats, data.topic, data.payloadlen, details);
      // Strict mode: not routed; QoS 1/2 get 0x87 under MQTT 5 (src/handle_publish.c, 2.0 and
      // 2.1: a MESSAGE callback's MOSQ_ERR_ACL_DENIED is a denied PUBLISH).
      if (!kubemq_accepts && state_.options.kubemq_strict) return kBrokerErrAclDenied;
    } catch (...) {
    }
    return kBrokerSuccess;  // anything else would refuse the message
  }

  // Every delivery but the fast path of OnMessageOut.
  int MessageOutInFull(const MessageEvent& data) {
    try {
      // The queued messages of a resumed session go out before its CONNECT event: that CONNECT
      // passed authentication.
      state_.sessions->Confirm(data.client);
      state_.sessions->Settle();
      const SessionTable::ClientView view = ViewOrDiscover(data.client);
      if (IsPresenceDelivery(state_, data.topic)) return kBrokerSuccess;  // counted nowhere
      Details clock(broker(), data.client, nullptr);
      state_.traffic->OnDeliver(data.client, view.stats, /*online=*/true, data.topic,
                                data.payloadlen, data.qos, clock);
    } catch (...) {
    }
    return kBrokerSuccess;  // anything else would stop the message
  }

  B& broker() const { return static_cast<B&>(*state_.broker); }

  // What the broker tells of a closing connection's session expiry interval (SessionExpiry).
  // Both versions call the plugins from src/context.c: context__disconnect before they put the
  // session on the expiry list (session_expiry__add) or free it, and after a DISCONNECT packet's
  // Session Expiry Interval was applied (src/property_broker.c: property__process_disconnect).
  // 2.1's event tells whether the interval is 0 (DISCONNECT) or not (CLIENT_OFFLINE); where the
  // client layout is verified (broker_layout.h), session_expiry_interval gives its value on
  // both. A bridge's own client (the broker keeps it whatever its interval) gets the events'
  // word only.
  SessionExpiry ExpiryAtClose(const BrokerClient* client, DisconnectEvent event) {
    SessionExpiry expiry;
    if (broker().api_2_1()) {
      if (event == DisconnectEvent::kDisconnect) return SessionExpiry::Interval(0);
      expiry.known = SessionExpiry::Known::kOutlives;
    }
    const BrokerLayoutVerifier* layout = state_.layout.get();
    if (layout == nullptr || !layout->verified()) return expiry;
    const std::optional<std::int64_t> bridge =
        layout->Read(broker(), client, LayoutField::kIsBridge);
    if (!bridge || *bridge != 0) return expiry;
    const std::optional<std::int64_t> interval =
        layout->Read(broker(), client, LayoutField::kSessionExpiryInterval);
    if (!interval || *interval < 0 || *interval > 0xffffffff) return expiry;
    // CLIENT_OFFLINE comes for an interval above 0 only.
    if (*interval == 0 && expiry.known == SessionExpiry::Known::kOutlives) return expiry;
    return SessionExpiry::Interval(static_cast<std::uint32_t>(*interval));
  }

  // Whether a client seen at its CONNECT is a bridge: `is_bridge`, which both versions set
  // while reading a CONNECT whose protocol version carries the bridge bit (0x80: a remote
  // Mosquitto bridge with try_private, MQTT 3.1 or 3.1.1; src/handle_connect.c), before any
  // plugin event; and on their own bridge contexts (src/bridge.c: bridge__new). Unknown until
  // the layout is verified.
  BridgeRole BridgeAtConnect(const BrokerClient* client) const {
    const BrokerLayoutVerifier* layout = state_.layout.get();
    if (layout == nullptr || !layout->verified()) return BridgeRole::kUnknown;
    const std::optional<std::int64_t> bridge =
        layout->Read(broker(), client, LayoutField::kIsBridge);
    if (!bridge) return BridgeRole::kUnknown;
    return *bridge != 0 ? BridgeRole::kIncoming : BridgeRole::kNone;
  }

  // Copies a client's message counts into its statistics slot (message_counts.h), once the
  // layout is verified; nothing before.
  void RefreshMessages(const BrokerClient* client, ConnectionStatsSlot* slot) {
    if (slot != nullptr) RefreshMessageCounts(state_.layout.get(), broker(), client, slot);
  }

  // What the broker and the client's socket tell of a client (Broker::ReadFacts). Behind a
  // load balancer (a PROXY protocol listener, Mosquitto 2.1) the socket's port is the
  // balancer's: the client's own is the one the broker took from the PROXY header, its
  // `remote_port`, read through the verified layout (unknown until then).
  ClientFacts ReadFacts(const BrokerClient* client) const {
    ClientFacts facts = broker().ReadFacts(client, state_.broker_config);
    const BrokerLayoutVerifier* layout = state_.layout.get();
    if (facts.proxied && layout != nullptr && layout->verified()) {
      const std::optional<std::int64_t> port =
          layout->Read(broker(), client, LayoutField::kRemotePort);
      if (port && *port > 0 && *port <= 65535) facts.port = static_cast<std::uint16_t>(*port);
    }
    if (layout != nullptr && layout->verified()) {
      const std::optional<std::int64_t> will = layout->Read(broker(), client, LayoutField::kWill);
      if (will) facts.will = *will != 0 ? WillState::kSet : WillState::kNone;
    }
    return facts;
  }

  // Feeds the layout verifier a client the handler touches anyway (it checks a verified
  // layout again each time); nothing once it gave up. When that verifies the layout, the bridge
  // role of the connections opened before is read (once: SessionTable::ResolveBridges); their
  // session expiry and message counts are read when needed, as for any other connection.
  void ObserveLayout(const BrokerClient* client) {
    if (state_.layout == nullptr) return;
    if (state_.layout->verified()) {
      state_.layout->Observe(broker(), client);
      return;
    }
    if (state_.layout->verifying()) {
      state_.layout->Observe(broker(), client);
      if (state_.layout->verified()) {
        // The broker's own bridge contexts (Discover) carry their role already.
        state_.sessions->ResolveBridges([this](const void* open) {
          return BridgeAtConnect(static_cast<const BrokerClient*>(open));
        });
      }
    }
  }

  BrokerEventsState& state_;
};

}  // namespace mqc
