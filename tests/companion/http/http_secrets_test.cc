// SPDX-License-Identifier: BSD-3-Clause
// HttpSecrets with files in a temporary directory: token files read again at a reload (a bad
// one keeps the tokens read before), the certificate left alone when unchanged, and a changed
// one that the server refuses kept out, each said in the log.
#include "companion/http/http_secrets.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "companion/http/http_server.h"

namespace mqc {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kReadToken[] = "read-token-0123456789";
constexpr char kOtherToken[] = "other-token-0123456789";

class HttpSecretsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char path[] = "/tmp/mqc_secrets_XXXXXX";
    ASSERT_NE(mkdtemp(path), nullptr);
    dir_ = path;
  }
  void TearDown() override {
    for (const std::string& file : written_) std::remove(file.c_str());
    rmdir(dir_.c_str());
  }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::trunc) << text;
    chmod(path.c_str(), 0600);
    written_.push_back(path);
    return path;
  }
  SecretsLog Log() {
    return [this](LogLevel level, const std::string& line) {
      log_.push_back((level == LogLevel::kError ? "E " : "- ") + line);
    };
  }
  bool Reads(const AccessTokens& tokens, const std::string& token) {
    const std::string header = "Bearer " + token;
    return tokens.Check(&header).level != AccessLevel::kNone;
  }

  std::string dir_;
  std::vector<std::string> written_;
  std::vector<std::string> log_;
};

TEST_F(HttpSecretsTest, TokenFilesAreReadAgainAndABadOneKeepsTheOld) {
  PluginOptions options;
  options.http_token_file = Write("tokens", std::string(kReadToken) + "\n");
  AccessTokens tokens(true);
  TokenSet set;
  ASSERT_TRUE(ReadTokens(options, &set, Log()).ok());
  tokens.Replace(std::move(set));
  HttpSecrets secrets(options, &tokens, nullptr, TlsPems{}, Log());
  EXPECT_TRUE(Reads(tokens, kReadToken));

  Write("tokens", std::string(kOtherToken) + "\n");
  secrets.Reread();
  EXPECT_FALSE(Reads(tokens, kReadToken));
  EXPECT_TRUE(Reads(tokens, kOtherToken));
  EXPECT_THAT(log_, ElementsAre("- reload: token files read again, 1 tokens"));

  log_.clear();
  Write("tokens", "short\n");
  secrets.Reread();
  EXPECT_TRUE(Reads(tokens, kOtherToken));
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_THAT(log_[0], HasSubstr("http_token_file"));
  EXPECT_THAT(log_[0], HasSubstr("; keeping the tokens read before"));
  EXPECT_THAT(log_[0], ::testing::StartsWith("E reload: "));
}

TEST_F(HttpSecretsTest, AnUnchangedCertificateIsLeftAlone) {
  PluginOptions options;
  const std::string cert = "-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----\n";
  const std::string key = "-----BEGIN PRIVATE KEY-----\nB\n-----END PRIVATE KEY-----\n";
  options.http_tls_cert = Write("cert.pem", cert);
  options.http_tls_key = Write("key.pem", key);
  const StatusOr<TlsPems> read = ReadTls(options);
  ASSERT_TRUE(read.ok()) << read.status().message();
  AccessTokens tokens(false);
  HttpSecrets secrets(options, &tokens, nullptr, *read, Log());
  secrets.Reread();
  EXPECT_THAT(log_,
              ElementsAre("- reload: HTTPS certificate unchanged (" + options.http_tls_cert + ")"));
}

TEST_F(HttpSecretsTest, ABadOrRefusedCertificateKeepsTheOneInUse) {
  PluginOptions options;
  options.http_tls_cert = Write("cert.pem", "not a certificate");
  options.http_tls_key = Write("key.pem", "-----BEGIN PRIVATE KEY-----\n");
  EXPECT_EQ(ReadTls(options).status().message(),
            "plugin_opt_http_tls_cert " + options.http_tls_cert +
                ": no PEM '-----BEGIN CERTIFICATE-----' block in it");
  HttpServerOptions server_options;
  server_options.port = 0;
  auto started =
      HttpServer::Start(server_options, [](const HttpRequest&) { return HttpResponse{}; });
  ASSERT_TRUE(started.ok()) << started.status().message();
  AccessTokens tokens(false);
  HttpSecrets secrets(options, &tokens, started->get(), TlsPems{"in use", "in use"}, Log());
  secrets.Reread();
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_THAT(log_[0], HasSubstr("; keeping the HTTPS certificate read before"));
  // A certificate that reads well but that this server (started without HTTPS) cannot take.
  log_.clear();
  Write("cert.pem", "-----BEGIN CERTIFICATE-----\n");
  secrets.Reread();
  EXPECT_THAT(log_, ElementsAre("E reload: HTTPS certificate " + options.http_tls_cert +
                                " not used: this server was started without HTTPS; keeping "
                                "the one read before"));
}

}  // namespace
}  // namespace mqc
