// SPDX-License-Identifier: BSD-3-Clause
// The companion process: started by the plugin inside the broker, it maps the shared region,
// keeps the ConnectionRegistry up to date from the broker's events and serves HTTP. Everything
// network-facing lives here, so a crash or a slow request cannot touch the broker. It runs at a
// lower CPU priority than the broker (YieldToBroker).
//
// Assembly only: the parts are built here and handed to each other; the event loop is
// Companion::Step (companion/companion.h), the secrets' rereading HttpSecrets.
//
// Threads: main() runs the event loop (Companion); libmicrohttpd's threads serve HTTP.
//
// Usage: the plugin starts it with the command line of link/companion_arguments.h.

#include <malloc.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "companion/activity_history.h"
#include "companion/ban_store.h"
#include "companion/broker_bans.h"
#include "companion/broker_disconnect.h"
#include "companion/client_history.h"
#include "companion/companion.h"
#include "companion/companion_link.h"
#include "companion/connection_registry.h"
#include "companion/detailed_source.h"
#include "companion/fleet/fleet_bans.h"
#include "companion/fleet/fleet_disconnect.h"
#include "companion/fleet/fleet_query.h"
#include "companion/fleet/fleet_watch.h"
#include "companion/http/access_tokens.h"
#include "companion/http/connect_rpc_service.h"
#include "companion/http/disconnect_view.h"
#include "companion/http/host_check.h"
#include "companion/http/http_router.h"
#include "companion/http/http_secrets.h"
#include "companion/http/http_server.h"
#include "companion/metrics.h"
#include "companion/network_info.h"
#include "link/broker_config.h"
#include "link/clock.h"
#include "link/companion_arguments.h"
#include "link/plugin_options.h"
#include "link/shared_region.h"
#include "link/version.h"

namespace mqc {
namespace {

std::atomic<bool> g_stop{false};  // set by SIGTERM/SIGINT; read by the event loop

void OnStopSignal(int /*signal*/) { g_stop.store(true); }

// The companion yields the CPU to the broker: on a busy machine, API requests wait rather than
// MQTT messages. Its nice value is set to the broker's + 10 (at most 19, the lowest priority).
// On Linux a nice value belongs to a thread and threads inherit it when created, so this runs
// before the HTTP server starts its threads. The companion stays in the broker's session, so
// with autogrouping both share one scheduling group, where nice values compare. Returns a
// warning for the broker's log, or empty.
constexpr int kNiceAboveBroker = 10;
constexpr int kLowestPriorityNice = 19;

std::string YieldToBroker(pid_t broker_pid) {
  errno = 0;
  const int broker_nice = getpriority(PRIO_PROCESS, static_cast<id_t>(broker_pid));
  if (broker_nice == -1 && errno != 0) {
    return std::string("CPU priority unchanged: the broker's nice value: ") + std::strerror(errno);
  }
  const int wanted = std::min(broker_nice + kNiceAboveBroker, kLowestPriorityNice);
  if (setpriority(PRIO_PROCESS, 0, wanted) != 0) {
    return "CPU priority unchanged: nice " + std::to_string(wanted) + ": " + std::strerror(errno);
  }
  errno = 0;
  const int own = getpriority(PRIO_PROCESS, 0);
  if (own == -1 && errno != 0) {
    return std::string("CPU priority unknown: ") + std::strerror(errno);
  }
  if (own <= broker_nice) {
    return "the companion runs at nice " + std::to_string(own) + ", not below the broker's " +
           std::to_string(broker_nice) + ": API requests compete with messages for the CPU";
  }
  return std::string();
}

// The broker's listeners name each connection's listener (and tell TLS), its bridges the
// broker's own bridge connections. The companion runs as the broker's user, which could read
// the file when the plugin started, on the broker's host (the bridges' default client ids
// name it).
// `read`: the broker's configuration as read at start, null when its path is unknown.
void ReadListeners(const StatusOr<BrokerConfig>* read, CompanionLink* link,
                   ConnectionRegistryOptions* options) {
  if (read == nullptr) return;
  if (!read->ok()) {
    link->Log(LogLevel::kWarning, "listener names unknown: " + read->status().message());
    return;
  }
  BrokerConfig config = read->value();
  if (config.listeners.empty()) {  // local-only mode: the default listener on 1883
    ListenerConfig local;
    local.port = 1883;
    config.listeners.push_back(local);
  }
  char hostname[256] = {};
  if (gethostname(hostname, sizeof(hostname) - 1) != 0) hostname[0] = '\0';
  FillBridgeClientIds(hostname, &config);
  options->listeners = std::move(config.listeners);
  options->bridges = std::move(config.bridges);
}

// Where the ban list is kept: beside the broker's persistence file, or nowhere (said once).
// `config`: as for ReadListeners.
std::string BanFile(const StatusOr<BrokerConfig>* config, CompanionLink* link) {
  const char* const kMemoryOnly = "bans are kept in memory only: the broker's configuration ";
  if (config == nullptr) {
    link->Log(LogLevel::kWarning, std::string(kMemoryOnly) + "is unknown");
    return std::string();
  }
  if (!config->ok()) {
    link->Log(LogLevel::kWarning,
              std::string(kMemoryOnly) + "cannot be read: " + config->status().message());
    return std::string();
  }
  const std::string path = BanFilePath((*config)->persistence, (*config)->persistence_location);
  if (path.empty()) {
    link->Log(LogLevel::kNotice,
              "bans are kept in memory only (the broker runs without persistence): a broker "
              "restart forgets them");
  }
  return path;
}

// Silent and trickling HTTP connections each hold a descriptor until they are closed: take the
// whole budget the system allows (the soft limit up to the hard one).
rlim_t RaiseDescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) (void)getrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur;
}

