# SPDX-License-Identifier: BSD-3-Clause
"""Two real brokers, each with the plugin, joined by a Mosquitto bridge (`connection` on the
local one, `topic ... both`, `cleansession false`), messages both ways, and both restarted.

What each end can show (README, "What cannot be known"; docs/broker-versions.md, "Bridges"):
- the remote broker: the bridge is a client that connected (BASIC_AUTH, CONNECT), with its remote
  client id, its subscription and its session, and listed in the KubeMQ view as any client; once
  the client layout is verified (its own CONNECT, the remote's first, is enough), it is an
  incoming bridge (`bridgeRole` BRIDGE_ROLE_INCOMING: `is_bridge`, set by the CONNECT's bridge
  bit);
- the local broker: the bridge's own outgoing connection passes no authentication event (it
  sends, not receives, the CONNECT) and no ACL check (src/security.c and src/plugin_acl_check.c
  return early for `context->bridge`), so it is seen from its first message on (MESSAGE; on 2.1
  MESSAGE_OUT too), without listener, as an outgoing bridge named by the configuration's
  `connection`, with the remote broker's address (its socket's peer), and left out of the KubeMQ
  view. Its session, saved in mosquitto.db, is read at start as an offline session, and listed so
  while the bridge is connected again, until its next message. These tests pin that.
"""

import json
import unittest

from harness import BROKER_NAME, BROKER_VERSION, Broker, Client, wait_for
from test_broker_layout import readme_layout

ON_2_1 = BROKER_VERSION >= (2, 1, 0)
REMOTE_ID = "bridge-local-to-remote"
LOCAL_ID = "bridge-local-self"


def rich(broker, client_id):
    status, _, body = broker.http(
        "/mqtt.connections.v1.ConnectionsService/ListConnections", method="POST",
        body=json.dumps({"filter": f'client_id = "{client_id}"'}).encode(),
        headers={"Content-Type": "application/json", "Connect-Protocol-Version": "1"})
    assert status == 200, body
    return json.loads(body)["connections"]


def in_state(broker, client_id, state):
    return [c for c in rich(broker, client_id) if c["state"] == f"MQTT_CONNECTION_STATE_{state}"]


