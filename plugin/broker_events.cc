// The broker's events, turned into calls on the core. Every callback catches everything (no
// exception may cross into the broker) and returns what auth neutrality requires.
//
// Threads: all of this runs on the broker thread.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "plugin_state.h"

// clang-format off
#include <mosquitto.h>
#include <mosquitto_broker.h>
#include <mosquitto_plugin.h>
#include <mqtt_protocol.h>
// clang-format on

namespace mqc {

namespace {

std::int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return std::int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

std::int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

std::string OrEmpty(const char* s) { return s != nullptr ? std::string(s) : std::string(); }

// Port of a socket address, and its IP as text.
bool AddressOf(const sockaddr_storage& address, std::string* ip, std::uint16_t* port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    if (inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text)) == nullptr) return false;
    *port = ntohs(v4->sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    if (inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text)) == nullptr) return false;
    *port = ntohs(v6->sin6_port);
  } else {
    return false;
  }
  *ip = text;
  return true;
}

// The plugin API gives no remote port. With epoll builds (Debian's) struct mosquitto starts
// with `int ident; int sock;` (the broker's source says ident must stay first), so the socket
// is the second int. Trust it only if the peer's IP is the one the broker reports.
void ReadSocketPorts(const mosquitto* client, const std::string& ip, ClientFacts* facts) {
  int sock = -1;
  std::memcpy(&sock, reinterpret_cast<const char*>(client) + sizeof(int), sizeof(sock));
  if (sock < 0) return;
  sockaddr_storage peer{};
  socklen_t length = sizeof(peer);
  std::string peer_ip;
  std::uint16_t peer_port = 0;
  if (getpeername(sock, reinterpret_cast<sockaddr*>(&peer), &length) != 0 ||
      !AddressOf(peer, &peer_ip, &peer_port) || peer_ip != ip) {
    return;
  }
  facts->port = peer_port;
  sockaddr_storage local{};
  length = sizeof(local);
  std::string local_ip;
  std::uint16_t local_port = 0;
  if (getsockname(sock, reinterpret_cast<sockaddr*>(&local), &length) == 0 &&
      AddressOf(local, &local_ip, &local_port)) {
    facts->local_port = local_port;
  }
}

// MQTT 5 properties and the clock, read only for the messages that need them (RPC).
class BrokerPublishDetails : public PublishDetails {
 public:
  BrokerPublishDetails(const mosquitto* client, const mosquitto_property* properties)
      : client_(client), properties_(properties) {}

  int ProtocolVersion() override { return mosquitto_client_protocol_version(client_); }

  bool ResponseTopic(std::string* topic) override {
    char* value = nullptr;
    if (properties_ == nullptr ||
        mosquitto_property_read_string(properties_, MQTT_PROP_RESPONSE_TOPIC, &value, false) ==
            nullptr) {
      return false;
    }
    topic->assign(value);
    free(value);  // the broker's property reader uses plain calloc
    return true;
  }

  bool CorrelationData(std::string* data) override {
    void* value = nullptr;
    std::uint16_t length = 0;
    if (properties_ == nullptr ||
        mosquitto_property_read_binary(properties_, MQTT_PROP_CORRELATION_DATA, &value, &length,
                                       false) == nullptr) {
      return false;
    }
    data->assign(static_cast<const char*>(value), length);
    free(value);
    return true;
  }

  std::int64_t MonotonicNs() override { return mqc::MonotonicNs(); }

 private:
  const mosquitto* client_;
  const mosquitto_property* properties_;
};

ClientFacts ReadFacts(const mosquitto* client) {
  ClientFacts facts;
  facts.client_id = OrEmpty(mosquitto_client_id(client));
  facts.username = OrEmpty(mosquitto_client_username(client));
  facts.ip_address = OrEmpty(mosquitto_client_address(client));
  facts.protocol_version = static_cast<std::uint8_t>(mosquitto_client_protocol_version(client));
  facts.clean_session = mosquitto_client_clean_session(client);
  facts.keep_alive = static_cast<std::uint16_t>(mosquitto_client_keepalive(client));
  facts.mechanism = facts.username.empty() ? AuthMechanism::kAnonymous : AuthMechanism::kPassword;
  ReadSocketPorts(client, facts.ip_address, &facts);
  return facts;
}

int OnBasicAuth(int /*event*/, void* event_data, void* userdata) {
  auto* state = static_cast<PluginState*>(userdata);
  try {
    const auto* data = static_cast<mosquitto_evt_basic_auth*>(event_data);
    state->sessions->BeginConnect(data->client, ReadFacts(data->client), NowNs());
  } catch (...) {
    // Watching must never change the outcome: fall through to the decision.
  }
  if (!state->decide_basic_auth) return MOSQ_ERR_PLUGIN_DEFER;
  // What mosquitto_unpwd_check() does when no plugin or password_file is configured.
  return state->allow_anonymous ? MOSQ_ERR_SUCCESS : MOSQ_ERR_AUTH;
}

int OnExtAuthStart(int /*event*/, void* event_data, void* userdata) {
  auto* state = static_cast<PluginState*>(userdata);
  try {
    const auto* data = static_cast<mosquitto_evt_extended_auth*>(event_data);
    ClientFacts facts = ReadFacts(data->client);
    facts.mechanism = AuthMechanism::kEnhanced;
    facts.auth_method = OrEmpty(data->auth_method);
    state->sessions->BeginConnect(data->client, std::move(facts), NowNs());
  } catch (...) {
  }
  // With every callback deferring the broker answers "not supported", as with none.
  return MOSQ_ERR_PLUGIN_DEFER;
}

