# SPDX-License-Identifier: BSD-3-Clause
"""The client layout (src/broker/broker_layout.h) on the real broker: nothing is trusted at start,
and after a few clients connect and change their subscriptions the layout this build was measured
with is verified against the broker's accessors, with one log line naming it; a WatchConnections stream then sees the bridge role each open
connection was found to have (UPDATED)."""

import os
import unittest

from harness import BROKER_NAME, Client, SharedBrokerTestCase, wait_for
from test_watch_connections import Stream


def readme_layout(broker_name):
    """The layout the README's client layout table says `broker_name` verifies."""
    readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")
    with open(readme) as f:
        text = f.read()
    table = text[text.index("| matrix name | layout verified | why |"):]
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.split("|")]
        if cells[1] == f"`{broker_name}`":
            return cells[2].strip("`")
    raise AssertionError(f"README.md's client layout table has no row for {broker_name}")


class BrokerLayoutTest(SharedBrokerTestCase):
    def layout_lines(self):
        return [line for line in self.broker.log().splitlines() if "broker layout: " in line]

    def test_the_builds_layout_is_verified_on_clients_that_change_their_subscriptions(self):
        layout = readme_layout(BROKER_NAME)
        # Before any client: nothing verified, nothing refused.
        self.assertEqual(self.layout_lines(), [])
        stream = Stream(self.broker, filter_text='client_id = "layout-a"')
        self.addCleanup(stream.close)
        stream.until_synced()
        # Three clients, different keep-alives, protocols and sessions; each changes its
        # subscriptions a few times (a SUBSCRIBE and an UNSUBSCRIBE each are observations).
        clients = [Client(self.broker, "layout-a", version=4, keepalive=60),
                   Client(self.broker, "layout-b", version=5, clean=False, keepalive=30),
                   Client(self.broker, "layout-c", version=4, clean=False, keepalive=15)]
        self.clients.extend(clients)
        for client in clients:
            client.subscribe("layout/1")
            client.subscribe("layout/2")
            client.subscribe("layout/3")
            client.unsubscribe("layout/1")
        expected = f"broker layout: verified {layout} for Mosquitto "
        lines = wait_for(lambda: self.layout_lines(), timeout=10,
                         what="a 'broker layout:' log line")
        self.assertEqual(len(lines), 1, lines)
        self.assertIn(expected, lines[0])
        # The connections opened before the layout was verified, with their role unknown, are
        # no bridges: the stream says so for layout-a, after its OPENED.
        seen = []
        for _ in range(50):
            message = stream.next()
            self.assertIsNotNone(message, stream.end)
            seen.append((message["kind"], message["connection"].get("bridgeRole")))
            if message["kind"] == "CONNECTION_CHANGE_KIND_UPDATED":
                break
        self.assertEqual(seen[0], ("CONNECTION_CHANGE_KIND_OPENED", None))
        self.assertEqual(seen[-1], ("CONNECTION_CHANGE_KIND_UPDATED", "BRIDGE_ROLE_NONE"))
        # Decided once: more clients add no line.
        more = Client(self.broker, "layout-d")
        self.clients.append(more)
        more.subscribe("layout/1")
        self.assertEqual(len(self.layout_lines()), 1)


if __name__ == "__main__":
    unittest.main()
