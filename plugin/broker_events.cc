// SPDX-License-Identifier: BSD-3-Clause
// The broker's events, turned into calls on the core. Every callback catches everything (no
// exception may cross into the broker) and returns what auth neutrality requires.
//
// Two plugin APIs, one binary (broker_api.h):
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
// Threads: all of this runs on the broker thread.

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "broker_api.h"
#include "client_reader.h"
#include "link/clock.h"
#include "link/kubemq_strict.h"
#include "link/text_util.h"
#include "plugin_state.h"

// clang-format off
#include <mosquitto.h>
#include <mosquitto_broker.h>
#include <mosquitto_plugin.h>
#include <mqtt_protocol.h>
// clang-format on

namespace mqc {

namespace {

std::string OrEmpty(const char* s) { return s != nullptr ? std::string(s) : std::string(); }

// A client the session table never saw connect, added now: on listeners with
// use_identity_as_username or use_subject_as_username the broker skips BASIC_AUTH. Such a client
// is listed from its first message or subscription on (its connect time is then that moment).
// Offline sessions (no socket) and a client whose CONNECT is being handled are not such clients.
// Out of line: the per-message path only calls it for a client it does not find open.
[[gnu::noinline, gnu::cold]] SessionTable::ClientView Discover(PluginState* state,
                                                               const mosquitto* client) {
  SessionTable& sessions = *state->sessions;
  if (sessions.IsPending(client) || ClientSocket(client) < 0 ||
      mosquitto_client_id(client) == nullptr) {
    return SessionTable::ClientView{};
  }
  sessions.BeginConnect(client, ReadFacts(client, state->broker_config), NowNs());
  sessions.Settle();
  return sessions.View(client);
}

// The client as the session table knows it, discovered first when it is not (Discover).
inline SessionTable::ClientView ViewOrDiscover(PluginState* state, const mosquitto* client) {
  const SessionTable::ClientView view = state->sessions->View(client);
  return view.open ? view : Discover(state, client);
}

// MQTT 5 properties and the clock, read only for the messages that need them (RPC).
class BrokerPublishDetails : public PublishDetails {
 public:
  BrokerPublishDetails(const BrokerApi& api, const mosquitto* client,
                       const mosquitto_property* properties)
      : api_(api), client_(client), properties_(properties) {}

  int ProtocolVersion() override { return mosquitto_client_protocol_version(client_); }

  bool ResponseTopic(std::string* topic) override {
    return api_.ReadStringProperty(properties_, MQTT_PROP_RESPONSE_TOPIC, topic);
  }

  bool CorrelationData(std::string* data) override {
    return api_.ReadBinaryProperty(properties_, MQTT_PROP_CORRELATION_DATA, data);
  }

  std::int64_t MonotonicNs() override { return mqc::MonotonicNs(); }

