// SPDX-License-Identifier: BSD-3-Clause
/* A benchmark tool, not part of the product: a plugin that registers the callbacks
 * mosquitto_connections registers on the per-message path and does nothing in them.
 * bench/broker_overhead.py --floor measures the broker with it: what any plugin registering these
 * events costs the broker per delivery, the floor under the plugin's own cost. Built beside the
 * plugin as mqc_floor_plugin.so, against 2.0's headers, and loaded into 2.0 and 2.1 alike (both
 * accept plugin API version 5). It registers what the plugin registers on each
 * (src/broker/broker_events.h, WantedEvents):
 *   2.0: BASIC_AUTH (deferring), ACL_CHECK, MESSAGE and TICK (sent at every turn of the loop).
 *   2.1: BASIC_AUTH (answering MOSQ_ERR_PLUGIN_IGNORE), MESSAGE_IN, MESSAGE_OUT, and TICK
 *        asked for as the plugin asks (due at every turn, a wake-up in 50 ms:
 *        plugin/broker_events.cc, AskForTheNextTick21). No ACL_CHECK: the plugin registers it
 *        only while an offline session is kept (src/broker/offline_watch.h), and the
 *        benchmarks keep none. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT */
#endif
#include <dlfcn.h>
#include <stddef.h>

/* clang-format off */
#include <mosquitto.h>
#include <mosquitto_broker.h>
#include <mosquitto_plugin.h>
/* clang-format on */

/* 2.1's numbers, absent from 2.0's headers (include/mosquitto/broker.h and defs.h of 2.1). */
enum { kEventMessageOut21 = 27, kErrPluginIgnore21 = 32, kTickIntervalMs21 = 50 };

static int Allow(int, void *, void *) { return MOSQ_ERR_SUCCESS; }
static int Defer(int, void *, void *) { return MOSQ_ERR_PLUGIN_DEFER; }
static int Ignore21(int, void *, void *) { return kErrPluginIgnore21; }

/* 2.1's next_ms is 2.0's next_ns, in the same place. */
static int Tick21(int, void *event_data, void *) {
  ((struct mosquitto_evt_tick *)event_data)->next_s = -2;
  ((struct mosquitto_evt_tick *)event_data)->next_ns = 2000 + kTickIntervalMs21;
  return MOSQ_ERR_SUCCESS;
}

struct Registration {
  int event;
  MOSQ_FUNC_generic_callback callback;
};

static const struct Registration kRegistrations20[] = {
    {MOSQ_EVT_BASIC_AUTH, Defer},
    {MOSQ_EVT_ACL_CHECK, Allow},
    {MOSQ_EVT_MESSAGE, Allow},
    {MOSQ_EVT_TICK, Allow},
};

static const struct Registration kRegistrations21[] = {
    {MOSQ_EVT_BASIC_AUTH, Ignore21},
    {MOSQ_EVT_MESSAGE, Allow},
    {kEventMessageOut21, Allow},
    {MOSQ_EVT_TICK, Tick21},
};

static mosquitto_plugin_id_t *identifier;
static const struct Registration *registered;
static size_t registered_count;

int mosquitto_plugin_version(int, const int *) { return 5; }

int mosquitto_plugin_init(mosquitto_plugin_id_t *id, void **, struct mosquitto_opt *, int) {
  identifier = id;
  /* Only 2.1 exports mosquitto_client_port, as the plugin tells them apart (plugin/broker_api.cc). */
  const int api_2_1 = dlsym(RTLD_DEFAULT, "mosquitto_client_port") != NULL;
  const struct Registration *table = api_2_1 ? kRegistrations21 : kRegistrations20;
  const size_t count = api_2_1 ? sizeof kRegistrations21 / sizeof kRegistrations21[0]
                               : sizeof kRegistrations20 / sizeof kRegistrations20[0];
  registered = table;
  for (registered_count = 0; registered_count < count; ++registered_count) {
    const int rc = mosquitto_callback_register(id, table[registered_count].event,
                                               table[registered_count].callback, NULL, NULL);
    if (rc != MOSQ_ERR_SUCCESS) {
      mosquitto_log_printf(MOSQ_LOG_ERR, "mqc_floor_plugin: cannot register for event %d: %d",
                           table[registered_count].event, rc);
      mosquitto_plugin_cleanup(NULL, NULL, 0);
      return MOSQ_ERR_UNKNOWN;
    }
  }
  mosquitto_log_printf(MOSQ_LOG_NOTICE, "mqc_floor_plugin: %s events registered",
                       api_2_1 ? "2.1" : "2.0");
  return MOSQ_ERR_SUCCESS;
}

int mosquitto_plugin_cleanup(void *, struct mosquitto_opt *, int) {
  for (size_t i = registered_count; i > 0; --i) {
    mosquitto_callback_unregister(identifier, registered[i - 1].event, registered[i - 1].callback,
                                  NULL);
  }
  registered_count = 0;
  return MOSQ_ERR_SUCCESS;
}
