// SPDX-License-Identifier: BSD-3-Clause
// The companion's views at scale, in one process: N connections of two subscriptions each go
// through the real event path (encoded event records -> ConnectionRegistry::Apply), then the
// real views answer through the HttpRouter (no sockets: what remains is libmicrohttpd's part).
//
//   mqc_view_bench [--connections N] [--repeat R]     defaults 100000 and 5
//
// Prints one "name value" line per figure, times in milliseconds, medians of R runs:
//   feed_ms, list_page_first_ms, list_page_next_ms, list_page_after_change_ms (one event applied
//   before each request, so that the shared snapshot is built again), list_filter_client_id_ms,
//   kubemq_lookup_ms, kubemq_full_ms, kubemq_full_bytes; to show where the time goes:
//   shared_snapshot_ms (building the snapshot after a change), kubemq_select_ms (filter and
//   order of the full list), cjson_tree_ms (building and printing a cJSON tree of the same list,
//   as the view used to), list_page_query_ms (the query engine's part of a ListConnections page,
//   without encoding); query_in_1000_ms and list_filter_in_1000_ms (a filter `client_id IN
//   (1000 ids)`: the query engine's part, then the whole request with its page encoded),
//   query_or_prefixes_ms and list_filter_or_prefixes_ms (an OR of two client id prefixes, a
//   scan, a page of 1000 matches), each also as CPU time (_cpu_ms); rss_mib (resident memory at the
//   end); top_clients_100_ms and
//   top_clients_10_ms (TopClients over N connections that all had traffic in
//   the previous minute: the work plugin_opt_metrics_top_clients adds to each scrape) and
//   metrics_render_top_0_ms / metrics_render_top_100_ms (a whole /metrics render without and
//   with the top 100). Exits 1 with a message when an answer is wrong.
#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "../tests/support/cjson_builders.h"
#include "../tests/support/quote_filter_string.h"
#include "../tests/support/stats_slots.h"
#include "bench_args.h"
#include "bench_registry.h"
#include "companion/companion_link.h"
#include "companion/connection_registry.h"
#include "companion/http/connect_rpc_service.h"
#include "companion/http/http_router.h"
#include "companion/json_util.h"
#include "companion/metrics.h"
#include "companion/metrics_views.h"
#include "companion/query/connection_fields.h"
#include "companion/query/connection_query.h"
#include "link/clock.h"
#include "link/event_records.h"
#include "link/shared_region.h"
#include "link/text_util.h"
#include "link/topic_mapping.h"

namespace mqc {
namespace {

using bench::Fail;
using bench::Feed;
using bench::Get;
using bench::kSecond;
using bench::kStart;
using bench::ParseOptions;
using bench::ThreadCpuMs;

// The registry as the companion's views see it (src/companion/detailed_source.h, without the
// kernel's network figures: in process there are no sockets to read).
class RegistrySource : public ConnectionSource {
 public:
  explicit RegistrySource(const ConnectionRegistry& registry) : registry_(registry) {}
  std::vector<Connection> Snapshot() const override { return registry_.DetailedSnapshot(); }
  ConnectionList SharedSnapshot() const override { return registry_.SharedSnapshot(); }
  std::vector<ConnectionPtr> FindByClientId(std::string_view client_id) const override {
    return registry_.FindByClientId(client_id);
  }
  void AddDetails(std::vector<Connection>* connections) const override {
    registry_.AddDetails(connections);
  }

