// SPDX-License-Identifier: BSD-3-Clause
// The broker's acl_file, read and applied the way Mosquitto 2.0 does (src/security_default.c:
// aclfile__parse, acl__find_acls, mosquitto_acl_check_default; the same from tag v2.0.11 to
// v2.0.22), for one purpose: to know whether the broker allowed a delivery (an ACL READ check)
// where the broker hides mosquitto_acl_check (2.0.19 on, Makefile builds) and the acl_file is the
// only ACL source after the plugin. Deliveries then stay exact (docs/broker-versions.md).
//
// Threads: the broker thread only (Check reuses one buffer).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "link/status.h"

namespace mqc {

class AclFile {
 public:
  // Access bits of a rule, as the broker's MOSQ_ACL_* values.
  static constexpr int kRead = 1;
  static constexpr int kWrite = 2;

  // Parses the file's text; `path` names it in errors. An error is what the broker refuses too
  // (an unknown line, an access type, an invalid topic filter, a user line without a name).
  static Status Parse(std::string_view text, const std::string& path, AclFile* file);
  // Reads and parses the file at `path`.
  static Status Read(const std::string& path, AclFile* file);

  // Whether the acl_file allows `access` (kRead or kWrite) on `topic` for a client with this id
  // and username (null: an anonymous client). Allocates nothing once its buffer has grown.
  bool Allows(std::string_view client_id, const char* username, std::string_view topic,
              int access) const;

 private:
  struct Rule {
    std::string topic;
    int access = 0;  // 0: deny
    bool has_client_pattern = false;
    bool has_user_pattern = false;
  };
  struct User {
    std::optional<std::string> name;  // none: the rules before any user line (anonymous)
    std::vector<Rule> rules;          // deny rules first, then in file order
  };
  static void Add(std::vector<Rule>* rules, Rule rule);
  const User* UserOf(const char* username) const;
  // The pattern with %c and %u replaced, into `expanded_`.
  std::string_view Expand(const Rule& rule, std::string_view client_id,
                          const char* username) const;

  std::vector<User> users_;
  std::vector<Rule> patterns_;  // deny patterns first
  mutable std::string expanded_;
};

}  // namespace mqc
