# SPDX-License-Identifier: BSD-3-Clause
"""Configuration reloads (SIGHUP, as systemd's ExecReload and Debian's logrotate send) against the
real broker: the registry stays the broker's truth through any number of reloads, clients the
reload revokes close as ACCESS_REVOKED, options change, and auth neutrality holds when a
password_file or acl_file comes or goes (docs/reload.md)."""

import concurrent.futures
import os
import random
import signal
import threading
import time
import unittest

from harness import (Broker, BrokerPerTestCase, Client, SharedBrokerTestCase, broker_plugin,
                     close_reason, passwd_file, passwd_users, wait_for)
from test_list_connections import connections as list_all
from test_metrics import Metrics, Responder, delta, v5_properties, wait_metrics

OPEN = "MQTT_CONNECTION_STATE_OPEN"
CLOSED = "MQTT_CONNECTION_STATE_CLOSED"


def rewrite_config(broker):
    """Writes the broker's mosquitto.conf again from its (changed) attributes."""
    with open(broker.config, "w") as f:
        f.write(broker.config_text())


def write_file(broker, name, content):
    path = os.path.join(broker.dir, name)
    with open(path, "w") as f:
        f.write(content)
    os.chmod(path, 0o644)


def reload_broker(broker, marker_id=None):
    """SIGHUP, then waits until the broker has reloaded and the companion has applied every
    event of it: a marker client connected after the reload is listed only once every event
    written before it was applied. Returns the marker (still connected) or None."""
    count = broker.log().count("Reloading config.")
    broker.process.send_signal(signal.SIGHUP)
    wait_for(lambda: broker.log().count("Reloading config.") > count, what="the reload")
    if marker_id is None:
        return None
    marker = Client(broker, marker_id)
    wait_for(lambda: broker.connection(marker_id), what="the marker client listed")
    return marker


def no_reconnect(client):
    """paho reconnects after the broker closes a connection; a revoked client must not. Its
    `lost` event is set when the broker closes the connection."""
    client.client._reconnect_on_failure = False
    client.lost = threading.Event()
    client.client.on_disconnect = lambda *args: client.lost.set()
    return client


def open_entries(broker):
    return [c for c in list_all(broker) if c["state"] == OPEN]


def stable_view(connection):
    """What must not change about an open connection across reloads."""
    return {key: connection.get(key) for key in
            ("uid", "openTime", "clientId", "username", "protocolVersion", "cleanSession",
             "keepAlive", "source", "listenerName", "authenticationInfo", "subscriptions",
             "totalRequestStatistics")}


def gauge(broker):
    return Metrics(broker).get("kubemq_mqtt_connections")