int Run(int argc, char** argv) {
  CompanionArguments arguments;
  const Status parsed =
      ParseCompanionArguments(std::vector<std::string>(argv + 1, argv + argc), &arguments);
  if (!parsed.ok()) {
    std::fprintf(stderr, "mosquitto_connections_companion: %s\n", parsed.message().c_str());
    return 2;
  }
  // Die with the broker; and if it is already gone, do not start at all.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != arguments.broker_pid) return 1;
  // Nothing this process runs may gain privileges (setuid programs, file capabilities): it
  // serves the network, and needs none.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 1;
  // Two malloc arenas, not eight per core: the HTTP threads' big answers would otherwise each
  // leave memory behind in an arena of their own (resident memory after big lists).
  mallopt(M_ARENA_MAX, 2);
  // Blocks of 256 KiB and more mapped on their own, always: glibc's threshold would otherwise
  // grow to the size of the first big answer freed, and later answers, pages and socket dumps
  // would come from the arenas and stay there, cut up (about 5 MiB after serving at 15,000
  // connections, docs/benchmarks.md).
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGTERM, OnStopSignal);
  signal(SIGINT, OnStopSignal);
  const std::string priority_warning = YieldToBroker(arguments.broker_pid);

  StatusOr<std::unique_ptr<SharedRegion>> attached = SharedRegion::Attach(arguments.shared_fd);
  if (!attached.ok()) {
    std::fprintf(stderr, "mosquitto_connections_companion: %s\n",
                 attached.status().message().c_str());
    return 1;
  }
  const std::unique_ptr<SharedRegion> region = std::move(attached).value();
  CompanionLink link(region.get());
  if (!priority_warning.empty()) link.Log(LogLevel::kWarning, priority_warning);

  StatusOr<PluginOptions> parsed_options = ParsePluginOptions(arguments.options);
  if (!parsed_options.ok()) {
    link.ReportFailed(parsed_options.status().message());
    return 1;
  }
  const PluginOptions options = std::move(parsed_options).value();
  // Before the registry that publishes into it and the server whose streams read it.
  // Kept for resumption: at least 8192 changes, and twice a stream's buffer, so that a stream
  // is cut off for its lag before the changes it still needs are dropped.
  ConnectionChangesOptions changes_options;
  changes_options.history =
      std::max<std::size_t>(8192, 2 * std::size_t{options.http_stream_buffer});
  ConnectionChanges changes(changes_options);
  // Fed every change as it is published, before the registry publishes its first.
  ClientHistoryOptions history_options;
  history_options.per_client = options.history_events;
  history_options.max_events = options.history_max_events;
  ClientHistory history(history_options);
  changes.SetListener(
      [&history](const ConnectionChange& change) { history.Record(change, NowNs()); });
  ConnectionRegistryOptions registry_options;
  registry_options.changes = &changes;
  registry_options.node_id = options.node_id;
  registry_options.default_pattern = options.default_pattern;
  registry_options.closed_max = options.closed_max;
  registry_options.closed_ttl_ns = std::int64_t{options.closed_ttl_s} * 1000000000;
  registry_options.flapping_max_count = options.flapping_max_count;
  registry_options.flapping_window_s = options.flapping_window_time_s;
  // The broker's configuration, read once: listeners and bridges here, the ban file below.
  std::optional<StatusOr<BrokerConfig>> broker_config;
  if (!arguments.broker_config.empty()) broker_config = ReadBrokerConfig(arguments.broker_config);
  const StatusOr<BrokerConfig>* const read_config = broker_config ? &*broker_config : nullptr;
  ReadListeners(read_config, &link, &registry_options);
  registry_options.stats = region->stats_slots();
  ConnectionRegistry registry(registry_options);
  SyncedSource source(registry);
  NetworkInfoCacheOptions network_options;
  network_options.log = [&link](const std::string& line) { link.Log(LogLevel::kWarning, line); };
  NetworkInfoCache network(network_options);
  DetailedSource detailed_source(registry, &network);
  ConnectRpcServiceOptions connect_options;
  if (options.http_max_streams > 0) {
    connect_options.live = &registry;
    connect_options.changes = &changes;
    connect_options.max_streams = options.http_max_streams;
    connect_options.stream_buffer = options.http_stream_buffer;
  }
  // ListConnections with CONNECTION_SCOPE_FLEET (docs/fleet.md): null without peers.
  StatusOr<std::unique_ptr<FleetQuery>> fleet = MakeFleetQuery(options, detailed_source);
  if (!fleet.ok()) {
    link.ReportFailed(fleet.status().message());
    return 1;
  }
  if (*fleet) {
    connect_options.fleet = (*fleet)->Lister();
    connect_options.fleet_peers = static_cast<std::uint32_t>((*fleet)->peers().size());
  }
  connect_options.node_id = options.node_id;
  // WatchConnections with CONNECTION_SCOPE_FLEET: the same peers, streamed (docs/fleet.md).
  if (*fleet && connect_options.live != nullptr) {
    connect_options.fleet_watch = MakeFleetWatcher(**fleet, registry, &changes);
  }
  const ConnectRpcService connect_service(detailed_source, std::move(connect_options));
  MetricsExporter exporter(*region->header(), registry, options.node_id,
                           options.metrics_top_clients);
  exporter.SetBuildInfo(kPluginVersion, arguments.broker_version);
  if (*fleet) (*fleet)->SetDuplicatesGauge(exporter.AddFleetDuplicateClientIds());
  HttpRouter router(
      source, [&exporter] { return exporter.Render(); }, connect_service.Handler(),
      connect_service.Methods());

  AccessTokens tokens(options.RequiresToken());
  TokenSet token_set;
  const SecretsLog secrets_log = [&link](LogLevel level, const std::string& line) {
    link.Log(level, line);
  };
  const Status read_tokens = ReadTokens(options, &token_set, secrets_log);
  if (!read_tokens.ok()) {
    link.ReportFailed(read_tokens.message());
    return 1;
  }
  tokens.Replace(std::move(token_set));
  router.SetAccess(&tokens, options.metrics_public);
  router.SetHostCheck(HostCheck(options.http_allowed_hosts, options.http_bind));
  router.SetHealth([&registry] { return registry.current(); });
  router.SetErrorLog([&link](const std::string& line) { link.Log(LogLevel::kError, line); });
  BanStore ban_store(BanFile(read_config, &link),
                     [&link](const std::vector<Ban>& bans) { return link.SendBans(bans) != 0; });
  const Status bans_loaded = ban_store.Load(NowNs());
  if (!bans_loaded.ok()) {
    link.ReportFailed(bans_loaded.message());
    return 1;
  }
  BrokerBans broker_bans(&ban_store, &registry, &link, &region->header()->counters);
  broker_bans.set_flapping_ban_ns(std::int64_t{options.flapping_ban_time_s} * 1000000000);
  BanAdmin ban_admin = broker_bans.Admin();
  ban_admin.node_id = options.node_id;
  // With peers, bans go to another broker by nodeId, or to every broker (docs/fleet.md).
  if (*fleet) RouteBans(**fleet, &ban_admin);
  router.SetBanAdmin(std::move(ban_admin));
  router.SetClientHistory(&history);
  ActivityHistoryOptions activity_options;
  activity_options.interval_ns = std::int64_t{options.activity_interval_s} * 1'000'000'000;
  activity_options.samples = 3600 / options.activity_interval_s;  // an hour
  ActivityHistory activity(activity_options);
  router.SetActivity(&activity);
  if (!options.http_admin_token_file.empty()) {
    Disconnector local = [&registry, &link](const DisconnectTarget& target, const Caller& caller) {
      return DisconnectThroughBroker(registry, &link, target, caller);
    };
    // With peers, a nodeId of another broker goes to the peer that holds it (docs/fleet.md).
    router.SetDisconnector(*fleet ? RouteDisconnects(**fleet, options.node_id, std::move(local))
                                  : std::move(local));
  }

  HttpServerOptions server_options;
  server_options.bind_address = options.http_bind;
  server_options.port = options.http_port;
  const rlim_t descriptors = RaiseDescriptorLimit();
  // Room for the region, the log and MHD's own descriptors besides the connections.
  server_options.connection_limit = static_cast<unsigned>(
      std::min<rlim_t>(server_options.connection_limit, descriptors > 128 ? descriptors - 64 : 64));
  if (!options.http_tls_cert.empty()) {
    StatusOr<TlsPems> read = ReadTls(options);
    if (!read.ok()) {
      link.ReportFailed(read.status().message());
      return 1;
    }
    server_options.tls_cert_pem = std::move(read->cert);
    server_options.tls_key_pem = std::move(read->key);
  }
  server_options.log = [&link](const std::string& line) { link.Log(LogLevel::kWarning, line); };
  StatusOr<std::unique_ptr<HttpServer>> started =
      HttpServer::Start(server_options, [&router, &exporter](const HttpRequest& request) {
        HttpResponse response = router.Handle(request);
        exporter.CountHttpRequest(HttpPathLabel(request.path), response.status);
        return response;
      });
  if (!started.ok()) {
    link.ReportFailed(started.status().message());
    return 1;
  }
  const std::unique_ptr<HttpServer> server = std::move(started).value();
  link.Begin();
  // Before serving: the plugin reads the list while it waits for the companion, so the bans
  // are in force before the broker accepts its first client (and again after a restart of
  // this process).
  if (!ban_store.SendAll()) link.Log(LogLevel::kError, "the ban list could not reach the broker");
  link.ReportServing(server->port());
  HttpSecrets secrets(options, &tokens, server.get(),
                      TlsPems{server_options.tls_cert_pem, server_options.tls_key_pem},
                      secrets_log);

  CompanionParts parts;
  parts.link = &link;
  parts.registry = &registry;
  parts.changes = &changes;
  parts.broker_bans = &broker_bans;
  parts.network = &network;
  parts.activity = &activity;
  parts.counters = &region->header()->counters;
  parts.on_reload = [&secrets] { secrets.Reread(); };
  parts.upkeep = [&server] { server->StopRetired(); };
  Companion companion(std::move(parts));
  while (!g_stop.load() && getppid() == arguments.broker_pid) {
    companion.Wait(companion.Step(NowNs()));
  }
  return 0;
}

}  // namespace
}  // namespace mqc

int main(int argc, char** argv) {
  try {
    return mqc::Run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mosquitto_connections_companion: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "mosquitto_connections_companion: unknown error\n");
  }
  return 1;
}
