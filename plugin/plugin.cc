// SPDX-License-Identifier: BSD-3-Clause
// The plugin's entry points: options, the broker's configuration, the shared region, the
// companion, and the event registrations. A thin extern "C" shim over the core in src/: every
// failure is logged with what was wrong and turned into an error code here, and nowhere else.
//
// Threads: the broker thread (the broker calls init and cleanup on it).

#include <dlfcn.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "broker/broker_layout.h"
#include "link/clock.h"
#include "link/companion_arguments.h"
#include "link/version.h"
#include "plugin_state.h"

// clang-format off
#pragma GCC visibility push(default)
#include <mosquitto.h>
#include <mosquitto_broker.h>
#include <mosquitto_plugin.h>
#pragma GCC visibility pop
// clang-format on

namespace mqc {

namespace {

constexpr int kCompanionStartTimeoutMs = 10000;
constexpr char kCompanionName[] = "mosquitto_connections_companion";

void LogError(const std::string& text) {
  LogToBroker(LogLevel::kError, "mosquitto_connections: " + text);
}

std::vector<std::string> ProcessArguments() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> arguments;
  std::string current;
  for (char c : all) {
    if (c == '\0') {
      arguments.push_back(current);
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  return arguments;
}

// An address inside this .so that no other plugin exports: plugins are loaded RTLD_GLOBAL, so
// &mosquitto_plugin_version would name the first plugin loaded, not necessarily this one.
const char kOwnAddress = 0;

std::string OwnPath() {
  Dl_info info{};
  if (dladdr(&kOwnAddress, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

std::string Directory(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// Reads the broker's configuration file to learn what the plugin API does not tell.
bool ApplyBrokerConfig(PluginState* state, const std::string& own_path) {
  const std::string config_path = ConfigPathFromArguments(ProcessArguments());
  if (config_path.empty()) {
    LogError("cannot find the broker's configuration file on its command line (-c)");
    return false;
  }
  StatusOr<BrokerConfig> read = ReadBrokerConfig(config_path);
  if (!read.ok()) {
    LogError(read.status().message());
    return false;
  }
  const BrokerConfig config = std::move(read).value();
  if (config.per_listener_settings &&
      !state->api.capabilities().SendsTickWithPerListenerSettings()) {
    LogError(PerListenerSettingsRefusal(state->api.capabilities()));
    return false;
  }
  state->broker_config = config;
  state->config_path = config_path;
  state->own_path = own_path;
  ApplyAuthDecisions(state, config);
  const BrokerConfig scoped = ScopeOf(config, own_path);
  if (!scoped.plugins.empty() && !own_path.empty() &&
      !IsSameFile(scoped.plugins.front(), own_path)) {
    LogToBroker(LogLevel::kWarning,
                "mosquitto_connections: load this plugin before the other plugins: a plugin "
                "loaded earlier that decides authentication or ACLs hides connections and "
                "subscriptions from it");
  }
  return true;
}

// The sessions the broker restored from its persistence file: the broker reads mosquitto.db
// (db__open) before it loads plugins, so the file on disk now is the one it restored from.
// Read once, here, before the first client. A file that cannot be read is one warning and no
// session from it; the broker runs on, and those sessions show from their next connection.
void RestorePersistedSessions(PluginState* state) {
  const std::string path = state->broker_config.PersistenceFilePath();
  if (path.empty()) return;
  PersistenceLimits limits;
  limits.max_sessions = SessionTable::kMaxOfflineSessions;
  const std::int64_t started = MonotonicNs();
  const StatusOr<PersistenceFile> file = ReadPersistenceFile(path, limits);
  if (!file.ok()) {
    LogToBroker(LogLevel::kWarning,
                "mosquitto_connections: the broker's persistence file is not used, its sessions "
                "are listed from their next connection on: " +
                    file.status().message());
    return;
  }
  if (file->missing) return;
  const std::vector<PersistedSession>& sessions = file->sessions;
  std::size_t subscriptions = 0;
  for (const auto& session : sessions) subscriptions += session.subscriptions.size();
  state->sessions->RestoreOffline(sessions, NowNs());
  LogToBroker(LogLevel::kNotice, "mosquitto_connections: " + std::to_string(sessions.size()) +
                                     " persistent sessions with " + std::to_string(subscriptions) +
                                     " subscriptions read from " + path + " in " +
                                     std::to_string((MonotonicNs() - started) / 1000000) + " ms");
}

}  // namespace

namespace {

int Init(mosquitto_plugin_id_t* identifier, void** userdata, mosquitto_opt* options,
         int option_count) {
  auto state = std::make_unique<PluginState>();
  state->identifier = identifier;
  state->api = BrokerApi::Find();

  OptionPairs pairs;
  for (int i = 0; i < option_count; ++i) {
    pairs.emplace_back(options[i].key != nullptr ? options[i].key : "",
                       options[i].value != nullptr ? options[i].value : "");
  }
  StatusOr<PluginOptions> parsed = ParsePluginOptions(pairs);
  if (!parsed.ok()) {
    LogError(parsed.status().message());
    return MOSQ_ERR_INVAL;
  }
  state->options = std::move(parsed).value();
  const std::string own_path = OwnPath();
  if (!ApplyBrokerConfig(state.get(), own_path)) return MOSQ_ERR_INVAL;
  // Fixed at start: the callbacks are registered once (a reload adds no plugin before this one).
  state->watch_acl_21 = state->api.api_2_1() && state->decide_acl;

  StatusOr<std::unique_ptr<SharedRegion>> region = SharedRegion::Create(SharedRegionSizes{});
  if (!region.ok()) {
    LogError("cannot create the shared memory: " + region.status().message());
    return MOSQ_ERR_NOMEM;
  }
  state->region = std::move(region).value();
  state->link = std::make_unique<BrokerLink>(state->region.get());
  LogToBroker(LogLevel::kNotice, state->api.capabilities().Describe(UnreadAclSource(*state)));
  if (state->options.kubemq_strict) {
    LogToBroker(LogLevel::kNotice,
                "mosquitto_connections: KubeMQ strict mode: SUBSCRIBEs and PUBLISHes that "
                "KubeMQ's MQTT side would refuse are refused (docs/topic-mapping.md)");
  }
  std::random_device seed;
  state->sessions = std::make_unique<SessionTable>(
      state->link.get(), (std::uint64_t{seed()} << 32) | seed(), state->region->stats(),
      state->region->header()->stats_slots, &state->region->header()->counters);
  state->sessions->SetConnectsConfirmed(state->api.api_2_1());
  state->sessions->SetUnknownExpiryFollowed(state->api.capabilities().client_lookup);
  state->sessions->SetPersistentClientExpiration(
      state->broker_config.persistent_client_expiration_s);
  RestorePersistedSessions(state.get());
  SetUpPresence(state.get());
  state->traffic =
      std::make_unique<TrafficMeter>(&state->region->header()->counters,
                                     state->options.default_pattern, RpcOptionsOf(state->options));

  state->bans = std::make_unique<BanGate>(&state->region->header()->counters);
  state->layout = std::make_unique<BrokerLayoutVerifier>(
      BrokerLayoutCandidates(state->api.capabilities().version), state->api.capabilities().version);
  if (state->options.client_layout) {
    state->layout->Start(state->mosquitto);
  } else {
    state->layout->TurnOff(state->mosquitto, "plugin_opt_client_layout off");
  }

  const std::string companion = state->options.companion_path.empty()
                                    ? Directory(own_path) + "/" + kCompanionName
                                    : state->options.companion_path;
  CompanionArguments arguments;
  arguments.shared_fd = kCompanionSharedFd;
  arguments.broker_pid = getpid();
  arguments.broker_config = state->config_path;
  // For mosquitto_connections_build_info: the companion cannot read the broker's binary.
  arguments.broker_version = state->api.capabilities().version.Text();
  arguments.options = pairs;
  state->companion = std::make_unique<CompanionSupervisor>(
      state->region.get(), companion, WriteCompanionArguments(arguments), LogToBroker);

  if (!RegisterBrokerEvents(state.get())) return MOSQ_ERR_UNKNOWN;
  BrokerLink* link = state->link.get();
  PluginState* raw_state = state.get();
  const auto pump = [link, raw_state] {
    link->DrainCommands(
        [](const LogCommand& command) { LogToBroker(command.level, command.text); }, nullptr,
        [raw_state](BansCommand&& command) { ApplyBans(raw_state, std::move(command)); });
  };
  const Status started = state->companion->StartAndWait(kCompanionStartTimeoutMs, pump);
  if (!started.ok()) {
    LogError(started.message());
    UnregisterBrokerEvents(state.get());
    return MOSQ_ERR_UNKNOWN;
  }
  // The versions come first: the line an operator greps for when asking what runs.
  LogToBroker(LogLevel::kNotice,
              std::string("mosquitto_connections: version ") + kPluginVersion + " on broker " +
                  state->api.capabilities().version.Text() + ", serving on " +
                  ServingUrl(state->options, state->companion->http_port()) + " (companion pid " +
                  std::to_string(state->companion->pid()) + ")");
  *userdata = state.release();
  return MOSQ_ERR_SUCCESS;
}

int Cleanup(void* userdata) {
  std::unique_ptr<PluginState> state(static_cast<PluginState*>(userdata));
  if (!state) return MOSQ_ERR_SUCCESS;
  UnregisterBrokerEvents(state.get());
  state->companion->Stop();
  state->link->DrainCommands(
      [](const LogCommand& command) { LogToBroker(command.level, command.text); });
  return MOSQ_ERR_SUCCESS;
}

}  // namespace

}  // namespace mqc

extern "C" {

int mosquitto_plugin_version(int supported_version_count, const int* supported_versions) {
  for (int i = 0; i < supported_version_count; ++i) {
    if (supported_versions[i] == 5) return 5;
  }
  return -1;
}

int mosquitto_plugin_init(mosquitto_plugin_id_t* identifier, void** userdata,
                          struct mosquitto_opt* options, int option_count) {
  try {
    return mqc::Init(identifier, userdata, options, option_count);
  } catch (const std::exception& e) {
    mqc::LogError(std::string("init failed: ") + e.what());
  } catch (...) {
    mqc::LogError("init failed");
  }
  return MOSQ_ERR_UNKNOWN;
}

int mosquitto_plugin_cleanup(void* userdata, struct mosquitto_opt* /*options*/,
                             int /*option_count*/) {
  try {
    return mqc::Cleanup(userdata);
  } catch (...) {
    return MOSQ_ERR_UNKNOWN;
  }
}

}  // extern "C"
