// SPDX-License-Identifier: BSD-3-Clause
// HostCheck: which Host a request may name (host_check.h), against DNS rebinding.
#include "companion/http/host_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "companion/http/http_server.h"

namespace mqc {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Verdict = HostCheck::Verdict;

HttpRequest WithHost(const std::string& host, const std::string& local_address = "127.0.0.1") {
  HttpRequest request;
  request.method = "GET";
  request.path = "/api/mqtt/connections";
  request.version = "HTTP/1.1";
  request.headers = {{"Host", host}};
  request.local_address = local_address;
  return request;
}

Verdict VerdictOf(const HostCheck& check, const std::string& host,
                  const std::string& local_address = "127.0.0.1") {
  return check.Check(WithHost(host, local_address)).verdict;
}

TEST(HostCheckTest, LoopbackNamesAndAddressesOnAnyPort) {
  const HostCheck check;
  for (const char* host :
       {"localhost", "localhost:8080", "LOCALHOST:8080", "localhost.", "localhost.:8080",
        "console.localhost:8080", "a.b.LocalHost.", "127.0.0.1", "127.0.0.1:1", "127.0.0.1.:8080",
        "127.1.2.3:8080", "127.255.255.255", "[::1]", "[::1]:8080", "[0:0:0:0:0:0:0:1]:8080",
        "[::ffff:127.0.0.1]:8080", "[::FFFF:7F00:1]"}) {
    EXPECT_EQ(VerdictOf(check, host), Verdict::kAllowed) << host;
  }
}

TEST(HostCheckTest, ForeignNamesAreNotAllowed) {
  const HostCheck check;
  for (const char* host :
       {"attacker.example", "attacker.example:8080", "localhost.attacker.example",
        "localhost.attacker.example:8080", "127.0.0.1.attacker.example", "localhostx", "xlocalhost",
        "localhost-x.example", "mqtt-api.example.com", "10.0.0.1", "0.0.0.0", "[::]",
        "[2001:db8::1]:8080", "[::ffff:10.0.0.1]", "128.0.0.1"}) {
    EXPECT_EQ(VerdictOf(check, host), Verdict::kNotAllowed) << host;
  }
}

TEST(HostCheckTest, MalformedHostsAreRefusedAsSuch) {
  const HostCheck check;
  for (const char* host : {"", "127.1", "127.1:8080", "0x7f.1", "2130706433", "::1", "::1:8080",
                           "[::1", "localhost:http", "a b", "localhost/evil", "a..example",
                           "caf\xC3\xA9.example", "[fe80::1%25lo]"}) {
    EXPECT_EQ(VerdictOf(check, host), Verdict::kMalformed) << host;
  }
  std::string overlong;
  while (overlong.size() < 300) overlong += "localhost.";
  EXPECT_EQ(VerdictOf(check, overlong), Verdict::kMalformed);
}

TEST(HostCheckTest, TheListAndTheBindAddress) {
  const HostCheck check({"mqtt-api.example.com", "192.0.2.10", "2001:db8::10"}, "10.0.0.5");
  for (const char* host :
       {"mqtt-api.example.com", "MQTT-API.example.com.:443", "192.0.2.10:8080",
        "[2001:db8::10]:8080", "[2001:DB8:0::10]", "10.0.0.5:8080", "localhost", "[::1]"}) {
    EXPECT_EQ(VerdictOf(check, host, ""), Verdict::kAllowed) << host;
  }
  for (const char* host : {"api.example.com", "x.mqtt-api.example.com", "192.0.2.11",
                           "attacker.example", "10.0.0.6"}) {
    EXPECT_EQ(VerdictOf(check, host, ""), Verdict::kNotAllowed) << host;
  }
  // A wildcard bind adds nothing by itself.
  for (const char* bind : {"0.0.0.0", "::"}) {
    const HostCheck wildcard({}, bind);
    EXPECT_EQ(VerdictOf(wildcard, "0.0.0.0", ""), Verdict::kNotAllowed) << bind;
    EXPECT_EQ(VerdictOf(wildcard, "[::]", ""), Verdict::kNotAllowed) << bind;
  }
  EXPECT_EQ(VerdictOf(HostCheck({}, "::1"), "[::1]", ""), Verdict::kAllowed);
  EXPECT_EQ(VerdictOf(HostCheck({}, "2001:db8::5"), "[2001:db8::5]:80", ""), Verdict::kAllowed);
}

TEST(HostCheckTest, TheAddressTheConnectionArrivedOnButNoName) {
  const HostCheck check({}, "0.0.0.0");
  EXPECT_EQ(VerdictOf(check, "192.0.2.10:8080", "192.0.2.10"), Verdict::kAllowed);
  EXPECT_EQ(VerdictOf(check, "[2001:db8::10]:8080", "2001:db8::10"), Verdict::kAllowed);
  EXPECT_EQ(VerdictOf(check, "192.0.2.11:8080", "192.0.2.10"), Verdict::kNotAllowed);
  // A name resolving to that address is exactly what rebinding forges: still refused.
  EXPECT_EQ(VerdictOf(check, "attacker.example:8080", "192.0.2.10"), Verdict::kNotAllowed);
}

TEST(HostCheckTest, MissingOrRepeatedHost) {
  const HostCheck check;
  HttpRequest request = WithHost("localhost");
  request.headers.clear();
  EXPECT_EQ(check.Check(request).verdict, Verdict::kMalformed);  // HTTP/1.1 requires Host
  request.version = "HTTP/1.0";
  EXPECT_EQ(check.Check(request).verdict, Verdict::kAllowed);  // no browser sends this
  request.headers = {{"host", "localhost"}};
  EXPECT_EQ(check.Check(request).verdict, Verdict::kAllowed);  // the name in any case
  request.headers = {{"Host", "attacker.example"}};
  EXPECT_EQ(check.Check(request).verdict, Verdict::kNotAllowed);  // HTTP/1.0 with a Host
  request.headers = {{"Host", "localhost"}, {"HOST", "attacker.example"}};
  const HostCheck::Result twice = check.Check(request);
  EXPECT_EQ(twice.verdict, Verdict::kMalformed);
  EXPECT_THAT(twice.message, HasSubstr("more than one Host header"));
  request.headers = {{"Host", "  localhost:8080 "}};  // white space around the value
  EXPECT_EQ(check.Check(request).verdict, Verdict::kAllowed);
}

TEST(HostCheckTest, MessagesNameTheOptionAndTheHostSanitised) {
  const HostCheck check;
  const HostCheck::Result foreign = check.Check(WithHost("Attacker.Example:8080"));
  EXPECT_EQ(foreign.message,
            "Host 'Attacker.Example:8080' is not a host this server answers to: add "
            "'attacker.example' to plugin_opt_http_allowed_hosts if the API is meant to be "
            "reached by that name");
  const HostCheck::Result control = check.Check(WithHost("a\x01\x7f\xC3\xA9:1"));
  EXPECT_EQ(control.verdict, Verdict::kMalformed);
  EXPECT_THAT(control.message, HasSubstr("Host 'a????:1' is not a host name or IP address"));
  EXPECT_THAT(control.message, HasSubstr("plugin_opt_http_allowed_hosts"));
  const HostCheck::Result overlong = check.Check(WithHost(std::string(5000, 'a')));
  EXPECT_EQ(overlong.verdict, Verdict::kMalformed);
  EXPECT_LT(overlong.message.size(), 300u);
  EXPECT_THAT(overlong.message, HasSubstr("'" + std::string(64, 'a') + "...'"));
  EXPECT_THAT(check.Check(WithHost("")).message, Not(HasSubstr("\n")));
}

}  // namespace
}  // namespace mqc
