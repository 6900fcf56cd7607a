// SPDX-License-Identifier: BSD-3-Clause
#include "link/broker_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace mqc {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

BrokerConfig Parse(const std::string& text) {
  BrokerConfig config;
  const Status parsed = ParseBrokerConfig(text, "test.conf", true, &config);
  EXPECT_TRUE(parsed.ok()) << parsed.message();
  return config;
}

// The status of a text the parser refuses, checked to be kInvalidArgument; its message says why.
Status Refusal(const std::string& text, const std::string& path = "m.conf",
               bool follow_includes = true) {
  BrokerConfig config;
  const Status status = ParseBrokerConfig(text, path, follow_includes, &config);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << text;
  return status;
}

TEST(BrokerConfigTest, NoListenerMeansLocalOnlyAndAnonymousAllowed) {
  const BrokerConfig config = Parse("# nothing\n\nplugin /x/mosquitto_connections.so\n");
  EXPECT_TRUE(config.local_only);
  EXPECT_TRUE(config.EffectiveAllowAnonymous());
  EXPECT_FALSE(config.password_file);
}

// Each `connection` block is a bridge: its first address (port 1883 unless written, split at
// the last ':' as the broker splits it), and its client ids as written or as the broker fills
// them in (src/conf.c: "<hostname>.<name>", "local.<remote_clientid>").
TEST(BrokerConfigTest, BridgesWithTheirAddressAndClientIds) {
  BrokerConfig config = Parse(
      "listener 1883\n"
      "connection to-cloud\n"
      "address 192.0.2.7:8883 192.0.2.8:8883\n"
      "topic # both 1\n"
      "remote_clientid edge-1\n"
      "local_clientid edge-1-local\n"
      "connection second\n"
      "addresses broker.example\n"
      "connection v6\n"
      "address ::1:1884\n"
      "clientid v6-remote\n"
      "connection bad-port\n"
      "address host:99999\n");
  ASSERT_EQ(config.bridges.size(), 4u);
  EXPECT_EQ(config.bridges[0].name, "to-cloud");
  EXPECT_EQ(config.bridges[0].host, "192.0.2.7");
  EXPECT_EQ(config.bridges[0].port, 8883);
  EXPECT_EQ(config.bridges[0].remote_clientid, "edge-1");
  EXPECT_EQ(config.bridges[0].local_clientid, "edge-1-local");
  EXPECT_EQ(config.bridges[1].host, "broker.example");
  EXPECT_EQ(config.bridges[1].port, 1883);
  EXPECT_EQ(config.bridges[2].host, "::1");
  EXPECT_EQ(config.bridges[2].port, 1884);
  EXPECT_EQ(config.bridges[2].remote_clientid, "v6-remote");
  EXPECT_EQ(config.bridges[3].host, "");  // the broker refuses it; here: unknown
  EXPECT_EQ(config.bridges[3].port, 0);
  // The listener is still read around them.
  ASSERT_EQ(config.listeners.size(), 1u);
  EXPECT_EQ(config.listeners[0].port, 1883);

  FillBridgeClientIds("edgehost", &config);
  EXPECT_EQ(config.bridges[0].local_clientid, "edge-1-local");
  EXPECT_EQ(config.bridges[1].remote_clientid, "edgehost.second");
  EXPECT_EQ(config.bridges[1].local_clientid, "local.edgehost.second");
  EXPECT_EQ(config.bridges[2].local_clientid, "local.v6-remote");
  // Bridge lines before any `connection` belong to none.
  EXPECT_TRUE(Parse("local_clientid x\naddress 1.2.3.4\n").bridges.empty());
}

TEST(BrokerConfigTest, AListenerWithoutAllowAnonymousRefusesAnonymous) {
  const BrokerConfig config = Parse("listener 1883\n");
  EXPECT_FALSE(config.local_only);
  EXPECT_FALSE(config.EffectiveAllowAnonymous());
  EXPECT_TRUE(Parse("listener 1883\nallow_anonymous true\n").EffectiveAllowAnonymous());
  EXPECT_FALSE(Parse("port 1883\n").local_only);
  EXPECT_FALSE(Parse("bind_address 127.0.0.1\n").local_only);
}

