# SPDX-License-Identifier: BSD-3-Clause
"""Queued and in-flight messages per connection on the real broker, once the client layout is
verified (src/broker/message_counts.h, docs/api.md "Queued and in-flight messages").

A QoS 1 subscriber on a raw socket subscribes and then never reads nor acknowledges: the broker
puts max_inflight_messages of what is published to it in flight and queues the rest (up to
max_queued_messages). The rich API shows exactly that, from the broker's own counters, within the
sweep's round; `messages_queued desc` puts it first and `messages_queued > 0` finds it. Before
2.0.13 the broker counts both together (msg_count): only messagesPending is shown."""

import os
import subprocess
import unittest

from harness import BROKER_VERSION, SharedBrokerTestCase, stalled_subscriber, wait_for

OPEN = "state = MQTT_CONNECTION_STATE_OPEN"
CLI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli",
                   "mosquitto-connections")
IN_FLIGHT = 4
PUBLISHED = 30
SPLIT = BROKER_VERSION >= (2, 0, 13)


class MessageQueuesTest(SharedBrokerTestCase):
    broker_arguments = {"extra": f"max_inflight_messages {IN_FLIGHT}\nmax_queued_messages 100\n"}
    layout_prefix = "queues-layout"

    def test_a_subscriber_that_stops_reading_shows_its_queue(self):
        sock = stalled_subscriber(self.broker, "queues-slow", "queues/t")
        try:
            self.publish_to_a_reader("queues", "queues/t", PUBLISHED, timeout=10)

            def slow():
                found = self.list('client_id = "queues-slow"')
                return found[0] if found and "messagesPending" in found[0] else None

            # The sweep refreshes every connection within its round (1 s under load, a few
            # seconds on an idle broker): the figure arrives without any API request asking.
            def slow_full():
                entry = slow()
                return entry if entry and entry["messagesPending"] == PUBLISHED else None
            entry = wait_for(slow_full, timeout=10, what="the slow subscriber's pending messages")
            self.assertEqual(entry["incomingMessagesPending"], 0)
            if SPLIT:
                self.assertEqual(entry["messagesInFlight"], IN_FLIGHT)
                self.assertEqual(entry["messagesQueued"], PUBLISHED - IN_FLIGHT)
                self.assertEqual(entry["incomingMessagesQueued"], 0)
                self.assertEqual(entry["incomingMessagesInFlight"], 0)
            else:
                # 2.0.11/2.0.12 count in flight and queued together: neither is shown.
                for field in ("messagesQueued", "messagesInFlight", "incomingMessagesQueued",
                              "incomingMessagesInFlight"):
                    self.assertNotIn(field, entry)

            # The reading subscriber and the publisher hold nothing (once swept).
            def others_settled():
                rest = [c for c in self.list(OPEN) if c["clientId"] != "queues-slow"]
                return rest if len(rest) == 2 and all(
                    c.get("messagesPending") == 0 for c in rest) else None
            wait_for(others_settled, timeout=10, what="the other clients' counts at 0")

            ordered = [c["clientId"] for c in self.list(
                OPEN, order_by="messages_queued desc" if SPLIT else "messages_pending desc")]
            self.assertEqual(ordered[0], "queues-slow", ordered)
            found = [c["clientId"] for c in self.list("messages_queued > 0")]
            self.assertEqual(found, ["queues-slow"] if SPLIT else [])
            found = [c["clientId"] for c in self.list("messagesPending > 0")]
            self.assertEqual(found, ["queues-slow"])
            # The command line's top, sorted by what the broker holds: the slow consumer first,
            # with its figure.
            for sort in ("pending", "queued"):
                result = subprocess.run(
                    [CLI, "top", "--once", "--interval", "0.2", "--sort", sort,
                     "--url", f"http://127.0.0.1:{self.broker.http_port}"],
                    capture_output=True, text=True, timeout=60)
                self.assertEqual(result.returncode, 0, result.stderr)
                lines = [line.split() for line in result.stdout.splitlines()[2:] if line.strip()]
                header, first = lines[0], dict(zip(lines[0], lines[1]))
                self.assertIn("PENDING", header)
                if sort == "pending" or SPLIT:
                    self.assertEqual(first["CLIENT-ID"], "queues-slow", result.stdout)
                self.assertEqual(first["PENDING"], str(PUBLISHED) if first["CLIENT-ID"] ==
                                 "queues-slow" else "0", result.stdout)
        finally:
            sock.close()
        # Closed: unknown, not 0.
        self.assertNotIn("messagesPending", self.closed("queues-slow"))


if __name__ == "__main__":
    unittest.main()
