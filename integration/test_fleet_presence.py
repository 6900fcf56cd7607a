# SPDX-License-Identifier: BSD-3-Clause
"""Presence across brokers (docs/fleet.md, "Presence across brokers"): a central broker (plain
Mosquitto, no plugin) and two edge brokers, each with the plugin, presence on and
conf/fleet/edge-presence-bridge.conf as shipped (but for its lines marked CHANGE), so that
each edge bridges its $SYS/brokers/<node>/... presence topics out to the central broker as
fleet/brokers/<node>/....

Pinned here: a subscriber of the central broker gets every edge's connected, disconnected and
retained state messages, byte for byte as a subscriber of that edge gets them, told apart by
the edge's presence_node in the topic (the same client id on both edges included); a late
subscriber of the central broker learns every edge's client states from its retained messages;
a stopped edge shows as its bridge's state 0 on the central broker while its clients' retained
states stay as they were (the stale state the conf file warns about); and why the bridge maps
the prefix: the central broker refuses a bridge's PUBLISH to a $SYS topic.
"""

import json
import os
import unittest

from harness import Broker, Client, disconnect_all, wait_for

SNIPPET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conf", "fleet",
                       "edge-presence-bridge.conf")
CENTRAL_PREFIX = "fleet/brokers/"
LOCAL_PREFIX = "$SYS/brokers/"
# The lines of the shipped file marked CHANGE, as shipped.
SHIPPED_NODE = "plugin_opt_presence_node mosquitto@edge-1"
SHIPPED_ADDRESS = "address central.example:1883"
SHIPPED_CLIENT_ID = "remote_clientid fleet-presence-edge-1"


def node_name(n):
    return f"mosquitto@edge-{n}"


def bridge_id(n):
    return f"fleet-presence-edge-{n}"


def edge_config(central, n):
    """The shipped file, its CHANGE lines set for edge `n` of `central`."""
    with open(SNIPPET) as f:
        text = f.read()
    for shipped, line in ((SHIPPED_NODE, f"plugin_opt_presence_node {node_name(n)}"),
                          (SHIPPED_ADDRESS, f"address 127.0.0.1:{central.port}"),
                          (SHIPPED_CLIENT_ID, f"remote_clientid {bridge_id(n)}")):
        assert text.count(shipped + "\n") == 1, f"{SNIPPET} has no line {shipped!r}"
        text = text.replace(shipped + "\n", line + "\n")
    return text


def presence(client, prefix):
    """[(node, client id, kind, payload)] of the presence messages `client` got, in order."""
    found = []
    for topic, payload in list(client.messages):
        if not topic.startswith(prefix):
            continue
        node, _, rest = topic[len(prefix):].partition("/clients/")
        client_id, _, kind = rest.rpartition("/")
        found.append((node, client_id, kind, payload))
    return found


def without_bridges(messages):
    """`messages` (of presence()) but those of the edges' own outgoing bridges: on 2.1 an edge
    announces its bridge (client id local.<remote_clientid>, sockport 0) once it carries its
    first message, as the registry opens an outgoing bridge at its first message (README,
    `bridgeRole`); an `out`-only bridge on 2.0 carries no message the plugin sees."""
    return [m for m in messages if not m[1].startswith("local.fleet-presence-")]


def bridge_states(client):
    """{bridge client id: last state payload} of $SYS/broker/connection/<id>/state."""
    states = {}
    for topic, payload in list(client.messages):
        parts = topic.split("/")
        if topic.startswith("$SYS/broker/connection/") and parts[-1] == "state":
            states[parts[3]] = payload
    return states


