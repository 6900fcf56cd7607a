# SPDX-License-Identifier: BSD-3-Clause
"""MQTT 5 enhanced authentication through a real auth plugin (tests/plugins/
challenge_auth_plugin.c: one challenge, one response, method MQC-CHALLENGE), loaded after the
plugin: a CONNECT that takes an AUTH round trip, and a re-authentication (AUTH reason 0x19) on the
open connection, which the broker sends to plugins as EXT_AUTH_START again (src/handle_auth.c, 2.0
and 2.1). The connection must stay one connection, with the facts it had: only its
authenticationInfo says how it authenticated.

paho 1.6 cannot answer an AUTH packet, so the client here is a raw socket (EnhancedAuthClient)."""

import json
import os
import socket
import time
import unittest

from harness import (BROKER_VERSION, Broker, mqtt_string, mqtt_varint, read_mqtt_packet,
                     wait_for)

PATH = "/mqtt.connections.v1.ConnectionsService/ListConnections"
HEADERS = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
CHALLENGE_PLUGIN = os.environ.get("MQC_CHALLENGE_AUTH_PLUGIN", "")
METHOD = b"MQC-CHALLENGE"
CHALLENGE = b"mqc-challenge"
RIGHT_RESPONSE = b"mqc-response:" + CHALLENGE

# MQTT 5 packet types and properties (OASIS MQTT 5.0, 2.1.2 and 2.2.2.2).
CONNECT, CONNACK, PUBLISH, AUTH = 0x10, 0x20, 0x30, 0xF0
PROP_AUTH_METHOD, PROP_AUTH_DATA = 0x15, 0x16
CONTINUE_AUTHENTICATION, REAUTHENTICATE = 0x18, 0x19


def auth_properties(data=None):
    props = bytes([PROP_AUTH_METHOD]) + mqtt_string(METHOD)
    if data is not None:
        props += bytes([PROP_AUTH_DATA]) + mqtt_string(data)
    return mqtt_varint(len(props)) + props


def read_properties(body):
    """{identifier: value} of the method and data properties of a property block."""
    length, at, shift = 0, 0, 0
    while True:
        byte = body[at]
        length |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            break
    props, end = {}, at + length
    while at < end:
        identifier = body[at]
        at += 1
        if identifier in (PROP_AUTH_METHOD, PROP_AUTH_DATA, 0x1F):  # 0x1F: reason string
            size = int.from_bytes(body[at:at + 2], "big")
            props[identifier] = body[at + 2:at + 2 + size]
            at += 2 + size
        else:
            break  # a property this client does not need: the rest is not read
    return props


class EnhancedAuthClient:
    """An MQTT 5 client on a plain socket that speaks the challenge plugin's method: CONNECT
    with Authentication Method, AUTH 0x18 answers, AUTH 0x19 to re-authenticate, QoS 0
    PUBLISH. Every read is bounded by the socket's timeout."""

    def __init__(self, broker, client_id, response=RIGHT_RESPONSE):
        self.sock = socket.create_connection(("127.0.0.1", broker.port), timeout=5)
        self.client_id = client_id.encode()
        self.response = response
        self.challenges = 0

    def send(self, first_byte, body):
        self.sock.sendall(bytes([first_byte]) + mqtt_varint(len(body)) + body)

    def read_packet(self):
        first, body = read_mqtt_packet(self.sock)
        return first & 0xF0, body

    def _answer_challenges(self):
        """Answers AUTH 0x18 until the broker sends something else: returns that packet."""
        for _ in range(5):
            kind, body = self.read_packet()
            if kind != AUTH or body[0] != CONTINUE_AUTHENTICATION:
                return kind, body
            props = read_properties(body[1:])
            assert props.get(PROP_AUTH_METHOD) == METHOD, props
            assert props.get(PROP_AUTH_DATA) == CHALLENGE, props
            self.challenges += 1
            self.send(AUTH, bytes([CONTINUE_AUTHENTICATION]) + auth_properties(self.response))
        raise AssertionError("more than 5 AUTH round trips")

    def connect(self, keepalive=60):
        """Returns the CONNACK's reason code."""
        variable = mqtt_string(b"MQTT") + bytes([5, 0x02]) + keepalive.to_bytes(2, "big")
        self.send(CONNECT, variable + auth_properties() + mqtt_string(self.client_id))
        kind, body = self._answer_challenges()
        assert kind == CONNACK, (kind, body)
        return body[1]

    def reauthenticate(self):
        """AUTH 0x19, the challenge answered: returns the reason code of the broker's last AUTH
        (0 success), or of its DISCONNECT."""
        self.send(AUTH, bytes([REAUTHENTICATE]) + auth_properties())
        kind, body = self._answer_challenges()
        assert kind in (AUTH, 0xE0), (kind, body)
        return body[0] if body else 0

    def publish(self, topic, payload):
        self.send(PUBLISH, mqtt_string(topic) + mqtt_varint(0) + payload)

    def close(self):
        self.sock.close()