 private:
  const ConnectionRegistry& registry_;
};

std::string ClientId(long i) {
  char id[32];
  std::snprintf(id, sizeof(id), "bench-%06ld", i);
  return id;
}

bool FeedConnections(ConnectionRegistry* registry, long count, bool with_stats = false) {
  std::string bytes;
  for (long i = 0; i < count; ++i) {
    ConnectionEvent open;
    if (with_stats) open.stats_slot = static_cast<std::uint32_t>(i);
    open.seq = static_cast<std::uint64_t>(i + 1);
    for (std::size_t b = 0; b < open.uid.size(); ++b) {
      open.uid[b] = static_cast<std::uint8_t>((i >> (8 * (b % 4))) + b);
    }
    open.open_time_ns = kStart + i * 1'000'000;  // a thousand a second
    open.protocol_version = 4;
    open.keep_alive = 60;
    open.port = static_cast<std::uint16_t>(10000 + i % 50000);
    open.local_port = 1883;
    open.client_id = ClientId(i);
    open.username = i % 2 == 0 ? "device" : "";
    open.ip_address = "127.0.0.1";
    open.auth_mechanism = AuthMechanism::kAnonymous;
    open.auth_state = AuthState::kSuccess;
    if (!Feed(registry, EventType::kConnection, open, &bytes)) return false;
    for (const std::string& filter :
         {"events/bench/" + std::to_string(i), std::string("$share/g/queues/jobs")}) {
      SubscriptionEvent subscribe{open.seq, 1, filter};
      if (!Feed(registry, EventType::kSubscribe, subscribe, &bytes)) return false;
    }
  }
  return true;
}

// Median wall-clock milliseconds of `repeat` runs; *cpu_ms (when given) the median CPU time of
// this thread, which a machine shared with other work inflates less.
double MedianMs(int repeat, const std::function<void()>& run, double* cpu_ms = nullptr) {
  std::vector<double> times;
  std::vector<double> cpu_times;
  for (int i = 0; i < repeat; ++i) {
    const double cpu_start = ThreadCpuMs();
    const auto start = std::chrono::steady_clock::now();
    run();
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    cpu_times.push_back(ThreadCpuMs() - cpu_start);
  }
  std::sort(times.begin(), times.end());
  std::sort(cpu_times.begin(), cpu_times.end());
  if (cpu_ms != nullptr) *cpu_ms = cpu_times[cpu_times.size() / 2];
  return times[times.size() / 2];
}

HttpRequest Post(const std::string& body) {
  HttpRequest request;
  request.method = "POST";
  request.path = std::string(kConnectRpcServicePrefix) + "ListConnections";
  request.headers = {{"Content-Type", "application/json"}, {"Connect-Protocol-Version", "1"}};
  request.body = body;
  return request;
}

// A ListConnections request body: the filter as a JSON string, and the page size.
std::string RequestBody(const std::string& filter, long page_size) {
  CjsonPtr body = NewJsonObject();
  AddToJsonObject(body.get(), "filter", NewJsonString(filter));
  AddToJsonObject(body.get(), "pageSize", NewJsonNumber(static_cast<double>(page_size)));
  return PrintJson(*body);
}

// One filter timed two ways: the query on the source alone (a page of copies), and the same
// filter as a ListConnections POST through the router, so the report shows what the request
// parsing and the JSON add to the query.
struct FilterTimes {
  double query_ms = 0;
  double query_cpu_ms = 0;
  std::int64_t matches = 0;  // the query's total_size
  double post_ms = 0;
  double post_cpu_ms = 0;
  int status = 0;          // the last POST's, and the start of its body for a failure message
  std::string body_start;  // (the body itself is dropped: the report measures memory last)
};

FilterTimes TimeFilter(const ConnectionSource& source, const HttpRouter& router,
                       const std::string& filter, long page_size, int repeat) {
  FilterTimes times;
  ConnectionQuery query;
  query.filter = filter;
  query.page_size = page_size;
  ConnectionPage result;
  times.query_ms = MedianMs(
      repeat,
      [&] {
        result = ConnectionPage();
        (void)RunConnectionQuery(source, query, &result);
      },
      &times.query_cpu_ms);
  times.matches = result.total_size;
  const std::string body = RequestBody(filter, page_size);
  HttpResponse response;
  times.post_ms = MedianMs(
      repeat, [&] { response = router.Handle(Post(body)); }, &times.post_cpu_ms);
  times.status = response.status;
  times.body_start = response.body.substr(0, 200);
  return times;
}

// The value of "key":"..." in a JSON text (the page token), or "".
std::string JsonStringField(const std::string& text, const char* key) {
  const CjsonPtr root = ParseJson(text);
  const cJSON* item = cJSON_GetObjectItemCaseSensitive(root.get(), key);
  return cJSON_IsString(item) ? std::string(item->valuestring) : std::string();
}

// The KubeMQ list as a cJSON tree, built and printed the way the view did before JsonWriter.
std::string CjsonList(const std::vector<ConnectionPtr>& connections) {
  CjsonPtr list = NewJsonArray();
  for (const ConnectionPtr& c : connections) {
    CjsonPtr object = NewJsonObject();
    AddToJsonObject(object.get(), "client_id", NewJsonString(c->client_id));
    AddToJsonObject(object.get(), "protocol_version", NewJsonNumber(c->protocol_version));
    AddToJsonObject(object.get(), "remote_addr",
                    NewJsonString(c->ip_address + ":" + std::to_string(c->port)));
    AddToJsonObject(object.get(), "connected_at",
                    NewJsonString(FormatRfc3339Seconds(c->open_time_ns)));
    AddToJsonObject(object.get(), "clean_session", NewJsonBool(c->clean_session));
    if (!c->username.empty()) {
      AddToJsonObject(object.get(), "username", NewJsonString(c->username));
    }
    CjsonPtr subscriptions = NewJsonArray();
    for (const Subscription& s : c->subscriptions) {
      CjsonPtr item = NewJsonObject();
      AddToJsonObject(item.get(), "filter", NewJsonString(s.filter));
      AddToJsonObject(item.get(), "qos", NewJsonNumber(s.qos));
      AddToJsonObject(item.get(), "pattern", NewJsonString(PatternName(s.mapping.pattern)));
      AddToJsonObject(item.get(), "channel", NewJsonString(s.mapping.channel));
      AddToJsonObject(item.get(), "shared_group", NewJsonString(*s.mapping.shared_group));
      AddToJsonArray(subscriptions.get(), std::move(item));
    }
    AddToJsonObject(object.get(), "subscriptions", std::move(subscriptions));
    AddToJsonArray(list.get(), std::move(object));
  }
  return PrintJson(*list);
}

double ResidentMiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  }
  return 0;
}