int OnAclCheck(int /*event*/, void* event_data, void* userdata) {
  auto* state = static_cast<PluginState*>(userdata);
  const auto* data = static_cast<mosquitto_evt_acl_check*>(event_data);
  try {
    SessionTable& sessions = *state->sessions;
    sessions.Settle();
    if (data->access == MOSQ_ACL_READ) {
      // Queued messages re-checked while a session resumes were counted when first queued.
      if (!sessions.IsPending(data->client)) {
        const SessionTable::ClientView view = sessions.View(data->client);
        BrokerPublishDetails clock(data->client, nullptr);
        // The check carries the message's QoS; an offline session gets it at most at its
        // subscription's QoS, and the broker throws a QoS 0 message for it away.
        std::uint8_t qos = data->qos;
        if (!view.open && qos > 0) {
          const char* id = mosquitto_client_id(data->client);
          qos = std::min<std::uint8_t>(
              qos, sessions.OfflineQos(data->client, id != nullptr ? id : "", data->topic));
        }
        state->traffic->OnDeliver(data->client, view.stats, view.open, data->topic,
                                  data->payloadlen, qos, clock);
      }
    } else if (data->access == MOSQ_ACL_SUBSCRIBE) {
      sessions.Subscribe(data->client, data->topic, data->qos);
      TrafficMeter::OnRequest(sessions.View(data->client).stats);
    } else if (data->access == MOSQ_ACL_UNSUBSCRIBE) {
      sessions.Unsubscribe(data->client, data->topic);
      TrafficMeter::OnRequest(sessions.View(data->client).stats);
    }
  } catch (...) {
  }
  // With no other ACL source the broker allows everything (mosquitto_acl_check()).
  return state->decide_acl ? MOSQ_ERR_SUCCESS : MOSQ_ERR_PLUGIN_DEFER;
}

int OnMessage(int /*event*/, void* event_data, void* userdata) {
  auto* state = static_cast<PluginState*>(userdata);
  try {
    const auto* data = static_cast<mosquitto_evt_message*>(event_data);
    state->sessions->Settle();
    BrokerPublishDetails details(data->client, data->properties);
    state->traffic->OnPublish(data->client, state->sessions->View(data->client).stats, data->topic,
                              data->payloadlen, details);
  } catch (...) {
  }
  return MOSQ_ERR_SUCCESS;  // anything else would refuse the message
}

int OnDisconnect(int /*event*/, void* event_data, void* userdata) {
  auto* state = static_cast<PluginState*>(userdata);
  try {
    const auto* data = static_cast<mosquitto_evt_disconnect*>(event_data);
    const bool has_client_id = mosquitto_client_id(data->client) != nullptr;
    state->sessions->Disconnect(data->client, has_client_id, CloseReason::kUnspecified, NowNs());
  } catch (...) {
  }
  return MOSQ_ERR_SUCCESS;
}

int OnTick(int /*event*/, void* /*event_data*/, void* userdata) {
  auto* state = static_cast<PluginState*>(userdata);
  try {
    state->sessions->Settle();
    state->link->DrainCommands(
        [](const LogCommand& command) { LogToBroker(command.level, command.text); });
    state->companion->Tick(NowNs());
    state->traffic->OnTick(MonotonicNs());
    if (state->companion->serving()) state->link->ResyncStep(state->sessions.get());
    auto& ticks = state->region->header()->broker.ticks;
    ticks.store(ticks.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  } catch (...) {
  }
  return MOSQ_ERR_SUCCESS;
}

struct EventHandler {
  int event;
  MOSQ_FUNC_generic_callback callback;
  const char* name;
};

constexpr EventHandler kHandlers[] = {
    {MOSQ_EVT_BASIC_AUTH, OnBasicAuth, "BASIC_AUTH"},
    {MOSQ_EVT_EXT_AUTH_START, OnExtAuthStart, "EXT_AUTH_START"},
    {MOSQ_EVT_ACL_CHECK, OnAclCheck, "ACL_CHECK"},
    {MOSQ_EVT_MESSAGE, OnMessage, "MESSAGE"},
    {MOSQ_EVT_DISCONNECT, OnDisconnect, "DISCONNECT"},
    {MOSQ_EVT_TICK, OnTick, "TICK"},
};

}  // namespace

void LogToBroker(LogLevel level, const std::string& text) {
  mosquitto_log_printf(static_cast<int>(level), "%s", text.c_str());
}

bool RegisterBrokerEvents(PluginState* state) {
  for (const auto& handler : kHandlers) {
    const int rc = mosquitto_callback_register(state->identifier, handler.event, handler.callback,
                                               nullptr, state);
    if (rc != MOSQ_ERR_SUCCESS) {
      LogToBroker(LogLevel::kError, std::string("mosquitto_connections: cannot register for ") +
                                        handler.name + ": " + mosquitto_strerror(rc));
      UnregisterBrokerEvents(state);
      return false;
    }
    state->registered_events.push_back(handler.event);
  }
  return true;
}

void UnregisterBrokerEvents(PluginState* state) {
  for (const auto& handler : kHandlers) {
    bool registered = false;
    for (int event : state->registered_events) registered = registered || event == handler.event;
    if (!registered) continue;
    const int rc =
        mosquitto_callback_unregister(state->identifier, handler.event, handler.callback, nullptr);
    if (rc != MOSQ_ERR_SUCCESS) {
      LogToBroker(LogLevel::kWarning, std::string("mosquitto_connections: cannot unregister ") +
                                          handler.name + ": " + mosquitto_strerror(rc));
    }
  }
  state->registered_events.clear();
}

}  // namespace mqc