 private:
  const BrokerApi& api_;
  const mosquitto* client_;
  const mosquitto_property* properties_;
};

// A CONNECT a ban refuses (BanGate): the broker's answer for it, else 0. Asked only while
// bans are in force, for new CONNECTs (not a reload's re-check: a banned open client is kicked
// by the companion instead). 2.1 answers MOSQ_ERR_BANNED (CONNACK 0x8A for MQTT 5); 2.0 has
// no such answer, and MOSQ_ERR_AUTH is the closest (0x87 Not authorized; 3.1.1: 5, not
// authorised, on both). Enhanced authentication (`enhanced`) answers MOSQ_ERR_AUTH on both:
// 2.1 closes without a CONNACK for any other answer there.
[[gnu::noinline]] int BanRefusal(PluginState* state, const mosquitto* client, bool enhanced) {
  const Ban* ban = state->bans->Refuses(mosquitto_client_id(client),
                                        mosquitto_client_username(client),
                                        mosquitto_client_address(client), NowNs());
  if (ban == nullptr) return 0;
  return state->api.api_2_1() && !enhanced ? kErrBanned : MOSQ_ERR_AUTH;
}

int OnBasicAuth(int /*event*/, void* event_data, void* userdata) {
  auto* state = static_cast<PluginState*>(userdata);
  int banned = 0;
  try {
    const auto* data = static_cast<mosquitto_evt_basic_auth*>(event_data);
    // At a configuration reload the broker re-checks every client it holds (docs/reload.md):
    // the connection stays what it was, and the decision below is the broker's own again.
    if (!state->sessions->IsRecheck(data->client, ClientSocket(data->client) >= 0)) {
      ClientFacts facts = ReadFacts(data->client, state->broker_config);
      if (facts.mechanism == AuthMechanism::kPassword) {
        facts.credentials_checked = !state->decide_basic_auth;
      }
      state->sessions->BeginConnect(data->client, std::move(facts), NowNs());
      if (state->bans->active()) banned = BanRefusal(state, data->client, false);
    }
  } catch (...) {
    // Watching must never change the outcome: fall through to the decision.
  }
  if (banned != 0) return banned;
  if (state->api.api_2_1()) return kErrPluginIgnore;
  if (!state->decide_basic_auth) return MOSQ_ERR_PLUGIN_DEFER;
  // What mosquitto_unpwd_check() does when no plugin or password_file is configured.
  return state->allow_anonymous ? MOSQ_ERR_SUCCESS : MOSQ_ERR_AUTH;
}

int OnExtAuthStart(int /*event*/, void* event_data, void* userdata) {
  auto* state = static_cast<PluginState*>(userdata);
  try {
    const auto* data = static_cast<mosquitto_evt_extended_auth*>(event_data);
    // An AUTH with reason 0x19 on an open connection (re-authentication) is sent to plugins as
    // EXT_AUTH_START too (src/handle_auth.c, 2.0 and 2.1): the connection stays what it was.
    // On 2.0 a refused re-authentication ends the connection with the broker's DISCONNECT.
    if (state->sessions->IsRecheck(data->client, ClientSocket(data->client) >= 0)) {
      return state->api.api_2_1() ? kErrPluginIgnore : MOSQ_ERR_PLUGIN_DEFER;
    }
    ClientFacts facts = ReadFacts(data->client, state->broker_config);
    facts.mechanism = AuthMechanism::kEnhanced;
    facts.auth_method = OrEmpty(data->auth_method);
    state->sessions->BeginConnect(data->client, std::move(facts), NowNs());
    if (state->bans->active()) {
      const int banned = BanRefusal(state, data->client, true);
      if (banned != 0) return banned;
    }
  } catch (...) {
  }
  // With every callback deferring (2.1: ignoring) the broker answers "not supported", as with
  // none.
  return state->api.api_2_1() ? kErrPluginIgnore : MOSQ_ERR_PLUGIN_DEFER;
}

// The broker's answer to this check from every ACL source after this plugin (the acl_file
// check, plugins loaded later): the broker's own mosquitto_acl_check runs the callback chain
// again, and this plugin's callback steps aside in that nested call (`acl_check_nested`).
// Returning that answer to the outer call ends its loop, so every other callback still runs
// once per check: the nested call takes the place of the rest of the outer loop. When every
// later source defers, the nested call answers ACL_DENIED, which is what the outer loop would
// have answered after them. mosquitto_acl_check never answers DEFER.
// Where the broker does not export mosquitto_acl_check, the acl_file's answer is worked out from
// the file (the acl_file allows every SUBSCRIBE and UNSUBSCRIBE in 2.0); with another ACL plugin
// the answer stays unknown, and the check is recorded as if allowed (UnreadAclSource, logged at
// start). The broker asks those sources itself: the callback then defers.
int AskLaterAclSources(PluginState* state, const mosquitto_evt_acl_check& data) {
  if (!state->api.capabilities().acl_check) {
    if (state->acl_file == nullptr || data.access != MOSQ_ACL_READ) return MOSQ_ERR_SUCCESS;
    const char* id = mosquitto_client_id(data.client);
    return state->acl_file->Allows(id != nullptr ? id : "", mosquitto_client_username(data.client),
                                   data.topic, AclFile::kRead)
               ? MOSQ_ERR_SUCCESS
               : MOSQ_ERR_ACL_DENIED;
  }
  state->acl_check_nested = true;
  const int answer =
      state->api.AclCheck(data.client, data.topic, data.payloadlen,
                          const_cast<void*>(data.payload), data.qos, data.retain, data.access);
  state->acl_check_nested = false;
  return answer;
}

// What an ACL check tells once the broker allows it: a delivery queued (READ), a subscription
// made or removed (SUBSCRIBE, UNSUBSCRIBE). Publishes are counted at MESSAGE, once they passed
// every check. With kAskLater (another ACL source decides), that source is asked first
// (AskLaterAclSources), `*answer` becomes its answer, and nothing is recorded unless it allows;
// otherwise the answer is the broker's without plugins (allow) and `answer` is not used. One
// template, so that the path without another source stays what it was.
template <bool kAskLater>
[[gnu::noinline]] void WatchAclCheck(PluginState* state, const mosquitto_evt_acl_check& data,
                                     int* answer) {
  SessionTable& sessions = *state->sessions;
  // A READ or WRITE check for the client whose CONNECT is being handled is the broker
  // re-checking the messages of the session it resumes (src/handle_connect.c:
  // connection_check_acl, 2.0.12 on: the client's unfinished QoS 2 PUBLISHes as WRITE, then the
  // messages queued or in flight to it as READ): they were counted when first queued, and that
  // CONNECT is not over yet, so none of them settles it.
  if ((data.access == MOSQ_ACL_READ || data.access == MOSQ_ACL_WRITE) &&
      sessions.IsPending(data.client)) {
    return;
  }
  if (data.access == MOSQ_ACL_SUBSCRIBE) {
    sessions.SettleExceptHeldOf(data.client);  // a kick re-checks them all in a row
  } else {
    sessions.Settle();
  }
  if (data.access == MOSQ_ACL_WRITE) return;
  if constexpr (kAskLater) {
    const int later = AskLaterAclSources(state, data);
    // Unknown without mosquitto_acl_check: the others decide, and the check is recorded.
    if (state->api.capabilities().acl_check) *answer = later;
    if (later != MOSQ_ERR_SUCCESS) {
      if (data.access == MOSQ_ACL_SUBSCRIBE) sessions.SubscribeDenied(data.client, data.topic);
      return;
    }
  }
  const SessionTable::ClientView view = ViewOrDiscover(state, data.client);
  switch (data.access) {
    case MOSQ_ACL_READ: {
      if (IsPresenceDelivery(*state, data.topic)) break;  // counted nowhere
      // The check carries the message's QoS; an offline session gets it at most at its
      // subscription's QoS, and the broker throws a QoS 0 message for it away.
      std::uint8_t qos = data.qos;
      if (!view.open && qos > 0) {
        const char* id = mosquitto_client_id(data.client);
        qos = std::min<std::uint8_t>(
            qos, sessions.OfflineQos(data.client, id != nullptr ? id : "", data.topic));
      }
      BrokerPublishDetails clock(state->api, data.client, nullptr);
      state->traffic->OnDeliver(data.client, view.stats, view.open, data.topic, data.payloadlen,
                                qos, clock);
      break;
    }
    case MOSQ_ACL_SUBSCRIBE:
      sessions.Subscribe(data.client, data.topic, data.qos);
      state->traffic->OnSubscribe(view.stats, /*made=*/true);
      break;
    case MOSQ_ACL_UNSUBSCRIBE:
      sessions.Unsubscribe(data.client, data.topic);
      TrafficMeter::OnRequest(view.stats);
      break;
    default:
      break;
  }
}

// Strict mode (plugin_opt_kubemq_strict, docs/topic-mapping.md): whether KubeMQ would refuse
// this SUBSCRIBE filter (KubemqSubscribeRefusal decides); a refused one is counted as an error of
// operation `subscribe`. A filter the client already holds is a re-check (a kick's, 2.0.12 on)
// or a renewal of a subscription accepted when it was made: never refused here.
[[gnu::noinline, gnu::cold]] bool StrictRefusesSubscribe(PluginState* state,
                                                         const mosquitto_evt_acl_check& data) {
  try {
    SessionTable& sessions = *state->sessions;
    sessions.SettleExceptHeldOf(data.client);
    if (data.topic == nullptr || sessions.HoldsSubscription(data.client, data.topic)) return false;
    const char* id = mosquitto_client_id(data.client);
    const std::string refusal = KubemqSubscribeRefusal(
        data.topic, MapTopicFilter(data.topic, state->options.default_pattern), data.qos,
        mosquitto_client_protocol_version(data.client), id != nullptr ? id : "");
    if (refusal.empty()) return false;
    const SessionTable::ClientView view = ViewOrDiscover(state, data.client);
    state->traffic->OnSubscribe(view.stats, /*made=*/false);
    return true;
  } catch (...) {
    return false;  // unknown: the broker decides as without strict mode
  }
}

// Every ACL check but the fast paths of OnAclCheck. Out of line, so that OnAclCheck's fast path
// saves no registers and ends here with a jump.
[[gnu::noinline]] int AclCheckInFull(PluginState* state, const mosquitto_evt_acl_check& data) {
  // Strict mode answers before any other source is asked (this plugin's nested call excepted:
  // the outer call already decided).
  if (data.access == MOSQ_ACL_SUBSCRIBE && state->options.kubemq_strict &&
      !state->acl_check_nested && StrictRefusesSubscribe(state, data)) {
    return MOSQ_ERR_ACL_DENIED;
  }
  if (state->decide_acl) {
    // No other ACL source: the broker allows everything (mosquitto_acl_check()).
    try {
      WatchAclCheck<false>(state, data, nullptr);
    } catch (...) {
      // Watching must never change the outcome.
    }
    return MOSQ_ERR_SUCCESS;
  }
  // This plugin's own nested call (AskLaterAclSources): let the rest of the chain decide.
  if (state->acl_check_nested) return MOSQ_ERR_PLUGIN_DEFER;
  // A check that records nothing is left to the other sources.
  int answer = MOSQ_ERR_PLUGIN_DEFER;
  try {
    WatchAclCheck<true>(state, data, &answer);
  } catch (...) {
    // Watching must never change the outcome: the answer is set before anything can throw.
  }
  return answer;
}

int OnAclCheck(int /*event*/, void* event_data, void* userdata) {
  auto* state = static_cast<PluginState*>(userdata);
  const auto& data = *static_cast<const mosquitto_evt_acl_check*>(event_data);
  // Most checks: a delivery to a connected client, no CONNECT pending, the message's topic
  // already classified (TryDeliverCached), where no other ACL source decides. Counts what
  // WatchAclCheck would, without it. A publish (WRITE) records nothing here: it is counted at
  // MESSAGE. Nothing here throws or calls out.
  if (state->decide_acl && !state->sessions->has_unsettled()) {
    if (data.access == MOSQ_ACL_WRITE) return MOSQ_ERR_SUCCESS;
    if (data.access == MOSQ_ACL_READ) {
      ConnectionStatsSlot* const* stats = state->sessions->OpenStats(data.client);
      if (stats != nullptr &&
          state->traffic->TryDeliverCached(*stats, data.topic, data.payloadlen)) {
        return MOSQ_ERR_SUCCESS;
      }
    }
  }
  return AclCheckInFull(state, data);
}

// Every publish but the fast path of OnMessage, out of line for the same reason.
[[gnu::noinline]] int MessageInFull(PluginState* state, const mosquitto_evt_message& data) {
  try {
    state->sessions->Settle();
    const SessionTable::ClientView view = ViewOrDiscover(state, data.client);
    BrokerPublishDetails details(state->api, data.client, data.properties);
    const bool kubemq_accepts =
        state->traffic->OnPublish(data.client, view.stats, data.topic, data.payloadlen, details);
    // Strict mode: not routed; QoS 1/2 get 0x87 under MQTT 5 (src/handle_publish.c, 2.0 and
    // 2.1: a MESSAGE callback's MOSQ_ERR_ACL_DENIED is a denied PUBLISH).
    if (!kubemq_accepts && state->options.kubemq_strict) return MOSQ_ERR_ACL_DENIED;
  } catch (...) {
  }
  return MOSQ_ERR_SUCCESS;  // anything else would refuse the message
}

int OnMessage(int /*event*/, void* event_data, void* userdata) {
  auto* state = static_cast<PluginState*>(userdata);
  const auto& data = *static_cast<const mosquitto_evt_message*>(event_data);
  // Most publishes: a connected client, no CONNECT pending, a topic already classified.
  // Nothing here throws.
  if (!state->sessions->has_unsettled()) {
    ConnectionStatsSlot* const* stats = state->sessions->OpenStats(data.client);
    if (stats != nullptr && state->traffic->TryPublishCached(*stats, data.topic, data.payloadlen)) {
      return state->options.kubemq_strict && state->traffic->cached_kubemq_refused()
                 ? MOSQ_ERR_ACL_DENIED
                 : MOSQ_ERR_SUCCESS;
    }
  }
  return MessageInFull(state, data);
}

// DISCONNECT (2.0: every connection; 2.1: sessions that end with it) and 2.1's CLIENT_OFFLINE
// (a persistent session's connection ends, the session stays). 2.1 passes the reason; 2.0
// passes -1, and the client's state tells (mosquitto__get_state, where exported).
int OnDisconnect(int /*event*/, void* event_data, void* userdata) {
  auto* state = static_cast<PluginState*>(userdata);
  try {
    const auto* data = static_cast<const EventDisconnect21*>(event_data);
    SessionTable& sessions = *state->sessions;
    const bool pending = sessions.IsPending(data->client);
    const bool refused =
        IsRefusal(state->api.api_2_1(), pending, mosquitto_client_id(data->client) != nullptr,
                  pending ? state->api.ClientState(data->client) : -1);
    const std::int64_t idle_ms = IdleMs(data->client);  // the socket is still open here
    CloseReason reason = CloseReason::kUnspecified;
    if (state->kicking) {
      reason = CloseReason::kKicked;
    } else if (state->api.api_2_1()) {
      reason = CloseReasonFromBrokerReason(data->reason);
    } else {
      reason = CloseReasonFromClientState(state->api.ClientState(data->client));
    }
    sessions.Disconnect(data->client, !refused, reason, NowNs(),
                        idle_ms < 0 ? -1 : idle_ms * 1000000);
  } catch (...) {
  }
  return MOSQ_ERR_SUCCESS;
}

// 2.1: a CONNECT the broker accepted (after its CONNACK). It settles the CONNECT that
// BASIC_AUTH began; a client whose authentication the plugin did not see (use_identity_as_
// username listeners) is added here.
int OnConnect(int /*event*/, void* event_data, void* userdata) {
  auto* state = static_cast<PluginState*>(userdata);
  try {
    const auto* data = static_cast<const EventConnect21*>(event_data);
    SessionTable& sessions = *state->sessions;
    if (!sessions.IsPending(data->client) && !sessions.IsOpen(data->client)) {
      sessions.Settle();
      sessions.BeginConnect(data->client, ReadFacts(data->client, state->broker_config), NowNs());
    }
    sessions.Confirm(data->client);
  } catch (...) {
  }
  return MOSQ_ERR_SUCCESS;
}

// 2.1: a subscription the broker made, or removed (after every ACL source allowed it).
int OnSubscribe(int event, void* event_data, void* userdata) {
  auto* state = static_cast<PluginState*>(userdata);
  try {
    const auto* data = static_cast<const EventSubscribe21*>(event_data);
    SessionTable& sessions = *state->sessions;
    sessions.Settle();
    if (data->data.topic_filter == nullptr) return MOSQ_ERR_SUCCESS;
    const SessionTable::ClientView view = ViewOrDiscover(state, data->client);
    if (event == kEventSubscribe) {
      sessions.Subscribe(data->client, data->data.topic_filter,
                         static_cast<std::uint8_t>(data->data.options & 0x03),
                         /*may_be_recheck=*/false);
      state->traffic->OnSubscribe(view.stats, /*made=*/true);
    } else {
      sessions.Unsubscribe(data->client, data->data.topic_filter);
      TrafficMeter::OnRequest(view.stats);
    }
  } catch (...) {
  }
  return MOSQ_ERR_SUCCESS;  // anything else would refuse the subscription
}

// 2.1: a PUBLISH being sent to a client: a delivery, counted once per packet the broker sends
// (every copy a client receives, none for a message dropped at max_queued_messages).
// Resent QoS 1/2 messages of a resumed session count again: each is sent again.
[[gnu::noinline]] int MessageOutInFull(PluginState* state, const mosquitto_evt_message& data) {
  try {
    // The queued messages of a resumed session go out before its CONNECT event: that CONNECT
    // passed authentication.
    state->sessions->Confirm(data.client);
    state->sessions->Settle();
    const SessionTable::ClientView view = ViewOrDiscover(state, data.client);
    if (IsPresenceDelivery(*state, data.topic)) return MOSQ_ERR_SUCCESS;  // counted nowhere
    BrokerPublishDetails clock(state->api, data.client, nullptr);
    state->traffic->OnDeliver(data.client, view.stats, /*online=*/true, data.topic,
                              data.payloadlen, data.qos, clock);
  } catch (...) {
  }
  return MOSQ_ERR_SUCCESS;  // anything else would stop the message
}

int OnMessageOut(int /*event*/, void* event_data, void* userdata) {
  auto* state = static_cast<PluginState*>(userdata);
  const auto& data = *static_cast<const mosquitto_evt_message*>(event_data);
  if (!state->sessions->has_unsettled()) {
    ConnectionStatsSlot* const* stats = state->sessions->OpenStats(data.client);
    if (stats != nullptr && state->traffic->TryDeliverCached(*stats, data.topic, data.payloadlen)) {
      return MOSQ_ERR_SUCCESS;
    }
  }
  return MessageOutInFull(state, data);
}

// An admin's disconnect request from the companion (already bounds-checked by its decoder).
// The broker's own kick: an MQTT 5 client gets DISCONNECT 0x98 (administrative action), no will
// is sent, and the client's DISCONNECT event comes before the call returns.
// A client id for one log line: control characters (a newline could forge a line) become '?'.
std::string Printable(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

void Kick(PluginState* state, const KickCommand& command) {
  state->kicking = true;
  const int rc = mosquitto_kick_client_by_clientid(command.client_id.c_str(), false);
  state->kicking = false;
  const std::string who = "client '" + Printable(command.client_id) + "' at the request of " +
                          (command.caller.empty() ? "an unknown address" : command.caller) + " (" +
                          (command.token_line.empty() ? "no token" : command.token_line) + ")";
  if (rc == MOSQ_ERR_SUCCESS) {
    LogToBroker(LogLevel::kNotice, "mosquitto_connections: disconnected " + who);
  } else {
    LogToBroker(LogLevel::kWarning,
                "mosquitto_connections: cannot disconnect " + who + ": " + state->api.ErrorText(rc));
  }
}

// 2.1 sends TICK only when a plugin's next tick is due (src/plugin_tick.c), and wakes its loop
// for it only when the tick it asks for came due at the turn that asked (the loop forgets every
// wake-up request at each turn, src/loop.c): a turn woken a little early by a socket asks for
// nothing, and the next TICK may then wait for the next client or $SYS update. So the plugin asks
// for a tick that is already due at every later turn, as 2.0 sends it, and for a wake-up in
// kTickIntervalMs21: next_s -2 and next_ms 2000 + the interval. 2.1.2 adds the interval to the
// wake-up (-2000 + 2000 + interval ms) and keeps the due time a second in the past (it subtracts
// one second from the nanoseconds that overflow, once, and compares seconds first). Should a
// later version normalise fully, the tick comes due after the interval instead: TICK as plainly
// asked for, no worse.
constexpr long kTickIntervalMs21 = 50;

void AskForTheNextTick21(mosquitto_evt_tick* tick) {
  tick->next_s = -2;
  tick->next_ns = 2000 + kTickIntervalMs21;  // 2.1's next_ms, in the place of 2.0's next_ns
}

int OnTick(int /*event*/, void* event_data, void* userdata) {
  auto* state = static_cast<PluginState*>(userdata);
  if (state->api.api_2_1()) AskForTheNextTick21(static_cast<mosquitto_evt_tick*>(event_data));
  try {
    state->sessions->Settle();
    state->sessions->EndReload();  // the broker's re-check of its clients is over
    // The broker calls TICK at every turn of its loop, which under load is every few
    // microseconds: the rest is done at most once per kTickWorkIntervalNs (one clock read).
    const std::int64_t now = MonotonicNs();
    if (now - state->tick_work_ns < PluginState::kTickWorkIntervalNs) return MOSQ_ERR_SUCCESS;
    state->tick_work_ns = now;
    SendSettingsIfPending(state);
    state->link->DrainCommands(
        [](const LogCommand& command) { LogToBroker(command.level, command.text); },
        [state](const KickCommand& command) { Kick(state, command); },
        [state](BansCommand&& command) { ApplyBans(state, std::move(command)); });
    state->companion->Tick(now);  // delays and stall checks: no wall-clock jumps
    state->traffic->OnTick(now);
    state->sessions->ExpireOffline(NowNs());
    if (state->companion->serving()) state->link->ResyncStep(state->sessions.get());
    state->link->ReleaseReadPages();
  } catch (...) {
  }
  return MOSQ_ERR_SUCCESS;
}

// 2.1: an ACL check the plugin only watches, registered only where no other ACL source exists
// (PluginState::watch_acl_21, set once in plugin.cc: Init), so that its IGNORE is the broker's answer without it. It sees
// what MESSAGE_OUT cannot: a QoS 0 message for an offline session, which the broker throws
// away (counted as dropped, as on 2.0).
//
// Strict mode registers it also where other sources exist, to refuse a SUBSCRIBE that KubeMQ
// would refuse: 2.1's loop (src/plugin_acl_check.c: plugin__acl_check) ends at the first answer
// that is neither DEFER nor IGNORE, and handle_subscribe turns ACL_DENIED into 0x80 (MQTT 3.1.1)
// or 0x87 (MQTT 5). Every other check still answers IGNORE: the acl_file's callback and those of
// plugins loaded later come after this one (src/plugin_init.c: plugins first, then
// mosquitto_security_init_default; callbacks are appended), so the last of them decides, and
// where no other ACL callback exists (a password-only plugin) IGNORE is the broker's own allow,
// where DEFER would turn every check into a denial. Behind an ACL plugin loaded before this one
// (the start log warns when it is not first) an IGNORE answered last would allow what that
// plugin deferred: strict mode assumes the plugin is loaded first. Watching READ checks stays
// for the case without other sources.
int OnAclCheck21(int /*event*/, void* event_data, void* userdata) {
  auto* state = static_cast<PluginState*>(userdata);
  const auto& data = *static_cast<const mosquitto_evt_acl_check*>(event_data);
  if (data.access == MOSQ_ACL_SUBSCRIBE && state->options.kubemq_strict) {
    return StrictRefusesSubscribe(state, data) ? MOSQ_ERR_ACL_DENIED : kErrPluginIgnore;
  }
  if (data.access != MOSQ_ACL_READ || !state->watch_acl_21) return kErrPluginIgnore;
  try {
    SessionTable& sessions = *state->sessions;
    if (ClientSocket(data.client) < 0 && !sessions.IsOpen(data.client) &&
        !sessions.IsPending(data.client)) {
      // The check carries the message's QoS; the session gets it at most at its
      // subscription's.
      const char* id = mosquitto_client_id(data.client);
      const std::uint8_t qos = std::min<std::uint8_t>(
          data.qos, sessions.OfflineQos(data.client, id != nullptr ? id : "", data.topic));
      if (qos == 0 && !IsPresenceDelivery(*state, data.topic)) {
        BrokerPublishDetails clock(state->api, data.client, nullptr);
        state->traffic->OnDeliver(data.client, nullptr, /*online=*/false, data.topic,
                                  data.payloadlen, 0, clock);
      }
    }
  } catch (...) {
  }
  return kErrPluginIgnore;
}

struct EventHandler {
  int event;
  MOSQ_FUNC_generic_callback callback;
  const char* name;
  bool (*wanted)(const PluginState&) = nullptr;  // null: always registered
};

bool AclCheck21Wanted(const PluginState& state) {
  return state.watch_acl_21 || state.options.kubemq_strict;
}

constexpr EventHandler kHandlers20[] = {
    {MOSQ_EVT_BASIC_AUTH, OnBasicAuth, "BASIC_AUTH"},
    {MOSQ_EVT_EXT_AUTH_START, OnExtAuthStart, "EXT_AUTH_START"},
    {MOSQ_EVT_ACL_CHECK, OnAclCheck, "ACL_CHECK"},
    {MOSQ_EVT_MESSAGE, OnMessage, "MESSAGE"},
    {MOSQ_EVT_DISCONNECT, OnDisconnect, "DISCONNECT"},
    {MOSQ_EVT_TICK, OnTick, "TICK"},
    {MOSQ_EVT_RELOAD, OnReload, "RELOAD"},
};

// ACL_CHECK only where no other ACL source exists, or for strict mode: 2.1 reports subscriptions
// and deliveries once they are made, and a plugin in the ACL chain may change its answer
// (src/plugin_acl_check.c returns the last callback's answer when none decides, so an IGNORE after
// another plugin's DEFER would turn a denial into an allow).
constexpr EventHandler kHandlers21[] = {
    {MOSQ_EVT_BASIC_AUTH, OnBasicAuth, "BASIC_AUTH"},
    {MOSQ_EVT_EXT_AUTH_START, OnExtAuthStart, "EXT_AUTH_START"},
    {kEventConnect, OnConnect, "CONNECT"},
    {kEventSubscribe, OnSubscribe, "SUBSCRIBE"},
    {kEventUnsubscribe, OnSubscribe, "UNSUBSCRIBE"},
    {MOSQ_EVT_MESSAGE, OnMessage, "MESSAGE_IN"},
    {kEventMessageOut, OnMessageOut, "MESSAGE_OUT"},
    {MOSQ_EVT_ACL_CHECK, OnAclCheck21, "ACL_CHECK", AclCheck21Wanted},
    {MOSQ_EVT_DISCONNECT, OnDisconnect, "DISCONNECT"},
    {kEventClientOffline, OnDisconnect, "CLIENT_OFFLINE"},
    {MOSQ_EVT_TICK, OnTick, "TICK"},
    {MOSQ_EVT_RELOAD, OnReload, "RELOAD"},
};

template <std::size_t N>
constexpr std::pair<const EventHandler*, std::size_t> Table(const EventHandler (&table)[N]) {
  return {table, N};
}

std::pair<const EventHandler*, std::size_t> HandlersOf(const PluginState& state) {
  return state.api.api_2_1() ? Table(kHandlers21) : Table(kHandlers20);
}

}  // namespace

void LogToBroker(LogLevel level, const std::string& text) {
  mosquitto_log_printf(static_cast<int>(level), "%s", text.c_str());
}

void ApplyBans(PluginState* state, BansCommand&& command) {
  LogToBroker(LogLevel::kInfo, state->bans->Replace(std::move(command)));
}

bool RegisterBrokerEvents(PluginState* state) {
  const auto [handlers, count] = HandlersOf(*state);
  for (std::size_t i = 0; i < count; ++i) {
    const EventHandler& handler = handlers[i];
    if (handler.wanted != nullptr && !handler.wanted(*state)) continue;
    const int rc = mosquitto_callback_register(state->identifier, handler.event, handler.callback,
                                               nullptr, state);
    if (rc != MOSQ_ERR_SUCCESS) {
      LogToBroker(LogLevel::kError, std::string("mosquitto_connections: cannot register for ") +
                                        handler.name + ": " + state->api.ErrorText(rc));
      UnregisterBrokerEvents(state);
      return false;
    }
    state->registered_events.push_back(i);
  }
  return true;
}

void UnregisterBrokerEvents(PluginState* state) {
  const EventHandler* handlers = HandlersOf(*state).first;
  // Newest first: UNSUBSCRIBE and CLIENT_OFFLINE share their callback with another event.
  for (auto it = state->registered_events.rbegin(); it != state->registered_events.rend(); ++it) {
    const EventHandler& handler = handlers[*it];
    const int rc =
        mosquitto_callback_unregister(state->identifier, handler.event, handler.callback, nullptr);
    if (rc != MOSQ_ERR_SUCCESS) {
      LogToBroker(LogLevel::kWarning, std::string("mosquitto_connections: cannot unregister ") +
                                          handler.name + ": " + state->api.ErrorText(rc));
    }
  }
  state->registered_events.clear();
}

}  // namespace mqc
