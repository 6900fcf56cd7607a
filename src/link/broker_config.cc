// SPDX-License-Identifier: BSD-3-Clause
#include "link/broker_config.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "link/text_util.h"

namespace mqc {

namespace {

// Splits "key rest of line" at the first space or tab.
void SplitOption(std::string_view line, std::string_view* key, std::string_view* value) {
  const std::size_t end = line.find_first_of(" \t");
  *key = line.substr(0, end);
  *value = end == std::string_view::npos ? std::string_view() : Trim(line.substr(end));
}

bool ParseBool(std::string_view value, bool* out) {
  if (value == "true") {
    *out = true;
  } else if (value == "false") {
    *out = false;
  } else {
    return false;
  }
  return true;
}

// Mosquitto 2.0's persistent_client_expiration: a positive number and one unit letter, h d w
// m (30 days) y (365 days).
bool ParseExpiration(std::string_view value, std::int64_t* seconds) {
  if (value.size() < 2 || value.size() > 10) return false;
  std::int64_t unit = 0;
  switch (value.back()) {
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    case 'w':
      unit = 86400 * 7;
      break;
    case 'm':
      unit = 86400 * 30;
      break;
    case 'y':
      unit = 86400 * 365;
      break;
    default:
      return false;
  }
  std::int64_t number = 0;
  for (char c : value.substr(0, value.size() - 1)) {
    if (c < '0' || c > '9') return false;
    number = number * 10 + (c - '0');
  }
  if (number <= 0) return false;
  *seconds = number * unit;
  return true;
}

std::string Canonical(const std::string& path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
}

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status(StatusCode::kUnavailable, "cannot read the broker configuration file " + path);
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

Status IncludeDir(const std::string& dir, BrokerConfig* config) {
  const CSmartPtr<DIR, closedir> handle(opendir(dir.c_str()));
  if (handle == nullptr) return Status(StatusCode::kUnavailable, "cannot open include_dir " + dir);
  std::vector<std::string> files;
  while (const dirent* entry = readdir(handle.get())) {
    const std::string name = entry->d_name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".conf") == 0) {
      files.push_back(dir + "/" + name);
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    const StatusOr<std::string> text = ReadFile(file);
    if (!text.ok()) return text.status();
    Status parsed = ParseBrokerConfig(*text, file, false, config);
    if (!parsed.ok()) return parsed;
  }
  return Status();
}

// The first address of a bridge's `address` line ("host[:port] [host[:port]] ..."), split at
// its last ':' as Mosquitto splits it (an IPv6 address needs its port), port 1883 without one
// (src/conf.c). False for what the broker would refuse.
bool ParseBridgeAddress(std::string_view value, std::string* host, int* port) {
  std::string_view first = value.substr(0, value.find_first_of(" \t"));
  int number = 1883;
  const std::size_t colon = first.rfind(':');
  if (colon != std::string_view::npos) {
    const std::string digits(first.substr(colon + 1));
    if (digits.empty() || digits.size() > 5 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      return false;
    }
    number = std::atoi(digits.c_str());
    if (number < 1 || number > 65535) return false;
    first = first.substr(0, colon);
  }
  if (first.empty()) return false;
  *host = std::string(first);
  *port = number;
  return true;
}

}  // namespace

void FillBridgeClientIds(std::string_view hostname, BrokerConfig* config) {
  for (BridgeConfig& bridge : config->bridges) {
    if (bridge.remote_clientid.empty()) {
      bridge.remote_clientid = std::string(hostname) + "." + bridge.name;
    }
    if (bridge.local_clientid.empty()) bridge.local_clientid = "local." + bridge.remote_clientid;
  }
}

