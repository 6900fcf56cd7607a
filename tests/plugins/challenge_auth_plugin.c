// SPDX-License-Identifier: BSD-3-Clause
/* A test plugin, not part of the product: MQTT 5 enhanced authentication by one challenge and
 * one response, for the integration tests (integration/test_enhanced_auth.py). Plugin API
 * version 5, built against the same 2.0 headers as the plugin, so that it loads into 2.0 and
 * 2.1 alike.
 *
 * Method "MQC-CHALLENGE":
 *   EXT_AUTH_START (a CONNECT, or an AUTH with reason 0x19 re-authenticating): answers with the
 *     challenge "mqc-challenge" as Authentication Data (MOSQ_ERR_AUTH_CONTINUE);
 *   EXT_AUTH_CONTINUE: "mqc-response:mqc-challenge" is accepted, any other "mqc-response:..."
 *     refused (MOSQ_ERR_AUTH).
 * Every other method and event is left to the others (DEFER). 2.0 does not pass the method to
 * EXT_AUTH_CONTINUE, so a continuation is recognised by its data. No state, no globals but the
 * plugin's identifier. */
#include <stddef.h>
#include <string.h>

/* clang-format off */
#include <mosquitto.h>
#include <mosquitto_broker.h>
#include <mosquitto_plugin.h>
/* clang-format on */

#define METHOD "MQC-CHALLENGE"
#define CHALLENGE "mqc-challenge"
#define RESPONSE_PREFIX "mqc-response:"

static mosquitto_plugin_id_t *identifier;

static int HasData(const struct mosquitto_evt_extended_auth *data, const char *text,
                   size_t length) {
  return data->data_in != NULL && data->data_in_len == length &&
         memcmp(data->data_in, text, length) == 0;
}

static int OnStart(int, void *event_data, void *) {
  struct mosquitto_evt_extended_auth *data = event_data;
  if (data->auth_method == NULL || strcmp(data->auth_method, METHOD) != 0) {
    return MOSQ_ERR_PLUGIN_DEFER;
  }
  data->data_out = mosquitto_strdup(CHALLENGE);
  if (data->data_out == NULL) return MOSQ_ERR_NOMEM;
  data->data_out_len = (uint16_t)strlen(CHALLENGE);
  return MOSQ_ERR_AUTH_CONTINUE;
}

static int OnContinue(int, void *event_data, void *) {
  const struct mosquitto_evt_extended_auth *data = event_data;
  const size_t prefix = strlen(RESPONSE_PREFIX);
  if (data->data_in == NULL || data->data_in_len < prefix ||
      memcmp(data->data_in, RESPONSE_PREFIX, prefix) != 0) {
    return MOSQ_ERR_PLUGIN_DEFER;
  }
  return HasData(data, RESPONSE_PREFIX CHALLENGE, strlen(RESPONSE_PREFIX CHALLENGE))
             ? MOSQ_ERR_SUCCESS
             : MOSQ_ERR_AUTH;
}

int mosquitto_plugin_version(int, const int *) { return 5; }

int mosquitto_plugin_init(mosquitto_plugin_id_t *id, void **, struct mosquitto_opt *, int) {
  identifier = id;
  if (mosquitto_callback_register(id, MOSQ_EVT_EXT_AUTH_START, OnStart, NULL, NULL) !=
      MOSQ_ERR_SUCCESS) {
    mosquitto_log_printf(MOSQ_LOG_ERR, "challenge_auth_plugin: cannot register EXT_AUTH_START");
    return MOSQ_ERR_UNKNOWN;
  }
  if (mosquitto_callback_register(id, MOSQ_EVT_EXT_AUTH_CONTINUE, OnContinue, NULL, NULL) !=
      MOSQ_ERR_SUCCESS) {
    mosquitto_log_printf(MOSQ_LOG_ERR, "challenge_auth_plugin: cannot register EXT_AUTH_CONTINUE");
    mosquitto_callback_unregister(id, MOSQ_EVT_EXT_AUTH_START, OnStart, NULL);
    return MOSQ_ERR_UNKNOWN;
  }
  return MOSQ_ERR_SUCCESS;
}

int mosquitto_plugin_cleanup(void *, struct mosquitto_opt *, int) {
  mosquitto_callback_unregister(identifier, MOSQ_EVT_EXT_AUTH_START, OnStart, NULL);
  mosquitto_callback_unregister(identifier, MOSQ_EVT_EXT_AUTH_CONTINUE, OnContinue, NULL);
  return MOSQ_ERR_SUCCESS;
}