class ReloadKeepsTheRegistryTest(BrokerPerTestCase):
    """Clients of MQTT 3.1.1 and 5, with and without usernames, two subscriptions each."""

    broker_arguments = {"passwords": {"alice": "secret", "carol": "secret"}}

    def connect_all(self):
        """The operator's 60 clients: per protocol version 12 anonymous, 15 alice, 3 carol."""
        for version in (4, 5):
            for user, count in ((None, 12), ("alice", 15), ("carol", 3)):
                for n in range(count):
                    client_id = f"c{version}-{user or 'anon'}-{n}"
                    c = no_reconnect(Client(self.broker, client_id, version=version,
                                            username=user, password="secret" if user else None))
                    self.assertEqual(c.connack, 0)
                    c.subscribe(f"events/{client_id}", 1)
                    c.subscribe(f"store/{client_id}/#", 0)
                    c.publish(f"events/{client_id}", b"hello", qos=1)
                    self.clients.append(c)
        wait_for(lambda: len(open_entries(self.broker)) == len(self.clients) and all(
            len(c["subscriptions"]) == 2 and
            int(c["totalRequestStatistics"].get("publishCount", "0")) == 1
            for c in open_entries(self.broker)), what="every client listed, settled")

    def test_reloads_change_nothing_in_either_api_or_the_metrics(self):
        self.connect_all()
        self.assertEqual(len(self.clients), 60)
        before = sorted((stable_view(c) for c in open_entries(self.broker)),
                        key=lambda c: c["clientId"])
        kubemq_before = sorted(self.broker.connections(), key=lambda c: c["client_id"])
        metrics_before = Metrics(self.broker)
        self.assertEqual(metrics_before.get("kubemq_mqtt_connections"), 60)

        markers = [reload_broker(self.broker, marker_id=f"marker-{n}") for n in range(2)]
        self.clients += markers
        marker_ids = {f"marker-{n}" for n in range(len(markers))}

        after = sorted((stable_view(c) for c in open_entries(self.broker)
                        if c["clientId"] not in marker_ids), key=lambda c: c["clientId"])
        self.assertEqual(after, before)
        kubemq_after = sorted((c for c in self.broker.connections()
                               if c["client_id"] not in marker_ids), key=lambda c: c["client_id"])
        self.assertEqual(kubemq_after, kubemq_before)
        metrics_after = Metrics(self.broker)
        self.assertEqual(metrics_after.get("kubemq_mqtt_connections"), 62)  # with the markers
        self.assertEqual(metrics_after.get("kubemq_mqtt_connects_total"),
                         metrics_before.get("kubemq_mqtt_connects_total") + len(markers))
        self.assertEqual(len(open_entries(self.broker)), 62)

        # Connections keep counting into their own statistics after the reloads.
        first = self.clients[0]
        first_id = "c4-anon-0"
        first.publish(f"events/{first_id}", b"again", qos=1)
        wait_for(lambda: [c for c in open_entries(self.broker) if c["clientId"] == first_id and
                          c["totalRequestStatistics"].get("publishCount") == "2"],
                 what="the second publish counted on the same connection")

        # A client that leaves after the reloads is gone from both APIs and the gauge.
        first.disconnect()
        self.clients.remove(first)
        wait_for(lambda: self.broker.connection(first_id) is None, what="the client gone")
        self.assertEqual([c["state"] for c in list_all(self.broker)
                          if c["clientId"] == first_id], [CLOSED])
        wait_metrics(self.broker, lambda m: m.get("kubemq_mqtt_connections") == 61,
                     what="the gauge one lower")

        # carol leaves the password file before a third reload: the broker closes her six
        # connections, and so does the registry.
        write_file(self.broker, "passwd", passwd_users({"alice": "secret"}))
        carol = [c for c in self.clients if "-carol-" in c.client._client_id.decode()]
        self.assertEqual(len(carol), 6)
        self.clients.append(reload_broker(self.broker, marker_id="marker-2"))
        for c in carol:
            wait_for(c.lost.is_set, what="carol's connection closed by the broker")
        expected = sorted(c.client._client_id.decode() for c in self.clients if c not in carol)
        wait_for(lambda: sorted(c["client_id"] for c in self.broker.connections()) == expected,
                 what="exactly the clients still connected listed")
        self.assertEqual(sorted(c["clientId"] for c in open_entries(self.broker)), expected)
        revoked = list_all(self.broker, "close_reason = ACCESS_REVOKED")
        self.assertEqual(sorted(c["clientId"] for c in revoked),
                         sorted(c.client._client_id.decode() for c in carol))
        m = wait_metrics(self.broker,
                         lambda m: m.get("kubemq_mqtt_connections") == len(expected),
                         what="the gauge at the clients still connected")
        self.assertEqual(len(expected), 56)
        self.assertEqual(m.get("kubemq_mqtt_disconnects_total", reason="access_revoked"), 6)
        self.assertEqual(m.get("kubemq_mqtt_connects_total"),
                         metrics_before.get("kubemq_mqtt_connects_total") + 3)

    def test_a_user_removed_from_the_password_file_is_revoked(self):
        alice = [no_reconnect(Client(self.broker, f"alice-{v}", version=v, username="alice",
                                     password="secret")) for v in (4, 5)]
        anon = Client(self.broker, "anon", version=4)
        self.clients += alice + [anon]
        wait_for(lambda: len(open_entries(self.broker)) == 3, what="three clients listed")
        connects = Metrics(self.broker).get("kubemq_mqtt_connects_total")
        write_file(self.broker, "passwd", passwd_file("bob", "other"))
        reload_broker(self.broker)
        # The broker closes alice's connections: the clients see it, and so does the registry.
        for c in alice:
            wait_for(c.lost.is_set, what="alice disconnected")
        wait_for(lambda: [c["clientId"] for c in open_entries(self.broker)] == ["anon"],
                 what="only the anonymous client open")
        closed = {c["clientId"]: c for c in list_all(self.broker) if c["state"] == CLOSED}
        for client_id in ("alice-4", "alice-5"):
            self.assertEqual(closed[client_id]["closeReason"], "ACCESS_REVOKED")
        m = wait_metrics(self.broker, lambda m: m.get("kubemq_mqtt_connections") == 1,
                         what="the gauge at 1")
        self.assertEqual(m.get("kubemq_mqtt_disconnects_total", reason="access_revoked"), 2)
        self.assertEqual(m.get("kubemq_mqtt_connects_total"), connects)
        # The filter knows the new reason.
        revoked = list_all(self.broker, "close_reason = CLOSE_REASON_ACCESS_REVOKED")
        self.assertEqual(sorted(c["clientId"] for c in revoked), ["alice-4", "alice-5"])

    def test_allow_anonymous_turned_off_revokes_anonymous_clients(self):
        anon = [no_reconnect(Client(self.broker, f"anon-{v}", version=v)) for v in (4, 5)]
        alice = Client(self.broker, "alice", version=5, username="alice", password="secret")
        self.clients += anon + [alice]
        wait_for(lambda: len(open_entries(self.broker)) == 3, what="three clients listed")
        self.broker.allow_anonymous = False
        rewrite_config(self.broker)
        reload_broker(self.broker)
        wait_for(lambda: [c["clientId"] for c in open_entries(self.broker)] == ["alice"],
                 what="only alice open")
        for c in anon:
            wait_for(c.lost.is_set, what="anonymous client dropped")
        reasons = {c["clientId"]: c.get("closeReason") for c in list_all(self.broker)
                   if c["state"] == CLOSED}
        self.assertEqual(reasons, {"anon-4": "ACCESS_REVOKED", "anon-5": "ACCESS_REVOKED"})
        wait_metrics(self.broker, lambda m: m.get("kubemq_mqtt_connections") == 1,
                     what="the gauge at 1")
        # And new anonymous CONNECTs are refused now, as the broker alone would.
        refused = Client(self.broker, "anon-new", version=4, connect=False)
        self.clients.append(refused)
        self.assertEqual(refused.connect(), 5)