// The top talkers of /metrics over `count` connections that all had traffic in the previous
// minute (a registry of its own, with statistics slots, so that the figures above stay those of
// a registry without them).
int TopClientsBench(long count, int repeat) {
  TestStatsSlots slots(static_cast<std::size_t>(count));
  ConnectionRegistryOptions options;
  options.stats = slots.view();
  ConnectionRegistry registry(options);
  for (long i = 0; i < count; ++i) slots[i].seq.store(static_cast<std::uint64_t>(i + 1));
  if (!FeedConnections(&registry, count, /*with_stats=*/true)) {
    return Fail("top clients: the registry did not take every event");
  }
  const std::int64_t minute = 60 * kSecond;
  const std::int64_t now = NowNs() / minute * minute;
  registry.RollStatisticsWindow(now);
  for (long i = 0; i < count; ++i) {
    // Distinct figures, not in the order of the connections: (i * 7919) mod count.
    Bump(slots[i].publish_count, 1 + static_cast<std::uint64_t>((i * 7919) % count));
    Bump(slots[i].deliver_count, static_cast<std::uint64_t>(i % 3));
  }
  registry.RollStatisticsWindow(now + minute);
  std::vector<TopClient> top;
  const double top100_ms = MedianMs(repeat, [&] { top = TopClients(registry, 100); });
  if (top.size() != 100 || top[0].recent.publish_count < top[99].recent.publish_count) {
    return Fail("top clients: wrong ranking");
  }
  const double top10_ms = MedianMs(repeat, [&] { top = TopClients(registry, 10); });
  auto created = SharedRegion::Create(SharedRegionSizes{1 << 12, 1 << 12, 16});
  if (!created.ok()) return Fail("shared region: " + created.status().message());
  const std::unique_ptr<SharedRegion> region = std::move(created).value();
  MetricsExporter without(*region->header(), registry, 0, 0);
  MetricsExporter with(*region->header(), registry, 0, 100);
  std::string text;
  const double render0_ms = MedianMs(repeat, [&] { text = without.Render(); });
  const double render100_ms = MedianMs(repeat, [&] { text = with.Render(); });
  if (text.find("kubemq_mqtt_top_client_messages_per_second{client_id=") == std::string::npos) {
    return Fail("top clients: not in /metrics");
  }
  std::printf("top_clients_100_ms %.2f\ntop_clients_10_ms %.2f\n", top100_ms, top10_ms);
  std::printf("metrics_render_top_0_ms %.2f\nmetrics_render_top_100_ms %.2f\n", render0_ms,
              render100_ms);
  return 0;
}

