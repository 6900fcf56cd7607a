// SPDX-License-Identifier: BSD-3-Clause
#include "broker/acl_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <initializer_list>
#include <optional>
#include <string>

namespace mqc {
namespace {

using ::testing::HasSubstr;

constexpr int kRead = AclFile::kRead;
constexpr int kWrite = AclFile::kWrite;

AclFile Parsed(const std::string& text) {
  AclFile file;
  const Status status = AclFile::Parse(text, "acl", &file);
  EXPECT_TRUE(status.ok()) << status.message();
  return file;
}

constexpr const char* kAnonymous = nullptr;

// The acl_file of integration/test_auth_neutrality.py.
constexpr char kNeutralityFile[] =
    "topic read public/#\n"
    "topic readwrite anon/#\n"
    "\n"
    "user user\n"
    "topic readwrite user/#\n"
    "topic read public/#\n"
    "topic write drop/#\n"
    "\n"
    "user other\n"
    "topic read user/#\n"
    "topic readwrite other/#\n"
    "topic write public/#\n"
    "\n"
    "pattern readwrite clients/%c/#\n"
    "pattern read home/%u/#\n";

constexpr bool kAllowed = true;
constexpr bool kDenied = false;

// One question to an AclFile (client id, username, topic, access) and the answer expected.
struct AccessCase {
  const char* client_id;
  const char* username;
  const char* topic;
  int access;
  bool allowed;
};

void ExpectAnswers(const AclFile& file, std::initializer_list<AccessCase> cases) {
  for (const AccessCase& c : cases) {
    EXPECT_EQ(file.Allows(c.client_id, c.username, c.topic, c.access), c.allowed)
        << "client " << c.client_id << ", username "
        << (c.username != kAnonymous ? c.username : "(none)") << ", " << c.topic << ", access "
        << c.access;
  }
}

TEST(AclFileTest, TopicLinesBeforeAnyUserAreTheAnonymousClients) {
  ExpectAnswers(Parsed(kNeutralityFile),
                {{"a", kAnonymous, "public/news", kRead, kAllowed},
                 {"a", kAnonymous, "public/news", kWrite, kDenied},
                 {"a", kAnonymous, "anon/chat", kRead, kAllowed},
                 {"a", kAnonymous, "user/data", kRead, kDenied},
                 // Patterns apply to everyone; %u only to clients with a username.
                 {"a", kAnonymous, "clients/a/state", kRead, kAllowed},
                 {"a", kAnonymous, "clients/b/state", kRead, kDenied},
                 {"a", kAnonymous, "home/user/mail", kRead, kDenied}});
}

TEST(AclFileTest, EachUserHasItsOwnRulesAndThePatterns) {
  ExpectAnswers(Parsed(kNeutralityFile),
                {{"u", "user", "user/data", kRead, kAllowed},
                 {"u", "user", "drop/box", kRead, kDenied},  // write only
                 {"u", "user", "drop/box", kWrite, kAllowed},
                 {"u", "user", "anon/chat", kRead, kDenied},
                 {"u", "user", "home/user/mail", kRead, kAllowed},
                 {"u", "user", "home/other/mail", kRead, kDenied},
                 {"o", "other", "user/data", kRead, kAllowed},
                 {"o", "other", "public/news", kRead, kDenied},
                 // A username the file does not name has the patterns only.
                 {"n", "nobody", "clients/n/x", kRead, kAllowed},
                 {"n", "nobody", "public/news", kRead, kDenied}});
}

TEST(AclFileTest, DenyRulesWinWhereverTheyStand) {
  const AclFile file = Parsed(
      "user u\ntopic read a/#\ntopic deny a/secret/#\npattern read p/%c/#\n"
      "pattern deny p/%c/private\n");
  ExpectAnswers(file, {{"c", "u", "a/open", kRead, kAllowed},
                       {"c", "u", "a/secret/x", kRead, kDenied},
                       {"c", "u", "p/c/public", kRead, kAllowed},
                       {"c", "u", "p/c/private", kRead, kDenied}});
}

TEST(AclFileTest, DollarTopicsNeedADollarRuleAndWildcardIdsArePatternless) {
  const AclFile file = Parsed("topic read #\ntopic read $SYS/broker/#\npattern read c/%c/#\n");
  EXPECT_TRUE(file.Allows("a", kAnonymous, "x/y", kRead));
  EXPECT_FALSE(file.Allows("a", kAnonymous, "$SYS/other", kRead));
  EXPECT_TRUE(file.Allows("a", kAnonymous, "$SYS/broker/uptime", kRead));
  // A client id with a wildcard would match other clients' patterns: the patterns refuse it
  // outright (after the user's own rules, which come first).
  const AclFile patterns = Parsed("topic read x\npattern read c/%c/#\n");
  EXPECT_FALSE(patterns.Allows("+", kAnonymous, "c/x/y", kRead));
  EXPECT_TRUE(patterns.Allows("+", kAnonymous, "x", kRead));
  EXPECT_TRUE(patterns.Allows("a", kAnonymous, "c/a/y", kRead));
  EXPECT_FALSE(patterns.Allows("a", "u#", "c/a/y", kRead));
}

TEST(AclFileTest, NoRuleForTheClientMeansDenied) {
  const AclFile file = Parsed("user only\ntopic read #\n");
  EXPECT_FALSE(file.Allows("a", kAnonymous, "x", kRead));
  EXPECT_TRUE(file.Allows("a", "only", "x", kRead));
  EXPECT_FALSE(Parsed("").Allows("a", kAnonymous, "x", kRead));
}

TEST(AclFileTest, LinesAreReadAsTheBrokerReadsThem) {
  // A topic with a space, a missing access (readwrite), repeated user blocks merged, comments.
  const AclFile file = Parsed(
      "# comment\n   \ntopic a/b\ntopic  read   spaced topic  \nuser u\ntopic read x\n"
      "user v\ntopic read y\nuser u\ntopic read z\n");
  ExpectAnswers(file, {{"c", kAnonymous, "a/b", kWrite, kAllowed},
                       {"c", kAnonymous, "spaced topic", kWrite, kDenied},
                       {"c", kAnonymous, "spaced topic", kRead, kAllowed},
                       {"c", "u", "x", kRead, kAllowed},
                       {"c", "u", "z", kRead, kAllowed},
                       {"c", "u", "y", kRead, kDenied}});
}

TEST(AclFileTest, WhatTheBrokerRefusesIsRefusedWithTheLine) {
  AclFile file;
  EXPECT_THAT(AclFile::Parse("topic read a\nbogus line\n", "f", &file).message(),
              HasSubstr("f:2: invalid line"));
  // A topic with a space needs its access type first: "a" is taken for one.
  EXPECT_THAT(AclFile::Parse("topic a b/c\n", "f", &file).message(),
              HasSubstr("invalid topic access type \"a\""));
  EXPECT_THAT(AclFile::Parse("topic sometimes a\n", "f", &file).message(),
              HasSubstr("invalid topic access type \"sometimes\""));
  EXPECT_THAT(AclFile::Parse("topic read a/#/b\n", "f", &file).message(),
              HasSubstr("invalid ACL topic"));
  EXPECT_THAT(AclFile::Parse("topic read a+\n", "f", &file).message(),
              HasSubstr("invalid ACL topic"));
  EXPECT_THAT(AclFile::Parse("user\n", "f", &file).message(), HasSubstr("missing username"));
  EXPECT_THAT(AclFile::Parse("topic\n", "f", &file).message(), HasSubstr("empty topic"));
  EXPECT_THAT(AclFile::Parse("\ttopic read a\n", "f", &file).message(), HasSubstr("invalid line"));
  EXPECT_EQ(AclFile::Read("/nonexistent/acl", &file).code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace mqc
