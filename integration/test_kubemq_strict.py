# SPDX-License-Identifier: BSD-3-Clause
"""KubeMQ strict mode (plugin_opt_kubemq_strict, docs/topic-mapping.md "Strict mode") against the
real broker: what KubeMQ's MQTT side would refuse gets its failure return code in the SUBACK
(0x80 for MQTT 3.1.1, 0x87 for MQTT 5) and counts as an error of
mosquitto_connections_subscribes_total, a refused PUBLISH is not routed (PUBACK 0x87 under MQTT
5) and counts as an error of its operation; with an acl_file beside it, the file still
decides the rest. Off (the default), nothing is refused, and the rich API shows kubemqValid and
kubemqError in every mode. The neutrality suites (test_auth_neutrality, test_acl_counting) run
with the option off and prove that it changes nothing there."""

import os
import socket
import struct
import unittest

from harness import (Broker, Client, SharedBrokerTestCase, mqtt_string, mqtt_varint,
                     read_mqtt_packet, wait_for)
from test_list_connections import by_client
from test_metrics import Metrics, delta, deltas, v5_properties, wait_metrics

NOT_AUTHORIZED = 0x87  # MQTT 5
FAILURE = 0x80  # MQTT 3.1.1


def v5_publish_reason(broker, client_id, topic, qos=1):
    """The reason code of the PUBACK (QoS 1) or PUBREC (QoS 2) an MQTT 5 PUBLISH gets: paho's
    on_publish does not report it, so this speaks the protocol on a plain socket."""
    sock = socket.create_connection(("127.0.0.1", broker.port), timeout=5)
    try:
        variable = mqtt_string("MQTT") + bytes([5, 0x02]) + struct.pack("!H", 60) + b"\x00"
        body = variable + mqtt_string(client_id)
        sock.sendall(b"\x10" + mqtt_varint(len(body)) + body)
        kind, connack = read_mqtt_packet(sock)
        assert kind == 0x20 and connack[1] == 0, (kind, connack)
        body = mqtt_string(topic) + struct.pack("!H", 7) + b"\x00" + b"payload"
        sock.sendall(bytes([0x30 | (qos << 1)]) + mqtt_varint(len(body)) + body)
        kind, ack = read_mqtt_packet(sock)
        assert kind == (0x40 if qos == 1 else 0x50), kind
        assert ack[:2] == struct.pack("!H", 7), ack
        reason = ack[2] if len(ack) > 2 else 0  # no reason code: success
        sock.sendall(b"\xe0\x00")  # DISCONNECT
        return reason
    finally:
        sock.close()


def subscription(broker, client_id, filter_):
    connection = by_client(broker, client_id)
    assert connection is not None, client_id
    found = [s for s in connection.get("subscriptions", []) if s["filter"] == filter_]
    return found[0] if found else None


class StrictModeTest(SharedBrokerTestCase):
    broker_arguments = {"options": {"kubemq_strict": "true"}}

    def test_subscribe_refusals_get_their_failure_code_and_count_as_errors(self):
        before = Metrics(self.broker)
        v4 = self.client("strict-v4", version=4)
        self.assertEqual(v4.subscribe("store/#", 1), [FAILURE])
        self.assertEqual(v4.subscribe("queues/jobs", 1), [FAILURE])
        self.assertEqual(v4.subscribe("events/#", 1), [1])
        v5 = self.client("strict-v5", version=5)
        self.assertEqual(v5.subscribe("store/+/x", 1), [NOT_AUTHORIZED])
        self.assertEqual(v5.subscribe("commands/svc", 0), [NOT_AUTHORIZED])
        self.assertEqual(v5.subscribe("$share/g/queues/jobs", 0), [NOT_AUTHORIZED])  # QoS 0
        self.assertEqual(v5.subscribe("$share/g/queues/jobs", 1), [1])
        self.assertEqual(v5.subscribe("store/orders", 2), [2])
        refused = lambda m: m.subscribes("error") - before.subscribes("error")
        after = wait_metrics(self.broker, lambda m: refused(m) >= 5,
                             what="five refused subscriptions")
        self.assertEqual(refused(after), 5)
        self.assertEqual(after.subscribes("success") - before.subscribes("success"), 3)
        # Counted in the project's own family: the KubeMQ operations keep the contract's values.
        self.assertEqual(after.off_contract_labels(), [])
        # Refused: never made, never listed.
        wait_for(lambda: subscription(self.broker, "strict-v5", "store/orders"),
                 what="the subscriptions listed")
        self.assertIsNone(subscription(self.broker, "strict-v5", "store/+/x"))
        self.assertIsNone(subscription(self.broker, "strict-v4", "store/#"))
        self.assertTrue(subscription(self.broker, "strict-v4", "events/#")["kubemqValid"])

    def test_refused_publishes_are_not_routed_and_count_as_errors(self):
        watcher = self.client("strict-watcher", version=4)
        watcher.subscribe("#", 1)
        before = Metrics(self.broker)
        self.assertEqual(v5_publish_reason(self.broker, "strict-pub5", "events//x"),
                         NOT_AUTHORIZED)
        self.assertEqual(v5_publish_reason(self.broker, "strict-pub5", "store", qos=2),
                         NOT_AUTHORIZED)
        self.assertEqual(v5_publish_reason(self.broker, "strict-pub5", "commands/svc"),
                         NOT_AUTHORIZED)  # no ResponseTopic
        self.assertEqual(v5_publish_reason(self.broker, "strict-pub5", "events/ok"), 0)
        v4 = self.client("strict-pub4", version=4)
        v4.publish("queries/svc", b"from 3.1.1", qos=1)  # KubeMQ drops 3.1.1 RPC requests
        v4.publish("events/x/", b"empty level", qos=0)
        v5 = self.client("strict-rpc5", version=5)
        v5.publish("commands/svc", b"request", qos=1,
                   properties=v5_properties(response_topic="$reply/strict-rpc5/1"))
        v4.publish("events/done", b"marker", qos=1)
        wait_for(lambda: ("events/done", b"marker") in watcher.messages, what="the marker")
        topics = [topic for topic, _ in watcher.messages]
        self.assertEqual(sorted(topics), ["commands/svc", "events/done", "events/ok"])
        after = wait_metrics(
            self.broker, lambda m: delta(before, m, "publish_events", "success") >= 2,
            what="the publishes counted")
        expected = {("publish_events", "error"): 2, ("publish_store", "error"): 1,
                    ("rpc_command", "error"): 1, ("rpc_query", "error"): 1,
                    ("publish_events", "success"): 2}
        self.assertEqual(deltas(before, after, expected), expected)


