// SPDX-License-Identifier: BSD-3-Clause
// The cost of the Connect service's codecs (src/companion/http/connect_codec.h), in process:
// one page of ListConnections taken from a snapshot, written by each encoder, and a request read
// by each decoder. Medians over --repeat runs, one line per figure:
//
//   mqc_connect_codec_bench [--connections N] [--page P] [--repeat R]   (15000, 1000, 20)
//
// Compares the JSON encoder the service uses (JsonWriter, connect_rpc_json.cc) with protobuf's own
// JSON printer (google::protobuf::util::MessageToJsonString, fed by connect_rpc_proto.cc), and
// the binary encoder; the binary answer read back as a fleet peer's is; the query itself
// (RunConnectionQuery over N connections) for scale.
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "../tests/support/fleet_source.h"
#include "companion/connection.h"
#include "companion/http/connect_rpc_json.h"
#include "companion/http/connect_rpc_proto.h"
#include "companion/query/connection_query.h"
#include "link/topic_mapping.h"

namespace mqc {
namespace {

constexpr std::int64_t kSecond = 1'000'000'000;

// A connection as the broker benchmark makes them: MQTT 3.1.1, one subscription, traffic.
Connection Example(int i) {
  Connection c;
  c.seq = static_cast<std::uint64_t>(i) + 1;
  char uid[40];
  std::snprintf(uid, sizeof uid, "%08x-0000-4000-8000-%012x", i, i);
  c.uid = uid;
  c.node_id = 1;
  c.state = ConnectionState::kOpen;
  c.open_time_ns = 1781260200 * kSecond + i * 1'234'567;
  c.client_id = "bench-client-" + std::to_string(i);
  c.username = i % 2 == 0 ? "user-" + std::to_string(i % 100) : "";
  c.protocol_version = 4;
  c.keep_alive = 60;
  c.ip_address = "127.0.0.1";
  c.port = 20000 + i % 40000;
  c.listener_name = "mqtt:1883";
  c.authentication.mechanism = AuthMechanism::kPassword;
  c.authentication.state = AuthState::kSuccess;
  c.authentication.user_principal = c.username;
  Subscription subscription;
  subscription.filter = "events/site" + std::to_string(i % 50) + "/#";
  subscription.qos = 1;
  subscription.mapping = MapTopicFilter(subscription.filter, DefaultPattern::kEvents);
  c.subscriptions.push_back(subscription);
  c.idle_ns = 1'500'000'000 + i;
  c.total_statistics = {100u + i, 12345u + i, 90u, 9000u, 101u + i};
  c.recent_statistics = {2, 200, 1, 100, 2};
  return c;
}

double MedianMs(int repeat, const std::function<void()>& work) {
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    work();
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int Run(int connections, int page_size, int repeat) {
  std::vector<Connection> snapshot;
  for (int i = 0; i < connections; ++i) snapshot.push_back(Example(i));
  const FleetSource source(snapshot);
  ConnectionQuery query;
  query.page_size = page_size;
  ConnectionPage page;
  const double query_ms = MedianMs(repeat, [&] {
    page = ConnectionPage();
    if (!RunConnectionQuery(source, query, &page).ok()) std::abort();
  });
  std::printf("query over %d connections, page of %zu: %.2f ms\n", connections,
              page.connections.size(), query_ms);

  std::string text;
  const double json_ms = MedianMs(repeat, [&] { text = ListConnectionsResponseJson(page); });
  std::printf("JSON, hand-written encoder (JsonWriter): %.2f ms, %zu bytes\n", json_ms,
              text.size());

  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = false;
  std::string printed;
  const double mapping_ms = MedianMs(repeat, [&] {
    connections_v1::ListConnectionsResponse message;
    ListConnectionsResponseToProto(page, &message);
  });
  const double protojson_ms = MedianMs(repeat, [&] {
    connections_v1::ListConnectionsResponse message;
    ListConnectionsResponseToProto(page, &message);
    printed.clear();
    if (!google::protobuf::util::MessageToJsonString(message, &printed, options).ok()) std::abort();
  });
  std::printf(
      "JSON, protobuf's MessageToJsonString (model -> message -> JSON): %.2f ms, %zu bytes\n",
      protojson_ms, printed.size());
  std::printf("  of which model -> message: %.2f ms\n", mapping_ms);

  std::string binary;
  const double binary_ms =
      MedianMs(repeat, [&] { binary = EncodeListConnectionsResponseProto(page); });
  std::printf("binary protobuf (model -> message -> bytes): %.2f ms, %zu bytes\n", binary_ms,
              binary.size());

  // Read back as the fleet reads a peer's answer (DecodeListConnectionsResponseProto: protobuf's
  // parser, then ConnectionFromProto per connection).
  ConnectionPage read_back;
  const double read_ms = MedianMs(repeat, [&] {
    if (!DecodeListConnectionsResponseProto(binary, "bench", &read_back).ok()) std::abort();
  });
  if (read_back.connections.size() != page.connections.size()) std::abort();
  std::printf("binary protobuf read back (bytes -> message -> model): %.2f ms, %zu connections\n",
              read_ms, read_back.connections.size());

  const std::string request =
      R"({"filter":"client_id = \"bench-client-1*\" AND protocol_version = 4",)"
      R"("orderBy":"open_time desc","pageSize":1000})";
  const int request_repeat = repeat * 1000;
  ListConnectionsRequest decoded;
  const double hand_us = 1000 * MedianMs(request_repeat, [&] {
                           if (!DecodeListConnectionsRequest(request, "body", &decoded).ok())
                             std::abort();
                         });
  connections_v1::ListConnectionsRequest message;
  const double protobuf_us =
      1000 * MedianMs(request_repeat, [&] {
        message.Clear();
        if (!google::protobuf::util::JsonStringToMessage(request, &message).ok()) {
          std::abort();
        }
      });
  std::printf(
      "request JSON, hand-written decoder: %.1f us; protobuf's JsonStringToMessage: %.1f us\n",
      hand_us, protobuf_us);
  return 0;
}

}  // namespace
}  // namespace mqc

int main(int argc, char** argv) {
  int connections = 15000;
  int page = 1000;
  int repeat = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const int value = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--connections") == 0) {
      connections = value;
    } else if (std::strcmp(argv[i], "--page") == 0) {
      page = value;
    } else if (std::strcmp(argv[i], "--repeat") == 0) {
      repeat = value;
    } else {
      std::fprintf(stderr, "mqc_connect_codec_bench: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (connections < 1 || page < 1 || page > 10000 || repeat < 1) {
    std::fprintf(stderr,
                 "mqc_connect_codec_bench: --connections, --page (1 to 10000) and "
                 "--repeat must be positive\n");
    return 2;
  }
  return mqc::Run(connections, page, repeat);
}
