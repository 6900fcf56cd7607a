// SPDX-License-Identifier: BSD-3-Clause
/* A benchmark tool, not part of the product: a plugin that registers the callbacks
 * mosquitto_connections registers on the per-message path (ACL_CHECK, MESSAGE, TICK, and
 * BASIC_AUTH) and does nothing in them. bench/broker_overhead.py --floor measures the broker
 * with it: what any plugin registering these events costs the broker per delivery, the floor
 * under the plugin's own cost. Built beside the plugin as mqc_floor_plugin.so. */
#include <stddef.h>

/* clang-format off */
#include <mosquitto.h>
#include <mosquitto_broker.h>
#include <mosquitto_plugin.h>
/* clang-format on */

static int Allow(int event, void *event_data, void *userdata) {
  (void)event;
  (void)event_data;
  (void)userdata;
  return MOSQ_ERR_SUCCESS;
}

static int Defer(int event, void *event_data, void *userdata) {
  (void)event;
  (void)event_data;
  (void)userdata;
  return MOSQ_ERR_PLUGIN_DEFER;
}

static mosquitto_plugin_id_t *identifier;

int mosquitto_plugin_version(int supported_version_count, const int *supported_versions) {
  (void)supported_version_count;
  (void)supported_versions;
  return 5;
}

int mosquitto_plugin_init(mosquitto_plugin_id_t *id, void **userdata, struct mosquitto_opt *options,
                          int option_count) {
  (void)userdata;
  (void)options;
  (void)option_count;
  identifier = id;
  if (mosquitto_callback_register(id, MOSQ_EVT_BASIC_AUTH, Defer, NULL, NULL) != 0 ||
      mosquitto_callback_register(id, MOSQ_EVT_ACL_CHECK, Allow, NULL, NULL) != 0 ||
      mosquitto_callback_register(id, MOSQ_EVT_MESSAGE, Allow, NULL, NULL) != 0 ||
      mosquitto_callback_register(id, MOSQ_EVT_TICK, Allow, NULL, NULL) != 0) {
    return MOSQ_ERR_UNKNOWN;
  }
  return MOSQ_ERR_SUCCESS;
}

int mosquitto_plugin_cleanup(void *userdata, struct mosquitto_opt *options, int option_count) {
  (void)userdata;
  (void)options;
  (void)option_count;
  mosquitto_callback_unregister(identifier, MOSQ_EVT_BASIC_AUTH, Defer, NULL);
  mosquitto_callback_unregister(identifier, MOSQ_EVT_ACL_CHECK, Allow, NULL);
  mosquitto_callback_unregister(identifier, MOSQ_EVT_MESSAGE, Allow, NULL);
  mosquitto_callback_unregister(identifier, MOSQ_EVT_TICK, Allow, NULL);
  return MOSQ_ERR_SUCCESS;
}
