// SPDX-License-Identifier: BSD-3-Clause
// The broker side's core: every unit the broker's events are decided with (broker_events.h),
// built in one place (Create) from the broker, the plugin's options, the broker's configuration
// and the shared region, and owned here in the order they are torn down in. The plugin's Init
// and the unit tests' fixtures build it the same way. docs/architecture.md has the floor plan.
//
// The units the per-message path reads (the settlement, the session table, the traffic meter,
// the settings) are members by value: reaching them from the core costs no pointer load.
//
// Threads: the broker thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/ban_gate.h"
#include "broker/broker.h"
#include "broker/broker_layout.h"
#include "broker/broker_link.h"
#include "broker/callback_chain.h"
#include "broker/companion_supervisor.h"
#include "broker/configuration.h"
#include "broker/connect_settlement.h"
#include "broker/event_sink.h"
#include "broker/message_counts.h"
#include "broker/offline_watch.h"
#include "broker/presence.h"
#include "broker/queue_drops.h"
#include "broker/resync_writer.h"
#include "broker/round_pace.h"
#include "broker/session_table.h"
#include "broker/traffic_meter.h"
#include "link/broker_config.h"
#include "link/plugin_options.h"
#include "link/shared_region.h"
#include "link/status.h"

namespace mqc {

// What the core is built from besides the broker, the options and the shared region.
struct BrokerCoreSetup {
  BrokerConfig broker_config;
  std::string config_path;  // read again at every reload
  std::string own_path;     // this plugin's .so, to find its own plugin and options lines
  std::uint64_t uuid_seed = 0;
  // The companion, supervised where there is a shared region (started by StartCompanion).
  std::string companion_path;
  std::vector<std::string> companion_arguments;
  CompanionSupervisor::Logger log;
  // Where the table's events, statistics and counters go without a shared region (unit
  // tests); with one, its events ring (through BrokerLink), slots and counters.
  EventSink* sink = nullptr;
  StatsSlots stats;
  BrokerCounters* counters = nullptr;
};

// 2.0's view of the other callbacks (callback_chain.h) and the flags of calls in progress.
struct CallState {
  // This plugin's place in the broker's chains of BASIC_AUTH and ACL_CHECK callbacks, looked
  // for at the first call of each, and whether a plugin of the older interface is asked after
  // every callback (unknown until the first chain is looked for).
  CallbackChain basic_auth_chain;
  CallbackChain acl_chain;
  std::optional<bool> older_plugins;
  // Set while the ACL_CHECK handler asks the broker for the later sources' answer: the nested
  // call reaches this plugin's callback again, which must then defer.
  bool acl_check_nested = false;
  // Set while the plugin kicks a client for an admin: its DISCONNECT comes from inside the
  // kick, and it closes as KICKED.
  bool kicking = false;
};

// TICK's pacing: the periodic work in two tiers, the message-count sweep, and the checks of
// offline sessions of unknown expiry (every one once a second, at most kMaxExpiryChecks a
// TICK). The exchange with the companion (its commands, settings, resync) and the RPC
// tracker's expiry at most once per kWorkIntervalNs: an admin's kick waits for the one, the
// deliveries' fast path for the other. The housekeeping (the companion's supervision, offline
// expiry, the sweep, giving back read ring pages) at most once per kHousekeepingIntervalNs:
// none of it needs a finer clock (seconds, or rounds of a second).
// An idle broker's TICKs (2.0: ~100 ms; 2.1: the 50 ms it is asked for) do both every time.
struct TickPacing {
  static constexpr std::int64_t kWorkIntervalNs = 1000000;
  static constexpr std::int64_t kHousekeepingIntervalNs = 10000000;
  static constexpr std::int64_t kExpiryRoundNs = 1000000000;
  static constexpr std::size_t kMaxExpiryChecks = 1024;
  std::int64_t work_ns = 0;          // the last TICK that did the periodic work (MonotonicNs)
  std::int64_t housekeeping_ns = 0;  // the last TICK that did the housekeeping (MonotonicNs)
  MessageCountSweep message_sweep;
  RoundPace expiry_pace{kExpiryRoundNs, kMaxExpiryChecks};
};

class BrokerCore {
 public:
  // Builds every unit: the auth decisions from the configuration (the acl_file read where the
  // plugin needs it), the link and the companion's supervisor over `region` (may be null: no
  // companion, `setup.sink` instead), the session table with the sessions the broker restored
  // from its persistence file (RestorePersistedSessions), presence
  // (logged when on), the traffic meter, the ban gate and the client layout (verified from the
  // first client with plugin_opt_client_layout, else off). Logs the load-order warning.
  static StatusOr<std::unique_ptr<BrokerCore>> Create(Broker* broker, PluginOptions options,
                                                      BrokerCoreSetup setup,
                                                      std::unique_ptr<SharedRegion> region);
  BrokerCore(const BrokerCore&) = delete;
  BrokerCore& operator=(const BrokerCore&) = delete;
  ~BrokerCore();

