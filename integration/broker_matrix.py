# SPDX-License-Identifier: BSD-3-Clause
"""Which integration suite or test cannot apply to which broker build, and why: the one place.

Every suite runs against every broker of the matrix (scripts/prepare-brokers.py) unless an entry
here says otherwise. An entry is (test id prefix, applies_to, reason): the prefix is a suite
("test_reload"), a class ("test_reload.ReloadSoakTest") or one test
("test_reload.ReloadSoakTest.test_x"); applies_to(broker) gets an integration/brokers.py
BrokerBuild (name, version_tuple, build) and says whether the entry holds for it; the reason is
what the skip prints. integration/run_suite.py turns entries into unittest skips
(harness.apply_broker_matrix), and ctest shows a suite skipped whole as "Not Run".

Add an entry only with a reason from upstream's source or from the suite's own purpose, never to
quiet a failure the plugin should fix.
"""

def before_2_1(broker):
    return broker.version_tuple < (2, 1, 0)


def beside_system(broker):
    return broker.build != "system"


# Suites whose subject is the companion's own side (its HTTP server, the console, the CLI, the
# Connect clients, the OpenAPI document, the dashboard): the same binary with every broker. They
# run on `system`, under ASan and TSan too; what in them depends on the broker (close reasons,
# counts, listings) is tested on every broker by the other suites (test_list_connections,
# test_metrics, test_acl_counting, test_connections, ...). Leaving them out of the other three
# brokers keeps the test command near 30 minutes on 2 cores.
COMPANION_ONLY = ("test_allowed_hosts", "test_cli", "test_connect_clients", "test_console",
                  "test_flood", "test_grafana_dashboard", "test_network_info", "test_openapi",
                  "test_top_clients")
# Suites that start brokers of several builds themselves (a fleet of 2.0.11, 2.0.21 and 2.1):
# one run covers them all, so they run once, on system.
SPANS_BROKERS = ("test_fleet", "test_fleet_admin", "test_fleet_metrics")

# Brokers built for the client layout alone (scripts/prepare-brokers.py: 2.1-bare, the broker
# without TLS or WebSockets and without plugins of its own): its struct differs from the other
# 2.1 builds', which is what they are for; the layout's suites run on them, nothing else (the
# rest is the same code on 2.1-make's broker).
LAYOUT_BROKERS = ("2.1-bare",)
LAYOUT_SUITES = ("test_broker_layout", "test_message_queues", "test_session_expiry",
                 "test_will")  # hasWill is read through the layout

NOT_APPLICABLE = [
    *((suite, beside_system, "the suite tests the companion's side, the same with every broker; "
       "it runs on system (integration/broker_matrix.py: COMPANION_ONLY)")
      for suite in COMPANION_ONLY),
    *((suite, beside_system, "the suite starts brokers of several builds itself; it runs once, "
       "on system (integration/broker_matrix.py: SPANS_BROKERS)")
      for suite in SPANS_BROKERS),
    ("deb_package", lambda broker: broker.build != "system",
     "tests the .deb against the installed broker it depends on (Depends: mosquitto (>= "
     "2.0.11), mosquitto (<< 2.2)), not a broker unpacked or built into the build tree"),
    ("test_auth_neutrality.AuthNeutralityTest.test_password_plugin_loaded_with_global_plugin",
     before_2_1, "global_plugin and the password-file plugin are Mosquitto 2.1's "
     "(src/conf.c, plugins/password-file)"),
    ("test_auth_neutrality.AuthNeutralityTest."
     "test_acl_plugin_loaded_with_plugin_load_and_plugin_use",
     before_2_1, "plugin_load, plugin_use and the acl-file plugin are Mosquitto 2.1's "
     "(src/conf.c, plugins/acl-file)"),
    ("test_proxy_protocol", before_2_1,
     "enable_proxy_protocol (PROXY protocol listeners, behind HAProxy) is Mosquitto 2.1's "
     "(src/conf.c, src/proxy_v1.c, src/proxy_v2.c); 2.0 refuses the option"),
    ("test_kubemq_strict.StrictModeBesideAnAuthPluginTest", before_2_1,
     "on 2.0 the plugin leaves ACL decisions to the other plugin whatever strict mode says "
     "(README, Auth neutrality): the case is 2.1's, where strict mode adds an ACL callback"),
    ("test_session_expiry.UnknownLayoutExpiryTest", before_2_1,
     "2.0 exports no client lookup (mosquitto_client is 2.1's, src/linker.syms): without a "
     "verified layout it cannot tell when the broker expired an MQTT 5 session (docs/how-it-works.md, "
     "Session expiry)"),
    ("test_connections.StartupErrorTest.test_per_listener_settings_is_refused_with_the_reason",
     lambda broker: broker.version_tuple >= (2, 0, 15),
     "this broker sends TICK with per_listener_settings true (src/loop.c, 2.0.15 on): the "
     "plugin accepts it (test_connections.PerListenerSettingsTest)"),
    ("test_connections.PerListenerSettingsTest",
     lambda broker: broker.version_tuple < (2, 0, 15),
     "the broker sends no TICK with per_listener_settings true before 2.0.15 (src/loop.c): the "
     "plugin refuses it (test_connections.StartupErrorTest)"),
]


def skip_reason(test_id, broker):
    """The reason `test_id` cannot run on `broker`, or None when it can."""
    if broker.name in LAYOUT_BROKERS and test_id.split(".")[0] not in LAYOUT_SUITES:
        return (f"not on {broker.name}: a broker built for the client layout's suites alone "
                "(integration/broker_matrix.py: LAYOUT_BROKERS)")
    for prefix, applies_to, reason in NOT_APPLICABLE:
        if (test_id == prefix or test_id.startswith(prefix + ".")) and applies_to(broker):
            return f"not on {broker.name}: {reason}"
    return None
