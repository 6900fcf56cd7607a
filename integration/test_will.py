# SPDX-License-Identifier: BSD-3-Clause
"""The will of a client an admin disconnects, against the real broker: MQTT publishes the will
of a connection the server closes, so DisconnectConnection (and the KubeMQ DELETE, and the
command line's disconnect) publishes it, and only `preventWill` (`--prevent-will`) keeps it back.

"Nothing arrived" is never a bare timeout: the broker publishes a will inside the kick, before
the API answers, so a marker published to the same topic after the answer reaches the watcher
after any will; once the marker is there, a will that is not there never came."""

import json
import os
import subprocess
import unittest

from harness import Broker, Client, SharedBrokerTestCase, wait_for

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CLI = os.path.join(ROOT, "cli", "mosquitto-connections")
ADMIN_TOKEN = "will-admin-token-0123456789"
DISCONNECT_RPC = "/mqtt.connections.v1.ConnectionsService/DisconnectConnection"
RPC_HEADERS = {"Content-Type": "application/json", "Connect-Protocol-Version": "1",
               "Authorization": f"Bearer {ADMIN_TOKEN}"}
MARKER = b"marker"


class WillTest(SharedBrokerTestCase):
    @classmethod
    def make_broker(cls):
        return Broker(options={"http_admin_token_file": "{dir}/admin.tokens"},
                      files={"admin.tokens": ADMIN_TOKEN + "\n"})

    def will_client(self, client_id, topic, version=4, qos=1, retain=False):
        """A client with a will on `topic`, connected and listed; it does not reconnect."""
        c = Client(self.broker, client_id, version=version, connect=False)
        self.clients.append(c)
        c.client.will_set(topic, payload=b"will of " + client_id.encode(), qos=qos, retain=retain)
        c.client.reconnect_delay_set(min_delay=60, max_delay=60)
        c.connect()
        wait_for(lambda: self.connection(client_id), what=f"{client_id} listed")
        return c

    def watcher(self, client_id, topic):
        w = self.client(client_id)
        w.subscribe(topic, qos=1)
        return w

    def rich(self, filter_text):
        """ListConnections with the admin token (which also reads): the connections selected."""
        status, _, body = self.broker.http(
            "/mqtt.connections.v1.ConnectionsService/ListConnections", method="POST",
            body=json.dumps({"filter": filter_text}).encode(), headers=RPC_HEADERS)
        self.assertEqual(status, 200, body)
        return json.loads(body).get("connections", [])

    def listed(self):
        return self.rich("state = MQTT_CONNECTION_STATE_OPEN")

    def connection(self, client_id, state="MQTT_CONNECTION_STATE_OPEN"):
        for c in self.rich(f'client_id = "{client_id}"'):
            if c.get("state") == state:
                return c
        return None

    def kick(self, message):
        status, _, body = self.broker.http(DISCONNECT_RPC, method="POST",
                                           body=json.dumps(message).encode(),
                                           headers=RPC_HEADERS)
        self.assertEqual(status, 200, body)
        self.assertTrue(json.loads(body)["disconnected"], body)

    def received_after_marker(self, watcher, topic):
        """The payloads the watcher got on `topic` up to the marker published now."""
        marker = self.client(f"marker-{len(self.clients)}")
        marker.publish(topic, MARKER, qos=1)
        wait_for(lambda: (topic, MARKER) in watcher.messages, what="the marker")
        return [payload for t, payload in watcher.messages if t == topic and payload != MARKER]

    def kick_a_will_client(self, prefix, topic, version, **kick):
        """<prefix>-kicked, an MQTT `version` client with a will on `topic` that
        <prefix>-watcher subscribes to, kicked with the fields `kick` adds and seen closed as
        KICKED; returns the watcher."""
        watcher = self.watcher(f"{prefix}-watcher", topic)
        self.will_client(f"{prefix}-kicked", topic, version=version)
        self.kick({"clientId": f"{prefix}-kicked", **kick})
        closed = wait_for(lambda: self.connection(f"{prefix}-kicked",
                                                  "MQTT_CONNECTION_STATE_CLOSED"),
                          what="closed")
        self.assertEqual(closed["closeReason"], "KICKED")
        return watcher

    def test_a_kick_publishes_the_will_by_default(self):
        for version in (4, 5):
            with self.subTest(version=version):
                topic = f"wills/default/{version}"
                watcher = self.kick_a_will_client(f"will-{version}", topic, version)
                wait_for(lambda: (topic, f"will of will-{version}-kicked".encode())
                         in watcher.messages, what="the kicked client's will")

    def test_prevent_will_keeps_the_will_back(self):
        for version in (4, 5):
            with self.subTest(version=version):
                topic = f"wills/prevented/{version}"
                watcher = self.kick_a_will_client(f"nowill-{version}", topic, version,
                                                  preventWill=True)
                self.assertEqual(self.received_after_marker(watcher, topic), [])
                self.assertIn(f"disconnected client 'nowill-{version}-kicked'",
                              self.broker.log())
                self.assertIn(", without publishing its will", self.broker.log())

    def test_the_kubemq_delete_publishes_the_will(self):
        topic = "wills/delete"
        watcher = self.watcher("delete-watcher", topic)
        self.will_client("delete-kicked", topic)
        status, _, body = self.broker.http("/api/mqtt/connections/delete-kicked", method="DELETE",
                                           headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        self.assertEqual(status, 200, body)
        wait_for(lambda: (topic, b"will of delete-kicked") in watcher.messages,
                 what="the will after a DELETE")

    def test_the_command_line_publishes_or_prevents_the_will(self):
        with open(os.path.join(self.broker.dir, "admin.tokens")) as f:
            self.assertEqual(f.read().strip(), ADMIN_TOKEN)
        url = f"http://127.0.0.1:{self.broker.http_port}"
        token_file = os.path.join(self.broker.dir, "admin.tokens")
        for prevent, topic in ((False, "wills/cli/with"), (True, "wills/cli/without")):
            with self.subTest(prevent_will=prevent):
                client_id = "cli-kicked-" + ("without" if prevent else "with")
                watcher = self.watcher("cli-watcher-" + topic.rsplit("/", 1)[1], topic)
                self.will_client(client_id, topic)
                args = [CLI, "--url", url, "--token-file", token_file, "disconnect", client_id]
                if prevent:
                    args.append("--prevent-will")
                done = subprocess.run(args, capture_output=True, text=True, timeout=60)
                self.assertEqual(done.returncode, 0, done.stderr)
                self.assertIn(f'disconnected client "{client_id}"', done.stdout)
                if prevent:
                    self.assertIn("without its will", done.stdout)
                    self.assertEqual(self.received_after_marker(watcher, topic), [])
                else:
                    wait_for(lambda: (topic, f"will of {client_id}".encode()) in watcher.messages,
                             what="the will after the command line's disconnect")

    def test_has_will_tells_a_client_with_a_will_from_one_without(self):
        # The first CONNECT verifies the client layout, before its facts are read.
        self.will_client("hw-with", "wills/has", version=5, qos=2, retain=True)
        self.assertIn("broker layout: verified", self.broker.log())
        self.will_client("hw-with-v4", "wills/has")
        self.client("hw-without")
        wait_for(lambda: self.connection("hw-without"), what="listed")
        self.assertIs(self.connection("hw-with")["hasWill"], True)
        self.assertIs(self.connection("hw-with-v4")["hasWill"], True)
        self.assertIs(self.connection("hw-without")["hasWill"], False)
        # Nothing else of the will is shown (no build hands it to a plugin at CONNECT).
        self.assertEqual([k for k in self.connection("hw-with") if "will" in k.lower()],
                         ["hasWill"])
        found = self.rich('has_will = true AND state = MQTT_CONNECTION_STATE_OPEN')
        self.assertEqual(sorted(c["clientId"] for c in found), ["hw-with", "hw-with-v4"])

    def test_a_bad_prevent_will_is_refused_by_name(self):
        self.will_client("badwill-kicked", "wills/bad")
        status, _, body = self.broker.http(DISCONNECT_RPC, method="POST",
                                           body=b'{"clientId":"badwill-kicked","preventWill":1}',
                                           headers=RPC_HEADERS)
        self.assertEqual(status, 400, body)
        self.assertIn("preventWill", json.loads(body)["message"])
        self.assertIsNotNone(self.connection("badwill-kicked"))


if __name__ == "__main__":
    unittest.main()