class ReloadInTheMiddleTest(SharedBrokerTestCase):
    """The existing scenarios, with a reload between their steps."""

    def test_takeover_after_a_reload(self):
        old = self.client("dup", version=4)
        old.client.loop_stop()  # no automatic reconnect: its socket stays open until taken over
        wait_for(lambda: self.broker.connection("dup"), what="dup listed")
        uid = [c["uid"] for c in open_entries(self.broker) if c["clientId"] == "dup"]
        self.clients.append(reload_broker(self.broker, "m-takeover"))
        self.client("dup", version=5)
        wait_for(lambda: [c["protocol_version"] for c in self.broker.connections()
                          if c["client_id"] == "dup"] == [5], what="one dup, the new one")
        closed = [c for c in list_all(self.broker) if c["uid"] in uid]
        self.assertEqual([(c["state"], c["closeReason"]) for c in closed],
                         [(CLOSED, "SESSION_TAKEN_OVER")])
        wait_metrics(self.broker, lambda m: m.get("kubemq_mqtt_connections") == 2,
                     what="the gauge counts dup once")

    def test_persistent_session_resumed_after_a_reload(self):
        sleeper = Client(self.broker, "sleeper", version=4, clean=False)
        sleeper.subscribe("events/sleep", 1)
        sleeper.subscribe("store/sleep/#", 1)
        sleeper.disconnect()
        wait_for(lambda: self.broker.connection("sleeper") is None, what="sleeper offline")
        # The broker re-checks the offline session too: it must not be listed as open.
        self.clients.append(reload_broker(self.broker, "m-resume"))
        self.assertIsNone(self.broker.connection("sleeper"))
        self.assertEqual(Metrics(self.broker).get("kubemq_mqtt_connections"), 1)
        back = self.client("sleeper", version=4, clean=False)
        self.assertEqual(back.connack, 0)
        wait_for(lambda: (self.broker.connection("sleeper") or {}).get("subscriptions"),
                 what="the resumed session's subscriptions listed")
        entries = [c for c in list_all(self.broker) if c["clientId"] == "sleeper"]
        self.assertEqual(sorted(c["state"] for c in entries), [CLOSED, OPEN])
        opened = [c for c in entries if c["state"] == OPEN][0]
        self.assertEqual(sorted(s["filter"] for s in opened["subscriptions"]),
                         ["events/sleep", "store/sleep/#"])
        back.disconnect()
        self.clients.remove(back)
        # A clean session ends the stored one.
        Client(self.broker, "sleeper", version=4, clean=True).disconnect()

    def test_metric_deltas_across_a_reload(self):
        sub = self.client("sub", version=5)
        sub.subscribe("events/x", 1)
        pub = self.client("pub", version=4)
        before = Metrics(self.broker)
        for _ in range(3):
            pub.publish("events/x", b"12345", qos=1)
        self.clients.append(reload_broker(self.broker, "m-deltas"))
        for _ in range(2):
            pub.publish("events/x", b"12345", qos=1)
        wait_for(lambda: len(sub.messages) == 5, what="five deliveries")
        after = wait_metrics(self.broker, lambda m: delta(before, m, "deliver_events",
                                                          "success") == 5, what="deliveries")
        self.assertEqual(delta(before, after, "publish_events", "success"), 5)
        self.assertEqual(after.get("kubemq_mqtt_connects_total") -
                         before.get("kubemq_mqtt_connects_total"), 1)  # the marker
        pub_entry = [c for c in open_entries(self.broker) if c["clientId"] == "pub"][0]
        self.assertEqual(pub_entry["totalRequestStatistics"]["publishCount"], "5")
        self.assertEqual(pub_entry["totalRequestStatistics"]["publishBytes"], "25")

    def test_rpc_tracking_across_a_reload(self):
        responder = Responder(self.broker, "svc-reload")
        self.clients.append(responder.client)
        requester = self.client("req-reload", version=5)
        requester.subscribe("$reply/req-reload", 1)
        before = Metrics(self.broker)
        requester.publish("commands/svc/a", b"go", qos=1,
                          properties=v5_properties("$reply/req-reload", b"c1"))
        self.clients.append(reload_broker(self.broker, "m-rpc"))
        requester.publish("commands/svc/b", b"go", qos=1,
                          properties=v5_properties("$reply/req-reload", b"c2"))
        wait_for(lambda: len(requester.messages) == 2, what="two responses")
        after = wait_metrics(self.broker,
                             lambda m: delta(before, m, "rpc_response", "success") == 2,
                             what="two responses counted")
        self.assertEqual(delta(before, after, "rpc_command", "success"), 2)
        self.assertEqual(delta(before, after, "rpc_command", "error"), 0)
        self.assertEqual(delta(before, after, "rpc_command", "dropped"), 0)

    def test_closed_connections_survive_a_reload(self):
        gone = Client(self.broker, "gone-before", version=4)
        gone.disconnect()
        wait_for(lambda: [c for c in list_all(self.broker) if c["clientId"] == "gone-before"
                          and c["state"] == CLOSED], what="the closed entry")
        stay = self.client("stay", version=5)
        stay.subscribe("events/stay", 1)
        wait_for(lambda: (self.broker.connection("stay") or {}).get("subscriptions"),
                 what="stay listed with its subscription")
        uid = [c["uid"] for c in open_entries(self.broker) if c["clientId"] == "stay"]
        closed_before = [c for c in list_all(self.broker) if c["state"] == CLOSED]
        self.clients.append(reload_broker(self.broker, "m-closed"))
        closed_after = [c for c in list_all(self.broker) if c["state"] == CLOSED]
        self.assertEqual(closed_after, closed_before)
        # A connection that closes after the reload closes once, as the one it was.
        stay.disconnect()
        self.clients.remove(stay)
        wait_for(lambda: self.broker.connection("stay") is None, what="stay gone")
        entries = [c for c in list_all(self.broker) if c["clientId"] == "stay"]
        self.assertEqual([(c["uid"], c["state"], c["closeReason"]) for c in entries],
                         [(uid[0], CLOSED, close_reason("CLIENT_DISCONNECT"))])
        self.assertEqual([s["filter"] for s in entries[0]["subscriptions"]], ["events/stay"])