TEST(BrokerConfigTest, OtherAuthAndAclSources) {
  const std::string own = "/usr/lib/mosquitto_connections.so";
  EXPECT_FALSE(HasOtherAuthSource(Parse("plugin " + own + "\n"), own));
  EXPECT_FALSE(HasOtherAclSource(Parse("plugin " + own + "\n"), own));
  EXPECT_TRUE(HasOtherAuthSource(Parse("password_file /etc/p\n"), own));
  EXPECT_FALSE(HasOtherAclSource(Parse("password_file /etc/p\n"), own));
  EXPECT_TRUE(HasOtherAclSource(Parse("acl_file /etc/a\n"), own));
  EXPECT_FALSE(HasOtherAuthSource(Parse("acl_file /etc/a\n"), own));
  const BrokerConfig dynsec = Parse("plugin " + own + "\nplugin /usr/lib/dynamic-security.so\n");
  EXPECT_TRUE(HasOtherAuthSource(dynsec, own));
  EXPECT_TRUE(HasOtherAclSource(dynsec, own));
  EXPECT_TRUE(HasOtherAuthSource(Parse("auth_plugin /x/old_auth.so\n"), own));
}

// With per_listener_settings true, Mosquitto 2.0 applies security lines to the listener block
// they stand in, and a plugin sees only its own listener's clients.
TEST(BrokerConfigTest, PerListenerSettingsScopeTheSecurityToThePluginsListener) {
  const std::string own = "/usr/lib/mosquitto_connections.so";
  const BrokerConfig config = Parse(
      "per_listener_settings true\n"
      "listener 1883\nallow_anonymous true\nplugin " +
      own +
      "\n"
      "listener 1884\npassword_file /etc/p\nacl_file /etc/a\nallow_anonymous false\n"
      "plugin /usr/lib/dynamic-security.so\n");
  // The file as a whole has other sources; the plugin's listener has none.
  EXPECT_TRUE(HasOtherAuthSource(config, own));
  const BrokerConfig scoped = ScopeOf(config, own);
  EXPECT_FALSE(HasOtherAuthSource(scoped, own));
  EXPECT_FALSE(HasOtherAclSource(scoped, own));
  EXPECT_TRUE(scoped.EffectiveAllowAnonymous());
  // Listeners and plugin options stay the file's.
  EXPECT_EQ(scoped.listeners.size(), 2u);
  ASSERT_NE(OptionsOfPlugin(config, own), nullptr);

  const BrokerConfig second = Parse(
      "per_listener_settings true\n"
      "listener 1883\nallow_anonymous true\n"
      "listener 1884\npassword_file /etc/p\nplugin " +
      own + "\n");
  const BrokerConfig scoped_second = ScopeOf(second, own);
  EXPECT_TRUE(HasOtherAuthSource(scoped_second, own));
  EXPECT_FALSE(HasOtherAclSource(scoped_second, own));
  EXPECT_FALSE(scoped_second.EffectiveAllowAnonymous());
  // Without per_listener_settings the whole file counts.
  const BrokerConfig global =
      Parse("listener 1883\nplugin " + own + "\nlistener 1884\nacl_file /a\n");
  EXPECT_TRUE(HasOtherAclSource(ScopeOf(global, own), own));
}

// Mosquitto 2.1 loads plugins with global_plugin and plugin_load <name> <path> too.
TEST(BrokerConfigTest, The21PluginLinesAreOtherSourcesWithTheirOwnOptions) {
  const std::string own = "/usr/lib/mosquitto_connections.so";
  const BrokerConfig config = Parse(
      "global_plugin /usr/lib/mosquitto_password_file.so\nplugin_opt_password_file /etc/p\n"
      "plugin_load acl /usr/lib/mosquitto_acl_file.so\nplugin_opt_acl_file /etc/a\n"
      "listener 1883\nplugin_use acl\nlistener_allow_anonymous false\n"
      "plugin " +
      own + "\nplugin_opt_http_port 0\n");
  ASSERT_EQ(config.plugins.size(), 3u);
  EXPECT_EQ(config.plugins[1], "/usr/lib/mosquitto_acl_file.so");
  EXPECT_TRUE(HasOtherAuthSource(config, own));
  ASSERT_NE(OptionsOfPlugin(config, own), nullptr);
  EXPECT_EQ(OptionsOfPlugin(config, own)->size(), 1u);
  EXPECT_THAT(Refusal("plugin_load lonely\n", "x.conf", /*follow_includes=*/false).message(),
              ::testing::HasSubstr("plugin_load needs a name and a path"));
}

