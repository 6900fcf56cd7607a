// SPDX-License-Identifier: BSD-3-Clause
#include "link/companion_arguments.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mqc {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

CompanionArguments Full() {
  CompanionArguments arguments;
  arguments.shared_fd = 3;
  arguments.broker_pid = 4242;
  arguments.broker_config = "/etc/mosquitto/mosquitto.conf";
  arguments.broker_version = "2.0.21";
  arguments.options = {
      {"http_port", "8080"}, {"http_bind", "::1"}, {"empty", ""}, {"with_equals", "a=b"}};
  return arguments;
}

void ExpectSame(const CompanionArguments& got, const CompanionArguments& want) {
  EXPECT_EQ(got.shared_fd, want.shared_fd);
  EXPECT_EQ(got.broker_pid, want.broker_pid);
  EXPECT_EQ(got.broker_config, want.broker_config);
  EXPECT_EQ(got.broker_version, want.broker_version);
  EXPECT_EQ(got.options, want.options);
}

TEST(CompanionArgumentsTest, WrittenArgumentsParseBackToTheSameValues) {
  const CompanionArguments written = Full();
  CompanionArguments parsed;
  const Status status = ParseCompanionArguments(WriteCompanionArguments(written), &parsed);
  ASSERT_TRUE(status.ok()) << status.message();
  ExpectSame(parsed, written);
}

TEST(CompanionArgumentsTest, OptionalArgumentsLeftOutParseBackEmpty) {
  CompanionArguments written;
  written.shared_fd = 0;
  written.broker_pid = 1;
  const std::vector<std::string> list = WriteCompanionArguments(written);
  EXPECT_THAT(list, ElementsAre("--shared-fd=0", "--broker-pid=1", "--"));
  CompanionArguments parsed;
  ASSERT_TRUE(ParseCompanionArguments(list, &parsed).ok());
  ExpectSame(parsed, written);
}

TEST(CompanionArgumentsTest, TheWrittenFormIsTheDocumentedOne) {
  EXPECT_THAT(
      WriteCompanionArguments(Full()),
      ElementsAre("--shared-fd=3", "--broker-pid=4242",
                  "--broker-config=/etc/mosquitto/mosquitto.conf", "--broker-version=2.0.21", "--",
                  "http_port=8080", "http_bind=::1", "empty=", "with_equals=a=b"));
}

TEST(CompanionArgumentsTest, OverridesAppendedAfterTheListParseAsLaterOptions) {
  const CompanionArguments written = Full();
  std::vector<std::string> list = WriteCompanionArguments(written);
  for (std::string& option : WriteOptionArguments({{"http_port", "0"}, {"closed_max", "5"}})) {
    list.push_back(std::move(option));
  }
  CompanionArguments parsed;
  ASSERT_TRUE(ParseCompanionArguments(list, &parsed).ok());
  OptionPairs want = written.options;
  want.emplace_back("http_port", "0");
  want.emplace_back("closed_max", "5");
  EXPECT_EQ(parsed.options, want);
}

Status Parse(const std::vector<std::string>& list) {
  CompanionArguments parsed;
  return ParseCompanionArguments(list, &parsed);
}

TEST(CompanionArgumentsTest, ABadArgumentIsRefusedByName) {
  struct Case {
    std::vector<std::string> list;
    const char* named;
  };
  const Case cases[] = {
      {{"--shared-fd=3", "--broker-pid=7", "--verbose"}, "unknown argument: --verbose"},
      {{"--shared-fd=x", "--broker-pid=7"}, "--shared-fd=x"},
      {{"--shared-fd=3x", "--broker-pid=7"}, "--shared-fd=3x"},
      {{"--shared-fd=-1", "--broker-pid=7"}, "--shared-fd=-1"},
      {{"--shared-fd=3", "--broker-pid="}, "--broker-pid="},
      {{"--shared-fd=3", "--broker-pid=0"}, "--broker-pid=0"},
      {{"--shared-fd=3", "--broker-pid=7", "--", "no_equals"}, "option without '=': no_equals"},
  };
  for (const Case& c : cases) {
    const Status status = Parse(c.list);
    EXPECT_FALSE(status.ok()) << c.named;
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.named;
    EXPECT_THAT(status.message(), HasSubstr(c.named));
  }
}

TEST(CompanionArgumentsTest, TheDescriptorAndTheBrokerAreRequired) {
  EXPECT_THAT(Parse({"--broker-pid=7"}).message(), HasSubstr("--shared-fd"));
  EXPECT_THAT(Parse({"--shared-fd=3"}).message(), HasSubstr("--broker-pid"));
  EXPECT_FALSE(Parse({}).ok());
}

TEST(CompanionArgumentsTest, ARefusalLeavesTheOutputAlone) {
  CompanionArguments out = Full();
  EXPECT_FALSE(ParseCompanionArguments({"--shared-fd=1", "--bogus"}, &out).ok());
  ExpectSame(out, Full());
}

}  // namespace
}  // namespace mqc
