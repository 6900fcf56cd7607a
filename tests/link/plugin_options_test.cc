// SPDX-License-Identifier: BSD-3-Clause
#include "link/plugin_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace mqc {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// The options `pairs` give, with a failure reported when the parser refuses them.
PluginOptions Parsed(const OptionPairs& pairs) {
  const StatusOr<PluginOptions> parsed = ParsePluginOptions(pairs);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  return parsed.ok() ? *parsed : PluginOptions{};
}

// The message of options the parser refuses, checked to be a kInvalidArgument refusal.
std::string RefusalMessage(const OptionPairs& pairs) {
  const StatusOr<PluginOptions> parsed = ParsePluginOptions(pairs);
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  return parsed.status().message();
}

// The options the contract gives a default for and a file may set, as the parser left them.
struct CoreOptions {
  int http_port;
  std::string http_bind;
  std::uint32_t node_id;
  DefaultPattern default_pattern;
  std::uint32_t closed_max;
  std::uint32_t closed_ttl_s;
  std::uint32_t rpc_timeout_s;
  std::uint32_t rpc_max_pending;
  std::string companion_path;
  bool presence_events;
  bool presence_retained;
  std::string presence_node;
};

// Field by field, so that a failure names the field.
void ExpectCoreOptions(const PluginOptions& options, const CoreOptions& expected) {
  EXPECT_EQ(options.http_port, expected.http_port);
  EXPECT_EQ(options.http_bind, expected.http_bind);
  EXPECT_EQ(options.node_id, expected.node_id);
  EXPECT_EQ(options.default_pattern, expected.default_pattern);
  EXPECT_EQ(options.closed_max, expected.closed_max);
  EXPECT_EQ(options.closed_ttl_s, expected.closed_ttl_s);
  EXPECT_EQ(options.rpc_timeout_s, expected.rpc_timeout_s);
  EXPECT_EQ(options.rpc_max_pending, expected.rpc_max_pending);
  EXPECT_EQ(options.companion_path, expected.companion_path);
  EXPECT_EQ(options.presence_events, expected.presence_events);
  EXPECT_EQ(options.presence_retained, expected.presence_retained);
  EXPECT_EQ(options.presence_node, expected.presence_node);
}

TEST(PluginOptionsTest, DefaultsMatchTheContract) {
  const PluginOptions options = Parsed({});
  ExpectCoreOptions(options, {/*http_port=*/8080, /*http_bind=*/"127.0.0.1", /*node_id=*/0,
                              DefaultPattern::kEvents, /*closed_max=*/1000, /*closed_ttl_s=*/300,
                              /*rpc_timeout_s=*/30, /*rpc_max_pending=*/1024,
                              /*companion_path=*/"", /*presence_events=*/false,
                              /*presence_retained=*/false, /*presence_node=*/""});
  EXPECT_EQ(options.http_max_streams, 8u);
  EXPECT_EQ(options.http_stream_buffer, 4096u);
}

TEST(PluginOptionsTest, StreamOptionsAreParsed) {
  const PluginOptions options = Parsed({{"http_max_streams", "0"}, {"http_stream_buffer", "16"}});
  EXPECT_EQ(options.http_max_streams, 0u);
  EXPECT_EQ(options.http_stream_buffer, 16u);
}

TEST(PluginOptionsTest, EveryOptionIsParsed) {
  const PluginOptions options = Parsed({{"http_port", "0"},
                                        {"http_bind", "::1"},
                                        {"node_id", "7"},
                                        {"default_pattern", "none"},
                                        {"closed_max", "0"},
                                        {"closed_ttl", "60"},
                                        {"rpc_timeout", "5"},
                                        {"rpc_max_pending", "10"},
                                        {"companion", "/opt/x/companion"},
                                        {"presence_events", "true"},
                                        {"presence_retained", "true"},
                                        {"presence_node", "mosquitto@edge-1"}});
  ExpectCoreOptions(options, {/*http_port=*/0, /*http_bind=*/"::1", /*node_id=*/7,
                              DefaultPattern::kNone, /*closed_max=*/0, /*closed_ttl_s=*/60,
                              /*rpc_timeout_s=*/5, /*rpc_max_pending=*/10,
                              /*companion_path=*/"/opt/x/companion", /*presence_events=*/true,
                              /*presence_retained=*/true, /*presence_node=*/"mosquitto@edge-1"});
}