TEST(BrokerConfigTest, EachPluginKeepsTheOptionsWrittenAfterIt) {
  const BrokerConfig config = Parse(
      "plugin /x/other.so\nplugin_opt_a 1\n"
      "plugin /x/mosquitto_connections.so\nplugin_opt_closed_max  5 \nauth_opt_default_pattern "
      "store\nallow_anonymous true\n");
  ASSERT_EQ(config.plugin_options.size(), 2u);
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(config.plugin_options[0], (Pairs{{"a", "1"}}));
  EXPECT_EQ(config.plugin_options[1], (Pairs{{"closed_max", "5"}, {"default_pattern", "store"}}));
  EXPECT_EQ(OptionsOfPlugin(config, "/nowhere/else.so"), nullptr);
  EXPECT_THAT(Refusal("plugin_opt_a 1\n", "test.conf").message(),
              ::testing::HasSubstr("test.conf:1"));
}

TEST(BrokerConfigTest, ListenersAndTheirSettings) {
  const BrokerConfig config = Parse(
      "listener 1883 127.0.0.1\n"
      "listener 8883\n"
      "certfile /c.pem\nkeyfile /k.pem\nrequire_certificate true\n"
      "use_identity_as_username true\nmax_qos 1\n"
      "listener 8083\nprotocol websockets\n");
  ASSERT_EQ(config.listeners.size(), 3u);
  EXPECT_EQ(config.listeners[0].port, 1883);
  EXPECT_EQ(config.listeners[0].bind_address, "127.0.0.1");
  EXPECT_FALSE(config.listeners[0].tls);
  EXPECT_TRUE(config.listeners[1].tls);
  EXPECT_TRUE(config.listeners[1].require_certificate);
  EXPECT_TRUE(config.listeners[1].use_identity_as_username);
  EXPECT_EQ(config.listeners[1].max_qos, 1);
  EXPECT_EQ(config.listeners[2].protocol, "websockets");
}

// Mosquitto 2.1's PROXY protocol listeners: the version of the header each expects, and whether
// a v2 header must say the client reached the balancer over TLS.
TEST(BrokerConfigTest, ProxyProtocolListeners) {
  const BrokerConfig config = Parse(
      "listener 1883\n"
      "listener 1884\nenable_proxy_protocol 1\n"
      "listener 1885\nenable_proxy_protocol 2\nproxy_protocol_v2_require_tls true\n");
  std::vector<std::pair<int, bool>> proxy;  // (version, TLS required) by listener
  for (const ListenerConfig& listener : config.listeners) {
    proxy.emplace_back(listener.proxy_protocol, listener.proxy_v2_require_tls);
  }
  EXPECT_THAT(proxy, ElementsAre(Pair(0, false), Pair(1, false), Pair(2, true)));
  for (const char* bad :
       {"listener 1\nenable_proxy_protocol 3\n", "listener 1\nenable_proxy_protocol\n",
        "listener 1\nenable_proxy_protocol 0\n", "listener 1\nenable_proxy_protocol v2\n"}) {
    EXPECT_EQ(Refusal(bad).message(), "m.conf:2: enable_proxy_protocol needs 1 or 2") << bad;
  }
  EXPECT_EQ(Refusal("listener 1\nproxy_protocol_v2_require_tls 1\n").message(),
            "m.conf:2: proxy_protocol_v2_require_tls needs true or false");
}

TEST(BrokerConfigTest, BadBooleansAreRefusedWithFileAndLine) {
  EXPECT_EQ(Refusal("listener 1\nallow_anonymous yes\n").message(),
            "m.conf:2: allow_anonymous needs true or false");
  EXPECT_THAT(Refusal("per_listener_settings 1\n").message(),
              ::testing::HasSubstr("per_listener_settings"));
}

TEST(BrokerConfigTest, PersistenceFileAsTheBrokerBuildsItsPath) {
  EXPECT_FALSE(Parse("listener 1883\n").persistence);
  EXPECT_EQ(Parse("persistence_location /var/lib/mosquitto/\n").PersistenceFilePath(), "");
  EXPECT_EQ(Parse("persistence true\n").PersistenceFilePath(), "mosquitto.db");
  // Debian's own configuration: Mosquitto joins the two with one more slash.
  EXPECT_EQ(
      Parse("persistence true\npersistence_location /var/lib/mosquitto/\n").PersistenceFilePath(),
      "/var/lib/mosquitto//mosquitto.db");
  EXPECT_EQ(Parse("retained_persistence true\npersistence_location /d\npersistence_file s.db\n")
                .PersistenceFilePath(),
            "/d/s.db");
  EXPECT_EQ(Refusal("persistence on\n").message(), "m.conf:1: persistence needs true or false");
  EXPECT_EQ(Refusal("persistence_file\n").message(),
            "m.conf:1: persistence_file needs a file name");
  EXPECT_EQ(Refusal("persistence_location\n").message(),
            "m.conf:1: persistence_location needs a folder");
}

