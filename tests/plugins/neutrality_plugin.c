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

/* clang-format off */
#include <mosquitto.h>
#include <mosquitto_broker.h>
#include <mosquitto_plugin.h>
/* clang-format on */

static mosquitto_plugin_id_t *identifier;
static bool basic_auth;
static bool acl_check;

static bool Equal(const char *text, const char *expected) {
  return text != NULL && strcmp(text, expected) == 0;
}

static int OnBasicAuth(int event, void *event_data, void *userdata) {
  const struct mosquitto_evt_basic_auth *data = event_data;
  (void)event;
  (void)userdata;
  if (Equal(data->username, "blocked")) return MOSQ_ERR_AUTH;
  if (Equal(data->username, "pluginuser")) {
    return Equal(data->password, "pluginpass") ? MOSQ_ERR_SUCCESS : MOSQ_ERR_AUTH;
  }
  return MOSQ_ERR_PLUGIN_DEFER;
}

static int OnAclCheck(int event, void *event_data, void *userdata) {
  const struct mosquitto_evt_acl_check *data = event_data;
  (void)event;
  (void)userdata;
  if (data->topic == NULL) return MOSQ_ERR_PLUGIN_DEFER;
  if (strncmp(data->topic, "ok/", 3) == 0) return MOSQ_ERR_SUCCESS;
  if (strncmp(data->topic, "deny/", 5) == 0) return MOSQ_ERR_ACL_DENIED;
  return MOSQ_ERR_PLUGIN_DEFER;
}

int mosquitto_plugin_version(int supported_version_count, const int *supported_versions) {
  (void)supported_version_count;
  (void)supported_versions;
  return 5;
}

int mosquitto_plugin_init(mosquitto_plugin_id_t *id, void **userdata, struct mosquitto_opt *opts,
                          int opt_count) {
  (void)userdata;
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

int mosquitto_plugin_cleanup(void *userdata, struct mosquitto_opt *opts, int opt_count) {
  (void)userdata;
  (void)opts;
  (void)opt_count;
  if (basic_auth) mosquitto_callback_unregister(identifier, MOSQ_EVT_BASIC_AUTH, OnBasicAuth, NULL);
  if (acl_check) mosquitto_callback_unregister(identifier, MOSQ_EVT_ACL_CHECK, OnAclCheck, NULL);
  return MOSQ_ERR_SUCCESS;
}