int Run(int argc, char** argv) {
  long count = 100000;
  int repeat = 5;
  const std::string error = ParseOptions(
      argc, argv,
      {{"--connections", 4L, 10'000'000L, &count}, {"--repeat", 1, 1'000'000, &repeat}});
  if (!error.empty()) return Fail(error + "; usage: [--connections N] [--repeat R]");

  ConnectionRegistryOptions options;
  ListenerConfig listener;
  listener.port = 1883;
  options.listeners.push_back(listener);
  ConnectionRegistry registry(options);
  bool fed = false;
  const double feed_ms = MedianMs(1, [&] { fed = FeedConnections(&registry, count); });
  if (!fed || registry.open_count() != static_cast<std::size_t>(count)) {
    return Fail("the registry did not take every event");
  }
  std::printf("connections %ld\nfeed_ms %.1f\n", count, feed_ms);

  const RegistrySource source(registry);
  const ConnectRpcService service(source);
  const HttpRouter router(source, nullptr, service.Handler());
  const long page = count > 2000 ? 1000 : count / 2;
  const std::string first_request = "{\"pageSize\":" + std::to_string(page) + "}";

  HttpResponse response;
  double first_cpu_ms = 0;
  const double first_ms = MedianMs(
      repeat, [&] { response = router.Handle(Post(first_request)); }, &first_cpu_ms);
  const std::string token = JsonStringField(response.body, "nextPageToken");
  if (response.status != 200 || token.empty()) return Fail("no next page: " + response.body);
  const std::string next_request =
      "{\"pageSize\":" + std::to_string(page) + ",\"pageToken\":\"" + token + "\"}";
  const double next_ms = MedianMs(repeat, [&] { response = router.Handle(Post(next_request)); });
  if (response.status != 200) return Fail("next page: " + response.body);

  const std::string middle = ClientId(count / 2);
  const std::string filter_request = "{\"filter\":\"client_id = \\\"" + middle + "\\\"\"}";
  const double filter_ms =
      MedianMs(repeat, [&] { response = router.Handle(Post(filter_request)); });
  if (response.body.find(middle) == std::string::npos) return Fail("filter: " + response.body);

  // client_id IN (1000 ids spread over the registry): one index lookup per id, a page of them.
  const long in_count = std::min(1000L, count);
  std::string in_filter = "client_id IN (";
  for (long i = 0; i < in_count; ++i) {
    in_filter += (i == 0 ? "" : ", ") + QuoteFilterString(ClientId(i * (count / in_count)));
  }
  in_filter += ")";
  const FilterTimes in_times = TimeFilter(source, router, in_filter, page, repeat);
  if (in_times.matches != in_count) return Fail("IN: wrong total");
  if (in_times.status != 200) return Fail("IN: " + in_times.body_start);

  // An OR of two prefixes, each of a thousandth of the id space (a scan), a page of matches.
  const std::string low = ClientId(count / 4).substr(0, 9);
  const std::string high = ClientId(count * 3 / 4).substr(0, 9);
  const std::string or_filter = "client_id = \"" + low + "*\" OR client_id = \"" + high + "*\"";
  const FilterTimes or_times = TimeFilter(source, router, or_filter, page, repeat);
  if (or_times.matches < page) return Fail("OR: fewer matches than a page");
  if (or_times.status != 200) return Fail("OR: " + or_times.body_start);

  const double lookup_ms = MedianMs(repeat, [&] {
    response = router.Handle(Get("/api/mqtt/connections", {{"client_id", middle}}));
  });
  if (response.Body().find("\"total\":1}") == std::string::npos) {
    return Fail("lookup: " + std::string(response.Body()));
  }
  double full_cpu_ms = 0;
  const double full_ms = MedianMs(
      repeat, [&] { response = router.Handle(Get("/api/mqtt/connections")); }, &full_cpu_ms);
  const std::string total = "\"total\":" + std::to_string(count) + "}";
  // Below the cache's 1 MiB the whole list is the router's kept answer (its shared_body).
  if (response.Body().find(total) == std::string::npos) return Fail("full list: wrong total");
  const std::size_t full_bytes = response.Body().size();
  response = HttpResponse();

  // Where the full list's time goes.
  // A registry that just changed builds its shared snapshot again: time that (one event, a
  // subscription of the first connection coming and going, before each run).
  ConnectionList shared;
  std::string bytes;
  int touches = 0;
  const auto touch = [&] {
    SubscriptionEvent event{1, 0, "events/touch"};
    (void)Feed(&registry, ++touches % 2 == 1 ? EventType::kSubscribe : EventType::kUnsubscribe,
               event, &bytes);
  };
  const double snapshot_ms = MedianMs(repeat, [&] {
    touch();
    shared = registry.SharedSnapshot();
  });
  HttpResponse changed;
  double changed_cpu_ms = 0;
  const double changed_ms = MedianMs(
      repeat,
      [&] {
        touch();
        changed = router.Handle(Post(first_request));
      },
      &changed_cpu_ms);
  if (changed.status != 200) return Fail("page after a change: " + changed.body);
  changed = HttpResponse();
  TypedConnectionQuery query;
  query.order =
      ConnectionOrder({OrderKey{FindField("open_time")}, OrderKey{FindField("client_id")}});
  query.unlimited = true;
  SharedConnectionPage selected;
  const double select_ms = MedianMs(repeat, [&] {
    selected = SharedConnectionPage();
    (void)RunConnectionQuery(source, query, &selected);
  });
  ConnectionQuery page_query;
  page_query.page_size = page;
  ConnectionPage page_copies;
  const double page_query_ms = MedianMs(repeat, [&] {
    page_copies = ConnectionPage();
    (void)RunConnectionQuery(source, page_query, &page_copies);
  });
  std::size_t cjson_bytes = 0;
  const double cjson_ms =
      MedianMs(repeat, [&] { cjson_bytes = CjsonList(selected.connections).size(); });
  selected = SharedConnectionPage();
  shared.reset();
  malloc_trim(0);

  std::printf("list_page_first_ms %.2f\nlist_page_first_cpu_ms %.2f\n", first_ms, first_cpu_ms);
  std::printf("list_page_next_ms %.2f\nlist_page_size %ld\n", next_ms, page);
  std::printf("list_page_after_change_ms %.2f\nlist_page_after_change_cpu_ms %.2f\n", changed_ms,
              changed_cpu_ms);
  std::printf("list_filter_client_id_ms %.3f\nkubemq_lookup_ms %.3f\n", filter_ms, lookup_ms);
  std::printf("kubemq_full_ms %.1f\nkubemq_full_cpu_ms %.1f\nkubemq_full_bytes %zu\n", full_ms,
              full_cpu_ms, full_bytes);
  std::printf("shared_snapshot_ms %.2f\nkubemq_select_ms %.1f\ncjson_tree_ms %.1f\n", snapshot_ms,
              select_ms, cjson_ms);
  std::printf("list_page_query_ms %.2f\n", page_query_ms);
  std::printf("query_in_1000_ms %.2f\nquery_in_1000_cpu_ms %.2f\n", in_times.query_ms,
              in_times.query_cpu_ms);
  std::printf("list_filter_in_1000_ms %.2f\nlist_filter_in_1000_cpu_ms %.2f\n", in_times.post_ms,
              in_times.post_cpu_ms);
  std::printf("in_1000_matches %lld\n", static_cast<long long>(in_times.matches));
  std::printf("query_or_prefixes_ms %.2f\nquery_or_prefixes_cpu_ms %.2f\n", or_times.query_ms,
              or_times.query_cpu_ms);
  std::printf("list_filter_or_prefixes_ms %.2f\nlist_filter_or_prefixes_cpu_ms %.2f\n",
              or_times.post_ms, or_times.post_cpu_ms);
  std::printf("or_prefixes_matches %lld\n", static_cast<long long>(or_times.matches));
  std::printf("cjson_tree_bytes %zu\nrss_mib %.1f\n", cjson_bytes, ResidentMiB());
  return TopClientsBench(count, repeat);
}

}  // namespace
}  // namespace mqc

int main(int argc, char** argv) { return mqc::Run(argc, argv); }