class ReloadedOptionsTest(unittest.TestCase):
    def test_options_that_can_change_do_and_the_others_keep_their_value(self):
        with Broker(options={"closed_max": "10", "default_pattern": "events"}) as broker:
            try:
                for n in range(3):
                    Client(broker, f"short-{n}").disconnect()
                wait_for(lambda: len([c for c in list_all(broker) if c["state"] == CLOSED]) == 3,
                         what="three closed entries")
                keeper = Client(broker, "keeper")
                keeper.subscribe("site/temp", 0)
                wait_for(lambda: (broker.connection("keeper") or {}).get("subscriptions"),
                         what="keeper's subscription")
                self.assertEqual(broker.connection("keeper")["subscriptions"][0]["pattern"],
                                 "events")

                companion = broker.companion_pids()
                broker.options.update({"closed_max": "1", "default_pattern": "store",
                                       "http_port": "1", "rpc_max_pending": "1"})
                rewrite_config(broker)
                marker = reload_broker(broker, "marker")
                self.assertIn("plugin_opt_http_port changed; keeping serving on", broker.log())
                self.assertIn("applied default_pattern store, closed_max 1, rpc_max_pending 1",
                              broker.log())
                # The running companion took the new options: it was not restarted.
                self.assertEqual(broker.companion_pids(), companion)
                wait_for(lambda: len([c for c in list_all(broker) if c["state"] == CLOSED]) == 1,
                         what="the closed list trimmed to the new closed_max")
                self.assertEqual(broker.connection("keeper")["subscriptions"][0]["pattern"],
                                 "store")
                before = Metrics(broker)
                keeper.publish("site/temp", b"x", qos=1)
                wait_metrics(broker, lambda m: delta(before, m, "publish_store", "success") == 1,
                             what="an unprefixed publish counted as store")
                # rpc_max_pending 1: of two unanswered commands the second is dropped.
                requester = Client(broker, "requester", version=5)
                for n in range(2):
                    requester.publish("commands/nobody", b"?", qos=1,
                                      properties=v5_properties("r/requester", b"%d" % n))
                wait_metrics(broker, lambda m: delta(before, m, "rpc_command", "dropped") == 1,
                             what="the command beyond the new rpc_max_pending dropped")
                requester.disconnect()

                # A bad value keeps every option as it was, and the broker keeps routing.
                broker.options.update({"closed_max": "lots", "default_pattern": "events"})
                rewrite_config(broker)
                reload_broker(broker)
                wait_for(lambda: "plugin_opt_closed_max" in broker.log().split(
                    "Reloading config.")[-1], what="the log line naming the option")
                self.assertIsNone(broker.process.poll())
                before = Metrics(broker)
                keeper.publish("site/temp", b"x", qos=1)
                wait_metrics(broker, lambda m: delta(before, m, "publish_store", "success") == 1,
                             what="default_pattern still store")
                marker.disconnect()
                keeper.disconnect()
                wait_for(lambda: broker.connection("keeper") is None, what="keeper gone")
                self.assertEqual(
                    len([c for c in list_all(broker) if c["state"] == CLOSED]), 1)
            finally:
                broker.cleanup_dir()


