# SPDX-License-Identifier: BSD-3-Clause
"""Bans across a fleet (docs/fleet.md, "Bans across the fleet") on three real brokers of
different versions (the system 2.0.11, 2.0.21 from Debian, 2.1 built with CMake), each naming
the other two as plugin_opt_fleet_peers: a fleet-wide ban refuses the client on every broker, a
ban routed by nodeId acts on that broker alone, a peer that is down is named (never a silent
gap), and the CLI picks the fleet by itself when the broker has peers.

The suite starts its own brokers of each version, so it runs once (integration/broker_matrix.py:
SPANS_BROKERS), not once per broker."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

from browser import Chromium
from harness import Client, free_port, raw_connect, wait_for
from test_console import artifact_path, page
from test_fleet import (ADMIN_TOKEN, CLI, HEADERS, TOKEN, cli_list, node_list, start_fleet,
                        stop_fleet)

SERVICE = "/mqtt.connections.v1.ConnectionsService/"
FLEET = "CONNECTION_SCOPE_FLEET"
MQTT311_NOT_AUTHORISED = 5


def rpc(broker, method, message, token=ADMIN_TOKEN):
    status, _, body = broker.http(SERVICE + method, method="POST",
                                  body=json.dumps(message).encode(),
                                  headers=dict(HEADERS, Authorization="Bearer " + token),
                                  timeout=15)
    return status, json.loads(body) if body else None


def connack(broker, client_id):
    """The CONNACK code of a bare MQTT 3.1.1 CONNECT (5: not authorised, as a ban answers)."""
    sock, code = raw_connect(broker, client_id, 60)
    sock.close()
    return code


def cli(broker, *arguments, token=ADMIN_TOKEN):
    folder = tempfile.mkdtemp(prefix="mqc-fleet-admin-cli-")
    token_file = os.path.join(folder, "token")
    try:
        with open(token_file, "w") as f:
            f.write(token + "\n")
        return subprocess.run([CLI, *arguments, "--url", f"http://127.0.0.1:{broker.http_port}",
                               "--token-file", token_file],
                              capture_output=True, text=True, timeout=60)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class FleetTestCase(unittest.TestCase):
    """Three brokers of the matrix with peers (and the peers of `extra_peers` besides), for the
    class; the clients a test leaves in `clients` are closed with it."""

    @classmethod
    def extra_peers(cls):
        return ()

    @classmethod
    def setUpClass(cls):
        cls.fleet = start_fleet(extra_peers=cls.extra_peers())
        cls.clients = []

    @classmethod
    def tearDownClass(cls):
        for client in cls.clients:
            client.client.loop_stop()
            client.disconnect()
        stop_fleet(cls.fleet)


class FleetBanTest(FleetTestCase):

    def open_everywhere(self, client_id):
        """One open client `client_id` on each broker, paho's reconnection off once listed."""
        clients = [Client(broker, client_id) for broker in self.fleet]
        self.clients += clients
        for broker in self.fleet:
            wait_for(lambda b=broker: [c for c in node_list(b, f'client_id = "{client_id}"')
                                       if c["state"] == "MQTT_CONNECTION_STATE_OPEN"],
                     what=f"{client_id} open")
        for client in clients:
            client.client.loop_stop()  # a kicked client stays out
        return clients

    def kicked_on(self, broker, client_id):
        return any(c.get("closeReason") == "KICKED"
                   for c in node_list(broker, f'client_id = "{client_id}"'))

    def test_a_fleet_ban_refuses_the_client_on_every_broker(self):
        self.open_everywhere("fb-rogue")
        status, body = rpc(self.fleet[1], "BanClient", {
            "as": "clientid", "who": "fb-rogue", "reason": "leaks", "durationS": "600",
            "scope": FLEET})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["kicked"], 3)
        self.assertNotIn("peerErrors", body)
        self.assertEqual(sorted(b["nodeId"] for b in body["brokers"]), [1, 2, 3])
        self.assertTrue(all("code" not in b and b["kicked"] == 1 for b in body["brokers"]),
                        body)
        self.assertEqual(body["ban"]["nodeId"], 2)
        for broker in self.fleet:
            wait_for(lambda b=broker: self.kicked_on(b, "fb-rogue"), what="fb-rogue KICKED")
            self.assertEqual(connack(broker, "fb-rogue"), MQTT311_NOT_AUTHORISED)
            self.assertEqual(connack(broker, "fb-bystander"), 0)
        # The fleet's list: one ban per broker, one author and one end.
        status, listed = rpc(self.fleet[0], "ListBans", {"scope": FLEET}, token=TOKEN)
        self.assertEqual(status, 200, listed)
        self.assertNotIn("peerErrors", listed)
        self.assertEqual(listed["nodeId"], 1)
        mine = [b for b in listed["bans"] if b["who"] == "fb-rogue"]
        self.assertEqual(sorted(b["nodeId"] for b in mine), [1, 2, 3])
        self.assertEqual({b["by"] for b in mine}, {"admin token file line 1"})
        self.assertEqual(len({b["until"] for b in mine}), 1)
        # Node scope stays this broker's.
        status, node = rpc(self.fleet[2], "ListBans", {}, token=TOKEN)
        self.assertEqual([b["nodeId"] for b in node["bans"] if b["who"] == "fb-rogue"], [3])
        # Lifted everywhere at once.
        status, body = rpc(self.fleet[0], "UnbanClient", {"as": "clientid", "who": "fb-rogue",
                                                           "scope": FLEET})
        self.assertEqual(status, 200, body)
        self.assertEqual(sorted(b["nodeId"] for b in body["brokers"]), [1, 2, 3])
        for broker in self.fleet:
            self.assertEqual(connack(broker, "fb-rogue"), 0)

    def test_a_ban_routed_by_node_id_acts_on_that_broker_alone(self):
        self.open_everywhere("fb-node")
        # Asked at node 3 for node 2.
        status, body = rpc(self.fleet[2], "BanClient", {"as": "clientid", "who": "fb-node",
                                                         "nodeId": 2})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["kicked"], 1)
        self.assertEqual(body["ban"]["nodeId"], 2)
        self.assertEqual([b["nodeId"] for b in body["brokers"]], [2])
        wait_for(lambda: self.kicked_on(self.fleet[1], "fb-node"), what="fb-node KICKED on 2")
        self.assertEqual(connack(self.fleet[1], "fb-node"), MQTT311_NOT_AUTHORISED)
        self.assertFalse(self.kicked_on(self.fleet[0], "fb-node"))
        self.assertFalse(self.kicked_on(self.fleet[2], "fb-node"))
        self.assertEqual(connack(self.fleet[0], "fb-node-2"), 0)
        # The peer logged it under the caller's own token line; the fleet's read token changed
        # nothing.
        self.assertRegex(self.fleet[1].log(), r"banned clientid 'fb-node' without end at the "
                                              r"request of 127\.0\.0\.1:\d+ \(admin token file "
                                              r"line 1\)")
        # Bad input: a node no broker is, both a node and the fleet, a read token.
        status, body = rpc(self.fleet[0], "BanClient", {"as": "clientid", "who": "x",
                                                         "nodeId": 9})
        self.assertEqual(status, 404, body)
        self.assertEqual(body["message"],
                         "nodeId: no broker of the fleet is node 9 (plugin_opt_fleet_peers)")
        status, body = rpc(self.fleet[0], "BanClient", {"as": "clientid", "who": "x",
                                                         "nodeId": 2, "scope": FLEET})
        self.assertEqual(status, 400, body)
        self.assertIn("not both", body["message"])
        status, body = rpc(self.fleet[0], "BanClient", {"as": "clientid", "who": "x",
                                                         "nodeId": 2}, token=TOKEN)
        self.assertEqual(status, 403, body)
        # Lifted on node 2 by its id.
        status, body = rpc(self.fleet[0], "UnbanClient", {"as": "clientid", "who": "fb-node",
                                                           "nodeId": 2})
        self.assertEqual(status, 200, body)
        self.assertEqual(connack(self.fleet[1], "fb-node"), 0)
        status, body = rpc(self.fleet[0], "UnbanClient", {"as": "clientid", "who": "fb-node",
                                                           "nodeId": 2})
        self.assertEqual(status, 404, body)
        self.assertIn("(node 2): not_found", body["message"])

    def test_the_cli_bans_across_the_fleet_and_lists_with_nodes(self):
        result = cli(self.fleet[0], "ban", "clientid", "fb-cli", "--fleet", "--reason", "r")
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = sorted(result.stdout.splitlines())
        self.assertEqual(len(lines), 3, result.stdout)
        for number, line in enumerate(lines, 1):
            self.assertRegex(line, rf'^node {number} \(.*\): banned clientid "fb-cli" without '
                                   r'end; 0 open clients disconnected$')
        listed = cli(self.fleet[2], "bans", "--fleet", token=TOKEN)
        self.assertEqual(listed.returncode, 0, listed.stderr)
        rows = [line.split()[:4] for line in listed.stdout.splitlines() if "fb-cli" in line]
        self.assertEqual(sorted(rows), [["node", "1", "clientid", "fb-cli"],
                                        ["node", "2", "clientid", "fb-cli"],
                                        ["node", "3", "clientid", "fb-cli"]])
        result = cli(self.fleet[0], "unban", "clientid", "fb-cli", "--node-id", "3")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stdout, r'^node 3 \(http://127\.0\.0\.1:\d+\): unbanned clientid '
                                        r'"fb-cli"\n$')
        result = cli(self.fleet[0], "unban", "clientid", "fb-cli", "--fleet")
        self.assertEqual(result.returncode, 0, result.stderr)
        # Node 3 had none any more: named by its URL, not hidden.
        self.assertIn(f"(http://127.0.0.1:{self.fleet[2].http_port}): not_found:", result.stderr)
        self.assertEqual(len(result.stdout.splitlines()), 2)

    def test_the_cli_lists_the_fleet_by_itself_when_the_broker_has_peers(self):
        clients = [Client(broker, f"fb-list-{index}") for index, broker in enumerate(self.fleet)]
        self.clients += clients
        for index, broker in enumerate(self.fleet):
            wait_for(lambda b=broker, i=index: node_list(b, f'client_id = "fb-list-{i}"'),
                     what="fb-list listed")
        status, body = rpc(self.fleet[0], "ListConnections", {"pageSize": 1}, token=TOKEN)
        self.assertEqual(body["fleetPeers"], 2)
        result = cli_list(self.fleet[0], "--filter", 'client_id = "fb-list-*"',
                          "--order-by", "client_id")
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = [line for line in result.stdout.splitlines()[1:] if line.strip()]
        self.assertEqual([(line.split()[0], "node " + line.split("node ")[1].split()[0])
                          for line in rows],
                         [("fb-list-0", "node 1"), ("fb-list-1", "node 2"),
                          ("fb-list-2", "node 3")], result.stdout)
        # --node keeps to the one broker, its host:port in NODE as before.
        result = cli_list(self.fleet[0], "--node", "--filter", 'client_id = "fb-list-*"')
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = [line for line in result.stdout.splitlines()[1:] if line.strip()]
        self.assertEqual([line.split()[0] for line in rows], ["fb-list-0"])
        self.assertIn(f"127.0.0.1:{self.fleet[0].http_port}", rows[0])


