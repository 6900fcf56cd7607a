// SPDX-License-Identifier: BSD-3-Clause
#include "broker/auth_decisions.h"

#include <string>

namespace mqc {

BrokerAuth DecideAuth(const BrokerConfig& config, const std::string& own_plugin,
                      const BrokerCapabilities& capabilities) {
  BrokerAuth auth;
  auth.decisions = DecideAuth(config, own_plugin);
  if (capabilities.api_2_1 || capabilities.acl_check) return auth;
  BrokerConfig scoped = ScopeOf(config, own_plugin);
  if (!scoped.acl_file) return auth;
  scoped.acl_file = false;
  if (HasOtherAclSource(scoped, own_plugin)) return auth;  // another plugin decides first
  auth.read_acl_file = true;
  auth.acl_file_to_read = scoped.acl_file_path;
  return auth;
}

}  // namespace mqc
