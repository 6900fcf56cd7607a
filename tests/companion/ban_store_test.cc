// SPDX-License-Identifier: BSD-3-Clause
// The companion's ban list: the file round trip (written atomically, read back the same), a bad
// file refused with its name and the fault, expiry, replacing a ban on the same target, the
// broker's copy sent at every change and a change undone when it cannot be sent.
#include "companion/ban_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace mqc {
namespace {

constexpr std::int64_t kSecond = 1000000000;
constexpr std::int64_t kNow = 1780000000 * kSecond;

Ban Target(const std::string& as, const std::string& who, std::int64_t until_ns = 0) {
  Ban ban;
  EXPECT_TRUE(ParseBanTarget(as, who, &ban).ok());
  ban.until_ns = until_ns;
  ban.at_ns = kNow;
  return ban;
}

// The file's exact bytes: what an operator reads and what an older companion must parse.
TEST(BanFileTest, TheFileIsOneLineOfJsonInTheSchemasOrder) {
  Ban ban = Target("clientid", "mallory", kNow + 60 * kSecond);
  ban.reason = "spam \"quoted\"";
  ban.by = "admin token file line 1";
  EXPECT_EQ(SerializeBans({ban, Target("peerhost_net", "10.0.0.0/8")}),
            R"({"version":1,"bans":[{"as":"clientid","who":"mallory","by":"admin token file )"
            R"(line 1","reason":"spam \"quoted\"","at":"2026-05-28T20:26:40Z","until":)"
            R"("2026-05-28T20:27:40Z"},{"as":"peerhost_net","who":"10.0.0.0/8","by":"",)"
            R"("reason":"","at":"2026-05-28T20:26:40Z","until":null}]})"
            "\n");
  EXPECT_EQ(SerializeBans({}), "{\"version\":1,\"bans\":[]}\n");
}

class BanStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = ::testing::TempDir() + "ban-store-" + std::to_string(getpid());
    mkdir(folder_.c_str(), 0700);
    path_ = folder_ + "/" + kBanFileName;
    std::remove(path_.c_str());
  }
  void TearDown() override {
    std::remove(path_.c_str());
    rmdir(folder_.c_str());
  }
  void Write(const std::string& text) { std::ofstream(path_) << text; }
  std::function<bool(const std::vector<Ban>&)> Recorder() {
    return [this](const std::vector<Ban>& bans) {
      sent_.push_back(bans.size());
      return accept_;
    };
  }

  std::string folder_;
  std::string path_;
  std::vector<std::size_t> sent_;
  bool accept_ = true;
};

TEST_F(BanStoreTest, FileRoundTrip) {
  BanStore store(path_, Recorder());
  ASSERT_TRUE(store.Load(kNow).ok());  // no file yet: no bans
  Ban with_reason = Target("username", "mallory", kNow + 60 * kSecond);
  with_reason.reason = "spam \"quoted\"";
  with_reason.by = "admin token file line 1";
  ASSERT_TRUE(store.Add(with_reason, kNow).ok());
  ASSERT_TRUE(store.Add(Target("peerhost_net", "10.0.0.0/8"), kNow).ok());
  EXPECT_EQ(sent_, (std::vector<std::size_t>{1, 2}));
  EXPECT_NE(access((path_ + ".tmp").c_str(), F_OK), 0);  // renamed, not left behind

  BanStore reread(path_, Recorder());
  ASSERT_TRUE(reread.Load(kNow).ok());
  const std::vector<Ban> bans = reread.List(kNow);
  ASSERT_EQ(bans.size(), 2u);
  EXPECT_EQ(bans[0].who, "mallory");
  EXPECT_EQ(bans[0].reason, "spam \"quoted\"");
  EXPECT_EQ(bans[0].by, "admin token file line 1");
  EXPECT_EQ(bans[0].until_ns, kNow + 60 * kSecond);
  EXPECT_EQ(bans[0].at_ns, kNow);
  EXPECT_EQ(bans[1].who, "10.0.0.0/8");
  EXPECT_EQ(bans[1].until_ns, 0);
  EXPECT_EQ(SerializeBans(bans), SerializeBans(store.List(kNow)));
}

