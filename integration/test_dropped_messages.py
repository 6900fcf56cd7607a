# SPDX-License-Identifier: BSD-3-Clause
"""Messages the broker drops, per connection and by cause, on the real broker
(src/broker/queue_drops.h, docs/api.md "Dropped messages", docs/broker-versions.md).

A QoS 1 subscriber on a raw socket subscribes and then never reads nor acknowledges: the broker
puts max_inflight_messages of what is published to it in flight, queues up to its limit, and
drops the rest. Mosquitto 2.0.13 on counts max_queued_messages beyond the in-flight window for a
connected client (src/database.c: queued_count12 - inflight_maximum < max_queued_messages), so it
holds 20 + 30 with max_queued_messages 10; 2.0.11 and 2.0.12 count both together (msg_count12),
so 30. On 2.0 the rich API shows every other message as dropped at a full queue on that
connection, and /metrics by cause; 2.1 queues without a check the plugin sees: the fields are
left out, and the start line says so. A QoS 0 message for an offline persistent session is
thrown away by every build: counted in /metrics (reason offline)."""

import re
import unittest

from harness import BROKER_VERSION, SharedBrokerTestCase, stalled_subscriber, wait_for

IN_FLIGHT = 20
QUEUED = 10
PUBLISHED = 100
API_2_0 = BROKER_VERSION < (2, 1, 0)
SPLIT = BROKER_VERSION >= (2, 0, 13)
# What the broker holds before it drops (the module's docstring).
HELD = IN_FLIGHT + (QUEUED + IN_FLIGHT if SPLIT else QUEUED)


def dropped_metric(broker, reason):
    """mosquitto_connections_messages_dropped_total{reason}, written once for each reason."""
    _, _, text = broker.http("/metrics")
    values = re.findall(
        rf'^mosquitto_connections_messages_dropped_total\{{reason="{reason}"\}} (\S+)$',
        text, re.M)
    if len(values) != 1:
        raise AssertionError(f"{len(values)} series of reason {reason}:\n{text}")
    return int(float(values[0]))


def leave_offline(case, client_id, topic):
    """A persistent session of `client_id` subscribed to `topic` with QoS 1, left offline:
    returns once the rich API no longer lists it open."""
    session = case.client(client_id, clean=False)
    session.subscribe(topic, qos=1)
    session.disconnect()
    case.clients.remove(session)
    wait_for(lambda: not [c for c in case.list(f'client_id = "{client_id}"')
                          if c["state"] == "MQTT_CONNECTION_STATE_OPEN"],
             timeout=10, what="the persistent session offline")


class DroppedMessagesTest(SharedBrokerTestCase):
    broker_arguments = {"extra": f"max_inflight_messages {IN_FLIGHT}\n"
                                 f"max_queued_messages {QUEUED}\n"}
    layout_prefix = "drops-layout"

    def test_a_subscriber_that_stops_reading_has_its_drops_counted(self):
        queue_full_before = dropped_metric(self.broker, "queue_full")
        sock = stalled_subscriber(self.broker, "drops-slow", "drops/t")
        try:
            self.publish_to_a_reader("drops", "drops/t", PUBLISHED, timeout=20)

            def slow():
                found = self.list('client_id = "drops-slow"')
                entry = found[0] if found else None
                # The held messages come with the sweep's round; the drops as they happen.
                return entry if entry and entry.get("messagesPending") == HELD else None
            entry = wait_for(slow, timeout=10, what="the slow subscriber's held messages")
            dropped = PUBLISHED - HELD
            if API_2_0:
                self.assertEqual(entry["messagesDropped"], str(dropped), entry)
                self.assertEqual(entry["messagesDroppedQueueFull"], str(dropped), entry)
                self.assertEqual(dropped_metric(self.broker, "queue_full") - queue_full_before,
                                 dropped)
                # The others dropped nothing, and say so (0, not left out) once the sweep has
                # been by.
                for other in ("drops-reader", "drops-publisher"):
                    shown = wait_for(
                        lambda: self.list(f'client_id = "{other}"')[0].get("messagesDropped"),
                        timeout=10, what=f"{other}'s drops known")
                    self.assertEqual(shown, "0")
                # Filterable: only the slow subscriber dropped.
                found = [c["clientId"] for c in self.list("messages_dropped > 0")]
                self.assertEqual(found, ["drops-slow"])
                # Dropped, not delivered: the plugin counts what the broker queued.
                self.assertEqual(entry["totalRequestStatistics"]["deliverCount"], str(HELD))
            else:
                # 2.1 hides it: left out, not 0, and nothing counted.
                self.assertNotIn("messagesDropped", entry)
                self.assertNotIn("messagesDroppedQueueFull", entry)
                self.assertEqual(dropped_metric(self.broker, "queue_full"), queue_full_before)
        finally:
            sock.close()
        # Closed: unknown, not 0.
        self.assertNotIn("messagesDropped", self.closed("drops-slow"))

    def test_qos0_for_an_offline_session_is_dropped_by_cause(self):
        offline_before = dropped_metric(self.broker, "offline")
        leave_offline(self, "drops-offline", "drops/offline")
        publisher = self.client("drops-offline-publisher")
        for n in range(7):
            publisher.publish("drops/offline", b"q0-%d" % n, qos=0)
        publisher.publish("drops/offline", b"q1", qos=1)  # queued for it, not dropped
        wait_for(lambda: dropped_metric(self.broker, "offline") - offline_before >= 7, timeout=10,
                 what="the offline drops counted")
        self.assertEqual(dropped_metric(self.broker, "offline") - offline_before, 7)
        # The session's next connection gets the QoS 1 message only.
        again = self.client("drops-offline", clean=False)
        wait_for(lambda: len(again.messages) >= 1, timeout=10, what="the queued QoS 1 message")
        self.assertEqual([payload for _, payload in again.messages], [b"q1"])


@unittest.skipIf(API_2_0, "2.0 sees every delivery at ACL_CHECK: registered from the start")
class OfflineWatchTest(SharedBrokerTestCase):
    """2.1 registers the plugin's ACL_CHECK only while an offline session is kept
    (src/broker/offline_watch.h): a broker whose clients are all clean has none, and the session
    kept offline first registers it from inside its CLIENT_OFFLINE, so that its QoS 0 drops are
    counted from the first. 2.1.2 logs each registration."""

    REGISTERED = "has registered to receive 'acl-check' events."

    def test_the_check_is_registered_from_the_first_offline_session_on(self):
        reader = self.client("watch-reader")
        reader.subscribe("watch/t", qos=0)
        publisher = self.client("watch-publisher")
        wait_for(lambda: len(self.list()) == 2, timeout=10, what="the two clients listed")
        publisher.publish("watch/t", b"seen", qos=0)
        wait_for(lambda: reader.messages, timeout=10, what="a delivery")
        self.assertNotIn(self.REGISTERED, self.broker.log())

        leave_offline(self, "watch-offline", "watch/t")
        self.assertEqual(self.broker.log().count(self.REGISTERED), 1)
        for n in range(5):
            publisher.publish("watch/t", b"q0-%d" % n, qos=0)
        wait_for(lambda: len(reader.messages) >= 6, timeout=10, what="the reader's messages")
        wait_for(lambda: dropped_metric(self.broker, "offline") >= 5, timeout=10,
                 what="the offline drops")
        self.assertEqual(dropped_metric(self.broker, "offline"), 5)


if __name__ == "__main__":
    unittest.main()