class StrictModeWithAclFileTest(unittest.TestCase):
    """Strict mode beside another ACL source: the acl_file still decides what strict mode lets
    through (on 2.1 the plugin's ACL callback then answers DEFER, docs/topic-mapping.md)."""

    def test_the_acl_file_still_decides_the_rest(self):
        acl = ("user alice\ntopic read events/#\ntopic deny events/denied/#\n"
               "topic write events/#\n")
        with Broker(options={"kubemq_strict": "true"}, extra="acl_file {dir}/acl",
                    files={"acl": acl}) as broker:
            reader = Client(broker, "acl-reader", version=5, username="alice")
            try:
                self.assertEqual(reader.subscribe("store/#", 1), [NOT_AUTHORIZED])  # strict
                self.assertEqual(reader.subscribe("events/#", 1), [1])
                writer = Client(broker, "acl-writer", username="alice")
                writer.publish("events/allowed/a", b"1", qos=1)
                writer.publish("events/denied/a", b"2", qos=1)  # the acl_file denies it
                writer.publish("events/allowed/b", b"3", qos=1)
                wait_for(lambda: len(reader.messages) == 2, what="the allowed messages")
                self.assertEqual([t for t, _ in reader.messages],
                                 ["events/allowed/a", "events/allowed/b"])
                writer.disconnect()
            finally:
                reader.disconnect()


class StrictModeBesideAnAuthPluginTest(unittest.TestCase):
    """2.1 with another plugin that registers no ACL callback (the test's challenge-auth plugin):
    the plugin's ACL callback, registered for strict mode, is then the only one, and what it does
    not refuse must stay allowed (its IGNORE is the broker's own allow; a DEFER would deny all).
    2.0 leaves ACL decisions to the others when another plugin is configured (README, "Auth
    neutrality"), with or without strict mode: integration/broker_matrix.py skips it there."""

    def test_what_strict_mode_accepts_stays_allowed(self):
        plugin = os.environ.get("MQC_CHALLENGE_AUTH_PLUGIN", "")
        self.assertTrue(plugin, "MQC_CHALLENGE_AUTH_PLUGIN must name the built test plugin")
        with Broker(options={"kubemq_strict": "true"}, plugin_after=f"plugin {plugin}") as broker:
            reader = Client(broker, "beside-reader", version=5)
            try:
                self.assertEqual(reader.subscribe("events/#", 1), [1])
                self.assertEqual(reader.subscribe("store/#", 1), [NOT_AUTHORIZED])
                writer = Client(broker, "beside-writer")
                writer.publish("events/a", b"1", qos=1)
                wait_for(lambda: reader.messages, what="the message routed")
                self.assertEqual(reader.messages, [("events/a", b"1")])
                writer.disconnect()
            finally:
                reader.disconnect()


class StrictModeOffTest(unittest.TestCase):
    """Off (the default): the broker refuses nothing; the API still says what KubeMQ would."""

    def test_nothing_is_refused_and_the_api_shows_kubemq_validity(self):
        with Broker() as broker:
            v5 = Client(broker, "lenient-v5", version=5)
            try:
                self.assertEqual(v5.subscribe("store/#", 1), [1])
                self.assertEqual(v5.subscribe("events/a", 1), [1])
                # Accepted: 0x00, or 0x10 (no matching subscribers), never a failure.
                self.assertLess(v5_publish_reason(broker, "lenient-pub", "events//x"), 0x80)
                listed = wait_for(lambda: subscription(broker, "lenient-v5", "events/a"),
                                  what="the subscriptions listed")
                self.assertIs(listed["kubemqValid"], True)
                self.assertNotIn("kubemqError", listed)
                refused = subscription(broker, "lenient-v5", "store/#")
                self.assertIs(refused["kubemqValid"], False)
                self.assertEqual(refused["kubemqError"],
                                 "KubeMQ's store pattern takes no wildcards")
            finally:
                v5.disconnect()


if __name__ == "__main__":
    unittest.main()
