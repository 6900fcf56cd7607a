// SPDX-License-Identifier: BSD-3-Clause
#include "companion/http/http_secrets.h"

#include <fstream>
#include <iterator>
#include <string>
#include <tuple>
#include <utility>

#include "companion/http/http_server.h"

namespace mqc {
namespace {

// A PEM file for HTTPS; a failure names the option.
StatusOr<std::string> ReadPem(const std::string& path, const char* option, const char* marker) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return InvalidArgument(std::string("plugin_opt_") + option + " " + path + ": cannot read it");
  }
  std::string pem{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (pem.find(marker) == std::string::npos) {
    return InvalidArgument(std::string("plugin_opt_") + option + " " + path + ": no PEM '" +
                           marker + "' block in it");
  }
  return pem;
}

}  // namespace

Status ReadTokens(const PluginOptions& options, TokenSet* set, const SecretsLog& log) {
  TokenSet read;
  for (const auto& [path, option, level] :
       {std::tuple<const std::string&, const char*, AccessLevel>{
            options.http_token_file, "http_token_file", AccessLevel::kRead},
        std::tuple<const std::string&, const char*, AccessLevel>{
            options.http_admin_token_file, "http_admin_token_file", AccessLevel::kAdmin}}) {
    if (path.empty()) continue;
    std::string warning;
    const Status status = ReadTokenFile(path, option, level, &read, &warning);
    if (!status.ok()) return status;
    if (!warning.empty()) log(LogLevel::kWarning, warning);
  }
  *set = std::move(read);
  return Status();
}

StatusOr<TlsPems> ReadTls(const PluginOptions& options) {
  StatusOr<std::string> cert =
      ReadPem(options.http_tls_cert, "http_tls_cert", "-----BEGIN CERTIFICATE-----");
  if (!cert.ok()) return cert.status();
  StatusOr<std::string> key = ReadPem(options.http_tls_key, "http_tls_key", "PRIVATE KEY-----");
  if (!key.ok()) return key.status();
  return TlsPems{*std::move(cert), *std::move(key)};
}

HttpSecrets::HttpSecrets(const PluginOptions& options, AccessTokens* tokens, HttpServer* server,
                         TlsPems in_use, SecretsLog log)
    : options_(options),
      tokens_(tokens),
      server_(server),
      in_use_(std::move(in_use)),
      log_(std::move(log)) {}

void HttpSecrets::Reread() {
  if (options_.RequiresToken()) {
    TokenSet reloaded;
    const Status status = ReadTokens(options_, &reloaded, log_);
    if (status.ok()) {
      const std::size_t count = reloaded.entries.size();
      tokens_->Replace(std::move(reloaded));
      log_(LogLevel::kNotice,
           "reload: token files read again, " + std::to_string(count) + " tokens");
    } else {
      log_(LogLevel::kError, "reload: " + status.message() + "; keeping the tokens read before");
    }
  }
  if (options_.http_tls_cert.empty()) return;
  StatusOr<TlsPems> read = ReadTls(options_);
  if (!read.ok()) {
    log_(LogLevel::kError,
         "reload: " + read.status().message() + "; keeping the HTTPS certificate read before");
    return;
  }
  if (read->cert == in_use_.cert && read->key == in_use_.key) {
    log_(LogLevel::kInfo, "reload: HTTPS certificate unchanged (" + options_.http_tls_cert + ")");
    return;
  }
  const Status replaced = server_->ReplaceTls(read->cert, read->key);
  if (!replaced.ok()) {
    log_(LogLevel::kError, "reload: HTTPS certificate " + options_.http_tls_cert + " not used: " +
                               replaced.message() + "; keeping the one read before");
    return;
  }
  in_use_ = *std::move(read);
  log_(LogLevel::kNotice, "reload: HTTPS certificate read again from " + options_.http_tls_cert +
                              " and " + options_.http_tls_key + "; new connections use it");
}

}  // namespace mqc
