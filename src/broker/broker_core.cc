// SPDX-License-Identifier: BSD-3-Clause
#include "broker/broker_core.h"

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "broker/persistence_file.h"
#include "link/clock.h"

namespace mqc {

namespace {

class BrokerPresencePublisher : public PresencePublisher {
 public:
  explicit BrokerPresencePublisher(Broker* broker) : broker_(broker) {}
  bool Publish(const std::string& topic, const std::string& payload, bool retain) override {
    return broker_->Publish(topic, payload, retain);
  }

 private:
  Broker* broker_;
};

EventSink* SinkOf(BrokerLink* link, const BrokerCoreSetup& setup) {
  return link != nullptr ? link : setup.sink;
}

}  // namespace

BrokerCore::BrokerCore(Broker* broker, BrokerSettings settings,
                       std::unique_ptr<SharedRegion> region, const BrokerCoreSetup& setup)
    : broker_(broker),
      settings_(std::move(settings)),
      region_(std::move(region)),
      link_(region_ != nullptr ? std::make_unique<BrokerLink>(region_.get()) : nullptr),
      sessions_(SinkOf(link_.get(), setup), setup.uuid_seed,
                region_ != nullptr ? region_->stats_slots() : setup.stats,
                region_ != nullptr ? &region_->header()->counters : setup.counters),
      resync_(&sessions_, SinkOf(link_.get(), setup)),
      traffic_(region_ != nullptr ? &region_->header()->counters : setup.counters,
               settings_.options.default_pattern, RpcOptionsOf(settings_.options)),
      bans_(region_ != nullptr ? &region_->header()->counters : setup.counters) {
  drops_.Configure(settings_.broker_config.queues);
  sessions_.SetOfflineListener(&offline_watch_);
}

BrokerCore::~BrokerCore() = default;

void BrokerCore::StartOfflineWatch() {
  // watch_acl_21 is 2.1's already (Create).
  const bool wanted = settings_.watch_acl_21 && !settings_.options.kubemq_strict;
  offline_watch_.Start(wanted, sessions_.offline_count(), broker_->MonotonicNs());
}

StatusOr<std::unique_ptr<BrokerCore>> BrokerCore::Create(Broker* broker, PluginOptions options,
                                                         BrokerCoreSetup setup,
                                                         std::unique_ptr<SharedRegion> region) {
  if (broker == nullptr) return InvalidArgument("the broker core needs a broker");
  if (region == nullptr && setup.sink == nullptr) {
    return InvalidArgument("the broker core needs a shared region or an event sink");
  }
  const BrokerCapabilities& capabilities = broker->capabilities();
  BrokerSettings settings;
  settings.options = std::move(options);
  settings.broker_config = setup.broker_config;
  settings.config_path = setup.config_path;
  settings.own_path = setup.own_path;
  ApplyAuthDecisions(*broker, &settings, setup.broker_config);
  settings.watch_acl_21 = capabilities.api_2_1 && settings.decide_acl;
  const BrokerConfig scoped = ScopeOf(setup.broker_config, setup.own_path);
  if (!scoped.plugins.empty() && !setup.own_path.empty() &&
      !IsSameFile(scoped.plugins.front(), setup.own_path)) {
    broker->Log(LogLevel::kWarning,
                "mosquitto_connections: load this plugin before the other plugins: a plugin "
                "loaded earlier that decides authentication or ACLs hides connections and "
                "subscriptions from it");
  }

  const bool strict = settings.options.kubemq_strict;
  std::unique_ptr<BrokerCore> core(
      new BrokerCore(broker, std::move(settings), std::move(region), setup));
  broker->Log(LogLevel::kNotice,
              capabilities.Describe(UnreadAclSource(*core), !DenialsShown(*core)));
  if (strict) {
    broker->Log(LogLevel::kNotice,
                "mosquitto_connections: KubeMQ strict mode: SUBSCRIBEs and PUBLISHes that "
                "KubeMQ's MQTT side would refuse are refused (docs/topic-mapping.md)");
  }
  SessionTable& sessions = core->sessions_;
  core->SetDenialsShown();
  core->connects_.SetConnectsConfirmed(capabilities.api_2_1);
  sessions.SetUnknownExpiryFollowed(capabilities.client_lookup);
  sessions.SetPersistentClientExpiration(
      core->settings_.broker_config.persistent_client_expiration_s);
  core->RestorePersistedSessions();
  core->SetUpPresence();
  core->layout_ = std::make_unique<BrokerLayoutVerifier>(
      BrokerLayoutCandidates(capabilities.version), capabilities.version);
  if (core->settings_.options.client_layout) {
    core->layout_->Start(*broker);
  } else {
    core->layout_->TurnOff(*broker, "plugin_opt_client_layout off");
  }
  if (core->region_ != nullptr) {
    core->companion_ = std::make_unique<CompanionSupervisor>(
        core->region_.get(), setup.companion_path, setup.companion_arguments, setup.log);
  }
  return core;
}

// The sessions the broker restored from its persistence file: the broker reads mosquitto.db
// (db__open) before it loads plugins, so the file on disk now is the one it restored from.
// A file that cannot be read is one warning and no session from it; the broker runs on, and
// those sessions show from their next connection.
void BrokerCore::RestorePersistedSessions() {
  const std::string path = settings_.broker_config.PersistenceFilePath();
  if (path.empty()) return;
  PersistenceLimits limits;
  limits.max_sessions = SessionTable::kMaxOfflineSessions;
  const std::int64_t started = MonotonicNs();
  const StatusOr<PersistenceFile> file = ReadPersistenceFile(path, limits);
  if (!file.ok()) {
    broker_->Log(LogLevel::kWarning,
                 "mosquitto_connections: the broker's persistence file is not used, its sessions "
                 "are listed from their next connection on: " +
                     file.status().message());
    return;
  }
  if (file->missing) return;
  const std::vector<PersistedSession>& sessions = file->sessions;
  std::size_t subscriptions = 0;
  for (const auto& session : sessions) subscriptions += session.subscriptions.size();
  sessions_.RestoreOffline(sessions, NowNs());
  broker_->Log(LogLevel::kNotice, "mosquitto_connections: " + std::to_string(sessions.size()) +
                                      " persistent sessions with " + std::to_string(subscriptions) +
                                      " subscriptions read from " + path + " in " +
                                      std::to_string((MonotonicNs() - started) / 1000000) + " ms");
}

// Presence messages, when an option asks for them: published through the broker
// (Broker::Publish), told of every open and close by the session table. One log line.
void BrokerCore::SetUpPresence() {
  const PluginOptions& options = settings_.options;
  if (!options.presence_events && !options.presence_retained) return;
  PresenceOptions presence;
  presence.events = options.presence_events;
  presence.retained = options.presence_retained;
  presence.node = options.presence_node;
  presence_publisher_ = std::make_unique<BrokerPresencePublisher>(broker_);
  presence_ = std::make_unique<Presence>(presence, presence_publisher_.get());
  presence_->SetPersistentClientExpiration(settings_.broker_config.persistent_client_expiration_s);
  sessions_.SetObserver(presence_.get());
  broker_->Log(LogLevel::kNotice, std::string("mosquitto_connections: presence messages on ") +
                                      presence_->prefix() + "<client id>/" +
                                      (presence.events ? "connected, disconnected" : "") +
                                      (presence.events && presence.retained ? " and " : "") +
                                      (presence.retained ? "state (retained)" : ""));
}

Status BrokerCore::StartCompanion(int timeout_ms) {
  if (companion_ == nullptr) return InvalidArgument("no companion without a shared region");
  const auto pump = [this] {
    link_->DrainCommands(
        [this](const LogCommand& command) { broker_->Log(command.level, command.text); }, nullptr,
        [this](BansCommand&& command) { ApplyBans(std::move(command)); });
  };
  return companion_->StartAndWait(timeout_ms, pump);
}

void BrokerCore::StopCompanion() {
  if (companion_ == nullptr) return;
  companion_->Stop();
  link_->DrainCommands(
      [this](const LogCommand& command) { broker_->Log(command.level, command.text); });
}

void BrokerCore::Reload() {
  connects_.BeginReload();
  const int http_port = companion_ != nullptr ? companion_->http_port() : 0;
  const bool changed = ReloadConfiguration(*broker_, &settings_, http_port);
  drops_.Configure(settings_.broker_config.queues);  // the broker reads them again too
  if (changed) {
    traffic_.SetOptions(settings_.options.default_pattern, RpcOptionsOf(settings_.options));
    SetDenialsShown();
    if (companion_ != nullptr)
      companion_->SetOptionOverrides(CompanionOverrides(settings_.options));
  }
  SendSettingsIfPending();
}

bool BrokerCore::SendSettingsIfPending() {
  if (!settings_.settings_pending) return true;
  if (link_ == nullptr) return false;
  SettingsEvent settings;
  settings.default_pattern = settings_.options.default_pattern;
  settings.closed_max = settings_.options.closed_max;
  settings.closed_ttl_ns = std::int64_t{settings_.options.closed_ttl_s} * 1000000000;
  if (link_->Emit(settings)) settings_.settings_pending = false;
  return !settings_.settings_pending;
}

bool BrokerCore::ResyncStep() { return link_ == nullptr || mqc::ResyncStep(link_.get(), &resync_); }

void BrokerCore::SetDenialsShown() {
  sessions_.SetDenialsShown(DenialsShown(*this));
}

bool DenialsShown(const BrokerCore& core) {
  const BrokerCapabilities& capabilities = core.broker().capabilities();
  if (capabilities.api_2_1) return core.settings().watch_acl_21;
  // A plugin of the older interface keeps the chain from being read (found at the first check):
  // without mosquitto_acl_check its refusals are not seen.
  if (!core.settings().decide_acl && !capabilities.acl_check &&
      core.calls().older_plugins.value_or(false)) {
    return false;
  }
  return !UnreadAclSource(core);
}

bool UnreadAclSource(const BrokerCore& core) {
  const BrokerCapabilities& capabilities = core.broker().capabilities();
  return !capabilities.api_2_1 && !core.settings().decide_acl && !kCanReadCallbackChains &&
         !capabilities.acl_check && core.settings().acl_file == nullptr;
}

void BrokerCore::ApplyBans(BansCommand&& command) {
  const std::uint64_t sequence = command.sequence;
  broker_->Log(LogLevel::kInfo, bans_.Replace(std::move(command)));
  // In force: the companion's answer to the admin waits for this (CompanionLink::WaitForBans).
  if (region_ != nullptr) {
    region_->header()->broker.bans_applied.store(sequence, std::memory_order_release);
  }
}

}  // namespace mqc
