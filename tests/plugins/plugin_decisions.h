// SPDX-License-Identifier: BSD-3-Clause
/* The decisions of the neutrality suites' other plugins (neutrality_plugin.c, version 5, and
 * v4_auth_plugin.c, version 4), each plugin with its own names, so that a test can tell which
 * plugin decided. */
#pragma once

#include <stdbool.h>
#include <string.h>

/* clang-format off */
#include <mosquitto.h>
#include <mosquitto_broker.h>
#include <mosquitto_plugin.h>
/* clang-format on */

static inline bool Equal(const char *text, const char *expected) {
  return text != NULL && strcmp(text, expected) == 0;
}

static inline bool StartsWith(const char *text, const char *prefix) {
  return strncmp(text, prefix, strlen(prefix)) == 0;
}

/* A CONNECT: `user` with `password` accepted (with another password refused), `blocked`
 * refused, every other username left to the others (DEFER). */
static inline int PasswordDecision(const char *username, const char *password, const char *user,
                                   const char *user_password, const char *blocked) {
  if (Equal(username, blocked)) return MOSQ_ERR_AUTH;
  if (Equal(username, user)) {
    return Equal(password, user_password) ? MOSQ_ERR_SUCCESS : MOSQ_ERR_AUTH;
  }
  return MOSQ_ERR_PLUGIN_DEFER;
}

/* An access to `topic`: under `allowed` allowed, under `denied` denied, the rest left to the
 * others (DEFER). */
static inline int TopicDecision(const char *topic, const char *allowed, const char *denied) {
  if (topic == NULL) return MOSQ_ERR_PLUGIN_DEFER;
  if (StartsWith(topic, allowed)) return MOSQ_ERR_SUCCESS;
  if (StartsWith(topic, denied)) return MOSQ_ERR_ACL_DENIED;
  return MOSQ_ERR_PLUGIN_DEFER;
}