def plain_and_plugin(files, extra, allow_anonymous=True):
    return [Broker(plugin=plugin, files=files, extra=extra, allow_anonymous=allow_anonymous)
            for plugin in (False, True)]


def outcome(broker, scenario):
    """What clients get: CONNACK codes, and which of their publishes came back."""
    results = {}
    for name, (username, password) in scenario.items():
        c = Client(broker, name, version=4, username=username, password=password, connect=False)
        results[name] = rc = c.connect()
        if rc == 0:
            results[name + " suback"] = [c.subscribe("a/#", 1), c.subscribe("b/#", 1)]
            for topic in ("a/x", "b/x"):
                c.publish(topic, b"1", qos=1)
            # No wait for what might still come: the broker writes a message's deliveries to
            # this client before the PUBACK of its publish (handle__publish queues them first),
            # and publish() returned on that PUBACK, so every delivery has arrived by now.
            results[name + " got"] = sorted(t for t, _ in c.messages)
        try:
            c.disconnect()
        except Exception:
            pass
    return results


ACL = "user alice\ntopic readwrite a/#\n"
SCENARIO = {"anonymous": (None, None), "alice": ("alice", "secret"),
            "alice-wrong": ("alice", "wrong"), "stranger": ("stranger", "x")}


class NeutralityAcrossReloadTest(unittest.TestCase):
    """The same steps on a plain broker and one with the plugin give the same outcomes, when a
    reload adds or removes a password_file or an acl_file."""

    # (config at start, config after the reload, files) of each test's pair of brokers.
    RUNS = {
        "password_file_added": ("", "password_file {dir}/passwd",
                                {"passwd": passwd_file("alice", "secret")}),
        "password_file_removed": ("password_file {dir}/passwd", "",
                                  {"passwd": passwd_file("alice", "secret")}),
        "acl_file_added": ("", "acl_file {dir}/acl", {"acl": ACL}),
        "acl_file_removed": ("acl_file {dir}/acl", "", {"acl": ACL}),
        # Mosquitto loads plugins at start only: a plugin line added before a reload decides
        # nothing, so the plugin must go on deciding where nothing else does.
        "plugin_line_added": ("", f"plugin {broker_plugin('mosquitto_dynamic_security.so')}\n"
                              "plugin_opt_config_file {dir}/absent.json", {}),
    }

    @classmethod
    def setUpClass(cls):
        # Every pair starts now, side by side (they wait mostly on brokers and clocks, so the
        # five take about the time of one); each test waits for its own.
        cls.pool = concurrent.futures.ThreadPoolExecutor(max_workers=2 * len(cls.RUNS))
        cls.runs = {name: [cls.pool.submit(cls.run_one, broker, reloaded)
                           for broker in plain_and_plugin(files, start)]
                    for name, (start, reloaded, files) in cls.RUNS.items()}

    @classmethod
    def tearDownClass(cls):
        cls.pool.shutdown(wait=True, cancel_futures=True)

    @staticmethod
    def run_one(broker, reloaded_extra):
        with broker:
            try:
                first = outcome(broker, SCENARIO)
                broker.extra = reloaded_extra
                rewrite_config(broker)
                reload_broker(broker)
                # The reload is over once the broker answers a CONNECT.
                Client(broker, "probe").disconnect()
                second = outcome(broker, SCENARIO)
                if broker.plugin:
                    wait_for(lambda: broker.connections() == [], what="all gone")
                return first, second
            finally:
                broker.cleanup_dir()

    def run_both(self, name):
        """(before, after the reload) of the plain broker, checked equal to the plugin's."""
        plain, plugged = (run.result() for run in self.runs[name])
        self.assertEqual(plugged, plain)
        return plain

    def test_password_file_added(self):
        first, second = self.run_both("password_file_added")
        self.assertEqual(first["alice-wrong"], 0)
        self.assertEqual(second["alice-wrong"], 5)

    def test_password_file_removed(self):
        first, second = self.run_both("password_file_removed")
        self.assertEqual(first["stranger"], 5)
        self.assertEqual(second["stranger"], 0)

    def test_acl_file_added(self):
        first, second = self.run_both("acl_file_added")
        self.assertEqual(first["alice-wrong got"], ["a/x", "b/x"])
        self.assertEqual(second["alice got"], ["a/x"])

    def test_acl_file_removed(self):
        first, second = self.run_both("acl_file_removed")
        self.assertEqual(first["alice got"], ["a/x"])
        self.assertEqual(second["alice got"], ["a/x", "b/x"])

    def test_plugin_line_added_is_ignored_as_the_broker_ignores_it(self):
        first, second = self.run_both("plugin_line_added")
        self.assertEqual(second["stranger"], 0)
        self.assertEqual(second["stranger got"], ["a/x", "b/x"])

    def test_unchecked_username_revoked_when_a_password_file_arrives(self):
        files = {"passwd": passwd_file("alice", "secret")}
        with Broker(files=files) as broker:
            try:
                wrong = no_reconnect(
                    Client(broker, "wrong", version=5, username="alice", password="wrong"))
                right = Client(broker, "right", version=4, username="alice", password="secret")
                wait_for(lambda: len(open_entries(broker)) == 2, what="both listed")
                broker.extra = "password_file {dir}/passwd"
                rewrite_config(broker)
                reload_broker(broker)
                wait_for(wrong.lost.is_set, what="wrong dropped")
                wait_for(lambda: [c["clientId"] for c in open_entries(broker)] == ["right"],
                         what="only the right password open")
                revoked = [c for c in list_all(broker) if c["clientId"] == "wrong"]
                self.assertEqual(revoked[0]["closeReason"], "ACCESS_REVOKED")
                right.disconnect()
            finally:
                broker.cleanup_dir()