def list_connections(broker):
    status, _, body = broker.http(PATH, method="POST", body=b"{}", headers=HEADERS)
    assert status == 200, body
    return json.loads(body)["connections"]


def entries(broker, client_id):
    return [c for c in list_connections(broker) if c["clientId"] == client_id]


def metric(broker, name):
    status, _, body = broker.http("/metrics")
    assert status == 200, body
    for line in body.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


ENHANCED = {"mechanism": "AUTHENTICATION_MECHANISM_ENHANCED",
            "state": "AUTHENTICATION_STATE_SUCCESS", "method": "MQC-CHALLENGE"}
# 2.1 sends no event when it refuses an enhanced authentication, so an exchange still going at the
# next event is taken for refused, and the connection is listed at its CONNECT event without its
# method (docs/broker-versions.md, "Mosquitto 2.1"): pinned here as it is.
ON_2_1 = BROKER_VERSION >= (2, 1, 0)
FIRST_CONNECT = ({"mechanism": "AUTHENTICATION_MECHANISM_ANONYMOUS",
                  "state": "AUTHENTICATION_STATE_UNAUTHENTICATED"} if ON_2_1 else ENHANCED)


class EnhancedAuthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        assert CHALLENGE_PLUGIN, "MQC_CHALLENGE_AUTH_PLUGIN must name the built test plugin"
        # An acl_file that allows everything: 2.0 sends ACL checks to a plugin's callback chain,
        # and the plugin, seeing another plugin configured, leaves ACL decisions to the others
        # (README, "Auth neutrality"); the challenge plugin decides none.
        cls.broker = Broker(plugin_after=f"plugin {CHALLENGE_PLUGIN}",
                            files={"acl": "topic readwrite #\n"}, extra="acl_file {dir}/acl")
        cls.broker.start()

    @classmethod
    def tearDownClass(cls):
        cls.broker.stop()
        cls.broker.cleanup_dir()

    def test_connect_and_reauthenticate_leave_one_connection_with_its_facts(self):
        connects = metric(self.broker, "kubemq_mqtt_connects_total")
        refused = metric(self.broker, "kubemq_mqtt_connects_refused_total")
        client = EnhancedAuthClient(self.broker, "enhanced-reauth")
        try:
            self.assertEqual(client.connect(), 0)
            self.assertEqual(client.challenges, 1)
            client.publish(b"events/enhanced/one", b"1")
            first = wait_for(lambda: next((c for c in entries(self.broker, "enhanced-reauth")
                                           if c["totalRequestStatistics"]["publishCount"] == "1"),
                                          None), what="the connection and its first publish")
            self.assertEqual(first["state"], "MQTT_CONNECTION_STATE_OPEN")
            self.assertEqual(first["authenticationInfo"], FIRST_CONNECT)
            self.assertEqual(first["protocolVersion"], 5)
            before = entries(self.broker, "enhanced-reauth")
            self.assertEqual(len(before), 2 if ON_2_1 else 1, before)
            refused_at_connect = 1 if ON_2_1 else 0

            self.assertEqual(client.reauthenticate(), 0)  # AUTH 0x00: success
            self.assertEqual(client.challenges, 2)
            client.publish(b"events/enhanced/two", b"2")
            wait_for(lambda: any(c["totalRequestStatistics"]["publishCount"] == "2"
                                 for c in entries(self.broker, "enhanced-reauth")),
                     what="the second publish counted on the connection")
            time.sleep(3)  # long enough for a wrongly pending CONNECT to be settled either way
            listed = entries(self.broker, "enhanced-reauth")
            self.assertEqual(len(listed), len(before), listed)
            after = [c for c in listed if c["state"] == "MQTT_CONNECTION_STATE_OPEN"][0]
            for key in ("uid", "state", "openTime", "clientId", "protocolVersion", "cleanSession",
                        "keepAlive", "source", "listenerName", "authenticationInfo"):
                self.assertEqual(after.get(key), first.get(key), key)
            self.assertEqual(metric(self.broker, "kubemq_mqtt_connects_total"), connects + 1)
            self.assertEqual(metric(self.broker, "kubemq_mqtt_connects_refused_total"),
                             refused + refused_at_connect)
        finally:
            client.close()
        wait_for(lambda: [c["state"] for c in entries(self.broker, "enhanced-reauth")] ==
                 ["MQTT_CONNECTION_STATE_CLOSED"] * (2 if ON_2_1 else 1),
                 what="the one connection closed")


if __name__ == "__main__":
    unittest.main()