TEST(BrokerConfigTest, PersistentClientExpirationInTheBrokersUnits) {
  EXPECT_EQ(Parse("listener 1\n").persistent_client_expiration_s, 0);
  EXPECT_EQ(Parse("persistent_client_expiration 2h\n").persistent_client_expiration_s, 7200);
  EXPECT_EQ(Parse("persistent_client_expiration 14d\n").persistent_client_expiration_s, 14 * 86400);
  EXPECT_EQ(Parse("persistent_client_expiration 1m\n").persistent_client_expiration_s, 30 * 86400);
  EXPECT_EQ(Parse("persistent_client_expiration 1y\n").persistent_client_expiration_s, 365 * 86400);
  for (const char* bad : {"persistent_client_expiration 10\n", "persistent_client_expiration 0d\n",
                          "persistent_client_expiration d\n", "persistent_client_expiration x1d\n",
                          "persistent_client_expiration 10s\n"}) {
    EXPECT_THAT(Refusal(bad).message(), ::testing::HasSubstr("persistent_client_expiration needs"))
        << bad;
  }
}

TEST(BrokerConfigTest, QueueLimitsAsTheBrokerReadsThem) {
  // src/conf.c's defaults.
  const BrokerConfig::Queues defaults = Parse("listener 1\n").queues;
  EXPECT_EQ(defaults.max_queued_messages, 1000);
  EXPECT_EQ(defaults.max_queued_bytes, 0);
  EXPECT_EQ(defaults.max_inflight_bytes, 0);
  EXPECT_FALSE(defaults.queue_qos0_messages);
  EXPECT_FALSE(defaults.upgrade_outgoing_qos);
  const BrokerConfig::Queues set =
      Parse(
          "max_queued_messages 10\nmax_queued_bytes 4096\nmax_inflight_bytes 512\n"
          "queue_qos0_messages true\nupgrade_outgoing_qos true\n")
          .queues;
  EXPECT_EQ(set.max_queued_messages, 10);
  EXPECT_EQ(set.max_queued_bytes, 4096);
  EXPECT_EQ(set.max_inflight_bytes, 512);
  EXPECT_TRUE(set.queue_qos0_messages);
  EXPECT_TRUE(set.upgrade_outgoing_qos);
  // A negative number is 0 to the broker (no limit).
  EXPECT_EQ(Parse("max_queued_messages -5\n").queues.max_queued_messages, 0);
  EXPECT_THAT(Refusal("queue_qos0_messages maybe\n").message(),
              ::testing::HasSubstr("queue_qos0_messages needs true or false"));
}

TEST(BrokerConfigTest, IncludeDirIsReadInAlphabeticalOrder) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("mqc-include-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "b.conf") << "allow_anonymous false\n";
  std::ofstream(dir / "a.conf") << "allow_anonymous true\npassword_file /p\n";
  std::ofstream(dir / "c.txt") << "acl_file /ignored\n";
  const auto main_file = dir / "main.conf.main";
  std::ofstream(main_file) << "listener 1883\ninclude_dir " << dir.string() << "\n";
  const StatusOr<BrokerConfig> config = ReadBrokerConfig(main_file.string());
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_TRUE(config->password_file);
  EXPECT_FALSE(config->acl_file);
  EXPECT_EQ(config->allow_anonymous, false);  // b.conf after a.conf
  std::filesystem::remove_all(dir);
}

TEST(BrokerConfigTest, MissingFileIsAnError) {
  const StatusOr<BrokerConfig> config = ReadBrokerConfig("/nonexistent/mosquitto.conf");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(config.status().message(),
            "cannot read the broker configuration file /nonexistent/mosquitto.conf");
}

TEST(BrokerConfigTest, ConfigPathComesFromDashC) {
  EXPECT_EQ(ConfigPathFromArguments({"/usr/sbin/mosquitto", "-c", "/etc/m.conf"}), "/etc/m.conf");
  EXPECT_EQ(ConfigPathFromArguments({"mosquitto", "-v", "--config-file", "x.conf"}), "x.conf");
  EXPECT_EQ(ConfigPathFromArguments({"mosquitto", "-c"}), "");
  EXPECT_EQ(ConfigPathFromArguments({"mosquitto"}), "");
}

}  // namespace
}  // namespace mqc
