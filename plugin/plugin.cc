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

#include "broker/broker_core.h"
#include "broker/configuration.h"
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

// What the broker core is built from, besides the options: the broker's configuration file
// (found on the broker's command line, read to learn what the plugin API does not tell), this
// plugin's path, and the companion's command line. The error says what was wrong.
StatusOr<BrokerCoreSetup> CoreSetup(const BrokerApi& api, const PluginOptions& options,
                                    const OptionPairs& pairs) {
  BrokerCoreSetup setup;
  setup.config_path = ConfigPathFromArguments(ProcessArguments());
  if (setup.config_path.empty()) {
    return InvalidArgument("cannot find the broker's configuration file on its command line (-c)");
  }
  StatusOr<BrokerConfig> config = ReadUsableBrokerConfig(setup.config_path, api.capabilities());
  if (!config.ok()) return config.status();
  setup.broker_config = std::move(config).value();
  setup.own_path = OwnPath();
  std::random_device seed;
  setup.uuid_seed = (std::uint64_t{seed()} << 32) | seed();
  setup.companion_path = options.companion_path.empty()
                             ? Directory(setup.own_path) + "/" + kCompanionName
                             : options.companion_path;
  CompanionArguments arguments;
  arguments.shared_fd = kCompanionSharedFd;
  arguments.broker_pid = getpid();
  arguments.broker_config = setup.config_path;
  // For mosquitto_connections_build_info: the companion cannot read the broker's binary.
  arguments.broker_version = api.capabilities().version.Text();
  arguments.options = pairs;
  setup.companion_arguments = WriteCompanionArguments(arguments);
  setup.log = LogToBroker;
  return setup;
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
  StatusOr<BrokerCoreSetup> setup = CoreSetup(state->api, *parsed, pairs);
  if (!setup.ok()) {
    LogError(setup.status().message());
    return MOSQ_ERR_INVAL;
  }
  StatusOr<std::unique_ptr<SharedRegion>> region = SharedRegion::Create(SharedRegionSizes{});
  if (!region.ok()) {
    LogError("cannot create the shared memory: " + region.status().message());
    return MOSQ_ERR_NOMEM;
  }
  StatusOr<std::unique_ptr<BrokerCore>> core =
      BrokerCore::Create(&state->mosquitto, std::move(parsed).value(), std::move(setup).value(),
                         std::move(region).value());
  if (!core.ok()) {
    LogError(core.status().message());
    return MOSQ_ERR_INVAL;
  }
  state->core = std::move(core).value();
  if (!RegisterBrokerEvents(state.get())) return MOSQ_ERR_UNKNOWN;

  const Status started = state->core->StartCompanion(kCompanionStartTimeoutMs);
  if (!started.ok()) {
    LogError(started.message());
    UnregisterBrokerEvents(state.get());
    return MOSQ_ERR_UNKNOWN;
  }
  const CompanionSupervisor& companion = *state->core->companion();
  // The versions come first: the line an operator greps for when asking what runs.
  LogToBroker(LogLevel::kNotice, std::string("mosquitto_connections: version ") + kPluginVersion +
                                     " on broker " + state->api.capabilities().version.Text() +
                                     ", serving on " +
                                     ServingUrl(state->core->options(), companion.http_port()) +
                                     " (companion pid " + std::to_string(companion.pid()) + ")");
  *userdata = state.release();
  return MOSQ_ERR_SUCCESS;
}

int Cleanup(void* userdata) {
  std::unique_ptr<PluginState> state(static_cast<PluginState*>(userdata));
  if (!state) return MOSQ_ERR_SUCCESS;
  UnregisterBrokerEvents(state.get());
  state->core->StopCompanion();
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
