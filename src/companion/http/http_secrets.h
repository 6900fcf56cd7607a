// SPDX-License-Identifier: BSD-3-Clause
// The HTTP server's secrets: the token files and the HTTPS certificate and key named by the
// options, read at start and read again at a configuration reload, so that they rotate without
// a broker restart (which would drop every MQTT client). Tokens stay in this process: they are
// never logged, and never pass through the broker or the shared region.
//
// Threads: everything on the companion's main thread (its start and its event loop); what is
// read goes to AccessTokens and HttpServer, which say how their readers are kept apart.
#pragma once

#include <functional>
#include <string>

#include "companion/http/access_tokens.h"
#include "link/event_records.h"
#include "link/plugin_options.h"
#include "link/status.h"

namespace mqc {

class HttpServer;

using SecretsLog = std::function<void(LogLevel level, const std::string& line)>;

// The token files named by the options, read whole (both or nothing). A warning (a file every
// user may read) goes to `log`.
Status ReadTokens(const PluginOptions& options, TokenSet* set, const SecretsLog& log);

struct TlsPems {
  std::string cert;
  std::string key;
};

// The HTTPS certificate and key named by the options, both or neither; a failure names the
// option and the file.
StatusOr<TlsPems> ReadTls(const PluginOptions& options);

// Reads the secrets again at each configuration reload.
class HttpSecrets {
 public:
  // `tokens` and `server` outlive this; `in_use`: the certificate and key the server was started
  // with (empty without HTTPS).
  HttpSecrets(const PluginOptions& options, AccessTokens* tokens, HttpServer* server,
              TlsPems in_use, SecretsLog log);

  // The token files and the certificate are read again from the paths of the start. A file
  // that became bad keeps what was read before, and the log says which; a certificate that did
  // not change is not replaced.
  void Reread();

 private:
  const PluginOptions options_;
  AccessTokens* const tokens_;
  HttpServer* const server_;
  TlsPems in_use_;
  const SecretsLog log_;
};

}  // namespace mqc
