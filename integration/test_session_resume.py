# SPDX-License-Identifier: BSD-3-Clause
"""A persistent client resumes its session with QoS 1 and 2 messages in flight both ways.

From 2.0.12 (and Debian's 2.0.11) the broker re-checks the resumed session's messages inside the
CONNECT (src/handle_connect.c: connection_check_acl): the client's own unfinished QoS 2 PUBLISHes
(msgs_in) as WRITE, then the messages queued or in flight to it (msgs_out) as READ. None of that
is new traffic: the connection must be one new connection with the session's subscription, and on
2.0 its deliveries must not count those messages again (they were counted when first queued). On
2.1 a delivery is a PUBLISH the broker sends (MESSAGE_OUT), so each resent message counts once on
the new connection (docs/broker-versions.md).
"""

import json
import socket
import time
import unittest

from harness import BROKER_VERSION, Client, SharedBrokerTestCase, wait_for

ON_2_1 = BROKER_VERSION >= (2, 1, 0)
TOPIC = "events/resume/a"


def utf8(text):
    return len(text).to_bytes(2, "big") + text


class RawSession:
    """An MQTT 3.1.1 clean_session false client on a plain socket that acknowledges nothing, so
    that the broker keeps every QoS 1 and 2 message it exchanged with it in flight."""

    def __init__(self, broker, client_id):
        self.sock = socket.create_connection(("127.0.0.1", broker.port), timeout=5)
        body = utf8(b"MQTT") + bytes([4, 0x00]) + (60).to_bytes(2, "big") + utf8(client_id)
        self.send(0x10, body)
        kind, body = self.read_packet()
        assert kind == 0x20 and body[1] == 0, body

    def send(self, first_byte, body):
        assert len(body) < 128
        self.sock.sendall(bytes([first_byte, len(body)]) + body)

    def read_packet(self):
        head = self._read(2)
        assert head[1] < 128, head
        return head[0] & 0xF0, self._read(head[1])

    def _read(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed by the broker")
            data += chunk
        return data

    def subscribe(self, topic, qos):
        self.send(0x82, (1).to_bytes(2, "big") + utf8(topic) + bytes([qos]))
        kind, body = self.read_packet()
        assert kind == 0x90 and body[2] == qos, body

    def publish_qos2_unfinished(self, topic, mid):
        """A QoS 2 PUBLISH whose PUBREC is never followed by PUBREL."""
        self.send(0x34, utf8(topic) + mid.to_bytes(2, "big") + b"from-resumer")
        kind, _ = self.read_packet()
        assert kind == 0x50, kind

    def read_publishes(self, count):
        kinds = [self.read_packet()[0] for _ in range(count)]
        assert kinds == [0x30] * count, kinds

    def drop(self):
        self.sock.close()


class SessionResumeTest(SharedBrokerTestCase):
    def open_entries(self, client_id):
        status, _, body = self.broker.http(
            "/mqtt.connections.v1.ConnectionsService/ListConnections", method="POST",
            body=json.dumps({"filter": f'client_id = "{client_id}"'}).encode(),
            headers={"Content-Type": "application/json", "Connect-Protocol-Version": "1"})
        assert status == 200, body
        return json.loads(body)["connections"]

    def test_resume_with_messages_in_flight_both_ways(self):
        raw = RawSession(self.broker, b"resumer")
        raw.subscribe(TOPIC.encode(), 2)
        raw.publish_qos2_unfinished(b"events/resume/from-client", 7)
        publisher = self.client("resume-publisher")
        publisher.publish(TOPIC, b"q1", qos=1)
        publisher.publish(TOPIC, b"q2", qos=2)
        raw.read_publishes(2)  # in flight to the client, never acknowledged
        wait_for(lambda: any(c["state"] == "MQTT_CONNECTION_STATE_OPEN" and
                             c["totalRequestStatistics"]["deliverCount"] == "2"
                             for c in self.open_entries("resumer")),
                 what="the two deliveries counted on the first connection")
        first_uid = [c["uid"] for c in self.open_entries("resumer")
                     if c["state"] == "MQTT_CONNECTION_STATE_OPEN"][0]
        raw.drop()
        wait_for(lambda: any(c["state"] == "MQTT_CONNECTION_STATE_OFFLINE"
                             for c in self.open_entries("resumer")),
                 what="the session offline")
        publisher.publish(TOPIC, b"queued", qos=1)  # queued for the offline session

        resumed = self.client("resumer", version=4, clean=False)
        self.assertTrue(resumed.session_present)
        wait_for(lambda: len(resumed.messages) >= 3, what="the three messages resent")
        time.sleep(0.5)
        entries = self.open_entries("resumer")
        states = sorted(c["state"] for c in entries)
        self.assertEqual(states, ["MQTT_CONNECTION_STATE_CLOSED", "MQTT_CONNECTION_STATE_OPEN"],
                         entries)
        now = [c for c in entries if c["state"] == "MQTT_CONNECTION_STATE_OPEN"][0]
        self.assertNotEqual(now["uid"], first_uid)
        self.assertEqual(now["cleanSession"], False)
        self.assertEqual(now["protocolVersion"], 4)
        self.assertEqual([(s["filter"], s["qos"]) for s in now["subscriptions"]], [(TOPIC, 2)])
        self.assertEqual(now["totalRequestStatistics"]["publishCount"], "0")
        # 2.0: the re-checks inside the CONNECT are not deliveries; 2.1: each PUBLISH the broker
        # sends on resume is one.
        expected = len(resumed.messages) if ON_2_1 else 0
        self.assertEqual(now["totalRequestStatistics"]["deliverCount"], str(expected))
        resumed.disconnect()
        wait_for(lambda: any(c["state"] == "MQTT_CONNECTION_STATE_OFFLINE"
                             for c in self.open_entries("resumer")), what="offline again")
        # The session is left for the broker's next test run to forget: clean it now.
        cleaner = Client(self.broker, "resumer", version=4, clean=True)
        cleaner.disconnect()


if __name__ == "__main__":
    unittest.main()