TEST_F(BanStoreTest, BadFilesAreRefusedWithTheirFault) {
  const auto fault = [this](const std::string& text) {
    Write(text);
    BanStore store(path_, Recorder());
    const Status status = store.Load(kNow);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(status.message().find(path_), std::string::npos) << status.message();
    return status.message();
  };
  EXPECT_NE(fault("{not json").find("not a JSON object"), std::string::npos);
  EXPECT_NE(fault("{\"version\":2,\"bans\":[]}").find("'version' must be 1"), std::string::npos);
  EXPECT_NE(fault("{\"version\":1}").find("'bans' must be an array"), std::string::npos);
  EXPECT_NE(fault("{\"version\":1,\"bans\":[{\"as\":\"clientid\",\"who\":\"a\"},"
                  "{\"as\":\"ip\",\"who\":\"b\"}]}")
                .find("ban 1: as: must be one of"),
            std::string::npos);
  EXPECT_NE(fault("{\"version\":1,\"bans\":[{\"as\":\"clientid\",\"who\":\"a\","
                  "\"until\":\"tomorrow\"}]}")
                .find("ban 0: until: 'tomorrow'"),
            std::string::npos);
  EXPECT_NE(fault("{\"version\":1,\"bans\":[{\"as\":\"clientid\",\"who\":\"a\"},"
                  "{\"as\":\"clientid\",\"who\":\"a\"}]}")
                .find("listed twice"),
            std::string::npos);
}

TEST_F(BanStoreTest, ExpiryDropsBansFromListFileAndBroker) {
  BanStore store(path_, Recorder());
  ASSERT_TRUE(store.Load(kNow).ok());
  ASSERT_TRUE(store.Add(Target("clientid", "short", kNow + 2 * kSecond), kNow).ok());
  ASSERT_TRUE(store.Add(Target("clientid", "long"), kNow).ok());
  EXPECT_EQ(store.List(kNow + 3 * kSecond).size(), 1u);  // hidden at once
  EXPECT_TRUE(store.Expire(kNow + kSecond).empty());
  const std::vector<Ban> expired = store.Expire(kNow + 3 * kSecond);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].who, "short");
  EXPECT_EQ(sent_.back(), 1u);
  BanStore reread(path_, Recorder());
  ASSERT_TRUE(reread.Load(kNow).ok());
  EXPECT_EQ(reread.List(kNow).size(), 1u);
  // An expired ban in the file is dropped when it is read.
  ASSERT_TRUE(store.Add(Target("clientid", "short", kNow + 2 * kSecond), kNow).ok());
  BanStore later(path_, Recorder());
  ASSERT_TRUE(later.Load(kNow + 5 * kSecond).ok());
  EXPECT_EQ(later.List(kNow + 5 * kSecond).size(), 1u);
}

TEST_F(BanStoreTest, SameTargetReplacesRemoveAndLimits) {
  BanStore store("", Recorder());  // memory only
  ASSERT_TRUE(store.Load(kNow).ok());
  Ban first = Target("clientid", "c");
  first.reason = "one";
  Ban second = Target("clientid", "c");
  second.reason = "two";
  ASSERT_TRUE(store.Add(first, kNow).ok());
  ASSERT_TRUE(store.Add(second, kNow).ok());
  ASSERT_EQ(store.List(kNow).size(), 1u);
  EXPECT_EQ(store.List(kNow)[0].reason, "two");
  Ban removed;
  EXPECT_EQ(store.Remove(Target("username", "c"), kNow, &removed).code(), StatusCode::kNotFound);
  ASSERT_TRUE(store.Remove(Target("clientid", "c"), kNow, &removed).ok());
  EXPECT_EQ(removed.reason, "two");
  EXPECT_TRUE(store.List(kNow).empty());
  for (std::size_t i = 0; i < kMaxBans; ++i) {
    ASSERT_TRUE(store.Add(Target("clientid", "c" + std::to_string(i)), kNow).ok());
  }
  EXPECT_EQ(store.Add(Target("clientid", "one more"), kNow).code(), StatusCode::kResourceExhausted);
  // A replacement needs no room.
  EXPECT_TRUE(store.Add(Target("clientid", "c0"), kNow).ok());
}

TEST_F(BanStoreTest, AChangeTheBrokerCannotTakeIsUndone) {
  BanStore store(path_, Recorder());
  ASSERT_TRUE(store.Load(kNow).ok());
  ASSERT_TRUE(store.Add(Target("clientid", "kept"), kNow).ok());
  accept_ = false;
  EXPECT_EQ(store.Add(Target("clientid", "lost"), kNow).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(store.List(kNow).size(), 1u);
  BanStore reread(path_, Recorder());
  ASSERT_TRUE(reread.Load(kNow).ok());
  EXPECT_EQ(reread.List(kNow).size(), 1u);
}

TEST(BanFilePathTest, BesideThePersistenceFileOrNowhere) {
  EXPECT_EQ(BanFilePath(false, "/var/lib/mosquitto/"), "");
  EXPECT_EQ(BanFilePath(true, "/var/lib/mosquitto/"),
            "/var/lib/mosquitto/mosquitto-connections-bans.json");
  EXPECT_EQ(BanFilePath(true, "/data"), "/data/mosquitto-connections-bans.json");
  EXPECT_EQ(BanFilePath(true, ""), "mosquitto-connections-bans.json");
}

}  // namespace
}  // namespace mqc
