// SPDX-License-Identifier: BSD-3-Clause
// The facts of a plain test client, as the broker reports them at CONNECT: loopback, port 50000
// to the listener on 1883, keep-alive 60, anonymous. Shared by the broker-side unit tests.
#pragma once

#include <cstdint>
#include <string>

#include "broker/client_facts.h"

namespace mqc {

inline ClientFacts Facts(const std::string& id, bool clean = true, std::uint8_t version = 4) {
  ClientFacts facts;
  facts.client_id = id;
  facts.ip_address = "127.0.0.1";
  facts.port = 50000;
  facts.local_port = 1883;
  facts.protocol_version = version;
  facts.clean_session = clean;
  facts.keep_alive = 60;
  facts.mechanism = AuthMechanism::kAnonymous;
  return facts;
}

}  // namespace mqc