Status ParseBrokerConfig(std::string_view text, const std::string& path, bool follow_includes,
                         BrokerConfig* config) {
  // Options before the first listener line configure the default listener (port, bind_address).
  ListenerConfig default_listener;
  bool default_listener_used = false;
  ListenerConfig* current =
      config->listeners.empty() ? &default_listener : &config->listeners.back();
  std::size_t line_number = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = Trim(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++line_number;
    if (line.empty() || line.front() == '#') continue;
    std::string_view key;
    std::string_view value;
    SplitOption(line, &key, &value);
    const auto bad = [&](const char* what) {
      return InvalidArgument(path + ":" + std::to_string(line_number) + ": " + what);
    };
    bool flag = false;
    BrokerConfig::ListenerSecurity& block = config->listener_security.back();
    if (key == "per_listener_settings") {
      if (!ParseBool(value, &flag)) return bad("per_listener_settings needs true or false");
      config->per_listener_settings = flag;
    } else if (key == "allow_anonymous") {
      if (!ParseBool(value, &flag)) return bad("allow_anonymous needs true or false");
      config->allow_anonymous = flag;
      block.allow_anonymous = flag;
    } else if (key == "password_file") {
      config->password_file = true;
      block.password_file = true;
    } else if (key == "acl_file") {
      config->acl_file = true;
      config->acl_file_path = std::string(value);
      block.acl_file = true;
      block.acl_file_path = std::string(value);
    } else if (key == "psk_file") {
      config->psk_file = true;
      block.psk_file = true;
    } else if (key == "plugin" || key == "auth_plugin" || key == "global_plugin" ||
               key == "plugin_load") {
      // 2.1: global_plugin <path>, and plugin_load <name> <path> (used by plugin_use <name>);
      // plugin_opt_ lines after either belong to that plugin.
      std::string_view plugin_path = value;
      if (key == "plugin_load") {
        const std::size_t space = value.find_first_of(" \t");
        if (space == std::string_view::npos) return bad("plugin_load needs a name and a path");
        plugin_path = Trim(value.substr(space));
      }
      config->plugins.emplace_back(plugin_path);
      config->plugin_options.emplace_back();
      block.plugins.emplace_back(plugin_path);
    } else if (key.rfind("plugin_opt_", 0) == 0 || key.rfind("auth_opt_", 0) == 0) {
      // Mosquitto refuses an option before any plugin line; so does this reader.
      if (config->plugin_options.empty()) return bad("plugin option before any plugin line");
      key.remove_prefix(key.find("_opt_") + 5);
      config->plugin_options.back().emplace_back(std::string(key), std::string(value));
    } else if (key == "listener") {
      config->local_only = false;
      std::string_view port = value.substr(0, value.find_first_of(" \t"));
      ListenerConfig listener;
      listener.port = std::atoi(std::string(port).c_str());
      if (port.size() < value.size())
        listener.bind_address = std::string(Trim(value.substr(port.size())));
      config->listeners.push_back(listener);
      config->listener_security.emplace_back();
      current = &config->listeners.back();
    } else if (key == "port") {
      config->local_only = false;
      default_listener.port = std::atoi(std::string(value).c_str());
      default_listener_used = true;
    } else if (key == "bind_address") {
      config->local_only = false;
      default_listener.bind_address = std::string(value);
      default_listener_used = true;
    } else if (key == "protocol") {
      current->protocol = std::string(value);
    } else if (key == "certfile") {
      current->tls = true;
    } else if (key == "psk_hint") {
      current->tls = true;
      current->psk = true;
    } else if (key == "require_certificate") {
      if (!ParseBool(value, &flag)) return bad("require_certificate needs true or false");
      current->require_certificate = flag;
    } else if (key == "use_identity_as_username") {
      if (!ParseBool(value, &flag)) return bad("use_identity_as_username needs true or false");
      current->use_identity_as_username = flag;
    } else if (key == "use_subject_as_username") {
      if (!ParseBool(value, &flag)) return bad("use_subject_as_username needs true or false");
      current->use_subject_as_username = flag;
    } else if (key == "enable_proxy_protocol") {
      // The broker refuses any other value (src/conf.c of 2.1).
      if (value != "1" && value != "2") return bad("enable_proxy_protocol needs 1 or 2");
      current->proxy_protocol = value == "1" ? 1 : 2;
    } else if (key == "proxy_protocol_v2_require_tls") {
      if (!ParseBool(value, &flag)) return bad("proxy_protocol_v2_require_tls needs true or false");
      current->proxy_v2_require_tls = flag;
    } else if (key == "max_qos") {
      current->max_qos = std::atoi(std::string(value).c_str());
    } else if (key == "persistence" || key == "retained_persistence") {
      if (!ParseBool(value, &flag)) return bad("persistence needs true or false");
      config->persistence = flag;
    } else if (key == "persistence_location") {
      if (value.empty()) return bad("persistence_location needs a folder");
      config->persistence_location = std::string(value);
    } else if (key == "persistence_file") {
      if (value.empty()) return bad("persistence_file needs a file name");
      config->persistence_file = std::string(value);
    } else if (key == "persistent_client_expiration") {
      // An empty value is only logged by the broker, which then runs without one.
      if (!value.empty() && !ParseExpiration(value, &config->persistent_client_expiration_s)) {
        return bad(
            "persistent_client_expiration needs a number and a unit h, d, w, m or y (e.g. 14d)");
      }
    } else if (key == "max_queued_messages" || key == "max_queued_bytes" ||
               key == "max_inflight_bytes") {
      // The broker reads these with atoi and makes a negative value 0 (src/conf.c).
      const std::int64_t number = std::max<std::int64_t>(0, std::atoll(std::string(value).c_str()));
      if (key == "max_queued_messages") config->queues.max_queued_messages = number;
      if (key == "max_queued_bytes") config->queues.max_queued_bytes = number;
      if (key == "max_inflight_bytes") config->queues.max_inflight_bytes = number;
    } else if (key == "queue_qos0_messages") {
      if (!ParseBool(value, &flag)) return bad("queue_qos0_messages needs true or false");
      config->queues.queue_qos0_messages = flag;
    } else if (key == "upgrade_outgoing_qos") {
      if (!ParseBool(value, &flag)) return bad("upgrade_outgoing_qos needs true or false");
      config->queues.upgrade_outgoing_qos = flag;
    } else if (key == "connection") {
      if (value.empty()) return bad("connection needs a name");
      config->bridges.push_back(BridgeConfig{std::string(value), "", 0, "", ""});
    } else if ((key == "address" || key == "addresses") && !config->bridges.empty()) {
      BridgeConfig& bridge = config->bridges.back();
      // The broker refuses a bad one itself; here it only leaves the address unknown.
      if (!ParseBridgeAddress(value, &bridge.host, &bridge.port)) {
        bridge.host.clear();
        bridge.port = 0;
      }
    } else if (key == "local_clientid" && !config->bridges.empty()) {
      config->bridges.back().local_clientid = std::string(value);
    } else if ((key == "remote_clientid" || key == "clientid") && !config->bridges.empty()) {
      config->bridges.back().remote_clientid = std::string(value);
    } else if (key == "include_dir" && follow_includes) {
      Status included = IncludeDir(std::string(value), config);
      if (!included.ok()) return included;
      current = config->listeners.empty() ? &default_listener : &config->listeners.back();
    }
  }
  if (default_listener_used) {
    if (default_listener.port == 0) default_listener.port = 1883;
    config->listeners.insert(config->listeners.begin(), default_listener);
  }
  return Status();
}