class BridgeTest(unittest.TestCase):
    def setUp(self):
        self.remote = Broker(persistence=True)
        self.remote.start()
        self.addCleanup(self.stop, self.remote)
        self.local = Broker(persistence=True, plugin_after="\n".join([
            "connection to-remote", f"address 127.0.0.1:{self.remote.port}",
            "topic events/bridge/# both 1", "cleansession false",
            f"remote_clientid {REMOTE_ID}", f"local_clientid {LOCAL_ID}", "restart_timeout 1"]))
        self.local.start()
        self.addCleanup(self.stop, self.local)
        self.clients = []

    def stop(self, broker):
        for c in self.clients:
            try:
                c.disconnect()
            except Exception:  # already gone with its broker
                pass
        self.clients = []
        broker.stop()
        broker.cleanup_dir()

    def client(self, broker, client_id):
        c = Client(broker, client_id)
        self.clients.append(c)
        return c

    def wait_remote_bridge_open(self):
        """The bridge's connection on the remote broker once it holds its subscription: the
        bridge subscribes right after its CONNECT, and the companion, woken by the broker at
        once, may list the connection before that SUBSCRIBE arrives."""
        return wait_for(lambda: [c for c in in_state(self.remote, REMOTE_ID, "OPEN")
                                 if c.get("subscriptions")], timeout=20,
                        what="the bridge connected to the remote broker, subscribed")[0]

    def verify_layout(self, broker):
        """Traffic that verifies the client layout (as test_broker_layout.py): three clients of
        different keep-alives and sessions, each changing its subscriptions."""
        for n, (version, clean, keepalive) in enumerate([(4, True, 60), (5, False, 30),
                                                         (4, False, 15)]):
            c = Client(broker, f"layout-{n}", version=version, clean=clean, keepalive=keepalive)
            self.clients.append(c)
            for topic in ("layout/1", "layout/2", "layout/3"):
                c.subscribe(topic)
            c.unsubscribe("layout/1")

    def exchange(self, tag):
        """One message each way; returns the two receivers' clients."""
        on_local = self.client(self.local, f"on-local-{tag}")
        on_local.subscribe("events/bridge/#", qos=1)
        on_remote = self.client(self.remote, f"on-remote-{tag}")
        on_remote.subscribe("events/bridge/#", qos=1)
        # The bridge forwards what is published after both subscriptions are in place.
        wait_for(lambda: on_remote.publish("events/bridge/probe", b"p", qos=1) and
                 on_local.messages, timeout=20, interval=0.5, what="the bridge forwarding")
        on_local.publish("events/bridge/from-local", b"l", qos=1)
        wait_for(lambda: ("events/bridge/from-local", b"l") in on_remote.messages,
                 what="local to remote")
        return on_local, on_remote

    def test_both_ends_through_restarts(self):
        bridge = self.wait_remote_bridge_open()
        # The remote end: an ordinary client with the bridge's remote client id.
        self.assertEqual(bridge["cleanSession"], False)
        self.assertEqual(bridge["source"]["ipAddress"], "127.0.0.1")
        self.assertEqual(bridge["listenerName"], f"mqtt:{self.remote.port}")
        self.assertEqual([s["filter"] for s in bridge["subscriptions"]], ["events/bridge/#"])
        self.assertEqual(bridge["authenticationInfo"]["mechanism"],
                         "AUTHENTICATION_MECHANISM_ANONYMOUS")
        # Its CONNECT, the remote broker's first, verified the client layout (where the README
        # says this build verifies one): it is an incoming bridge from the start. Later clients
        # are no bridges.
        if readme_layout(BROKER_NAME).startswith("2."):
            self.assertEqual(bridge.get("bridgeRole"), "BRIDGE_ROLE_INCOMING", bridge)
            self.verify_layout(self.remote)
            for n in range(3):  # the layout's own clients are no bridges
                self.assertEqual(in_state(self.remote, f"layout-{n}", "OPEN")[0]["bridgeRole"],
                                 "BRIDGE_ROLE_NONE")
        else:  # no layout: unknown, not a guess
            self.assertNotIn("bridgeRole", bridge)
        # A network client of the remote broker: listed in its KubeMQ view.
        self.assertIn(REMOTE_ID, [c["client_id"] for c in self.remote.connections()])

        self.exchange("1")
        # The local end: seen from its first message, an outgoing bridge with the remote
        # broker's address, without listener or subscriptions (its local subscription is made
        # without an ACL check), on every build (no layout needed).
        own = wait_for(lambda: in_state(self.local, LOCAL_ID, "OPEN"),
                       what="the bridge's own connection listed")[0]
        self.assertEqual(own.get("bridgeRole"), "BRIDGE_ROLE_OUTGOING", own)
        self.assertEqual(own.get("bridgeName"), "to-remote", own)
        self.assertEqual(own["source"], {"ipAddress": "127.0.0.1", "port": self.remote.port})
        self.assertNotIn("listenerName", own)
        self.assertEqual(own["subscriptions"], [])
        self.assertEqual(own["cleanSession"], False)
        self.assertGreaterEqual(int(own["totalRequestStatistics"]["publishCount"]), 1)
        # Deliveries to it: 2.0 asks no ACL for a bridge; 2.1 sends MESSAGE_OUT.
        delivered = int(own["totalRequestStatistics"]["deliverCount"])
        self.assertTrue(delivered >= 1 if ON_2_1 else delivered == 0, own)
        # The broker's internal bridge client: not in the KubeMQ view (the contract).
        self.assertNotIn(LOCAL_ID, [c["client_id"] for c in self.local.connections()])
        self.assertIn("on-local-1", [c["client_id"] for c in self.local.connections()])

        # The remote broker restarts: the bridge's session there is restored and resumed.
        first_uid = bridge["uid"]
        self.remote.restart()
        wait_for(lambda: [c for c in in_state(self.remote, REMOTE_ID, "OPEN")
                          if c["uid"] != first_uid], timeout=30, what="the bridge back")
        # Locally the bridge's connection closed with the remote's end, and stays an offline
        # session (cleansession false) until its next message.
        wait_for(lambda: in_state(self.local, LOCAL_ID, "OFFLINE"), what="offline locally")
        self.assertEqual(in_state(self.local, LOCAL_ID, "OPEN"), [])

        # The local broker restarts: its mosquitto.db holds the bridge's session, read at start
        # as offline, with its local subscription; the remote lists the bridge connected again.
        self.local.restart()
        wait_for(lambda: [c for c in in_state(self.remote, REMOTE_ID, "OPEN")], timeout=30,
                 what="the bridge connected again")
        offline = wait_for(lambda: in_state(self.local, LOCAL_ID, "OFFLINE"),
                           what="the saved session listed")[0]
        self.assertEqual([s["filter"] for s in offline["subscriptions"]], ["events/bridge/#"])
        self.assertEqual(len(in_state(self.remote, REMOTE_ID, "OPEN")), 1)


if __name__ == "__main__":
    unittest.main()