class ReloadSoakTest(unittest.TestCase):
    """20 reloads, one every half second, while clients connect, subscribe and drop."""

    RELOADS = 20
    INTERVAL_S = 0.5

    def test_registry_equals_the_brokers_truth_after_a_reload_storm(self):
        broker = Broker(passwords={"alice": "secret"}, extra="sys_interval 1")
        broker.start()
        stop = threading.Event()
        errors = []
        live = {}  # client id -> Client, the clients' own view of who is connected
        lock = threading.Lock()

        def churn(worker):
            rng = random.Random(worker)
            n = 0
            while not stop.is_set():
                n += 1
                client_id = f"w{worker}-{n}"
                try:
                    c = no_reconnect(Client(broker, client_id, version=rng.choice((4, 5)),
                                            username=rng.choice((None, "alice")),
                                            password="secret"))
                    c.subscribe(f"events/{client_id}", 1)
                    c.subscribe(f"store/{client_id}/#", 0)
                    with lock:
                        live[client_id] = c
                    time.sleep(rng.uniform(0.05, 0.4))
                    if rng.random() < 0.5:
                        with lock:
                            victim = rng.choice(sorted(live))
                            gone = live.pop(victim)
                        if rng.random() < 0.5:
                            gone.disconnect()
                        else:
                            gone.drop()
                except Exception as error:  # noqa: BLE001 - reported below
                    errors.append(f"{client_id}: {error!r}")
                    return

        try:
            workers = [threading.Thread(target=churn, args=(w,)) for w in range(4)]
            for w in workers:
                w.start()
            reloads = 0
            while reloads < self.RELOADS:
                broker.process.send_signal(signal.SIGHUP)
                reloads += 1
                time.sleep(self.INTERVAL_S)
            stop.set()
            for w in workers:
                w.join(timeout=30)
            self.assertEqual(errors, [])
            wait_for(lambda: broker.log().count("Reloading config.") == reloads, timeout=20,
                     what="every reload done")
            with lock:
                expected = set(live)
            self.assertEqual([i for i, c in live.items() if c.lost.is_set()], [])

            # The broker's own count, from $SYS (it counts the watcher too).
            watcher = Client(broker, "sys-watcher")
            counts = []
            watcher.client.on_message = lambda _c, _u, m: counts.append(int(m.payload))
            watcher.client.subscribe("$SYS/broker/clients/connected", 0)
            expected.add("sys-watcher")

            def settled():
                listed = [c["client_id"] for c in broker.connections()]
                return (sorted(listed) == sorted(expected) and counts and
                        counts[-1] == len(expected) and
                        Metrics(broker).get("kubemq_mqtt_connections") == len(expected))
            wait_for(settled, timeout=20, what="registry, $SYS and the gauge agree")
            opened = open_entries(broker)
            self.assertEqual(len(opened), len(expected))
            self.assertEqual(len({c["uid"] for c in opened}), len(opened))
            for c in opened:
                if c["clientId"] != "sys-watcher":
                    self.assertEqual(len(c["subscriptions"]), 2, c["clientId"])
            for c in list(live.values()) + [watcher]:
                c.disconnect()
            wait_for(lambda: broker.connections() == [], what="everyone gone")
            self.assertEqual(Metrics(broker).get("kubemq_mqtt_connections"), 0)
        finally:
            stop.set()
            broker.stop()
            broker.cleanup_dir()


if __name__ == "__main__":
    unittest.main()
