// SPDX-License-Identifier: BSD-3-Clause
/* A test plugin, not part of the product: another plugin beside mosquitto-connections, for the
 * neutrality suites (integration/test_auth_neutrality.py). Plugin API version 5, built against
 * the same 2.0 headers as the plugin, so that it loads into 2.0 and 2.1 alike.
 *
 * plugin_opt_events auth | acl | both: which of its two callbacks it registers.
 *   BASIC_AUTH: username "pluginuser" with password "pluginpass" is accepted, username "blocked"
 *     refused, every other CONNECT left to the others (DEFER).
 *   ACL_CHECK: every access to a topic under "ok/" allowed, under "deny/" denied, the rest left
 *     to the others (DEFER).
 * No state but its identifier and the events it registered. */
#include <stdbool.h>
#include <string.h>

#include "plugin_decisions.h"

static mosquitto_plugin_id_t *identifier;
static bool basic_auth;
static bool acl_check;

static int OnBasicAuth(int, void *event_data, void *) {
  const struct mosquitto_evt_basic_auth *data = event_data;
  return PasswordDecision(data->username, data->password, "pluginuser", "pluginpass", "blocked");
}

static int OnAclCheck(int, void *event_data, void *) {
  const struct mosquitto_evt_acl_check *data = event_data;
  return TopicDecision(data->topic, "ok/", "deny/");
}

int mosquitto_plugin_version(int, const int *) { return 5; }

int mosquitto_plugin_init(mosquitto_plugin_id_t *id, void **, struct mosquitto_opt *opts,
                          int opt_count) {
  identifier = id;
  basic_auth = false;
  acl_check = false;
  for (int i = 0; i < opt_count; i++) {
    if (strcmp(opts[i].key, "events") != 0) continue;
    basic_auth = Equal(opts[i].value, "auth") || Equal(opts[i].value, "both");
    acl_check = Equal(opts[i].value, "acl") || Equal(opts[i].value, "both");
  }
  if (!basic_auth && !acl_check) {
    mosquitto_log_printf(MOSQ_LOG_ERR, "neutrality_plugin: plugin_opt_events auth|acl|both");
    return MOSQ_ERR_INVAL;
  }
  if (basic_auth &&
      mosquitto_callback_register(id, MOSQ_EVT_BASIC_AUTH, OnBasicAuth, NULL, NULL) != 0) {
    return MOSQ_ERR_UNKNOWN;
  }
  if (acl_check &&
      mosquitto_callback_register(id, MOSQ_EVT_ACL_CHECK, OnAclCheck, NULL, NULL) != 0) {
    return MOSQ_ERR_UNKNOWN;
  }
  return MOSQ_ERR_SUCCESS;
}

int mosquitto_plugin_cleanup(void *, struct mosquitto_opt *, int) {
  if (basic_auth) mosquitto_callback_unregister(identifier, MOSQ_EVT_BASIC_AUTH, OnBasicAuth, NULL);
  if (acl_check) mosquitto_callback_unregister(identifier, MOSQ_EVT_ACL_CHECK, OnAclCheck, NULL);
  return MOSQ_ERR_SUCCESS;
}