TEST(PluginOptionsTest, SurroundingSpaceIsIgnored) {
  const PluginOptions options = Parsed({{"http_port", " 9090  "}, {"default_pattern", "store\t"}});
  EXPECT_EQ(options.http_port, 9090);
  EXPECT_EQ(options.default_pattern, DefaultPattern::kStore);
}

struct BadOption {
  const char* key;
  const char* value;
  const char* message_part;
};

TEST(PluginOptionsTest, BadValuesAreRefusedNamingOptionValueAndWhatIsAccepted) {
  const BadOption cases[] = {
      {"http_port", "65536", "from 0 to 65535"},
      {"http_port", "-1", "from 0 to 65535"},
      {"http_port", "80a", "bad value '80a' for plugin_opt_http_port"},
      {"http_port", "", "bad value '' for plugin_opt_http_port"},
      {"http_port", "8080 # default", "no end-of-line comments"},
      {"http_port", "99999999999999999999999", "from 0 to 65535"},
      {"http_bind", "localhost", "IPv4 or IPv6 address"},
      {"http_bind", "300.1.1.1", "IPv4 or IPv6 address"},
      {"node_id", "2147483648", "from 0 to 2147483647"},
      {"default_pattern", "queues", "events, store or none"},
      {"default_pattern", "Events", "events, store or none"},
      {"closed_max", "1000001", "from 0 to 1000000"},
      {"closed_ttl", "0", "from 1 to 604800"},
      {"rpc_timeout", "0", "from 1 to 3600"},
      {"rpc_max_pending", "0", "from 1 to 1000000"},
      {"http_max_streams", "257", "from 0 to 256 (WatchConnections streams at once"},
      {"http_max_streams", "many", "bad value 'many' for plugin_opt_http_max_streams"},
      {"http_stream_buffer", "15", "from 16 to 1000000"},
      {"companion", "relative/path", "absolute path"},
      {"http_token_file", "tokens.txt", "absolute path"},
      {"http_admin_token_file", "", "absolute path"},
      {"metrics_public", "yes", "true or false"},
      {"kubemq_strict", "on", "true or false"},
      {"client_layout", "on", "verify or off"},
      {"client_layout", "", "verify or off"},
      {"metrics_top_clients", "101", "from 0 to 100"},
      {"metrics_top_clients", "-1", "from 0 to 100"},
      {"http_tls_cert", "cert.pem", "absolute path"},
      {"http_tls_key", "key.pem", "absolute path"},
      {"http_allow_anonymous", "1", "true or false"},
      {"presence_events", "on", "true or false"},
      {"presence_retained", "1", "true or false"},
      {"presence_node", "a/b", "one MQTT topic level"},
      {"presence_node", "node+", "one MQTT topic level"},
      {"presence_node", "#", "one MQTT topic level"},
      {"presence_node", "", "one MQTT topic level"},
      {"http_allowed_hosts", "*", "wildcards are not accepted"},
      {"http_allowed_hosts", "*.example.com", "DNS rebinding"},
      {"http_allowed_hosts", "api.example.com:8080", "without a port"},
      {"http_allowed_hosts", "[::1]:8080", "without a port"},
      {"http_allowed_hosts", "", "no host given"},
      {"http_allowed_hosts", " , ", "no host given"},
      {"http_allowed_hosts", "a.example, b..example", "'b..example': an empty label"},
      {"http_allowed_hosts", "127.1", "four decimal numbers"},
      {"http_allowed_hosts", "[fe80::1%eth0]", "not an IPv6 address"},
      {"http_allowed_hosts", "http://a.example/", "not a host name"},
      {"http_allowed_hosts", "a.example # the proxy", "no end-of-line comments"},
      {"flapping_max_count", "100001", "from 0 to 100000"},
      {"flapping_max_count", "-1", "from 0 to 100000"},
      {"flapping_window_time", "0", "from 1 to 3600"},
      {"flapping_window_time", "1m", "bad value '1m' for plugin_opt_flapping_window_time"},
      {"flapping_ban_time", "604801", "from 1 to 604800"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.key) + "=" + c.value);
    const std::string message = RefusalMessage({{c.key, c.value}});
    EXPECT_THAT(message, HasSubstr(std::string("plugin_opt_") + c.key));
    EXPECT_THAT(message, HasSubstr(c.message_part));
  }
}

