# SPDX-License-Identifier: BSD-3-Clause
"""Presence messages (plugin_opt_presence_events, plugin_opt_presence_retained): EMQX's
$SYS/brokers/<node>/clients/<client id>/connected and /disconnected, and the retained /state,
as real MQTT 3.1.1 and 5 subscribers receive them from the real broker.

"Nothing was published" is checked against a marker: a message that goes through the broker
after the moment in question (a plain publish once the registry lists the close, or the marker
client's own presence message), so that anything published before it has arrived first.
"""

import json
import signal
import time
import unittest

from harness import KNOWS_CLOSE_REASONS, Broker, Client, wait_for
from test_list_connections import by_client
from test_metrics import Metrics

NODE = "mosquitto@presence-test"
PREFIX = f"$SYS/brokers/{NODE}/clients/"
ADMIN_TOKEN = "presence-admin-token-0123456789"

# The field names of EMQX's client online and offline events
# (https://docs.emqx.com/en/emqx/latest/observability/mqtt-system-topics.html).
CONNECTED_FIELDS = {"username", "ts", "sockport", "proto_ver", "proto_name", "keepalive",
                    "ipaddress", "expiry_interval", "connected_at", "connack", "clientid",
                    "clean_start"}
DISCONNECTED_FIELDS = {"username", "ts", "sockport", "reason", "proto_ver", "proto_name",
                       "ipaddress", "disconnected_at", "clientid"}

# Anonymous clients (the devices) may use every plain topic; `watcher` and `alice` may read
# $SYS; `mallory` may use every plain topic but no $SYS one.
ACL = """\
topic readwrite #
user watcher
topic read $SYS/#
topic readwrite #
user alice
topic read $SYS/#
topic readwrite #
user mallory
topic readwrite #
"""


def presence(client, client_id=None, kind=None):
    """[(client id, kind, payload)] of the presence messages `client` received, in order."""
    found = []
    for topic, payload in list(client.messages):
        if not topic.startswith(PREFIX):
            continue
        cid, _, what = topic[len(PREFIX):].rpartition("/")
        if (client_id is None or cid == client_id) and (kind is None or what == kind):
            found.append((cid, what, payload))
    return found


def wait_presence(client, client_id, count, kind=None):
    return wait_for(lambda: (lambda f: f if len(f) >= count else None)(
        presence(client, client_id, kind)), what=f"{count} presence messages of {client_id}")


def no_reconnect(client):
    client.client._reconnect_on_failure = False
    return client


class PresenceTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.broker = Broker(
            options={"presence_events": "true", "presence_retained": "true",
                     "presence_node": NODE, "http_admin_token_file": "{dir}/admin.tokens",
                     "metrics_public": "true"},
            extra="acl_file {dir}/acl",
            files={"acl": ACL, "admin.tokens": ADMIN_TOKEN + "\n"})
        cls.broker.start()
        cls.watch4 = Client(cls.broker, "watch-311", version=4, username="watcher")
        cls.watch5 = Client(cls.broker, "watch-5", version=5, username="alice")
        for watcher in (cls.watch4, cls.watch5):
            assert watcher.subscribe(PREFIX + "+/connected") == [0]
            assert watcher.subscribe(PREFIX + "+/disconnected") == [0]
            assert watcher.subscribe("marker/#") == [0]

    @classmethod
    def tearDownClass(cls):
        for watcher in (cls.watch4, cls.watch5):
            watcher.disconnect()
        cls.broker.stop()

    def marker(self, name):
        """A plain message through the broker: once both watchers have it, every presence
        message queued before it has arrived too."""
        sender = Client(self.broker, f"marker-sender-{name}")
        sender.publish(f"marker/{name}", b"m")
        for watcher in (self.watch4, self.watch5):
            wait_for(lambda: (f"marker/{name}", b"m") in watcher.messages, what="the marker")
        return sender

    def check_client(self, payload, fields, client_id, version, username):
        """The fields both presence messages have: the client, its protocol version and the
        listener it came through. `username` None: the message has no username field."""
        document = json.loads(payload)
        expected = set(fields) - ({"username"} if username is None else set())
        self.assertEqual(set(document), expected)
        self.assertEqual(document["clientid"], client_id)
        self.assertEqual(document.get("username"), username)
        self.assertEqual(document["ipaddress"], "127.0.0.1")
        self.assertEqual(document["sockport"], self.broker.port)
        self.assertEqual(document["proto_ver"], version)
        return document

    def check_connected(self, payload, client_id, version, username, clean, port):
        document = self.check_client(payload, CONNECTED_FIELDS, client_id, version, username)
        self.assertEqual(document["proto_name"], "MQTT")
        self.assertEqual(document["keepalive"], 60)
        self.assertIs(document["clean_start"], clean)
        self.assertEqual(document["connack"], 0)
        if clean:
            self.assertEqual(document["expiry_interval"], 0)
        now_ms = time.time() * 1000
        self.assertLessEqual(document["connected_at"], document["ts"])
        self.assertLess(abs(document["ts"] - now_ms), 30000)
        self.assertNotEqual(port, None)
        return document

    def check_disconnected(self, payload, client_id, version, username, reason):
        document = self.check_client(payload, DISCONNECTED_FIELDS, client_id, version, username)
        self.assertEqual(document["reason"], reason)
        self.assertLessEqual(document["disconnected_at"], document["ts"])
        return document

    def test_fields_on_3_1_1_and_5(self):
        for version, username in ((4, None), (5, "alice")):
            with self.subTest(version=version):
                cid = f"dev-fields-{version}"
                device = Client(self.broker, cid, version=version, username=username)
                for watcher in (self.watch4, self.watch5):
                    (_, kind, payload), = wait_presence(watcher, cid, 1)
                    self.assertEqual(kind, "connected")
                    self.check_connected(payload, cid, version, username, True, device.local_port)
                device.disconnect()
                for watcher in (self.watch4, self.watch5):
                    found = wait_presence(watcher, cid, 2)
                    self.assertEqual(found[1][1], "disconnected")
                    self.check_disconnected(found[1][2], cid, version, username,
                                            "normal" if KNOWS_CLOSE_REASONS else "unknown")

    def test_a_dropped_connection_is_tcp_closed(self):
        device = Client(self.broker, "dev-drop")
        wait_presence(self.watch4, "dev-drop", 1)
        device.drop()
        found = wait_presence(self.watch4, "dev-drop", 2)
        # 2.0 builds that hide the client's state cannot tell (README, Supported brokers).
        self.check_disconnected(found[1][2], "dev-drop", 4, None,
                                "tcp_closed" if KNOWS_CLOSE_REASONS else "unknown")

    def test_a_takeover_closes_the_old_connection_first(self):
        old = no_reconnect(Client(self.broker, "dev-takeover", version=5))
        wait_presence(self.watch5, "dev-takeover", 1)
        new = Client(self.broker, "dev-takeover", version=5)
        for watcher in (self.watch4, self.watch5):
            found = wait_presence(watcher, "dev-takeover", 3)
            self.assertEqual([kind for _, kind, _ in found],
                             ["connected", "disconnected", "connected"])
            self.check_disconnected(found[1][2], "dev-takeover", 5, None, "takenover")
            first, second = json.loads(found[0][2]), json.loads(found[2][2])
            self.assertLessEqual(first["connected_at"], second["connected_at"])
        new.disconnect()
        old.client.loop_stop()

    def test_a_kick_is_kicked(self):
        device = no_reconnect(Client(self.broker, "dev-kick"))
        wait_presence(self.watch4, "dev-kick", 1)
        # 404 until the companion lists the connection.
        kick = lambda: self.broker.http("/api/mqtt/connections/dev-kick", method="DELETE",
                                        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        wait_for(lambda: kick()[0] == 200 or None, what="the kick answered 200")
        found = wait_presence(self.watch4, "dev-kick", 2)
        self.check_disconnected(found[1][2], "dev-kick", 4, None, "kicked")
        device.client.loop_stop()

    def test_retained_state(self):
        device = Client(self.broker, "dev-state")
        persistent = Client(self.broker, "dev-state-p", clean=False)
        wait_presence(self.watch4, "dev-state-p", 1)
        late = Client(self.broker, "late-1", username="watcher")
        late.subscribe(PREFIX + "+/state")
        wait_for(lambda: {t: p for t, p in late.messages if "dev-state" in t} == {
            PREFIX + "dev-state/state": b"online", PREFIX + "dev-state-p/state": b"online"},
            what="both states retained online")
        device.disconnect()
        persistent.disconnect()
        wait_presence(self.watch4, "dev-state", 2)
        wait_presence(self.watch4, "dev-state-p", 2)
        # The clean session ended: its state is cleared; the persistent one is offline.
        wait_for(lambda: late.messages.count((PREFIX + "dev-state/state", b"")) == 1,
                 what="the cleared state")
        wait_for(lambda: (PREFIX + "dev-state-p/state", b"offline") in late.messages,
                 what="the offline state")
        later = Client(self.broker, "late-2", username="watcher")
        later.subscribe(PREFIX + "+/state")
        # 2.1 may send the retained messages after the SUBACK: wait for the one expected, then
        # for a marker, so that a retained state of the ended session would be there too.
        wait_for(lambda: (PREFIX + "dev-state-p/state", b"offline") in later.messages,
                 what="the retained offline state")
        self.marker("state").disconnect()
        states = {t: p for t, p in later.messages if "dev-state" in t}
        self.assertEqual(states, {PREFIX + "dev-state-p/state": b"offline"})
        late.disconnect()
        later.disconnect()

    def test_an_acl_file_denying_sys_keeps_them_from_a_user(self):
        mallory = Client(self.broker, "mallory", username="mallory")
        mallory.subscribe(PREFIX + "#")
        mallory.subscribe("marker/#")
        device = Client(self.broker, "dev-acl")
        device.disconnect()
        wait_presence(self.watch4, "dev-acl", 2)
        sender = self.marker("acl")
        wait_for(lambda: ("marker/acl", b"m") in mallory.messages, what="mallory's marker")
        self.assertEqual(presence(mallory), [])
        self.assertGreater(len(presence(self.watch4)), 0)
        sender.disconnect()
        mallory.disconnect()

    def test_deliveries_of_presence_messages_are_counted_nowhere(self):
        before = Metrics(self.broker).get("kubemq_mqtt_delivered_messages_total")
        device = Client(self.broker, "dev-count")
        device.disconnect()
        wait_presence(self.watch4, "dev-count", 2)
        wait_presence(self.watch5, "dev-count", 2)
        time.sleep(0.3)  # the counters reach the companion a little after the broker
        self.assertEqual(Metrics(self.broker).get("kubemq_mqtt_delivered_messages_total"), before)

    def test_a_reload_publishes_nothing(self):
        devices = [Client(self.broker, f"dev-reload-{i}", clean=i == 0) for i in range(2)]
        for device in devices:
            wait_presence(self.watch4, device.client._client_id.decode(), 1)
        seen = len(presence(self.watch4))
        count = self.broker.log().count("Reloading config.")
        self.broker.process.send_signal(signal.SIGHUP)
        wait_for(lambda: self.broker.log().count("Reloading config.") > count, what="the reload")
        marker = Client(self.broker, "dev-after-reload")
        found = wait_presence(self.watch4, "dev-after-reload", 1)
        self.assertEqual(presence(self.watch4)[seen:], found)
        marker.disconnect()
        for device in devices:
            device.disconnect()


class PresenceOffTest(unittest.TestCase):
    def test_nothing_is_published_with_the_option_off(self):
        with Broker() as broker:
            watcher = Client(broker, "watch-off")
            watcher.subscribe("$SYS/brokers/#")
            watcher.subscribe("marker/#")
            device = Client(broker, "dev-off")
            device.disconnect()
            wait_for(lambda: by_client(broker, "dev-off", "MQTT_CONNECTION_STATE_CLOSED"),
                     what="dev-off listed as closed")
            sender = Client(broker, "marker-off")
            sender.publish("marker/off", b"m")
            wait_for(lambda: ("marker/off", b"m") in watcher.messages, what="the marker")
            self.assertEqual([t for t, _ in watcher.messages if t.startswith("$SYS/brokers/")],
                             [])
            sender.disconnect()
            watcher.disconnect()


if __name__ == "__main__":
    unittest.main()
