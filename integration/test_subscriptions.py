# SPDX-License-Identifier: BSD-3-Clause
"""Subscriptions and their KubeMQ mapping on GET /api/mqtt/connections, against the real broker:
subscribe, re-subscribe, unsubscribe, max_qos, takeover, persistent sessions, ?pattern=."""

import time
import unittest

from harness import Broker, Client, SharedBrokerTestCase, wait_for

# (filter, qos) -> the subscription object the endpoint must show (topic-mapping.md).
MAPPING_CASES = [
    ("events/site1/temp", 0, "events", "site1.temp", ""),
    ("events/site1/#", 1, "events", "site1.>", ""),
    ("events/+/temp", 2, "events", "*.temp", ""),
    ("events/#", 0, "events", ">", ""),
    ("events/a.b/c", 1, "events", "a.b.c", ""),
    ("store/orders/europe", 1, "store", "orders.europe", ""),
    ("store/orders/+", 1, "store", "orders.*", ""),
    ("queues/jobs/email", 1, "queues", "jobs.email", ""),
    ("$share/workers/queues/jobs/email", 1, "queues", "jobs.email", "workers"),
    ("$share/g2/events/x", 0, "events", "x", "g2"),
    ("commands/svc/reboot", 0, "commands", "svc.reboot", ""),
    ("queries/svc/status", 0, "queries", "svc.status", ""),
    ("$reply/it-mapping/answers", 1, "", "", ""),
    ("$SYS/#", 0, "", "", ""),
    ("site1/temp", 0, "events", "site1.temp", ""),
    ("#", 0, "events", ">", ""),
    ("+/x", 0, "events", "*.x", ""),
    ("events/", 0, "", "", ""),
    ("events", 0, "", "", ""),
    ("events//x", 0, "", "", ""),
]


def subscriptions_now(broker, client_id):
    connection = broker.connection(client_id)
    return None if connection is None else connection["subscriptions"]


def subscription(filter_, qos, pattern, channel, group):
    return {"filter": filter_, "qos": qos, "pattern": pattern, "channel": channel,
            "shared_group": group}