// The automatic ban of flapping clients: off unless max_count is set; EMQX's window and ban.
TEST(PluginOptionsTest, FlappingOptionsAreParsed) {
  EXPECT_EQ(PluginOptions{}.flapping_max_count, 0u);
  EXPECT_EQ(PluginOptions{}.flapping_window_time_s, 60u);
  EXPECT_EQ(PluginOptions{}.flapping_ban_time_s, 300u);
  const PluginOptions options = Parsed({{"flapping_max_count", "15"},
                                        {"flapping_window_time", "3600"},
                                        {"flapping_ban_time", "604800"}});
  EXPECT_EQ(options.flapping_max_count, 15u);
  EXPECT_EQ(options.flapping_window_time_s, 3600u);
  EXPECT_EQ(options.flapping_ban_time_s, 604800u);
}

TEST(PluginOptionsTest, PresenceNodeIsAtMost255BytesWithoutNul) {
  EXPECT_TRUE(ParsePluginOptions({{"presence_node", std::string(255, 'n')}}).ok());
  EXPECT_FALSE(ParsePluginOptions({{"presence_node", std::string(256, 'n')}}).ok());
  EXPECT_FALSE(ParsePluginOptions({{"presence_node", std::string("a\0b", 3)}}).ok());
}

TEST(PluginOptionsTest, StrictAndTopClientsAreParsed) {
  EXPECT_FALSE(PluginOptions{}.kubemq_strict);
  EXPECT_EQ(PluginOptions{}.metrics_top_clients, 0u);
  const PluginOptions options = Parsed({{"kubemq_strict", "true"}, {"metrics_top_clients", "100"}});
  EXPECT_TRUE(options.kubemq_strict);
  EXPECT_EQ(options.metrics_top_clients, 100u);
}

// plugin_opt_client_layout: verified and read unless turned off.
TEST(PluginOptionsTest, TheClientLayoutIsVerifiedUnlessTurnedOff) {
  EXPECT_TRUE(PluginOptions{}.client_layout);
  EXPECT_TRUE(Parsed({{"client_layout", "verify"}}).client_layout);
  EXPECT_FALSE(Parsed({{"client_layout", "off"}}).client_layout);
}

TEST(PluginOptionsTest, SecurityOptionsAreParsed) {
  const PluginOptions options = Parsed({{"http_token_file", "/etc/read"},
                                        {"http_admin_token_file", "/etc/admin"},
                                        {"metrics_public", "true"},
                                        {"http_tls_cert", "/etc/cert.pem"},
                                        {"http_tls_key", "/etc/key.pem"},
                                        {"http_allow_anonymous", "false"}});
  EXPECT_EQ(options.http_token_file, "/etc/read");
  EXPECT_EQ(options.http_admin_token_file, "/etc/admin");
  EXPECT_TRUE(options.metrics_public);
  EXPECT_EQ(options.http_tls_cert, "/etc/cert.pem");
  EXPECT_EQ(options.http_tls_key, "/etc/key.pem");
  EXPECT_FALSE(options.http_allow_anonymous);
  EXPECT_TRUE(options.RequiresToken());
  EXPECT_FALSE(PluginOptions{}.RequiresToken());
}