std::string BrokerConfig::PersistenceFilePath() const {
  if (!persistence) return "";
  if (persistence_location.empty()) return persistence_file;
  return persistence_location + "/" + persistence_file;
}

StatusOr<BrokerConfig> ReadBrokerConfig(const std::string& path) {
  const StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  BrokerConfig config;
  Status parsed = ParseBrokerConfig(*text, path, true, &config);
  if (!parsed.ok()) return parsed;
  return config;
}

std::string ConfigPathFromArguments(const std::vector<std::string>& arguments) {
  for (std::size_t i = 1; i + 1 < arguments.size(); ++i) {
    if (arguments[i] == "-c" || arguments[i] == "--config-file") return arguments[i + 1];
  }
  return "";
}

bool IsSameFile(const std::string& a, const std::string& b) { return Canonical(a) == Canonical(b); }

std::vector<std::string> OtherPlugins(const BrokerConfig& config, const std::string& own_plugin) {
  std::vector<std::string> others;
  for (const std::string& plugin : config.plugins) {
    if (!IsSameFile(plugin, own_plugin)) others.push_back(plugin);
  }
  return others;
}

namespace {

bool HasOtherPlugin(const BrokerConfig& config, const std::string& own_plugin) {
  return !OtherPlugins(config, own_plugin).empty();
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>* OptionsOfPlugin(
    const BrokerConfig& config, const std::string& own_plugin) {
  for (std::size_t i = 0; i < config.plugins.size(); ++i) {
    if (IsSameFile(config.plugins[i], own_plugin)) return &config.plugin_options[i];
  }
  return nullptr;
}

BrokerConfig ScopeOf(const BrokerConfig& config, const std::string& own_plugin) {
  if (!config.per_listener_settings) return config;
  BrokerConfig scoped = config;
  for (const BrokerConfig::ListenerSecurity& block : config.listener_security) {
    const bool own =
        std::any_of(block.plugins.begin(), block.plugins.end(),
                    [&](const std::string& plugin) { return IsSameFile(plugin, own_plugin); });
    if (!own) continue;
    scoped.allow_anonymous = block.allow_anonymous;
    scoped.password_file = block.password_file;
    scoped.acl_file = block.acl_file;
    scoped.acl_file_path = block.acl_file_path;
    scoped.psk_file = block.psk_file;
    scoped.plugins = block.plugins;
    break;
  }
  return scoped;
}

bool HasOtherAuthSource(const BrokerConfig& config, const std::string& own_plugin) {
  return config.password_file || HasOtherPlugin(config, own_plugin);
}

bool HasOtherAclSource(const BrokerConfig& config, const std::string& own_plugin) {
  return config.acl_file || HasOtherPlugin(config, own_plugin);
}

AuthDecisions DecideAuth(const BrokerConfig& config, const std::string& own_plugin) {
  const BrokerConfig scoped = ScopeOf(config, own_plugin);
  AuthDecisions decisions;
  decisions.decide_basic_auth = !HasOtherAuthSource(scoped, own_plugin);
  decisions.allow_anonymous = scoped.EffectiveAllowAnonymous();
  decisions.decide_acl = !HasOtherAclSource(scoped, own_plugin);
  return decisions;
}

}  // namespace mqc