class SubscriptionsTest(SharedBrokerTestCase):
    """One broker: subscriptions as clients make and change them."""

    def subscriptions_of(self, client_id, expected, timeout=10):
        def match():
            c = self.broker.connection(client_id)
            return c is not None and c["subscriptions"] == expected
        try:
            wait_for(match, timeout=timeout, what=f"subscriptions of {client_id}")
        except AssertionError:
            self.assertEqual(self.broker.connection(client_id), {"subscriptions": expected})

    def test_every_mapping_case_in_packet_order_for_mqtt311_and_mqtt5(self):
        for version in (4, 5):
            with self.subTest(version=version):
                c = self.client("it-mapping", version=version)
                expected = []
                for filter_, qos, pattern, channel, group in MAPPING_CASES:
                    c.subscribe(filter_, qos)
                    expected.append(subscription(filter_, qos, pattern, channel, group))
                self.subscriptions_of("it-mapping", expected)
                c.disconnect()
                self.clients.remove(c)
                wait_for(lambda: self.broker.connection("it-mapping") is None)

    def test_resubscribe_updates_qos_and_unsubscribe_removes(self):
        c = self.client("it-resub", version=5)
        c.subscribe("events/a", 0)
        c.subscribe("events/b", 1)
        c.subscribe("events/a", 2)
        self.subscriptions_of("it-resub", [subscription("events/a", 2, "events", "a", ""),
                                           subscription("events/b", 1, "events", "b", "")])
        c.unsubscribe("events/a")
        c.unsubscribe("never/subscribed")
        self.subscriptions_of("it-resub", [subscription("events/b", 1, "events", "b", "")])

    def test_several_filters_in_one_subscribe_packet(self):
        c = self.client("it-multi", version=4)
        result, mid = c.client.subscribe([("events/one", 0), ("store/two", 1), ("queues/three", 2)])
        wait_for(lambda: c.subacks.get(mid))
        self.subscriptions_of("it-multi", [subscription("events/one", 0, "events", "one", ""),
                                           subscription("store/two", 1, "store", "two", ""),
                                           subscription("queues/three", 2, "queues", "three", "")])

    def test_pattern_query_parameter(self):
        self.client("it-q", version=5).subscribe("$share/w/queues/jobs", 1)
        self.client("it-e", version=5).subscribe("events/x", 0)
        self.client("it-none", version=4)
        # Each SUBACK comes before the companion has the subscription from the event ring: wait
        # for the last one made (it-e's), which the ring carries after it-q's.
        wait_for(lambda: len(self.broker.connections("?pattern=events")) == 1)
        self.assertEqual([c["client_id"] for c in self.broker.connections("?pattern=queues")],
                         ["it-q"])
        self.assertEqual([c["client_id"] for c in self.broker.connections("?pattern=events")],
                         ["it-e"])
        self.assertEqual(self.broker.connections("?pattern=store"), [])

    def test_takeover_keeps_a_persistent_session_and_drops_a_clean_one(self):
        old = self.client("it-take", version=4, clean=False)
        old.subscribe("events/kept", 1)
        self.subscriptions_of("it-take", [subscription("events/kept", 1, "events", "kept", "")])
        old.client.loop_stop()  # no automatic reconnect: its socket stays open until taken over
        new = self.client("it-take", version=4, clean=False)
        wait_for(lambda: self.broker.connection("it-take") and self.broker.connection(
            "it-take")["remote_addr"].endswith(f":{new.local_port}"))
        self.subscriptions_of("it-take", [subscription("events/kept", 1, "events", "kept", "")])
        new.client.loop_stop()
        clean = self.client("it-take", version=4, clean=True)
        wait_for(lambda: (self.broker.connection("it-take") or {}).get(
            "remote_addr", "").endswith(f":{clean.local_port}"))
        self.subscriptions_of("it-take", [])

    def test_persistent_session_resume_shows_its_subscriptions(self):
        for version in (4, 5):
            with self.subTest(version=version):
                client_id = f"it-persist-{version}"
                first = self.client(client_id, version=version, clean=False)
                first.subscribe("store/orders/#", 1)
                first.subscribe("$share/g/queues/jobs", 1)
                expected = [subscription("store/orders/#", 1, "store", "orders.>", ""),
                            subscription("$share/g/queues/jobs", 1, "queues", "jobs", "g")]
                self.subscriptions_of(client_id, expected)
                first.drop()
                wait_for(lambda: self.broker.connection(client_id) is None)
                # Reconnect without subscribing: the broker resumes the session.
                again = self.client(client_id, version=version, clean=False)
                self.subscriptions_of(client_id, expected)
                again.disconnect()
                wait_for(lambda: self.broker.connection(client_id) is None)
                # A clean reconnect starts a new session: nothing is shown any more.
                clean = self.client(client_id, version=version, clean=True)
                self.subscriptions_of(client_id, [])
                clean.disconnect()
                wait_for(lambda: self.broker.connection(client_id) is None)

    def test_mqtt5_session_without_expiry_is_not_resumed(self):
        from paho.mqtt.client import Client as Paho, MQTTv5
        c = self.client("it-noexpiry", version=5, connect=False)
        # clean_start false but no Session Expiry Interval: the session ends with the connection.
        c.client.connect("127.0.0.1", self.broker.port, clean_start=False)
        c.client.loop_start()
        wait_for(lambda: c.connack is not None)
        c.subscribe("events/gone", 0)
        self.subscriptions_of("it-noexpiry", [subscription("events/gone", 0, "events", "gone", "")])
        c.disconnect()
        wait_for(lambda: self.broker.connection("it-noexpiry") is None)
        again = self.client("it-noexpiry", version=5, connect=False)
        again.client.connect("127.0.0.1", self.broker.port, clean_start=False)
        again.client.loop_start()
        wait_for(lambda: again.connack is not None)
        self.subscriptions_of("it-noexpiry", [])


class ListenerAndOptionsTest(unittest.TestCase):
    def test_granted_qos_respects_the_listeners_max_qos(self):
        with Broker(listener_extra="max_qos 1") as broker:
            c = Client(broker, "it-maxqos", version=4)
            self.assertEqual(c.subscribe("events/q", 2), [1])
            wait_for(lambda: subscriptions_now(broker, "it-maxqos") ==
                     [subscription("events/q", 1, "events", "q", "")])
            c.disconnect()
        broker.cleanup_dir()

    def test_default_pattern_option(self):
        for option, pattern, channel in (("store", "store", "site1.temp"), ("none", "", "")):
            with self.subTest(default_pattern=option):
                with Broker(options={"default_pattern": option}) as broker:
                    c = Client(broker, "it-default", version=4)
                    c.subscribe("site1/temp", 0)
                    c.subscribe("events/x", 0)
                    wait_for(lambda: subscriptions_now(broker, "it-default") == [
                        subscription("site1/temp", 0, pattern, channel, ""),
                        subscription("events/x", 0, "events", "x", "")])
                    c.disconnect()
                broker.cleanup_dir()


if __name__ == "__main__":
    unittest.main()