class FleetBanPartialTest(FleetTestCase):
    """A peer that is down: a fleet ban is made on the others and the down peer is named, in
    brokers and peerErrors, and by the CLI's exit status; the console shows the fleet with the
    answer marked partial, and sends a kick and a ban to the right brokers."""

    @classmethod
    def extra_peers(cls):
        cls.nobody = f"http://127.0.0.1:{free_port()}"  # reserved by the harness, never bound
        return (cls.nobody,)

    def test_the_console_shows_the_fleet_a_partial_answer_and_routes_kick_and_ban(self):
        for index, broker in enumerate(self.fleet):
            self.clients.append(Client(broker, f"fc-{index}"))
            wait_for(lambda b=broker, i=index: node_list(b, f'client_id = "fc-{i}"'),
                     what=f"fc-{index} listed")
        self.clients[-1].client.loop_stop()  # kicked below: stays out
        rows = ("Array.from(document.querySelectorAll('#connections tbody tr'))"
                ".map(r => r.cells[0].textContent + '|' + r.cells[10].textContent)")
        shown = "(id => getComputedStyle(document.getElementById(id)).display != 'none')"
        with Chromium() as browser:
            browser.open(page(self.fleet[0], {"q": "fc-"}))
            browser.wait("!document.getElementById('token-form').hidden", what="the token prompt")
            browser.evaluate(f"document.getElementById('token-input').value = "
                             f"{json.dumps(ADMIN_TOKEN)};"
                             "document.getElementById('token-form').requestSubmit()")
            expected = json.dumps(["fc-0|node 1", "fc-1|node 2", "fc-2|node 3"],
                                  separators=(",", ":"))
            browser.wait(f"JSON.stringify({rows}) == {json.dumps(expected)}",
                         what="the fleet's rows with their brokers")
            # Health: this broker first, then each peer that answered, each with its count
            # and answer time, and the peer that did not answer.
            browser.wait("document.querySelector('#fleet-brokers li.answered') && "
                         "document.querySelector('#fleet-brokers li.answered').textContent"
                         ".startsWith('node 1 (this broker): 1 connection, answered in ')",
                         what="this broker's line")
            health = browser.evaluate("Array.from(document.querySelectorAll('#fleet-brokers li'))"
                                      ".map(li => li.className + '|' + li.textContent)")
            time_ms = r"[0-9]+(\.[0-9])? ms"
            self.assertRegex(health[0], rf"^answered\|node 1 \(this broker\): 1 connection, "
                                        rf"answered in {time_ms}; the fleet answer in {time_ms}$")
            for index in (1, 2):
                self.assertRegex(health[index],
                                 rf"^answered\|node {index + 1} \(http://127\.0\.0\.1:"
                                 rf"{self.fleet[index].http_port}\): 1 connection, "
                                 rf"answered in {time_ms}$")
            [failed] = [h for h in health if h.startswith("failed|")]
            self.assertTrue(failed.startswith(f"failed|{self.nobody}: unavailable: "), failed)
            self.assertTrue(browser.evaluate(f"{shown}('fleet-health')"))
            self.assertEqual(browser.evaluate("document.getElementById('fleet-partial')"
                                              ".textContent"),
                             "Partial answer: 1 peer missing; their connections are neither "
                             "listed nor counted.")
            self.assertEqual(browser.evaluate("document.getElementById('fleet-summary')"
                                              ".textContent"), "2 of 3 peers answered")
            self.assertIn("(partial)", browser.evaluate("document.getElementById('count')"
                                                        ".textContent"))
            browser.screenshot(artifact_path("console-fleet.png"))
            # A kick from node 1's console closes node 3's connection.
            browser.evaluate("Array.from(document.querySelectorAll('#connections tbody tr'))"
                             ".find(r => r.cells[0].textContent == 'fc-2').click()")
            browser.wait("!!document.getElementById('disconnect')", what="the Disconnect button")
            for _ in range(2):
                browser.evaluate("document.getElementById('disconnect').click()")
            wait_for(lambda: [c.get("closeReason") for c in node_list(
                self.fleet[2], 'client_id = "fc-2" AND state = MQTT_CONNECTION_STATE_CLOSED')]
                == ["KICKED"], what="fc-2 KICKED on node 3")
            browser.wait("document.getElementById('action-message').textContent == "
                         "'Disconnected fc-2.'", what="the page saying so")
            # A ban for every broker: each one lists it, the missing peer is named.
            browser.evaluate("document.getElementById('ban-who').value = 'fc-banned';"
                             "document.getElementById('ban-where').value = 'fleet';"
                             "document.getElementById('ban-form').requestSubmit()")
            browser.wait("document.getElementById('ban-message').textContent.startsWith("
                         "'Banned clientid fc-banned; 0 open client(s) disconnected. On 3 of 4 "
                         f"brokers; not on {self.nobody} (unavailable: ')", what="the fleet ban")
            bans = ("Array.from(document.querySelectorAll('#bans tbody tr'))"
                    ".filter(r => r.cells[1].textContent == 'fc-banned')"
                    ".map(r => r.cells[6].textContent).sort().join(',')")
            browser.wait(f"{bans} == 'node 1,node 2,node 3'", what="the ban on every broker")
            for broker in self.fleet:
                self.assertEqual(connack(broker, "fc-banned"), MQTT311_NOT_AUTHORISED)
            # Node view: this broker alone, no Broker column, the toggle still there.
            browser.evaluate("document.getElementById('fleet-view').click()")
            browser.wait(f"JSON.stringify({rows}.map(r => r.split('|')[0])) == '[\"fc-0\"]'",
                         what="node 1's rows alone")
            self.assertFalse(browser.evaluate(f"{shown}('fleet-health')"))
            self.assertTrue(browser.evaluate(f"{shown}('fleet-view')"))
            self.assertIn("scope=node", browser.evaluate("location.hash"))
        size = os.path.getsize(artifact_path("console-fleet.png"))
        self.assertGreater(size, 10000)

    def test_a_peer_that_is_down_is_named_and_the_others_ban(self):
        status, body = rpc(self.fleet[0], "BanClient", {"as": "username", "who": "fb-mallory",
                                                         "scope": FLEET})
        self.assertEqual(status, 200, body)
        [error] = body["peerErrors"]
        self.assertEqual(error["peer"], self.nobody)
        self.assertEqual(error["code"], "unavailable")
        down = [b for b in body["brokers"] if b.get("peer") == self.nobody]
        self.assertEqual(down, [{"nodeId": 0, "peer": self.nobody, "code": "unavailable",
                                 "message": error["message"], "kicked": 0}])
        self.assertEqual(sorted(b["nodeId"] for b in body["brokers"] if "code" not in b),
                         [1, 2, 3])
        status, listed = rpc(self.fleet[1], "ListBans", {"scope": FLEET}, token=TOKEN)
        self.assertEqual(status, 200, listed)
        self.assertEqual([e["peer"] for e in listed["peerErrors"]], [self.nobody])
        self.assertEqual(sorted(b["nodeId"] for b in listed["bans"]), [1, 2, 3])
        result = cli(self.fleet[2], "unban", "username", "fb-mallory", "--fleet")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"node 0 ({self.nobody}): unavailable", result.stderr)
        result = cli(self.fleet[2], "ban", "username", "fb-mallory", "--fleet")
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertEqual(len(result.stdout.splitlines()), 3)
        self.assertIn(f"node 0 ({self.nobody}): unavailable", result.stderr)


if __name__ == "__main__":
    unittest.main()
