// SPDX-License-Identifier: BSD-3-Clause
// The broker's configuration reload through a FakeBroker and a real configuration file: what a
// reload applies, what it keeps with a warning, and that a file it cannot use changes nothing.
#include "broker/configuration.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "../support/fake_broker.h"

namespace mqc {
namespace {

using ::testing::HasSubstr;

class ReloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("mqc-reload-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    plugin_ = (dir_ / "mosquitto_connections.so").string();
    std::ofstream(plugin_) << "";
    state_.config_path = (dir_ / "mosquitto.conf").string();
    state_.own_path = plugin_;
    state_.options.http_port = 8080;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The configuration file as the operator left it before SIGHUP: a listener, the plugin with
  // these plugin_opt_ lines, and `extra`.
  void Write(const std::vector<std::string>& plugin_options, const std::string& extra = "") {
    std::ofstream file(state_.config_path);
    file << "listener 1883 127.0.0.1\nallow_anonymous true\nplugin " << plugin_ << "\n";
    for (const std::string& line : plugin_options) file << "plugin_opt_" << line << "\n";
    file << extra;
  }
  // The plugin as started on that file: its auth decisions made (as init does).
  void Start(const std::vector<std::string>& plugin_options) {
    Write(plugin_options);
    const StatusOr<BrokerConfig> config = ReadBrokerConfig(state_.config_path);
    ASSERT_TRUE(config.ok()) << config.status().message();
    state_.broker_config = *config;
    ApplyAuthDecisions(broker_, &state_, *config);
  }
  std::vector<std::string> Lines() const {
    std::vector<std::string> lines;
    for (const auto& [level, text] : broker_.log) lines.push_back(text);
    return lines;
  }

  std::filesystem::path dir_;
  std::string plugin_;
  FakeBroker broker_ = FakeBroker::Api20();
  static constexpr int kHttpPort = 8080;  // where the companion serves
  BrokerSettings state_;
};

TEST_F(ReloadTest, RegistryOptionsAreAppliedAndStartOnlyOnesKept) {
  Start({"http_port 8080"});
  Write({"http_port 9090", "default_pattern store", "closed_max 7", "kubemq_strict true",
         "client_layout off"});
  EXPECT_TRUE(ReloadConfiguration(broker_, &state_, kHttpPort));  // the registry's changed
  EXPECT_EQ(state_.options.default_pattern, DefaultPattern::kStore);
  EXPECT_EQ(state_.options.closed_max, 7u);
  EXPECT_EQ(state_.options.http_port, 8080);   // kept
  EXPECT_FALSE(state_.options.kubemq_strict);  // kept
  EXPECT_TRUE(state_.options.client_layout);   // kept
  EXPECT_TRUE(state_.settings_pending);
  EXPECT_THAT(Lines(), ::testing::ElementsAre(
                           "mosquitto_connections: reload: plugin_opt_http_port changed; keeping "
                           "serving on http://127.0.0.1:8080 (restart the broker to move the API)",
                           "mosquitto_connections: reload: plugin_opt_kubemq_strict changed; "
                           "keeping false until the broker restarts",
                           "mosquitto_connections: reload: plugin_opt_client_layout changed; "
                           "keeping verify until the broker restarts",
                           "mosquitto_connections: reload: applied default_pattern store, "
                           "closed_max 7"));
}

TEST_F(ReloadTest, NothingChangedLogsNothing) {
  Start({"http_port 8080"});
  EXPECT_FALSE(ReloadConfiguration(broker_, &state_, kHttpPort));
  EXPECT_TRUE(broker_.log.empty());
  EXPECT_EQ(state_.options.default_pattern, DefaultPattern::kEvents);
}

TEST_F(ReloadTest, AFileThatCannotBeUsedChangesNothing) {
  Start({});
  std::filesystem::remove(state_.config_path);  // gone
  ReloadConfiguration(broker_, &state_, kHttpPort);
  ASSERT_EQ(broker_.log.size(), 1u);
  EXPECT_EQ(broker_.log[0].first, LogLevel::kError);
  EXPECT_THAT(broker_.log[0].second, HasSubstr("keeping the configuration read before"));
  // The plugin's own options do not parse: every option stays.
  broker_.log.clear();
  Write({"default_pattern store", "closed_max lots"});
  ReloadConfiguration(broker_, &state_, kHttpPort);
  ASSERT_EQ(broker_.log.size(), 1u);
  EXPECT_EQ(broker_.log[0].first, LogLevel::kError);
  EXPECT_THAT(broker_.log[0].second, HasSubstr("plugin_opt_closed_max"));
  EXPECT_THAT(broker_.log[0].second, HasSubstr("keeping every option as it was"));
  EXPECT_EQ(state_.options.default_pattern, DefaultPattern::kEvents);
  // No plugin line names this plugin any more.
  broker_.log.clear();
  std::ofstream(state_.config_path) << "listener 1883 127.0.0.1\nallow_anonymous true\n";
  ReloadConfiguration(broker_, &state_, kHttpPort);
  ASSERT_EQ(broker_.log.size(), 1u);
  EXPECT_THAT(broker_.log[0].second, HasSubstr("no plugin line names this plugin any more"));
}

// 2.0: a password_file added by the reload is the broker's to check from now on; the plugin
// stops deciding authentication and says so. The answer to RELOAD is the one that lets the
// broker go on (2.0: DEFER, 2.1: success).
TEST_F(ReloadTest, AuthDecisionsFollowTheFileOn20) {
  Start({});
  EXPECT_TRUE(state_.decide_basic_auth);
  std::ofstream(dir_ / "passwd") << "";
  Write({}, "password_file " + (dir_ / "passwd").string() + "\n");
  ReloadConfiguration(broker_, &state_, kHttpPort);
  EXPECT_FALSE(state_.decide_basic_auth);
  ASSERT_FALSE(broker_.log.empty());
  EXPECT_THAT(broker_.log[0].second, HasSubstr("the plugin now decides authentication: no"));
  EXPECT_EQ(ReloadAnswer(false), kBrokerErrPluginDefer);
  EXPECT_EQ(ReloadAnswer(true), kBrokerSuccess);
}

}  // namespace
}  // namespace mqc
