# SPDX-License-Identifier: BSD-3-Clause
"""Persistent sessions across a broker restart, against the real broker with `persistence true`.

Six persistent clients (MQTT 3.1.1 clean session false, MQTT 5 clean start false with a session
expiry, one with a shared subscription) subscribe and disconnect; the broker is stopped with
SIGTERM (it saves mosquitto.db) and started again on the same configuration and port. The plugin
reads that file at start: the sessions are listed as offline with what the broker restored,
their subscriptions count in kubemq_mqtt_subscriptions, and a client that resumes its session
shows them again in both APIs; a QoS 0 message for a restored session is counted as dropped.
A corrupt or truncated file is refused with one warning, and the broker starts and routes as
usual.
"""

import json
import os
import re
import signal
import unittest
import urllib.request

from harness import Broker, BrokerPerTestCase, Client, wait_for

PATH = "/mqtt.connections.v1.ConnectionsService/ListConnections"
HEADERS = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
OFFLINE = "MQTT_CONNECTION_STATE_OFFLINE"
OPEN = "MQTT_CONNECTION_STATE_OPEN"
WARNING = "mosquitto_connections: the broker's persistence file is not used"

# client id -> (MQTT version, [(filter, qos)])
SESSIONS = {
    "p4-a": (4, [("events/site/a/#", 1), ("queues/jobs/a", 2)]),
    "p4-b": (4, [("store/orders/b", 1), ("events/site/b", 0)]),
    "p4-clean": (4, [("events/site/c/#", 1), ("queues/jobs/c", 1)]),
    "p5-shared": (5, [("$share/g/queues/work", 1), ("commands/door/s", 1)]),
    "p5-b": (5, [("events/site/e/#", 2), ("queries/stock/e", 1)]),
    "p5-c": (5, [("store/ledger/f", 1), ("events/site/f", 1)]),
}
# Mosquitto 2.0 does not save shared subscriptions in mosquitto.db (persist__subs_save walks
# the plain subscribers only): after a restart the broker has not got them, so neither has the
# listing.
NOT_RESTORED = {"$share/g/queues/work"}


def rich(broker, filter_=""):
    status, _, body = broker.http(PATH, method="POST",
                                  body=json.dumps({"filter": filter_}).encode(), headers=HEADERS)
    assert status == 200, (status, body)
    return json.loads(body)["connections"]


def filters(connection):
    return sorted((s["filter"], s["qos"]) for s in connection["subscriptions"])


def metric(broker, name, **labels):
    with urllib.request.urlopen(f"http://127.0.0.1:{broker.http_port}/metrics", timeout=5) as r:
        text = r.read().decode()
    selector = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    pattern = re.escape(name + ("{" + selector + "}" if selector else "")) + r" (\S+)"
    match = re.search("^" + pattern + "$", text, re.M)
    return float(match.group(1)) if match else None


def subscriptions_gauge(broker):
    return {p: metric(broker, "kubemq_mqtt_subscriptions", pattern=p)
            for p in ("events", "store", "queues", "commands", "queries")}


def expected_gauge(sessions):
    counts = {p: 0 for p in ("events", "store", "queues", "commands", "queries")}
    for _, subscriptions in sessions:
        for topic_filter, _ in subscriptions:
            plain = topic_filter.split("/", 2)[2] if topic_filter.startswith("$share/") \
                else topic_filter
            counts[plain.split("/")[0]] += 1
    return {p: float(n) for p, n in counts.items()}


def park(broker, client_id, version, subscriptions):
    client = Client(broker, client_id, version=version, clean=False)
    for topic_filter, qos in subscriptions:
        client.subscribe(topic_filter, qos)
    client.disconnect()
    return client