TEST(PluginOptionsTest, AllowedHostsAreCanonicalWhateverTheSeparator) {
  EXPECT_TRUE(PluginOptions{}.http_allowed_hosts.empty());
  const PluginOptions options =
      Parsed({{"http_allowed_hosts",
               "API.Example.com., 192.0.2.10 [2001:DB8::10],,2001:db8::11\tapi.example.com"}});
  EXPECT_THAT(options.http_allowed_hosts, ::testing::ElementsAre("api.example.com", "192.0.2.10",
                                                                 "2001:db8::10", "2001:db8::11"));
}

TEST(PluginOptionsTest, TlsCertificateAndKeyComeTogether) {
  EXPECT_THAT(RefusalMessage({{"http_tls_cert", "/c.pem"}}),
              HasSubstr("plugin_opt_http_tls_cert is set without plugin_opt_http_tls_key"));
  EXPECT_THAT(RefusalMessage({{"http_tls_key", "/k.pem"}}),
              HasSubstr("plugin_opt_http_tls_key is set without plugin_opt_http_tls_cert"));
}

TEST(PluginOptionsTest, ExposedBindNeedsATokenFileOrAllowAnonymous) {
  for (const char* bind : {"0.0.0.0", "::", "192.0.2.1", "2001:db8::1"}) {
    SCOPED_TRACE(bind);
    const std::string refusal = RefusalMessage({{"http_bind", bind}});
    EXPECT_THAT(refusal, HasSubstr("plugin_opt_http_token_file"));
    EXPECT_THAT(refusal, HasSubstr("plugin_opt_http_allow_anonymous"));
    EXPECT_TRUE(ParsePluginOptions({{"http_bind", bind}, {"http_allow_anonymous", "true"}}).ok());
    EXPECT_TRUE(ParsePluginOptions({{"http_bind", bind}, {"http_token_file", "/t"}}).ok());
    EXPECT_TRUE(ParsePluginOptions({{"http_bind", bind}, {"http_admin_token_file", "/t"}}).ok());
  }
  for (const char* bind : {"127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"}) {
    SCOPED_TRACE(bind);
    const StatusOr<PluginOptions> parsed = ParsePluginOptions({{"http_bind", bind}});
    EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  }
}

TEST(PluginOptionsTest, UnknownOptionIsRefusedWithTheKnownOnes) {
  const std::string message = RefusalMessage({{"http_prot", "8080"}});
  EXPECT_THAT(message, HasSubstr("unknown option plugin_opt_http_prot"));
  EXPECT_THAT(message, HasSubstr("http_port"));
  EXPECT_THAT(message, HasSubstr("rpc_max_pending"));
}

}  // namespace
}  // namespace mqc

