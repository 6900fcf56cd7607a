// SPDX-License-Identifier: BSD-3-Clause
// The broker's events handed to the decisions (broker/broker_events.h: BrokerEvents): each
// callback passes the broker's event on; the handlers catch everything they call that can throw
// (no exception may cross into the broker), and the fast paths call nothing that throws.
// Registration of the callbacks the decisions ask for (WantedEvents), and 2.1's request for the
// next TICK (a field of its event).
//
// Threads: all of this runs on the broker thread.

#include "broker/broker_events.h"

#include <cstddef>
#include <string>
#include <utility>

#include "broker_api.h"
#include "plugin_state.h"

// clang-format off
#include <mosquitto.h>
#include <mosquitto_broker.h>
#include <mosquitto_plugin.h>
#include <mqtt_protocol.h>
// clang-format on

namespace mqc {

namespace {

// The event layouts and codes broker/broker.h mirrors, checked against the real headers: the
// callbacks hand the broker's structs over as they are.
#define MQC_SAME_FIELD(ours, theirs, field)                         \
  static_assert(offsetof(ours, field) == offsetof(theirs, field) && \
                    sizeof(ours::field) == sizeof(theirs::field),   \
                #ours "::" #field " is laid out as " #theirs "::" #field)
static_assert(sizeof(AclCheckEvent) == sizeof(mosquitto_evt_acl_check));
MQC_SAME_FIELD(AclCheckEvent, mosquitto_evt_acl_check, client);
MQC_SAME_FIELD(AclCheckEvent, mosquitto_evt_acl_check, topic);
MQC_SAME_FIELD(AclCheckEvent, mosquitto_evt_acl_check, payload);
MQC_SAME_FIELD(AclCheckEvent, mosquitto_evt_acl_check, properties);
MQC_SAME_FIELD(AclCheckEvent, mosquitto_evt_acl_check, access);
MQC_SAME_FIELD(AclCheckEvent, mosquitto_evt_acl_check, payloadlen);
MQC_SAME_FIELD(AclCheckEvent, mosquitto_evt_acl_check, qos);
MQC_SAME_FIELD(AclCheckEvent, mosquitto_evt_acl_check, retain);
static_assert(sizeof(MessageEvent) >= sizeof(mosquitto_evt_message));
MQC_SAME_FIELD(MessageEvent, mosquitto_evt_message, client);
MQC_SAME_FIELD(MessageEvent, mosquitto_evt_message, topic);
MQC_SAME_FIELD(MessageEvent, mosquitto_evt_message, payload);
MQC_SAME_FIELD(MessageEvent, mosquitto_evt_message, properties);
MQC_SAME_FIELD(MessageEvent, mosquitto_evt_message, payloadlen);
MQC_SAME_FIELD(MessageEvent, mosquitto_evt_message, qos);
MQC_SAME_FIELD(MessageEvent, mosquitto_evt_message, retain);
#undef MQC_SAME_FIELD
static_assert(kBrokerSuccess == MOSQ_ERR_SUCCESS && kBrokerErrAuth == MOSQ_ERR_AUTH &&
              kBrokerErrAclDenied == MOSQ_ERR_ACL_DENIED &&
              kBrokerErrPluginDefer == MOSQ_ERR_PLUGIN_DEFER);
// kBrokerErrPluginIgnore and kBrokerErrBanned are 2.1's alone and the 2.0 headers built against
// here lack them: the 2.1 brokers' integration runs pin them (test_bans: CONNACK 0x8A;
// test_auth_neutrality: IGNORE).
static_assert(kEventAclCheck == MOSQ_EVT_ACL_CHECK && kEventBasicAuth == MOSQ_EVT_BASIC_AUTH);
static_assert(kAclRead == MOSQ_ACL_READ && kAclWrite == MOSQ_ACL_WRITE &&
              kAclSubscribe == MOSQ_ACL_SUBSCRIBE && kAclUnsubscribe == MOSQ_ACL_UNSUBSCRIBE);
static_assert(kPropertyResponseTopic == MQTT_PROP_RESPONSE_TOPIC &&
              kPropertyCorrelationData == MQTT_PROP_CORRELATION_DATA);

using Events = BrokerEvents<MosquittoBroker>;

// Every callback is registered with the broker core as its userdata.
Events EventsOf(void* userdata) { return Events(*static_cast<BrokerCore*>(userdata)); }

BrokerClient* ClientOf(mosquitto* client) { return reinterpret_cast<BrokerClient*>(client); }

int OnBasicAuth(int /*event*/, void* event_data, void* userdata) {
  return EventsOf(userdata).OnBasicAuth(
      ClientOf(static_cast<mosquitto_evt_basic_auth*>(event_data)->client));
}

int OnExtAuthStart(int /*event*/, void* event_data, void* userdata) {
  const auto* data = static_cast<mosquitto_evt_extended_auth*>(event_data);
  return EventsOf(userdata).OnExtAuthStart(ClientOf(data->client), data->auth_method);
}

int OnAclCheck(int /*event*/, void* event_data, void* userdata) {
  return EventsOf(userdata).OnAclCheck(*static_cast<const AclCheckEvent*>(event_data));
}

int OnAclCheck21(int /*event*/, void* event_data, void* userdata) {
  return EventsOf(userdata).OnAclCheck21(*static_cast<const AclCheckEvent*>(event_data));
}

int OnMessage(int /*event*/, void* event_data, void* userdata) {
  return EventsOf(userdata).OnMessage(*static_cast<const MessageEvent*>(event_data));
}

int OnMessageOut(int /*event*/, void* event_data, void* userdata) {
  return EventsOf(userdata).OnMessageOut(*static_cast<const MessageEvent*>(event_data));
}

// DISCONNECT and 2.1's CLIENT_OFFLINE: which one came tells whether the session ends.
int OnDisconnect(int event, void* event_data, void* userdata) {
  const auto* data = static_cast<const EventDisconnect21*>(event_data);
  return EventsOf(userdata).OnDisconnect(ClientOf(data->client), data->reason,
                                         event == kEventClientOffline
                                             ? DisconnectEvent::kClientOffline
                                             : DisconnectEvent::kDisconnect);
}

int OnConnect(int /*event*/, void* event_data, void* userdata) {
  return EventsOf(userdata).OnConnect21(
      ClientOf(static_cast<const EventConnect21*>(event_data)->client));
}

int OnSubscribe(int event, void* event_data, void* userdata) {
  const auto* data = static_cast<const EventSubscribe21*>(event_data);
  return EventsOf(userdata).OnSubscribe21(ClientOf(data->client), event == kEventSubscribe,
                                          data->data.topic_filter,
                                          static_cast<std::uint8_t>(data->data.options & 0x03));
}

int OnReload(int /*event*/, void* /*event_data*/, void* userdata) {
  return EventsOf(userdata).OnReload();
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

// One callback per API: 2.0 sends TICK at every turn of its loop, which then asks nothing.
int OnTick(int /*event*/, void* /*event_data*/, void* userdata) {
  return EventsOf(userdata).OnTick();
}

int OnTick21(int /*event*/, void* event_data, void* userdata) {
  AskForTheNextTick21(static_cast<mosquitto_evt_tick*>(event_data));
  return EventsOf(userdata).OnTick();
}

struct EventHandler {
  int event;
  MOSQ_FUNC_generic_callback callback;
  const char* name;
};

// The broker's code and the callback of each event the decisions ask for (WantedEvents).
EventHandler HandlerOf(BrokerEventKind kind, bool api_2_1) {
  switch (kind) {
    case BrokerEventKind::kBasicAuth:
      return {MOSQ_EVT_BASIC_AUTH, OnBasicAuth, "BASIC_AUTH"};
    case BrokerEventKind::kExtAuthStart:
      return {MOSQ_EVT_EXT_AUTH_START, OnExtAuthStart, "EXT_AUTH_START"};
    case BrokerEventKind::kConnect:
      return {kEventConnect, OnConnect, "CONNECT"};
    case BrokerEventKind::kSubscribe:
      return {kEventSubscribe, OnSubscribe, "SUBSCRIBE"};
    case BrokerEventKind::kUnsubscribe:
      return {kEventUnsubscribe, OnSubscribe, "UNSUBSCRIBE"};
    case BrokerEventKind::kMessageIn:
      return {MOSQ_EVT_MESSAGE, OnMessage, api_2_1 ? "MESSAGE_IN" : "MESSAGE"};
    case BrokerEventKind::kMessageOut:
      return {kEventMessageOut, OnMessageOut, "MESSAGE_OUT"};
    case BrokerEventKind::kAclCheck:
      return {MOSQ_EVT_ACL_CHECK, api_2_1 ? OnAclCheck21 : OnAclCheck, "ACL_CHECK"};
    case BrokerEventKind::kDisconnect:
      return {MOSQ_EVT_DISCONNECT, OnDisconnect, "DISCONNECT"};
    case BrokerEventKind::kClientOffline:
      return {kEventClientOffline, OnDisconnect, "CLIENT_OFFLINE"};
    case BrokerEventKind::kTick:
      return {MOSQ_EVT_TICK, api_2_1 ? OnTick21 : OnTick, "TICK"};
    case BrokerEventKind::kReload:
      return {MOSQ_EVT_RELOAD, OnReload, "RELOAD"};
  }
  return {MOSQ_EVT_RELOAD, OnReload, "RELOAD"};  // not reached: every kind is listed above
}

}  // namespace

void LogToBroker(LogLevel level, const std::string& text) {
  mosquitto_log_printf(static_cast<int>(level), "%s", text.c_str());
}

bool RegisterBrokerEvents(PluginState* state) {
  const bool api_2_1 = state->api.api_2_1();
  state->mosquitto.SetOwnCallbacks(OnBasicAuth, OnAclCheck, state->core.get());
  for (const BrokerEventKind kind : WantedEvents(*state->core)) {
    const EventHandler handler = HandlerOf(kind, api_2_1);
    const int rc = mosquitto_callback_register(state->identifier, handler.event, handler.callback,
                                               nullptr, state->core.get());
    if (rc != MOSQ_ERR_SUCCESS) {
      LogToBroker(LogLevel::kError, std::string("mosquitto_connections: cannot register for ") +
                                        handler.name + ": " + state->api.ErrorText(rc));
      UnregisterBrokerEvents(state);
      return false;
    }
    state->registered_events.push_back(kind);
  }
  state->mosquitto.SetAclWatch(state->identifier, OnAclCheck21, state->core.get());
  state->core->StartOfflineWatch();
  return true;
}

void UnregisterBrokerEvents(PluginState* state) {
  const bool api_2_1 = state->api.api_2_1();
  state->core->offline_watch().Stop();
  // Newest first: UNSUBSCRIBE and CLIENT_OFFLINE share their callback with another event.
  for (auto it = state->registered_events.rbegin(); it != state->registered_events.rend(); ++it) {
    const EventHandler handler = HandlerOf(*it, api_2_1);
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
