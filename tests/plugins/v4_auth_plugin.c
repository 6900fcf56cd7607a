// SPDX-License-Identifier: BSD-3-Clause
/* A test plugin, not part of the product: a plugin of the older interface (mosquitto_auth_*,
 * version 4), which Mosquitto 2.0 asks after every version 5 callback and 2.1 through its
 * wrapper, for the neutrality suites (integration/test_auth_neutrality.py).
 *   unpwd_check: username "v4user" with password "v4pass" accepted, "v4blocked" refused, the
 *     rest left to the others (DEFER).
 *   acl_check: topics under "v4ok/" allowed, under "v4deny/" denied, the rest DEFER.
 *   psk_key_get: DEFER. */
#include <stdbool.h>
#include <string.h>

/* clang-format off */
#include <mosquitto.h>
#include <mosquitto_broker.h>
#include <mosquitto_plugin.h>
/* clang-format on */

static bool Equal(const char *text, const char *expected) {
  return text != NULL && strcmp(text, expected) == 0;
}

int mosquitto_auth_plugin_version(void) { return 4; }

int mosquitto_auth_plugin_init(void **user_data, struct mosquitto_opt *opts, int opt_count) {
  (void)user_data;
  (void)opts;
  (void)opt_count;
  return MOSQ_ERR_SUCCESS;
}

int mosquitto_auth_plugin_cleanup(void *user_data, struct mosquitto_opt *opts, int opt_count) {
  (void)user_data;
  (void)opts;
  (void)opt_count;
  return MOSQ_ERR_SUCCESS;
}

int mosquitto_auth_security_init(void *user_data, struct mosquitto_opt *opts, int opt_count,
                                 bool reload) {
  (void)user_data;
  (void)opts;
  (void)opt_count;
  (void)reload;
  return MOSQ_ERR_SUCCESS;
}

int mosquitto_auth_security_cleanup(void *user_data, struct mosquitto_opt *opts, int opt_count,
                                    bool reload) {
  (void)user_data;
  (void)opts;
  (void)opt_count;
  (void)reload;
  return MOSQ_ERR_SUCCESS;
}

int mosquitto_auth_acl_check(void *user_data, int access, struct mosquitto *client,
                             const struct mosquitto_acl_msg *msg) {
  (void)user_data;
  (void)access;
  (void)client;
  if (msg->topic == NULL) return MOSQ_ERR_PLUGIN_DEFER;
  if (strncmp(msg->topic, "v4ok/", 5) == 0) return MOSQ_ERR_SUCCESS;
  if (strncmp(msg->topic, "v4deny/", 7) == 0) return MOSQ_ERR_ACL_DENIED;
  return MOSQ_ERR_PLUGIN_DEFER;
}

int mosquitto_auth_unpwd_check(void *user_data, struct mosquitto *client, const char *username,
                               const char *password) {
  (void)user_data;
  (void)client;
  if (Equal(username, "v4blocked")) return MOSQ_ERR_AUTH;
  if (Equal(username, "v4user")) {
    return Equal(password, "v4pass") ? MOSQ_ERR_SUCCESS : MOSQ_ERR_AUTH;
  }
  return MOSQ_ERR_PLUGIN_DEFER;
}

int mosquitto_auth_psk_key_get(void *user_data, struct mosquitto *client, const char *hint,
                               const char *identity, char *key, int max_key_len) {
  (void)user_data;
  (void)client;
  (void)hint;
  (void)identity;
  (void)key;
  (void)max_key_len;
  return MOSQ_ERR_PLUGIN_DEFER;
}