  Broker& broker() const { return *broker_; }
  BrokerSettings& settings() { return settings_; }
  const BrokerSettings& settings() const { return settings_; }
  const PluginOptions& options() const { return settings_.options; }
  CallState& calls() { return calls_; }
  const CallState& calls() const { return calls_; }
  TickPacing& tick() { return tick_; }

  SessionTable& sessions() { return sessions_; }
  ConnectSettlement& connects() { return connects_; }
  ResyncWriter& resync() { return resync_; }
  TrafficMeter& traffic() { return traffic_; }
  QueueDrops& drops() { return drops_; }
  const QueueDrops& drops() const { return drops_; }
  BanGate& bans() { return bans_; }
  OfflineWatch& offline_watch() { return offline_watch_; }
  // Null where there is none: no shared region (unit tests), presence off, no layout.
  SharedRegion* region() const { return region_.get(); }
  BrokerLink* link() const { return link_.get(); }
  CompanionSupervisor* companion() const { return companion_.get(); }
  Presence* presence() const { return presence_.get(); }
  BrokerLayoutVerifier* layout() const { return layout_.get(); }
  // A test's verifier in place of the one Create set up.
  void UseLayout(std::unique_ptr<BrokerLayoutVerifier> layout) { layout_ = std::move(layout); }

  // A delivery of a presence message: counted nowhere (README, "Presence messages").
  bool IsPresenceDelivery(const char* topic) const {
    return presence_ != nullptr && topic[0] == '$' && presence_->IsPresenceTopic(topic);
  }

  // Starts the companion and waits up to `timeout_ms` for it to serve, carrying out its log
  // lines and ban lists meanwhile (CompanionSupervisor::StartAndWait). Needs the shared region.
  Status StartCompanion(int timeout_ms);
  // Stops the companion and logs what it still had to say (plugin cleanup).
  void StopCompanion();

  // RELOAD (configuration.h: ReloadConfiguration): the settlement's reload window opens, the
  // configuration is read again, what changed is handed to the traffic meter and the
  // companion.
  void Reload();
  // Tells the statistics slots taken from now on and the companion whether ACL denials are
  // shown (DenialsShown, below): at start, after a reload (and in tests, after they changed
  // the settings).
  void SetDenialsShown();
  // Once the plugin's events are registered: 2.1's watch of QoS 0 messages for offline
  // sessions starts, where no other ACL source exists and not in strict mode (offline_watch.h).
  void StartOfflineWatch();
  // Sends reloaded registry options to the running companion; false while the ring is full.
  bool SendSettingsIfPending();
  // At TICK: starts the resync the link says is due (BrokerLink::TakeResyncDue) and carries an
  // unfinished one on as far as the ring has room. True when no resync is due or under way.
  bool ResyncStep();
  // Puts a ban list from the companion in force and tells the companion it is.
  void ApplyBans(BansCommand&& command);

 private:
  BrokerCore(Broker* broker, BrokerSettings settings, std::unique_ptr<SharedRegion> region,
             const BrokerCoreSetup& setup);
  void SetUpPresence();
  void RestorePersistedSessions();

  Broker* broker_;
  BrokerSettings settings_;
  CallState calls_;
  TickPacing tick_;
  std::unique_ptr<SharedRegion> region_;
  std::unique_ptr<BrokerLink> link_;
  SessionTable sessions_;
  ConnectSettlement connects_{&sessions_};
  ResyncWriter resync_;
  TrafficMeter traffic_;
  QueueDrops drops_;  // armed once the layout is verified (2.0)
  BanGate bans_;
  OfflineWatch offline_watch_{broker_};
  std::unique_ptr<CompanionSupervisor> companion_;
  std::unique_ptr<PresencePublisher> presence_publisher_;
  std::unique_ptr<Presence> presence_;
  std::unique_ptr<BrokerLayoutVerifier> layout_;
};

// Whether an ACL source after the plugin decides what the plugin cannot learn (2.0 without
// mosquitto_acl_check, and an ACL plugin other than the acl_file): logged at start.
bool UnreadAclSource(const BrokerCore& core);
// Whether every ACL denial of a client's PUBLISH or SUBSCRIBE reaches the plugin on this broker
// with these ACL sources (docs/broker-versions.md, "ACL denials"). 2.0: the plugin asks the
// sources after it for each check (the chain, mosquitto_acl_check or the acl_file it reads),
// unless one of them is unread. 2.1: a refused request leaves no event, and the plugin stays out
// of the ACL chain where another source decides; with none, nothing but the broker's fixed rules
// refuses.
bool DenialsShown(const BrokerCore& core);

}  // namespace mqc
