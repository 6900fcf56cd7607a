// SPDX-License-Identifier: BSD-3-Clause
/* A test plugin, not part of the product: a plugin of the older interface (mosquitto_auth_*,
 * version 4), which Mosquitto 2.0 asks after every version 5 callback and 2.1 through its
 * wrapper, for the neutrality suites (integration/test_auth_neutrality.py).
 *   unpwd_check: username "v4user" with password "v4pass" accepted, "v4blocked" refused, the
 *     rest left to the others (DEFER).
 *   acl_check: topics under "v4ok/" allowed, under "v4deny/" denied, the rest DEFER.
 *   psk_key_get: DEFER. */
#include <stdbool.h>

#include "plugin_decisions.h"

int mosquitto_auth_plugin_version(void) { return 4; }

int mosquitto_auth_plugin_init(void **, struct mosquitto_opt *, int) { return MOSQ_ERR_SUCCESS; }

int mosquitto_auth_plugin_cleanup(void *, struct mosquitto_opt *, int) { return MOSQ_ERR_SUCCESS; }

int mosquitto_auth_security_init(void *, struct mosquitto_opt *, int, bool) {
  return MOSQ_ERR_SUCCESS;
}

int mosquitto_auth_security_cleanup(void *, struct mosquitto_opt *, int, bool) {
  return MOSQ_ERR_SUCCESS;
}

int mosquitto_auth_acl_check(void *, int, struct mosquitto *, const struct mosquitto_acl_msg *msg) {
  return TopicDecision(msg->topic, "v4ok/", "v4deny/");
}

int mosquitto_auth_unpwd_check(void *, struct mosquitto *, const char *username,
                               const char *password) {
  return PasswordDecision(username, password, "v4user", "v4pass", "v4blocked");
}

int mosquitto_auth_psk_key_get(void *, struct mosquitto *, const char *, const char *, char *,
                               int) {
  return MOSQ_ERR_PLUGIN_DEFER;
}
