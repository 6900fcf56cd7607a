# SPDX-License-Identifier: BSD-3-Clause
"""The client layout (src/broker/broker_layout.h) on the real broker: nothing is trusted at start,
and the first client's CONNECT verifies the layout this build was measured with against the
broker's accessors and pointers, with one log line naming it (Debian's 2.0.11 gives the same
figures as upstream's 2.0.11 without WebSockets and says so); a WatchConnections stream sees the
bridge role each connection was found to have. A broker with exactly one client, an MQTT 5 one
with clean start false and no session expiry, follows that session exactly: it is neither listed
nor counted after it leaves."""

import os
import unittest

from harness import BROKER_NAME, BrokerPerTestCase, Client, SharedBrokerTestCase, wait_for
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

    def test_the_builds_layout_is_verified_at_the_first_connect(self):
        layout = readme_layout(BROKER_NAME)
        # Before any client: nothing verified, nothing refused.
        self.assertEqual(self.layout_lines(), [])
        stream = Stream(self.broker, filter_text='client_id = "layout-a"')
        self.addCleanup(stream.close)
        stream.until_synced()
        first = Client(self.broker, "layout-a", version=4, keepalive=60)
        self.clients.append(first)
        expected = f"broker layout: verified {layout} for Mosquitto "
        lines = wait_for(lambda: self.layout_lines(), timeout=10,
                         what="a 'broker layout:' log line")
        self.assertEqual(len(lines), 1, lines)
        self.assertIn(expected, lines[0])
        self.assertIn("(after 1 observation: ", lines[0])
        # Verified at its own CONNECT: it is announced as no bridge at once.
        message = stream.next()
        self.assertIsNotNone(message, stream.end)
        self.assertEqual((message["kind"], message["connection"].get("bridgeRole")),
                         ("CONNECTION_CHANGE_KIND_OPENED", "BRIDGE_ROLE_NONE"))
        # Checked again on every later client and subscription: they agree, no more lines.
        clients = [Client(self.broker, "layout-b", version=5, clean=False, keepalive=30),
                   Client(self.broker, "layout-c", version=4, clean=False, keepalive=15)]
        self.clients.extend(clients)
        for client in [first] + clients:
            client.subscribe("layout/1")
            client.subscribe("layout/2")
            client.unsubscribe("layout/1")
        self.assertEqual(len(self.layout_lines()), 1)
        self.assertEqual(self.layout_lines()[0], lines[0])


class OneClientTest(BrokerPerTestCase):
    """A fresh broker whose only client is an MQTT 5 one with clean start false and no session
    expiry (the issue's small broker): it subscribes once and leaves."""

    def entries(self, client_id):
        return self.broker.rich_connections(f'client_id = "{client_id}"')

    def events_gauge(self):
        return self.broker.subscriptions_gauge("events")

    def test_the_only_client_s_session_ends_with_it(self):
        only = Client(self.broker, "only-one", version=5, clean=False, session_expiry=0)
        only.subscribe("events/only", qos=1)
        wait_for(lambda: "broker layout: verified" in self.broker.log(), timeout=10,
                 what="the layout verified by the one client")
        wait_for(lambda: self.events_gauge() == 1, what="its subscription counted")
        only.disconnect()
        wait_for(lambda: any(c["state"] == "MQTT_CONNECTION_STATE_CLOSED"
                             for c in self.entries("only-one")), what="its connection closed")
        states = [c["state"] for c in self.entries("only-one")]
        self.assertNotIn("MQTT_CONNECTION_STATE_OFFLINE", states)
        self.assertEqual(self.events_gauge(), 0)
        # The broker agrees: nothing to resume.
        again = Client(self.broker, "only-one", version=5, clean=False, session_expiry=0)
        self.clients.append(again)
        self.assertFalse(again.session_present)


if __name__ == "__main__":
    unittest.main()
