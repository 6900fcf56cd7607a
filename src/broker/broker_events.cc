// SPDX-License-Identifier: BSD-3-Clause
#include "broker/broker_events.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mqc {

std::vector<BrokerEventKind> WantedEvents(const BrokerCore& core) {
  using K = BrokerEventKind;
  if (!core.broker().api_2_1()) {
    return {K::kBasicAuth,  K::kExtAuthStart, K::kAclCheck, K::kMessageIn,
            K::kDisconnect, K::kTick,         K::kReload};
  }
  std::vector<K> wanted = {K::kBasicAuth,   K::kExtAuthStart, K::kConnect,   K::kSubscribe,
                           K::kUnsubscribe, K::kMessageIn,    K::kMessageOut};
  // Where only watched (watch_acl_21), ACL_CHECK is registered while offline sessions are kept
  // (broker/offline_watch.h); strict mode decides with it all the time.
  if (core.options().kubemq_strict) wanted.push_back(K::kAclCheck);
  for (K kind : {K::kDisconnect, K::kClientOffline, K::kTick, K::kReload}) wanted.push_back(kind);
  return wanted;
}

namespace {

// EventDecisions' work (broker_events.h), one view of the core per event.
class Decisions {
 public:
  explicit Decisions(BrokerCore& core) : core_(core) {}

