# SPDX-License-Identifier: BSD-3-Clause
"""A client with two subscriptions that match one message: what the broker sends it, and what
the plugin counts as delivered (README, "Overlapping subscriptions").

The broker queues one copy per matching subscription, except that with allow_duplicate_messages
false (2.0's default; 2.1's default is true) an MQTT 3.1.1 client gets a message it already got
once only (src/database.c: db__message_insert checks the message's dest_ids, for clients other
than MQTT 5, in 2.0 and 2.1 alike). 2.0 lets the plugin see only the ACL READ check of each subscription,
made before that filter: one delivery counted per matching subscription. 2.1 fires MESSAGE_OUT
for each PUBLISH it sends (lib/send_publish.c): one per copy the client gets.
"""

import json
import time
import unittest

from harness import BROKER_VERSION, Client, SharedBrokerTestCase, wait_for
from test_metrics import Metrics, delta, wait_metrics

ON_2_1 = BROKER_VERSION >= (2, 1, 0)


class OverlappingSubscriptionsTest(SharedBrokerTestCase):
    def overlap(self, version, client_id):
        """Publishes one QoS 0 message matching both of `client_id`'s subscriptions: returns the
        copies it received, the deliverCount listed for it, and the deliver_events delta."""
        receiver = self.client(client_id, version=version)
        receiver.subscribe("events/overlap/#", qos=0)
        receiver.subscribe("events/overlap/+", qos=0)
        wait_for(lambda: len((self.broker.connection(client_id) or {})
                             .get("subscriptions", [])) == 2, what="both subscriptions listed")
        publisher = self.client(client_id + "-pub", version=4)
        before = Metrics(self.broker)
        publisher.publish("events/overlap/x", b"one", qos=0)
        wait_for(lambda: receiver.messages, what="the message received")
        time.sleep(0.5)  # a second copy, where one comes, has come by now
        after = wait_metrics(self.broker,
                             lambda m: delta(before, m, "deliver_events", "success") >= 1,
                             what="the delivery counted")
        listed = wait_for(lambda: self.listed_deliveries(client_id), what="deliverCount")
        return len(receiver.messages), listed, delta(before, after, "deliver_events", "success")

    def listed_deliveries(self, client_id):
        status, _, body = self.broker.http(
            "/mqtt.connections.v1.ConnectionsService/ListConnections", method="POST",
            body=b'{"filter":"state = MQTT_CONNECTION_STATE_OPEN"}',
            headers={"Content-Type": "application/json", "Connect-Protocol-Version": "1"})
        for c in json.loads(body)["connections"]:
            if c["clientId"] == client_id:
                return int(c["totalRequestStatistics"]["deliverCount"]) or None
        return None

    # The broker's default: 2.0 allow_duplicate_messages false, 2.1 true (src/conf.c:
    # config__init_reload; upstream commit 4de6d24d).
    def test_mqtt_3_1_1_client(self):
        received, listed, counted = self.overlap(4, "overlap-v311")
        # 2.0: one copy, one delivery counted per subscription the broker checked; 2.1: a copy
        # per subscription, each counted as it is sent.
        self.assertEqual(received, 1 if not ON_2_1 else 2)
        self.assertEqual(listed, 2)
        self.assertEqual(counted, 2)

    def test_mqtt_5_client_gets_a_copy_per_subscription(self):
        received, listed, counted = self.overlap(5, "overlap-v5")
        self.assertEqual(received, 2)
        self.assertEqual(listed, 2)
        self.assertEqual(counted, 2)


class NoDuplicateMessagesTest(OverlappingSubscriptionsTest):
    """allow_duplicate_messages false: an MQTT 3.1.1 client gets one copy on 2.0 and 2.1."""

    broker_arguments = {"extra": "allow_duplicate_messages false"}

    def test_mqtt_3_1_1_client(self):
        received, listed, counted = self.overlap(4, "overlap-v311-once")
        self.assertEqual(received, 1)
        # 2.0 counts each ACL READ check (one per subscription); 2.1 the PUBLISH it sends.
        self.assertEqual(listed, 1 if ON_2_1 else 2)
        self.assertEqual(counted, 1 if ON_2_1 else 2)


if __name__ == "__main__":
    unittest.main()