class RestartTest(BrokerPerTestCase):
    maxDiff = None
    broker_arguments = {"persistence": True}

    def offline(self, count):
        return wait_for(lambda: (lambda listed: listed if len(listed) == count else None)(
            rich(self.broker, f"state = {OFFLINE}")), what=f"{count} offline sessions")

    def test_sessions_survive_a_restart_and_are_listed_offline_then_resumed(self):
        for client_id, (version, subscriptions) in SESSIONS.items():
            park(self.broker, client_id, version, subscriptions)
        # Offline sessions left by a disconnect are listed at once, with all their filters.
        listed = {c["clientId"]: filters(c) for c in self.offline(len(SESSIONS))}
        self.assertEqual(listed, {i: sorted(s) for i, (_, s) in SESSIONS.items()})
        self.assertEqual(self.broker.connections(), [])  # the KubeMQ view: connections only
        self.assertEqual(metric(self.broker, "kubemq_mqtt_connections"), 0.0)

        self.broker.restart()
        restored = {i: sorted(f for f in s if f[0] not in NOT_RESTORED)
                    for i, (_, s) in SESSIONS.items()}
        total = sum(len(s) for s in restored.values())
        self.assertIn(f"mosquitto_connections: {len(SESSIONS)} persistent sessions with {total} "
                      f"subscriptions read from {self.broker.persistence_file}", self.broker.log())
        self.assertNotIn(WARNING, self.broker.log())

        # Before any client is back: every session, offline, with what the broker restored.
        listed = self.offline(len(SESSIONS))
        self.assertEqual({c["clientId"]: filters(c) for c in listed}, restored)
        for c in listed:
            self.assertFalse(c["cleanSession"])
            self.assertRegex(c["uid"], r"^[0-9a-f-]{36}$")
        expiry = {c["clientId"]: c.get("sessionExpiryTime") for c in listed}
        self.assertIsNone(expiry["p4-a"])  # MQTT 3.1.1 persistent sessions never expire
        self.assertRegex(expiry["p5-b"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.0{9}Z$")
        self.assertEqual(self.broker.connections(), [])
        self.assertEqual(metric(self.broker, "kubemq_mqtt_connections"), 0.0)
        self.assertEqual(subscriptions_gauge(self.broker),
                         expected_gauge(restored.items()))

        # A QoS 0 message for a restored session is thrown away by the broker, and counted as
        # such from the start (2.1: the plugin's ACL_CHECK is registered at once for sessions
        # read from the file, src/broker/offline_watch.h).
        dropper = Client(self.broker, "dropper", version=4)
        dropper.publish("events/site/a/zero", b"dropped", qos=0)
        dropped = "mosquitto_connections_messages_dropped_total"
        wait_for(lambda: metric(self.broker, dropped, reason="offline") == 1.0,
                 what="the restored session's QoS 0 drop counted")
        dropper.disconnect()
        wait_for(lambda: self.broker.connections() == [], what="the publisher gone")

        # One client comes back clean: its session is gone, with its subscriptions.
        clean = Client(self.broker, "p4-clean", version=4, clean=True)
        self.clients.append(clean)
        self.assertFalse(clean.session_present)
        wait_for(lambda: self.broker.connection("p4-clean") is not None, what="p4-clean listed")
        self.assertEqual(self.broker.connection("p4-clean")["subscriptions"], [])
        self.offline(len(SESSIONS) - 1)

        # The others resume: session present, and the restored subscriptions in both APIs.
        resumed = {}
        for client_id, (version, _) in SESSIONS.items():
            if client_id == "p4-clean":
                continue
            client = Client(self.broker, client_id, version=version, clean=False)
            self.clients.append(client)
            self.assertTrue(client.session_present, client_id)
            resumed[client_id] = client
        expected = {i: restored[i] for i in resumed}

        def kubemq_view():
            return {c["client_id"]: sorted((s["filter"], s["qos"]) for s in c["subscriptions"])
                    for c in self.broker.connections() if c["client_id"] in resumed}
        wait_for(lambda: kubemq_view() == expected, what="resumed subscriptions listed")
        rich_view = {c["clientId"]: filters(c) for c in rich(self.broker, f"state = {OPEN}")
                     if c["clientId"] in resumed}
        self.assertEqual(rich_view, expected)
        self.assertEqual(rich(self.broker, f"state = {OFFLINE}"), [])
        self.assertEqual(metric(self.broker, "kubemq_mqtt_connections"), float(len(SESSIONS)))
        self.assertEqual(subscriptions_gauge(self.broker),
                         expected_gauge((i, s) for i, s in restored.items() if i != "p4-clean"))

        # The broker routes to what it restored, and to nothing else.
        publisher = Client(self.broker, "publisher", version=4)
        self.clients.append(publisher)
        publisher.publish("events/site/a/x", b"a", qos=1)
        publisher.publish("queues/work", b"shared", qos=1)
        publisher.publish("events/site/c/x", b"clean", qos=1)
        # A last message on a restored subscription: once it is in, anything routed before it
        # to the same client is in too (one connection, in order).
        publisher.publish("commands/door/s", b"last", qos=1)
        wait_for(lambda: resumed["p4-a"].messages and
                 ("commands/door/s", b"last") in resumed["p5-shared"].messages,
                 what="deliveries to resumed sessions")
        self.assertEqual(resumed["p4-a"].messages, [("events/site/a/x", b"a")])
        self.assertEqual(resumed["p5-shared"].messages, [("commands/door/s", b"last")])
        # Another round trip, so that a delivery to the clean client (it has no subscription
        # left) would have had the time to arrive.
        publisher.publish("events/site/a/x", b"again", qos=1)
        wait_for(lambda: len(resumed["p4-a"].messages) == 2, what="the second delivery")
        self.assertEqual(clean.messages, [])


class ReloadTest(unittest.TestCase):
    def test_a_reload_keeps_offline_sessions_offline(self):
        # At SIGHUP the broker re-checks the credentials of every client it holds, offline
        # sessions included (mosquitto_security_apply_default): not a CONNECT.
        broker = Broker(persistence=True)
        broker.start()
        try:
            park(broker, "runtime", 4, [("events/r/#", 1)])
            park(broker, "restored", 5, [("store/s", 1)])
            broker.restart()
            park(broker, "runtime", 4, [("events/r/#", 1)])  # offline again, this broker's own
            wait_for(lambda: len(rich(broker, f"state = {OFFLINE}")) == 2, what="2 offline")
            broker.process.send_signal(signal.SIGHUP)
            wait_for(lambda: "Reloading config." in broker.log(), what="the reload")
            # A client connected after the reload is listed once the events before it are.
            marker = Client(broker, "after-reload", version=4)
            wait_for(lambda: broker.connection("after-reload") is not None, what="the marker")
            listed = rich(broker, "state != MQTT_CONNECTION_STATE_CLOSED")
            self.assertEqual(sorted((c["clientId"], c["state"]) for c in listed),
                             [("after-reload", OPEN), ("restored", OFFLINE),
                              ("runtime", OFFLINE)])
            marker.disconnect()
        finally:
            broker.stop()
            broker.cleanup_dir()


class CompanionRestartTest(unittest.TestCase):
    def test_a_restarted_companion_lists_the_offline_sessions_again(self):
        # They reach a new companion through the full resync, like open connections.
        broker = Broker(persistence=True)
        broker.start()
        try:
            park(broker, "restored", 5, [("store/s", 1), ("events/e", 0)])
            broker.restart()
            park(broker, "runtime", 4, [("queues/q", 2)])
            expected = [("restored", [("events/e", 0), ("store/s", 1)]),
                        ("runtime", [("queues/q", 2)])]

            def offline():
                return sorted((c["clientId"], filters(c))
                              for c in rich(broker, f"state = {OFFLINE}"))
            wait_for(lambda: offline() == expected, what="both offline")
            os.kill(broker.companion_pid, signal.SIGKILL)
            wait_for(lambda: broker.log().count("registry synchronised with the broker") == 2,
                     what="the new companion's resync")
            self.assertIn("registry synchronised with the broker: 0 open connections, "
                          "2 offline sessions", broker.log().rsplit("companion killed", 1)[1])
            self.assertEqual(offline(), expected)
        finally:
            broker.stop()
            broker.cleanup_dir()


class RefusedFileTest(unittest.TestCase):
    """A file the plugin cannot read, yet one the broker still restores from: one warning, no
    offline session listed from it, and the broker starts and routes as ever."""

    def run_with(self, alter):
        broker = Broker(persistence=True)
        broker.start()
        try:
            park(broker, "keeper", 4, [("events/kept/#", 1), ("store/kept", 1)])
            retainer = Client(broker, "retainer", version=4)
            retainer.client.publish("events/retained", b"r", qos=1, retain=True) \
                .wait_for_publish(5)
            retainer.disconnect()
            broker.restart(between=lambda: alter(broker.persistence_file))
            log = broker.log()
            self.assertEqual(log.count(WARNING), 1, log)
            self.assertNotIn("persistent sessions with", log)
            self.assertEqual(rich(broker, f"state = {OFFLINE}"), [])
            # The broker itself restored the session and routes to it.
            keeper = Client(broker, "keeper", version=4, clean=False)
            self.assertTrue(keeper.session_present)
            publisher = Client(broker, "publisher", version=4)
            publisher.publish("events/kept/1", b"k", qos=1)
            wait_for(lambda: keeper.messages, what="delivery to the restored session")
            self.assertIn(("events/kept/1", b"k"), keeper.messages)
            keeper.disconnect()
            publisher.disconnect()
            return log
        finally:
            broker.stop()
            broker.cleanup_dir()

    def test_a_chunk_longer_than_the_file_is_refused(self):
        def lengthen_last_chunk(path):
            with open(path, "rb") as f:
                data = bytearray(f.read())
            position, last = 23, None
            while position + 8 <= len(data):
                last = position
                position += 8 + int.from_bytes(data[position + 4:position + 8], "big")
            self.assertEqual(int.from_bytes(data[last:last + 4], "big"), 4)  # RETAIN, last
            data[last + 4:last + 8] = (1 << 20).to_bytes(4, "big")
            with open(path, "wb") as f:
                f.write(data)
        log = self.run_with(lengthen_last_chunk)
        self.assertIn("truncated chunk: 1048576 bytes announced, 8 left in the file", log)

    def test_a_truncated_file_is_refused(self):
        def cut_last_header(path):
            with open(path, "rb") as f:
                data = f.read()
            with open(path, "wb") as f:
                f.write(data[:-12])  # the RETAIN chunk's header, half of it
        log = self.run_with(cut_last_header)
        self.assertIn("truncated chunk header", log)


if __name__ == "__main__":
    unittest.main()