class FleetPresenceTest(unittest.TestCase):
    def setUp(self):
        self.clients = []
        self.central = self.broker(Broker(plugin=False))
        self.watcher = self.client(self.central, "central-watcher")
        self.watcher.subscribe(CENTRAL_PREFIX + "#", 0)
        self.watcher.subscribe("$SYS/broker/connection/+/state", 0)
        self.edges = [self.broker(Broker(options={"node_id": str(n)},
                                         plugin_after=edge_config(self.central, n)))
                      for n in (1, 2)]
        wait_for(lambda: all(bridge_states(self.watcher).get(bridge_id(n)) == b"1"
                             for n in (1, 2)),
                 timeout=30, what="both edges' bridges connected to the central broker")

    def broker(self, broker):
        broker.start()
        self.addCleanup(self.stop, broker)
        return broker

    def stop(self, broker):
        disconnect_all([c for c in self.clients if c.broker is broker])
        self.clients = [c for c in self.clients if c.broker is not broker]
        broker.stop()
        broker.cleanup_dir()

    def client(self, broker, client_id, **kwargs):
        c = Client(broker, client_id, **kwargs)
        self.clients.append(c)
        return c

    def leave(self, c):
        c.disconnect()
        self.clients.remove(c)

    def wait_central(self, client_ids, count, what):
        """The central watcher's presence messages of `client_ids`, once there are `count`."""
        return wait_for(lambda: (lambda f: f if len(f) >= count else None)(
            [m for m in presence(self.watcher, CENTRAL_PREFIX) if m[1] in client_ids]),
            timeout=20, what=what)

    def test_the_central_broker_gets_every_edges_presence_as_the_edge_publishes_it(self):
        devices = {"sensor-a", "sensor-b", "shared-id"}
        local = [self.client(edge, f"local-{n}") for n, edge in zip((1, 2), self.edges)]
        for c in local:
            c.subscribe(LOCAL_PREFIX + "#", 0)
        a = self.client(self.edges[0], "sensor-a", version=5)
        b = self.client(self.edges[1], "sensor-b", clean=False)
        # One client id on both edges at once: two clients, told apart by their edge's <node>.
        shared = [self.client(edge, "shared-id") for edge in self.edges]
        for c in (a, b, *shared):
            self.leave(c)
        # Per device: connected, state online, disconnected, state (empty: the session ended;
        # offline: sensor-b's session stays).
        central = self.wait_central(devices, 4 * 4, "the devices' messages on the central broker")
        for n, c in zip((1, 2), local):
            wait_for(lambda: len([m for m in presence(c, LOCAL_PREFIX) if m[1] in devices])
                     >= 8, what=f"edge {n}'s own presence messages")
            mine = [m for m in presence(c, LOCAL_PREFIX) if m[1] in devices]
            self.assertTrue(all(node == node_name(n) for node, *_ in mine), mine)
            # Byte for byte, in the edge's order, under the edge's own name.
            self.assertEqual([m for m in central if m[0] == node_name(n)], mine)
        self.assertEqual(len(central), 16, central)

        def kinds(node, client_id):
            return [kind for n, cid, kind, _ in central if (n, cid) == (node, client_id)]
        self.assertEqual(kinds(node_name(1), "sensor-a"),
                         ["connected", "state", "disconnected", "state"])
        self.assertEqual(kinds(node_name(2), "sensor-b"),
                         ["connected", "state", "disconnected", "state"])
        for n in (1, 2):
            self.assertEqual(kinds(node_name(n), "shared-id"),
                             ["connected", "state", "disconnected", "state"])
        self.assertEqual(kinds(node_name(2), "sensor-a") + kinds(node_name(1), "sensor-b"), [])
        for node, client_id, kind, payload in central:
            if kind in ("connected", "disconnected"):
                fields = json.loads(payload)
                self.assertEqual(fields["clientid"], client_id)
                edge = self.edges[int(node.rsplit("-", 1)[1]) - 1]
                self.assertEqual(fields["sockport"], edge.port, (node, client_id, kind))
        states = {(node, cid): payload for node, cid, kind, payload in central if kind == "state"}
        self.assertEqual(states, {(node_name(1), "sensor-a"): b"",
                                  (node_name(2), "sensor-b"): b"offline",
                                  (node_name(1), "shared-id"): b"",
                                  (node_name(2), "shared-id"): b""})

    def test_a_late_central_subscriber_learns_every_edges_client_states(self):
        self.client(self.edges[0], "sensor-on-1")
        self.leave(self.client(self.edges[1], "sensor-off-2", clean=False))
        self.client(self.edges[1], "sensor-on-2", version=5)
        # The central broker has them once the watcher got them (it subscribed before).
        self.wait_central({"sensor-on-1", "sensor-off-2", "sensor-on-2"}, 2 + 4 + 2,
                          "the three devices' messages on the central broker")
        late = self.client(self.central, "late-dashboard")
        late.subscribe(CENTRAL_PREFIX + "+/clients/+/state", 0)
        expected = {(node_name(1), "sensor-on-1"): b"online",
                    (node_name(2), "sensor-off-2"): b"offline",
                    (node_name(2), "sensor-on-2"): b"online"}
        got = wait_for(lambda: (lambda s: s if len(s) >= len(expected) else None)(
            {(node, cid): payload
             for node, cid, _, payload in without_bridges(presence(late, CENTRAL_PREFIX))}),
            what="the retained states on the central broker")
        self.assertEqual(got, expected)

    def test_a_stopped_edge_shows_in_its_bridge_state_and_leaves_its_states_stale(self):
        self.client(self.edges[1], "sensor-on-2")
        self.wait_central({"sensor-on-2"}, 2, "sensor-on-2's connected and state")
        # The broker stops with its client still connected (a machine or a service going down):
        # the client sends no DISCONNECT, so no disconnected message goes out first.
        self.edges[1].stop()
        wait_for(lambda: bridge_states(self.watcher).get(bridge_id(2)) == b"0",
                 what="edge 2's bridge state 0 on the central broker (its will)")
        self.assertEqual(bridge_states(self.watcher).get(bridge_id(1)), b"1")
        # Its client went with it, but the edge's stop published nothing (docs/presence.md): the
        # central broker still says online, as conf/fleet/edge-presence-bridge.conf warns.
        late = self.client(self.central, "late-after-stop")
        late.subscribe(CENTRAL_PREFIX + "+/clients/+/state", 0)
        wait_for(lambda: without_bridges(presence(late, CENTRAL_PREFIX)),
                 what="the retained state")
        self.assertEqual(without_bridges(presence(late, CENTRAL_PREFIX)),
                         [(node_name(2), "sensor-on-2", "state", b"online")])

    def test_the_central_broker_refuses_sys_topics_from_a_bridge_hence_the_prefix(self):
        self.watcher.subscribe(LOCAL_PREFIX + "#", 0)
        self.watcher.subscribe("fleet/marker", 0)
        unmapped = self.broker(Broker(
            options={"presence_events": "true", "presence_node": "mosquitto@unmapped"},
            plugin_after="\n".join([
                "connection unmapped", f"address 127.0.0.1:{self.central.port}",
                "topic $SYS/brokers/# out 0", "topic fleet/marker out 0",
                "remote_clientid fleet-presence-unmapped", "restart_timeout 1"])))
        wait_for(lambda: bridge_states(self.watcher).get("fleet-presence-unmapped") == b"1",
                 timeout=30, what="the unmapped bridge connected")
        device = self.client(unmapped, "sensor-unmapped")
        wait_for(lambda: "Denied PUBLISH from fleet-presence-unmapped" in self.central.log(),
                 what="the central broker's refusal in its log")
        # The marker follows the presence message on the same bridge connection: once it is
        # here, a $SYS message let through would be too.
        device.publish("fleet/marker", b"after", qos=1)
        wait_for(lambda: ("fleet/marker", b"after") in self.watcher.messages, what="the marker")
        self.assertEqual([t for t, _ in self.watcher.messages if t.startswith(LOCAL_PREFIX)], [])
        self.assertIn("'$SYS/brokers/mosquitto@unmapped/clients/sensor-unmapped/connected'",
                      self.central.log())


if __name__ == "__main__":
    unittest.main()