namespace mqc {
namespace {

TEST(PluginOptionsFleetTest, PeersAreParsedToCanonicalUrls) {
  const PluginOptions options =
      Parsed({{"fleet_peers", " http://127.0.0.1:8081/, https://[::1]:8443 ,http://Broker-C"},
              {"fleet_token_file", "/etc/mqc/fleet-token"},
              {"fleet_ca_file", "/etc/mqc/ca.pem"}});
  ASSERT_EQ(options.fleet_peers.size(), 3u);
  EXPECT_EQ(options.fleet_peers[0].Text(), "http://127.0.0.1:8081");
  EXPECT_EQ(options.fleet_peers[1].Text(), "https://[::1]:8443");
  EXPECT_TRUE(options.fleet_peers[1].https);
  EXPECT_EQ(options.fleet_peers[2].Text(), "http://broker-c:80");
  EXPECT_EQ(options.fleet_peers[2].HostHeader(), "broker-c:80");
  EXPECT_EQ(options.fleet_token_file, "/etc/mqc/fleet-token");
  EXPECT_EQ(options.fleet_ca_file, "/etc/mqc/ca.pem");
}

TEST(PluginOptionsFleetTest, BadPeersAreRefusedNamingTheOptionAndThePeer) {
  EXPECT_THAT(RefusalMessage({{"fleet_peers", "http://127.0.0.1:8081,ftp://x"}}),
              AllOf(HasSubstr("plugin_opt_fleet_peers"), HasSubstr("peer 2 'ftp://x'"),
                    HasSubstr("http:// or https://")));
  EXPECT_THAT(RefusalMessage({{"fleet_peers", "http://127.0.0.1:8081/api"}}), HasSubstr("no path"));
  EXPECT_THAT(RefusalMessage({{"fleet_peers", "http://127.0.0.1:0"}}),
              HasSubstr("port is not 1 to 65535"));
  EXPECT_THAT(RefusalMessage({{"fleet_peers", "http://127.0.0.1:8081,,http://b"}}),
              HasSubstr("peer 2 is empty"));
  EXPECT_THAT(RefusalMessage({{"fleet_peers", "http://[::1:8081"}}), HasSubstr("']'"));
  EXPECT_THAT(RefusalMessage({{"fleet_peers", "http://bad host"}}), HasSubstr("bad host"));
}

TEST(PluginOptionsFleetTest, AtMost64Peers) {
  std::string peers;
  for (int i = 1; i <= 65; ++i) {
    peers += (i == 1 ? "" : ",") + ("http://127.0.0.1:" + std::to_string(i));
  }
  EXPECT_THAT(RefusalMessage({{"fleet_peers", peers}}), HasSubstr("more than 64 peers"));
  peers.resize(peers.rfind(','));
  EXPECT_EQ(Parsed({{"fleet_peers", peers}}).fleet_peers.size(), 64u);
}

TEST(PluginOptionsFleetTest, APeerGivenTwiceIsRefused) {
  EXPECT_THAT(
      RefusalMessage({{"fleet_peers", "http://LOCALHOST:8081, http://localhost:8081/"}}),
      AllOf(HasSubstr("plugin_opt_fleet_peers"), HasSubstr("names http://localhost:8081 again")));
  // The default port written out is the same peer.
  EXPECT_THAT(RefusalMessage({{"fleet_peers", "https://b, https://b:443"}}), HasSubstr("again"));
}

TEST(PluginOptionsFleetTest, APeerNamingThisBrokerIsRefused) {
  EXPECT_THAT(RefusalMessage({{"http_port", "8081"}, {"fleet_peers", "http://127.0.0.1:8081"}}),
              AllOf(HasSubstr("plugin_opt_fleet_peers names http://127.0.0.1:8081"),
                    HasSubstr("this broker's own API")));
  EXPECT_THAT(RefusalMessage({{"http_port", "8081"}, {"fleet_peers", "http://localhost:8081"}}),
              HasSubstr("own API"));
  // Another port of this machine is another broker.
  EXPECT_EQ(
      Parsed({{"http_port", "8081"}, {"fleet_peers", "http://127.0.0.1:8082"}}).fleet_peers.size(),
      1u);
  // Bound to one address: another loopback address is not this broker.
  EXPECT_EQ(Parsed({{"http_port", "8081"},
                    {"http_bind", "127.0.0.2"},
                    {"http_allow_anonymous", "true"},
                    {"fleet_peers", "http://127.0.0.1:8081"}})
                .fleet_peers.size(),
            1u);
}

TEST(PluginOptionsFleetTest, TokenOrCaFileWithoutPeersIsRefused) {
  EXPECT_THAT(RefusalMessage({{"fleet_token_file", "/t"}}),
              HasSubstr("plugin_opt_fleet_token_file is set without plugin_opt_fleet_peers"));
  EXPECT_THAT(RefusalMessage({{"fleet_ca_file", "/ca.pem"}}),
              HasSubstr("plugin_opt_fleet_ca_file is set without"));
  EXPECT_THAT(RefusalMessage({{"fleet_peers", "http://b"}, {"fleet_token_file", "token"}}),
              HasSubstr("absolute path"));
}

}  // namespace
}  // namespace mqc