  // 2.1's watched READ check of a client with no socket the table does not know open or
  // pending: a QoS 0 message for an offline session, which the broker throws away (counted as
  // dropped, as on 2.0).
  int OfflineDelivery21(const AclCheckEvent& data) {
    try {
      // The check carries the message's QoS; the session gets it at most at its
      // subscription's.
      const std::uint8_t qos = std::min<std::uint8_t>(
          data.qos, core_.sessions().OfflineQos(data.client, IdOf(data.client), data.topic));
      if (qos == 0 && !core_.IsPresenceDelivery(data.topic)) {
        Details clock(broker(), data.client, nullptr);
        core_.traffic().OnDeliver(data.client, nullptr, /*online=*/false, data.topic,
                                  data.payloadlen, 0, clock);
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
      if (!core_.connects().IsRecheck(client, broker().ClientSocket(client) >= 0)) {
        ClientFacts facts = ReadFacts(client);
        if (facts.mechanism == AuthMechanism::kPassword) {
          facts.credentials_checked = !core_.settings().decide_basic_auth;
        }
        facts.bridge = BridgeAtConnect(client);
        core_.connects().BeginConnect(client, std::move(facts), broker().NowNs());
        if (core_.bans().active()) banned = BanRefusal(client, false);
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
      if (core_.connects().IsRecheck(client, broker().ClientSocket(client) >= 0)) return neutral;
      ObserveLayout(client);
      ClientFacts facts = ReadFacts(client);
      facts.mechanism = AuthMechanism::kEnhanced;
      facts.auth_method = auth_method != nullptr ? auth_method : "";
      facts.bridge = BridgeAtConnect(client);
      core_.connects().BeginConnect(client, std::move(facts), broker().NowNs());
      if (core_.bans().active()) {
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
      if (!core_.connects().IsPending(client) && !core_.sessions().IsOpen(client)) {
        core_.connects().Settle();
        ClientFacts facts = ReadFacts(client);
        facts.bridge = BridgeAtConnect(client);
        core_.connects().BeginConnect(client, std::move(facts), broker().NowNs());
      }
      core_.connects().Confirm(client);
      RefreshMessages(client, core_.sessions().View(client).stats);
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
      const bool pending = core_.connects().IsPending(client);
      const bool refused =
          IsRefusal(broker().api_2_1(), pending, broker().ClientId(client) != nullptr,
                    pending ? broker().ClientState(client) : -1);
      const std::int64_t idle_ms = broker().IdleMs(client);  // the socket is still open here
      CloseReason reason = CloseReason::kUnspecified;
      if (core_.calls().kicking) {
        reason = CloseReason::kKicked;
      } else if (broker().api_2_1()) {
        reason = CloseReasonFromBrokerReason(broker_reason);
      } else {
        reason = CloseReasonFromClientState(broker().ClientState(client));
      }
      core_.connects().Disconnect(client, !refused, reason, broker().NowNs(),
                                  idle_ms < 0 ? -1 : idle_ms * 1000000,
                                  ExpiryAtClose(client, event));
    } catch (...) {
    }
    return kBrokerSuccess;
  }

  // 2.1: a subscription the broker made (`made`), or removed (after every ACL source allowed
  // it). `qos`: the granted QoS.
  int OnSubscribe21(BrokerClient* client, bool made, const char* topic_filter, std::uint8_t qos) {
    try {
      core_.connects().Settle();
      if (topic_filter == nullptr) return kBrokerSuccess;
      const SessionTable::ClientView view = ViewOrDiscover(client);
      if (made) {
        core_.connects().Subscribe(client, topic_filter, qos, /*may_be_recheck=*/false);
        core_.traffic().OnSubscribe(view.stats, /*made=*/true);
      } else {
        core_.sessions().Unsubscribe(client, topic_filter);
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
      core_.Reload();
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
    core_.calls().kicking = true;
    const int rc = broker().Kick(command.client_id, command.with_will);
    core_.calls().kicking = false;
    broker().Log(rc == kBrokerSuccess ? LogLevel::kNotice : LogLevel::kWarning,
                 KickLogLine(command, rc, rc == kBrokerSuccess ? "" : broker().ErrorText(rc)));
  }

  // TICK's slice (part of its periodic work) of the walk over the open connections that keeps their
  // message counts fresh.
  void SweepMessageCounts(std::int64_t now) {
    const BrokerLayoutVerifier* layout = core_.layout();
    if (layout == nullptr || !layout->verified()) return;
    const std::size_t slots =
        core_.tick().message_sweep.SlotsNow(now, core_.sessions().open_table_slots());
    core_.sessions().SweepOpen(
        slots, [this, layout](const void* client, ConnectionStatsSlot* slot) {
          RefreshMessageCounts(layout, broker(), static_cast<const BrokerClient*>(client), slot,
                               &core_.sessions().Rare(*slot), core_.drops().armed());
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
    const std::size_t unknown = core_.sessions().unknown_expiry_count();
    if (unknown == 0 || !broker().capabilities().client_lookup) return;
    core_.sessions().EndGoneOffline(
        core_.tick().expiry_pace.ItemsNow(now, unknown),
        [this](const std::string& id) { return broker().FindClient(id.c_str()); });
  }

  // TICK's periodic work (BrokerEvents::OnTick decides when), and its housekeeping tier once
  // TickPacing::kHousekeepingIntervalNs has passed.
  void TickWork(std::int64_t now) {
    try {
      core_.SendSettingsIfPending();
      if (core_.link()->CommandsPending()) {
        core_.link()->DrainCommands(
            [this](const LogCommand& command) { broker().Log(command.level, command.text); },
            [this](const KickCommand& command) { Kick(command); },
            [this](BansCommand&& command) { core_.ApplyBans(std::move(command)); });
      }
      // Responses not routed by now never will be: the deliveries' fast path waits for none.
      core_.traffic().OnTick(now);
      const bool housekeeping =
          now - core_.tick().housekeeping_ns >= TickPacing::kHousekeepingIntervalNs;
      if (housekeeping) {
        core_.tick().housekeeping_ns = now;
        core_.companion()->Tick(now);  // delays and stall checks: no wall-clock jumps
        core_.sessions().ExpireOffline(broker().NowNs());
        FollowUnknownExpiry(now);
        core_.offline_watch().Tick(core_.sessions().offline_count(), now);
      }
      if (core_.companion()->serving()) core_.ResyncStep();
      if (housekeeping) {
        SweepMessageCounts(now);
        core_.link()->ReleaseReadPages();
      }
      core_.link()->WakeCompanion();  // after every event this TICK wrote
    } catch (...) {
    }
  }

  // MQTT 5 properties and the clock, read only for the messages that need them (RPC).
  class Details : public PublishDetails {
   public:
    Details(Broker& broker, const BrokerClient* client, const void* properties)
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
    Broker& broker_;
    const BrokerClient* client_;
    const void* properties_;
  };

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
  SessionTable::ClientView Discover(const BrokerClient* client) {
    if (core_.connects().IsPending(client) || broker().ClientSocket(client) < 0 ||
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
    core_.connects().BeginConnect(client, std::move(facts), broker().NowNs());
    core_.connects().Settle();
    return core_.sessions().View(client);
  }

  // The client as the session table knows it, discovered first when it is not (Discover).
  SessionTable::ClientView ViewOrDiscover(const BrokerClient* client) {
    const SessionTable::ClientView view = core_.sessions().View(client);
    return view.open ? view : Discover(client);
  }

  // A CONNECT a ban refuses (BanGate): the broker's answer for it (BanRefusalCode), else 0.
  // Asked only while bans are in force, for new CONNECTs (not a reload's re-check: a banned
  // open client is kicked by the companion instead).
  int BanRefusal(const BrokerClient* client, bool enhanced) {
    const Ban* ban =
        core_.bans().Refuses(broker().ClientId(client), broker().ClientUsername(client),
                             broker().ClientAddress(client), broker().NowNs());
    if (ban == nullptr) return 0;
    return BanRefusalCode(broker().api_2_1(), enhanced);
  }

  // The answer to a CONNECT nothing here refused, as the broker would give it without this
  // plugin (NeutralBasicAuthAnswer). On 2.0 where the configuration names another plugin, the
  // chain tells whether any other callback is there to answer: with none (a plugin that only
  // checks ACLs), the broker answers as with no callback at all.
  int BasicAuthAnswer() {
    if (!broker().api_2_1() && !core_.settings().decide_basic_auth) {
      try {
        const CallbackChain* chain = ReadableChain(kEventBasicAuth);
        if (chain != nullptr && !chain->HasOthers()) {
          return core_.settings().allow_anonymous ? kBrokerSuccess : kBrokerErrAuth;
        }
      } catch (...) {
      }
    }
    return NeutralBasicAuthAnswer(broker().api_2_1(), core_.settings().decide_basic_auth,
                                  core_.settings().allow_anonymous);
  }

  // 2.0: the chain of `event`'s callbacks where it tells the broker's answer (found, and no
  // plugin of the older interface in scope); null otherwise. Looked for once, from inside the
  // callback (the broker's loop must be on the stack).
  const CallbackChain* ReadableChain(int event) {
    CallbackChain& chain =
        event == kEventAclCheck ? core_.calls().acl_chain : core_.calls().basic_auth_chain;
    if (chain.state() == CallbackChain::State::kUnknown) LookForChain(event, &chain);
    return chain.known() && !core_.calls().older_plugins.value_or(true) ? &chain : nullptr;
  }

  void LookForChain(int event, CallbackChain* chain) {
    if (!core_.calls().older_plugins) {
      core_.calls().older_plugins = true;  // until the files tell otherwise
      core_.calls().older_plugins = broker().AnyOlderPlugin(
          OtherPlugins(ScopeOf(core_.settings().broker_config, core_.settings().own_path),
                       core_.settings().own_path));
    }
    chain->Found(broker().FindOwnCallback(event));
    const std::string name = event == kEventAclCheck ? "ACL_CHECK" : "BASIC_AUTH";
    if (!chain->known()) {
      broker().Log(LogLevel::kWarning,
                   "mosquitto_connections: cannot read the broker's " + name +
                       " callbacks: this plugin defers to the other plugins the configuration "
                       "names, and where none of them answers " +
                       name + " the broker refuses (docs/how-it-works.md)");
    } else if (*core_.calls().older_plugins) {
      std::string text =
          "mosquitto_connections: a plugin of the older interface "
          "(mosquitto_auth_*) answers " +
          name + " after every callback: this plugin defers to it";
      if (event == kEventAclCheck && !broker().capabilities().acl_check) {
        text +=
            "; this broker does not export mosquitto_acl_check: a subscription or delivery "
            "that plugin refuses is still listed and counted, and ACL denials are not shown";
        core_.SetDenialsShown();  // connections opened from now on (and the totals) say so
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
      if (core_.settings().acl_file == nullptr ||
          (data.access != kAclRead && data.access != kAclWrite)) {
        return kBrokerSuccess;
      }
      return core_.settings().acl_file->Allows(IdOf(data.client),
                                               broker().ClientUsername(data.client), data.topic,
                                               data.access == kAclRead ? AclFile::kRead
                                                                       : AclFile::kWrite)
                 ? kBrokerSuccess
                 : kBrokerErrAclDenied;
    }
    core_.calls().acl_check_nested = true;
    const int answer = broker().AskLaterAclSources(data);
    core_.calls().acl_check_nested = false;
    return answer;
  }

  // What an ACL check tells once the broker allows it: a delivery queued (READ), a
  // subscription made or removed (SUBSCRIBE, UNSUBSCRIBE). Publishes are counted at MESSAGE,
  // once they passed every check. With kAskLater (another ACL source decides), that source is
  // asked first (AskLaterAclSources), `*answer` becomes its answer, and nothing is recorded
  // unless it allows; otherwise the answer is the broker's without plugins (allow) and `answer`
  // is not used. One template, so that the path without another source stays what it was.
  template <bool kAskLater>
  void WatchAclCheck(const AclCheckEvent& data, int* answer) {
    // A READ or WRITE check for the client whose CONNECT is being handled is the broker
    // re-checking the messages of the session it resumes (src/handle_connect.c:
    // connection_check_acl, 2.0.12 on: the client's unfinished QoS 2 PUBLISHes as WRITE, then
    // the messages queued or in flight to it as READ): they were counted when first queued,
    // and that CONNECT is not over yet, so none of them settles it.
    if ((data.access == kAclRead || data.access == kAclWrite) &&
        core_.connects().IsPending(data.client)) {
      return;
    }
    if (data.access == kAclSubscribe) {
      core_.connects().SettleExceptHeldOf(data.client);  // a kick re-checks them all in a row
    } else {
      core_.connects().Settle();
    }
    if constexpr (kAskLater) {
      // A publish (WRITE) is asked too, for its denial: counted at MESSAGE once allowed.
      bool exact = false;
      const int later = AskLaterAclSources(data, &exact);
      // Unknown without the chain or mosquitto_acl_check: the others decide, and the check is
      // recorded.
      if (exact) *answer = later;
      if (later != kBrokerSuccess) {
        if (later == kBrokerErrAclDenied) Denied(data);
        return;
      }
    }
    if (data.access == kAclWrite) return;
    const SessionTable::ClientView view = ViewOrDiscover(data.client);
    switch (data.access) {
      case kAclRead: {
        if (core_.IsPresenceDelivery(data.topic)) break;  // counted nowhere
        // The check carries the message's QoS; an offline session gets it at most at its
        // subscription's QoS, and the broker throws a QoS 0 message for it away.
        std::uint8_t qos = data.qos;
        if (!view.open && qos > 0) {
          qos = std::min<std::uint8_t>(
              qos, core_.sessions().OfflineQos(data.client, IdOf(data.client), data.topic));
        }
        const bool queue_full = DropsAtFullQueue(data, view.open, qos);
        Details clock(broker(), data.client, nullptr);
        core_.traffic().OnDeliver(data.client, view.stats, view.open, data.topic, data.payloadlen,
                                  qos, clock, queue_full);
        break;
      }
      case kAclSubscribe:
        core_.connects().Subscribe(data.client, data.topic, data.qos);
        core_.traffic().OnSubscribe(view.stats, /*made=*/true);
        ObserveLayout(data.client);
        RefreshMessages(data.client, view.stats);
        break;
      case kAclUnsubscribe:
        core_.sessions().Unsubscribe(data.client, data.topic);
        TrafficMeter::OnRequest(view.stats);
        ObserveLayout(data.client);
        RefreshMessages(data.client, view.stats);
        break;
      default:
        break;
    }
  }

  // A client's PUBLISH (WRITE) or SUBSCRIBE filter an ACL source after this plugin refused
  // (docs/api.md, "Denials"). UNSUBSCRIBE denials are not counted (2.0's acl_file allows them
  // all); READ denials are deliveries not made, not the client's requests.
  void Denied(const AclCheckEvent& data) {
    if (data.topic == nullptr) return;
    if (data.access == kAclSubscribe) {
      core_.connects().SubscribeDenied(data.client, data.topic, broker().NowNs());
    } else if (data.access == kAclWrite) {
      core_.sessions().Denied(data.client, AclAccess::kPublish, data.topic, broker().NowNs());
    }
  }

  // Whether the broker drops this allowed delivery at a full queue (broker/queue_drops.h): an
  // open connection with a socket once MayDrop lets it through, and an offline session's QoS 1
  // or 2 message (`offline_qos`: the QoS it gets there; 0 is thrown away before the queue). A
  // message for which the broker's QoS cannot be told (QueuedQos) is not counted as dropped.
  bool DropsAtFullQueue(const AclCheckEvent& data, bool open, std::uint8_t offline_qos) {
    const QueueDrops& drops = core_.drops();
    if (!drops.armed() || data.topic == nullptr) return false;
    const bool online = broker().ClientSocket(data.client) >= 0;
    if (online != open) return false;  // a closing connection, or a resume under way
    if (online && !drops.MayDrop(broker(), data.client)) return false;
    if (!online && offline_qos == 0) return false;  // DropReason::kOffline
    // A full window alone (a busy QoS 1 subscriber) drops nothing: no subscription is matched.
    const std::optional<QueueDrops::Verdict> verdict = drops.Predict(broker(), data.client, online);
    if (!verdict || (!verdict->qos0 && !verdict->qos12)) return false;
    const SubscriptionList* subscriptions = core_.sessions().SubscriptionsOf(
        data.client, online ? std::string_view() : IdOf(data.client));
    if (subscriptions == nullptr) return false;
    std::uint8_t subscription_qos = 0;
    const std::size_t matches = subscriptions->CountMatching(data.topic, &subscription_qos);
    const std::optional<int> qos =
        QueuedQos(data.qos, matches, subscription_qos, drops.limits().upgrade_outgoing_qos);
    return qos && verdict->At(*qos);
  }

  // Strict mode (plugin_opt_kubemq_strict, docs/topic-mapping.md): whether KubeMQ would refuse
  // this SUBSCRIBE filter (KubemqSubscribeRefusal decides); a refused one is counted as an
  // error of mosquitto_connections_subscribes_total. A filter the client already holds is a
  // re-check (a kick's, 2.0.12 on) or a renewal of a subscription accepted when it was made:
  // never refused here.
  bool StrictRefusesSubscribe(const AclCheckEvent& data) {
    try {
      core_.connects().SettleExceptHeldOf(data.client);
      if (data.topic == nullptr || core_.sessions().HoldsSubscription(data.client, data.topic)) {
        return false;
      }
      const std::string refusal = KubemqSubscribeRefusal(
          data.topic, MapTopicFilter(data.topic, core_.options().default_pattern), data.qos,
          broker().ProtocolVersion(data.client), IdOf(data.client));
      if (refusal.empty()) return false;
      const SessionTable::ClientView view = ViewOrDiscover(data.client);
      core_.traffic().OnSubscribe(view.stats, /*made=*/false);
      return true;
    } catch (...) {
      return false;  // unknown: the broker decides as without strict mode
    }
  }

  // Every ACL check but the fast paths of OnAclCheck.
  int AclCheckInFull(const AclCheckEvent& data) {
    // Strict mode answers before any other source is asked (this plugin's nested call
    // excepted: the outer call already decided).
    if (data.access == kAclSubscribe && core_.options().kubemq_strict &&
        !core_.calls().acl_check_nested && StrictRefusesSubscribe(data)) {
      return kBrokerErrAclDenied;
    }
    // This plugin's own nested call (AskLaterAclSources): let the rest of the chain decide.
    if (core_.calls().acl_check_nested && !core_.settings().decide_acl)
      return kBrokerErrPluginDefer;
    if (core_.settings().decide_acl || NoOtherAclCallback()) {
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
      core_.connects().Settle();
      const SessionTable::ClientView view = ViewOrDiscover(data.client);
      Details details(broker(), data.client, data.properties);
      const bool kubemq_accepts =
          core_.traffic().OnPublish(data.client, view.stats, data.topic, data.payloadlen, details);
      // Strict mode: not routed; QoS 1/2 get 0x87 under MQTT 5 (src/handle_publish.c, 2.0 and
      // 2.1: a MESSAGE callback's MOSQ_ERR_ACL_DENIED is a denied PUBLISH).
      if (!kubemq_accepts && core_.options().kubemq_strict) return kBrokerErrAclDenied;
    } catch (...) {
    }
    return kBrokerSuccess;  // anything else would refuse the message
  }

  // Every delivery but the fast path of OnMessageOut.
  int MessageOutInFull(const MessageEvent& data) {
    try {
      // The queued messages of a resumed session go out before its CONNECT event: that CONNECT
      // passed authentication.
      core_.connects().Confirm(data.client);
      core_.connects().Settle();
      const SessionTable::ClientView view = ViewOrDiscover(data.client);
      if (core_.IsPresenceDelivery(data.topic)) return kBrokerSuccess;  // counted nowhere
      Details clock(broker(), data.client, nullptr);
      core_.traffic().OnDeliver(data.client, view.stats, /*online=*/true, data.topic,
                                data.payloadlen, data.qos, clock);
    } catch (...) {
    }
    return kBrokerSuccess;  // anything else would stop the message
  }

  Broker& broker() const { return core_.broker(); }
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
    const BrokerLayoutVerifier* layout = core_.layout();
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
    const BrokerLayoutVerifier* layout = core_.layout();
    if (layout == nullptr || !layout->verified()) return BridgeRole::kUnknown;
    const std::optional<std::int64_t> bridge =
        layout->Read(broker(), client, LayoutField::kIsBridge);
    if (!bridge) return BridgeRole::kUnknown;
    return *bridge != 0 ? BridgeRole::kIncoming : BridgeRole::kNone;
  }

  // Copies a client's message counts into its statistics slot (message_counts.h), once the
  // layout is verified; nothing before.
  void RefreshMessages(const BrokerClient* client, ConnectionStatsSlot* slot) {
    if (slot != nullptr) {
      RefreshMessageCounts(core_.layout(), broker(), client, slot, &core_.sessions().Rare(*slot),
                           core_.drops().armed());
    }
  }

  // What the broker and the client's socket tell of a client (Broker::ReadFacts). Behind a
  // load balancer (a PROXY protocol listener, Mosquitto 2.1) the socket's port is the
  // balancer's: the client's own is the one the broker took from the PROXY header, its
  // `remote_port`, read through the verified layout (unknown until then).
  ClientFacts ReadFacts(const BrokerClient* client) const {
    ClientFacts facts = broker().ReadFacts(client, core_.settings().broker_config);
    const BrokerLayoutVerifier* layout = core_.layout();
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
    if (core_.layout() == nullptr) return;
    if (core_.layout()->verified()) {
      core_.layout()->Observe(broker(), client);
      core_.drops().Arm(core_.layout(), broker().capabilities().api_2_1);  // once
      return;
    }
    if (core_.layout()->verifying()) {
      core_.layout()->Observe(broker(), client);
      if (core_.layout()->verified()) {
        core_.drops().Arm(core_.layout(), broker().capabilities().api_2_1);
        // The broker's own bridge contexts (Discover) carry their role already.
        core_.connects().ResolveBridges([this](const void* open) {
          return BridgeAtConnect(static_cast<const BrokerClient*>(open));
        });
      }
    }
  }

  BrokerCore& core_;
};

}  // namespace

int EventDecisions::OnBasicAuth(BrokerCore& core, BrokerClient* client) {
  return Decisions(core).OnBasicAuth(client);
}
int EventDecisions::OnExtAuthStart(BrokerCore& core, BrokerClient* client,
                                   const char* auth_method) {
  return Decisions(core).OnExtAuthStart(client, auth_method);
}
int EventDecisions::OnConnect21(BrokerCore& core, BrokerClient* client) {
  return Decisions(core).OnConnect21(client);
}
int EventDecisions::OnDisconnect(BrokerCore& core, BrokerClient* client, int broker_reason,
                                 DisconnectEvent event) {
  return Decisions(core).OnDisconnect(client, broker_reason, event);
}
int EventDecisions::OnSubscribe21(BrokerCore& core, BrokerClient* client, bool made,
                                  const char* topic_filter, std::uint8_t qos) {
  return Decisions(core).OnSubscribe21(client, made, topic_filter, qos);
}
int EventDecisions::OnReload(BrokerCore& core) { return Decisions(core).OnReload(); }
void EventDecisions::Kick(BrokerCore& core, const KickCommand& command) {
  Decisions(core).Kick(command);
}
void EventDecisions::TickWork(BrokerCore& core, std::int64_t now) { Decisions(core).TickWork(now); }
void EventDecisions::SweepMessageCounts(BrokerCore& core, std::int64_t now) {
  Decisions(core).SweepMessageCounts(now);
}
void EventDecisions::FollowUnknownExpiry(BrokerCore& core, std::int64_t now) {
  Decisions(core).FollowUnknownExpiry(now);
}
int EventDecisions::AclCheckInFull(BrokerCore& core, const AclCheckEvent& data) {
  return Decisions(core).AclCheckInFull(data);
}
int EventDecisions::MessageInFull(BrokerCore& core, const MessageEvent& data) {
  return Decisions(core).MessageInFull(data);
}
int EventDecisions::MessageOutInFull(BrokerCore& core, const MessageEvent& data) {
  return Decisions(core).MessageOutInFull(data);
}
int EventDecisions::OfflineDelivery21(BrokerCore& core, const AclCheckEvent& data) {
  return Decisions(core).OfflineDelivery21(data);
}
int EventDecisions::StrictSubscribe21(BrokerCore& core, const AclCheckEvent& data) {
  return Decisions(core).StrictRefusesSubscribe(data) ? kBrokerErrAclDenied
                                                      : kBrokerErrPluginIgnore;
}

std::string Printable(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

std::string KickLogLine(const KickCommand& command, int rc, const std::string& error_text) {
  const std::string who = "client '" + Printable(command.client_id) + "' at the request of " +
                          (command.caller.empty() ? "an unknown address" : command.caller) + " (" +
                          (command.token_line.empty() ? "no token" : command.token_line) + ")";
  if (rc == kBrokerSuccess) {
    return "mosquitto_connections: disconnected " + who +
           (command.with_will ? "" : ", without publishing its will");
  }
  return "mosquitto_connections: cannot disconnect " + who + ": " + error_text;
}

}  // namespace mqc
