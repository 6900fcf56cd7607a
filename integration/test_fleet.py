# SPDX-License-Identifier: BSD-3-Clause
"""ListConnections with scope CONNECTION_SCOPE_FLEET (docs/fleet.md) across three real brokers of
different versions (the system 2.0.11, 2.0.21 from Debian, 2.1 built with CMake), each with the
plugin and the other two as plugin_opt_fleet_peers: merged order and pages against the union of
the three node-local lists, a peer stopped in the middle of a walk, peers that answer garbage or
nothing, peers that name each other, and options refused at start.

The suite starts its own brokers of each version, so it runs once (integration/broker_matrix.py:
SPANS_BROKERS), not once per broker."""

import http.client
import http.server
import json
import os
import re
import socketserver
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

import brokers
import harness
from harness import (Broker, Client, disconnect_all, free_port, make_certificate, stop_fleet,
                     wait_for)
from test_watch_connections import read_envelope

PATH = "/mqtt.connections.v1.ConnectionsService/ListConnections"
TOKEN = "fleet-read-token-0123456789abcdef"
ADMIN_TOKEN = "fleet-admin-token-0123456789abcdef"
DISCONNECT_PATH = "/mqtt.connections.v1.ConnectionsService/DisconnectConnection"
BUILDS = ("system", "2.0.21-debian", "2.1-cmake")
HEADERS = {"Content-Type": "application/json", "Connect-Protocol-Version": "1",
           "Authorization": "Bearer " + TOKEN}


def build(name):
    """The named build of the manifest; the system broker where the build tree has no other
    (the sanitizer builds test on the system broker alone: scripts/test.sh), so that the fleet
    is then three system brokers."""
    build_dir = os.environ.get("MQC_BUILD_DIR", "")
    if name not in (brokers.read_manifest(build_dir) if build_dir else {}):
        name = brokers.SYSTEM
    return brokers.load(name, build_dir)


def list_connections(broker, request, timeout_ms=None, timeout=15):
    headers = dict(HEADERS)
    if timeout_ms is not None:
        headers["Connect-Timeout-Ms"] = str(timeout_ms)
    status, _, body = broker.http(PATH, method="POST", body=json.dumps(request).encode(),
                                  headers=headers, timeout=timeout)
    return status, json.loads(body) if body else None


def start_fleet(extra_peers=()):
    """Three brokers of BUILDS, each naming the other two (and `extra_peers`)."""
    return harness.start_fleet([build(name) for name in BUILDS],
                               files={"tokens": TOKEN + "\n", "admin-tokens": ADMIN_TOKEN + "\n"},
                               options={"http_token_file": "{dir}/tokens",
                                        "fleet_token_file": "{dir}/tokens",
                                        "http_admin_token_file": "{dir}/admin-tokens"},
                               extra_peers=extra_peers)


def walk(broker, request, limit=200):
    """Every page of a fleet walk: (connections, the last page's totalSize, peer errors seen)."""
    connections, errors, token, total = [], [], "", None
    for _ in range(limit):
        page_request = dict(request, scope="CONNECTION_SCOPE_FLEET")
        if token:
            page_request["pageToken"] = token
        status, body = list_connections(broker, page_request)
        assert status == 200, body
        connections += body.get("connections", [])
        errors += body.get("peerErrors", [])
        total = int(body["totalSize"])
        token = body.get("nextPageToken", "")
        if not token:
            return connections, total, errors
    raise AssertionError("the fleet walk did not end")


CLI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli",
                   "mosquitto-connections")


def cli_list(broker, *arguments, command="list"):
    """The CLI's `command` against `broker` with the read token: the finished process."""
    folder = tempfile.mkdtemp(prefix="mqc-fleet-cli-")
    token_file = os.path.join(folder, "token")
    try:
        with open(token_file, "w") as f:
            f.write(TOKEN + "\n")
        return subprocess.run([CLI, command, "--url", f"http://127.0.0.1:{broker.http_port}",
                               "--token-file", token_file, *arguments],
                              capture_output=True, text=True, timeout=60)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def node_list(broker, filter_text):
    status, body = list_connections(broker, {"filter": filter_text, "pageSize": 10000})
    assert status == 200, body
    return body.get("connections", [])


class FleetListTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fleet = start_fleet()
        cls.clients = []
        # Client ids interleave across the brokers, so that every order mixes them.
        for index, broker in enumerate(cls.fleet):
            for n in range(4 + index):
                cls.clients.append(Client(broker, f"fleet-{(n * 3 + index) % 10}-{index}-{n}"))
        # One client id open on two brokers at once (two devices sharing it behind a balancer).
        cls.clients += [Client(cls.fleet[0], "dupe-shared"), Client(cls.fleet[2], "dupe-shared"),
                        Client(cls.fleet[1], "dupe-alone")]
        for index, broker in enumerate(cls.fleet):
            wait_for(lambda b=broker, i=index: len(node_list(b, 'client_id = "fleet-*"')) == 4 + i
                     and node_list(b, 'client_id = "dupe-*"'),
                     what=f"the clients of broker {index} listed")

    @classmethod
    def tearDownClass(cls):
        disconnect_all(cls.clients)
        stop_fleet(cls.fleet)

    def union(self):
        """Every broker's own list, each connection as (nodeId, uid, clientId)."""
        found = []
        for index, broker in enumerate(self.fleet):
            for c in node_list(broker, 'client_id = "fleet-*"'):
                self.assertEqual(c["nodeId"], index + 1)
                found.append((c["nodeId"], c["uid"], c["clientId"]))
        return found

    def test_pages_in_client_id_order_are_the_sorted_union(self):
        union = self.union()
        self.assertEqual(len(union), 4 + 5 + 6)
        for order_by, reverse in (("client_id", False), ("client_id desc", True)):
            expected = sorted(union, key=lambda c: c[2], reverse=reverse)
            for page_size in (1, 4, 1000):
                for asked in self.fleet:  # any broker answers for the fleet
                    got, total, errors = walk(asked, {"filter": 'client_id = "fleet-*"',
                                                      "orderBy": order_by, "pageSize": page_size})
                    self.assertEqual(errors, [])
                    self.assertEqual(total, len(union))
                    self.assertEqual([(c["nodeId"], c["uid"], c["clientId"]) for c in got],
                                     expected, f"{order_by}, page size {page_size}")

    def test_default_order_holds_across_brokers_and_nothing_repeats(self):
        union = self.union()
        got, total, _ = walk(self.fleet[1], {"filter": 'client_id = "fleet-*"', "pageSize": 2})
        self.assertEqual(total, len(union))
        self.assertEqual(sorted((c["nodeId"], c["uid"], c["clientId"]) for c in got),
                         sorted(union))
        times = [c["openTime"] for c in got]
        self.assertEqual(times, sorted(times))

    def test_node_scope_stays_node_local(self):
        for scope in (None, "CONNECTION_SCOPE_NODE", 1):
            request = {"filter": 'client_id = "fleet-*"'}
            if scope is not None:
                request["scope"] = scope
            status, body = list_connections(self.fleet[0], request)
            self.assertEqual(status, 200, body)
            self.assertEqual(int(body["totalSize"]), 4)
            self.assertEqual({c["nodeId"] for c in body["connections"]}, {1})
            self.assertEqual(body["nodeId"], 1)
            self.assertNotIn("nodeAnswers", body)

    def test_each_broker_that_answered_is_listed_with_its_part(self):
        # Asked of broker 2: itself first, then its peers in plugin_opt_fleet_peers' order.
        status, body = list_connections(self.fleet[1], {"filter": 'client_id = "fleet-*"',
                                                        "scope": "CONNECTION_SCOPE_FLEET",
                                                        "pageSize": 1})
        self.assertEqual(status, 200, body)
        answers = body["nodeAnswers"]
        order = [self.fleet[1], self.fleet[0], self.fleet[2]]
        self.assertEqual([a.get("peer") for a in answers],
                         [None] + [f"http://127.0.0.1:{b.http_port}" for b in order[1:]])
        self.assertEqual([a["nodeId"] for a in answers], [2, 1, 3])
        self.assertEqual([int(a["totalSize"]) for a in answers], [5, 4, 6])
        self.assertEqual(int(body["totalSize"]), 15)
        for answer in answers:
            self.assertGreater(answer["answerMs"], 0, answer)
            self.assertLess(answer["answerMs"], 15000, answer)
        # The CLI's brokers: the same parts, one row per broker, this one first.
        result = cli_list(self.fleet[1], "--filter", 'client_id = "fleet-*"', command="brokers")
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = [line.split() for line in result.stdout.splitlines()]
        self.assertEqual(rows[0], ["NODE", "BROKER", "CONNECTIONS", "ANSWER", "STATUS"])
        self.assertEqual([(r[0], r[1], r[2], r[3]) for r in rows[1:]],
                         [("node", "2", f"http://127.0.0.1:{self.fleet[1].http_port}", "(this"),
                          ("node", "1", f"http://127.0.0.1:{self.fleet[0].http_port}", "4"),
                          ("node", "3", f"http://127.0.0.1:{self.fleet[2].http_port}", "6")])
        self.assertEqual(rows[1][5], "5")
        self.assertIn(": 3 of 3 brokers answered, 15 connections", result.stderr)

    def test_peers_naming_each_other_do_not_loop(self):
        # Each of the three names the other two: a fleet answer that asked again would count
        # connections twice or not end. Peers are asked with node scope, so the total is the sum.
        started = time.monotonic()
        status, body = list_connections(self.fleet[2], {"filter": 'client_id = "fleet-*"',
                                                        "scope": "CONNECTION_SCOPE_FLEET"},
                                        timeout_ms=5000)
        self.assertEqual(status, 200, body)
        self.assertEqual(int(body["totalSize"]), 15)
        self.assertNotIn("peerErrors", body)
        self.assertLess(time.monotonic() - started, 5)

    def test_a_client_id_open_on_two_brokers_is_flagged(self):
        for page_size in (1, 100):
            got, total, errors = walk(self.fleet[1], {"filter": 'client_id = "dupe-*"',
                                                      "orderBy": "client_id desc, node_id",
                                                      "pageSize": page_size})
            self.assertEqual(errors, [])
            self.assertEqual(total, 3)
            self.assertEqual([(c["clientId"], c["nodeId"], c.get("duplicateClientId", False))
                              for c in got],
                             [("dupe-shared", 1, True), ("dupe-shared", 3, True),
                              ("dupe-alone", 2, False)])
        # The gauge of the asked broker counts the last fleet answer's duplicated ids.
        _, _, metrics = self.fleet[1].http("/metrics", headers={"Authorization": "Bearer " + TOKEN})
        self.assertIn("\nmosquitto_connections_fleet_duplicate_client_ids 1\n", metrics)
        # The CLI with --fleet: one row per connection of the fleet, NODE its broker, DUP marked.
        result = cli_list(self.fleet[1], "--fleet", "--filter", 'client_id = "dupe-*"',
                          "--order-by", "client_id desc, node_id")
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = [line for line in result.stdout.splitlines()[1:] if line.strip()]
        self.assertEqual([(line.split()[0], re.search(r"node \d+( DUP)?", line).group(0))
                          for line in rows],
                         [("dupe-shared", "node 1 DUP"), ("dupe-shared", "node 3 DUP"),
                          ("dupe-alone", "node 2")], result.stdout)
        self.assertEqual(result.stderr, "")
        # Node answers never carry the flag: no single broker can see the clash.
        for c in node_list(self.fleet[0], 'client_id = "dupe-*"'):
            self.assertNotIn("duplicateClientId", c)

    def test_the_duplicate_filter_finds_exactly_the_duplicated_id(self):
        # A filter of the fleet's own field: only the open connections whose client id is open
        # on another broker too, whatever broker is asked, with pages of any size.
        for asked in (self.fleet[0], self.fleet[1]):
            for page_size in (1, 100):
                got, total, errors = walk(asked, {"filter": "duplicate_client_id = true",
                                                  "orderBy": "node_id desc",
                                                  "pageSize": page_size})
                self.assertEqual(errors, [])
                self.assertEqual(total, 2)
                self.assertEqual([(c["clientId"], c["nodeId"], c.get("duplicateClientId"))
                                  for c in got],
                                 [("dupe-shared", 3, True), ("dupe-shared", 1, True)])
        # The rest of the filter still applies, and the gauge counts the duplicated ids.
        got, total, _ = walk(self.fleet[1], {"filter": "duplicateClientId = true AND node_id = 1"})
        self.assertEqual([(c["clientId"], c["nodeId"]) for c in got], [("dupe-shared", 1)])
        self.assertEqual(total, 1)
        _, _, metrics = self.fleet[1].http("/metrics", headers={"Authorization": "Bearer " + TOKEN})
        self.assertIn("\nmosquitto_connections_fleet_duplicate_client_ids 1\n", metrics)
        # A filter that does not require the field true cannot be answered from candidates.
        status, body = list_connections(self.fleet[0], {"filter": "NOT duplicate_client_id = true",
                                                        "scope": "CONNECTION_SCOPE_FLEET"})
        self.assertEqual(status, 400, body)
        self.assertIn("duplicate_client_id in a CONNECTION_SCOPE_FLEET filter must be required "
                      "true", body["message"])
        # A node answer has no other broker to compare with: nothing is a duplicate there.
        self.assertEqual(node_list(self.fleet[0], "duplicate_client_id = true"), [])

    def disconnect(self, broker, request, token=ADMIN_TOKEN):
        status, _, body = broker.http(DISCONNECT_PATH, method="POST",
                                      body=json.dumps(request).encode(),
                                      headers=dict(HEADERS, Authorization="Bearer " + token))
        return status, json.loads(body) if body else None

    def test_a_fleet_kick_goes_to_the_broker_that_holds_the_connection(self):
        kicked = Client(self.fleet[2], "kick-me")
        self.clients.append(kicked)
        wait_for(lambda: node_list(self.fleet[2], 'client_id = "kick-me"'), what="kick-me listed")
        # Asked at node 1 for node 3's connection, with the caller's admin token.
        status, body = self.disconnect(self.fleet[0], {"clientId": "kick-me", "nodeId": 3})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["clientId"], "kick-me")
        self.assertTrue(body["disconnected"])
        closed = wait_for(lambda: [c for c in node_list(self.fleet[2], 'client_id = "kick-me"')
                                   if c["state"] == "MQTT_CONNECTION_STATE_CLOSED"],
                          what="kick-me closed on node 3")
        self.assertEqual(closed[0]["closeReason"], "KICKED")
        # A node no broker has, and a read token.
        status, body = self.disconnect(self.fleet[0], {"clientId": "kick-me", "nodeId": 9})
        self.assertEqual(status, 404, body)
        self.assertIn("no broker of the fleet holds client id \"kick-me\" on node 9",
                      body["message"])
        status, body = self.disconnect(self.fleet[0], {"clientId": "fleet-0-0-0", "nodeId": 1},
                                       token=TOKEN)
        self.assertEqual(status, 403, body)

    def test_bad_input_is_refused_naming_it(self):
        cases = [
            ({"scope": "CONNECTION_SCOPE_GALAXY"}, "expected CONNECTION_SCOPE_NODE or"),
            ({"scope": "CONNECTION_SCOPE_FLEET", "orderBy": "nonsense"}, "nonsense"),
            ({"scope": "CONNECTION_SCOPE_FLEET", "pageToken": "AQ"}, "page_token"),
            ({"scope": "CONNECTION_SCOPE_FLEET", "filter": "client_id ="}, "position"),
        ]
        for request, expected in cases:
            status, body = list_connections(self.fleet[0], request)
            self.assertEqual(status, 400, body)
            self.assertEqual(body["code"], "invalid_argument")
            self.assertIn(expected, body["message"])
        # A node page's token is not a fleet page's.
        status, body = list_connections(self.fleet[0], {"filter": 'client_id = "fleet-*"',
                                                        "pageSize": 1})
        status, body = list_connections(self.fleet[0], {
            "filter": 'client_id = "fleet-*"', "pageSize": 1, "scope": "CONNECTION_SCOPE_FLEET",
            "pageToken": body["nextPageToken"]})
        self.assertEqual(status, 400, body)
        self.assertIn("not a fleet page token", body["message"])


WATCH_PATH = "/mqtt.connections.v1.ConnectionsService/WatchConnections"
KIND = "CONNECTION_CHANGE_KIND_"


class FleetStream:
    """One WatchConnections call with scope CONNECTION_SCOPE_FLEET in the JSON codec over plain
    HTTP/1.1 (http.client undoes the chunks; the Connect envelopes are read here)."""

    def __init__(self, broker, filter_text, resume_token="", timeout=30):
        self.connection = http.client.HTTPConnection("127.0.0.1", broker.http_port,
                                                     timeout=timeout)
        body = json.dumps({"filter": filter_text, "scope": "CONNECTION_SCOPE_FLEET",
                           "resumeToken": resume_token}).encode()
        self.connection.request("POST", WATCH_PATH,
                                body=b"\0" + len(body).to_bytes(4, "big") + body,
                                headers={"Content-Type": "application/connect+json",
                                         "Connect-Protocol-Version": "1",
                                         "Authorization": "Bearer " + TOKEN})
        self.response = self.connection.getresponse()
        self.end = None
        self.token = resume_token  # the last resumeToken read

    def next(self):
        """The next message, or None after the end-of-stream message (self.end)."""
        flags, payload = read_envelope(self.response)
        if flags & 0x02:
            self.end = payload
            return None
        self.token = payload.get("resumeToken", self.token)
        return payload

    def until(self, done, limit=100000):
        """Messages read until done(messages so far) holds."""
        messages = []
        for _ in range(limit):
            message = self.next()
            assert message is not None, self.end
            messages.append(message)
            if done(messages):
                return messages
        raise AssertionError("not reached")

    def close(self):
        self.connection.close()


def kinds_of(messages, *kinds):
    """(kind, nodeId, clientId) of the messages of `kinds`."""
    wanted = {KIND + k for k in kinds}
    return [(m["kind"][len(KIND):], m.get("nodeId"), (m.get("connection") or {}).get("clientId"))
            for m in messages if m["kind"] in wanted]


class FleetWatchTest(unittest.TestCase):
    """WatchConnections across the three brokers: each broker's state and changes tagged with its
    node id, a resumption that goes on per broker (nothing lost, nothing twice), and a peer
    stopped mid-watch reported as PEER_LOST. The stop comes last (test_z_)."""

    @classmethod
    def setUpClass(cls):
        cls.fleet = start_fleet()
        cls.clients = [Client(broker, f"fw-start-{index}") for index, broker in enumerate(cls.fleet)]
        for index, broker in enumerate(cls.fleet):
            wait_for(lambda b=broker, i=index: node_list(b, f'client_id = "fw-start-{i}"'),
                     what=f"fw-start-{index} listed")

    @classmethod
    def tearDownClass(cls):
        disconnect_all(cls.clients)
        stop_fleet(cls.fleet)

    def open_stream(self, broker, token=""):
        stream = FleetStream(broker, 'client_id = "fw-*"', token)
        self.addCleanup(stream.close)
        self.assertEqual(stream.response.status, 200)
        return stream

    @staticmethod
    def synced_nodes(messages):
        return {m.get("nodeId") for m in messages if m["kind"] == KIND + "SYNCED"}

    def test_every_broker_is_watched_tagged_and_resumed_from_its_own_point(self):
        stream = self.open_stream(self.fleet[0])
        state = stream.until(lambda ms: self.synced_nodes(ms) == {1, 2, 3})
        # Each broker's own state, tagged with its node id, its connections with theirs.
        self.assertEqual(sorted(kinds_of(state, "RESET")), [("RESET", 1, None), ("RESET", 2, None),
                                                            ("RESET", 3, None)])
        self.assertEqual(sorted(kinds_of(state, "CURRENT")),
                         [("CURRENT", i + 1, f"fw-start-{i}") for i in range(3)])
        for m in state:
            self.assertTrue(m["resumeToken"], m)
            if "connection" in m:
                self.assertEqual(m["connection"]["nodeId"], m["nodeId"])

        # Connects and closes on all three, each seen once with its own broker's node id.
        live = [Client(broker, f"fw-live-{i}") for i, broker in enumerate(self.fleet)]
        self.addCleanup(lambda: [c.disconnect() for c in live])
        opened = stream.until(lambda ms: len(kinds_of(ms, "OPENED")) == 3)
        self.assertEqual(sorted(kinds_of(opened, "OPENED")),
                         [("OPENED", i + 1, f"fw-live-{i}") for i in range(3)])
        for client in live:
            client.disconnect()
        closed = stream.until(lambda ms: len(kinds_of(ms, "CLOSED")) == 3)
        self.assertEqual(sorted(kinds_of(closed, "CLOSED")),
                         [("CLOSED", i + 1, f"fw-live-{i}") for i in range(3)])
        # As each broker itself tells the close (whose reason a 2.0 build may not know).
        for m in closed:
            if m["kind"] == KIND + "CLOSED":
                own = node_list(self.fleet[m["nodeId"] - 1],
                                f'client_id = "{m["connection"]["clientId"]}" AND '
                                'state = MQTT_CONNECTION_STATE_CLOSED')
                self.assertEqual([c["uid"] for c in own], [m["connection"]["uid"]])
                self.assertEqual(m["connection"]["closeReason"], own[0]["closeReason"])

        # The client drops; changes happen on every broker meanwhile; it resumes (at another
        # broker of the fleet: the token names nodes, not URLs). Each broker goes on after its
        # own last message: no RESET, each gap change once, nothing seen before again.
        token = stream.token
        stream.close()
        gap = [Client(broker, f"fw-gap-{i}") for i, broker in enumerate(self.fleet)]
        self.addCleanup(lambda: [c.disconnect() for c in gap])
        for i, broker in enumerate(self.fleet):
            wait_for(lambda b=broker, i=i: node_list(b, f'client_id = "fw-gap-{i}"'),
                     what=f"fw-gap-{i} listed")
        resumed = self.open_stream(self.fleet[1], token)
        # A marker on each broker after the gap: everything before it is the gap, exactly.
        marker = [Client(broker, f"fw-mark-{i}") for i, broker in enumerate(self.fleet)]
        self.addCleanup(lambda: [c.disconnect() for c in marker])
        got = resumed.until(lambda ms: len([k for k in kinds_of(ms, "OPENED")
                                            if k[2].startswith("fw-mark-")]) == 3)
        self.assertEqual(kinds_of(got, "RESET", "CURRENT", "SYNCED"), [])
        self.assertEqual(sorted(k for k in kinds_of(got, "OPENED", "CLOSED")
                                if not k[2].startswith("fw-mark-")),
                         [("OPENED", i + 1, f"fw-gap-{i}") for i in range(3)])
        self.assertEqual(sorted(k for k in kinds_of(got, "OPENED") if k[2].startswith("fw-mark")),
                         [("OPENED", i + 1, f"fw-mark-{i}") for i in range(3)])

    def test_a_token_that_is_not_one_ends_the_stream_naming_it(self):
        stream = FleetStream(self.fleet[0], "", "not-a-token")
        self.addCleanup(stream.close)
        self.assertIsNone(stream.next())
        self.assertEqual(stream.end["error"]["code"], "invalid_argument")
        self.assertIn("malformed resume_token", stream.end["error"]["message"])

    def test_the_cli_watches_the_fleet(self):
        folder = tempfile.mkdtemp(prefix="mqc-fleet-cli-")
        self.addCleanup(shutil.rmtree, folder, True)
        token_file = os.path.join(folder, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN + "\n")
        process = subprocess.Popen(
            [CLI, "watch", "--fleet", "-o", "json", "--filter", 'client_id = "fw-cli-*"',
             "--url", f"http://127.0.0.1:{self.fleet[0].http_port}", "--token-file", token_file],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (process.kill(), process.wait(10)))

        def read_until(done, timeout=30):
            lines = []
            deadline = time.monotonic() + timeout
            while not done(lines) and time.monotonic() < deadline:
                line = process.stdout.readline()
                self.assertTrue(line, process.stderr.read() if process.poll() is not None else "")
                lines.append(json.loads(line))
            return lines
        # The three brokers' (empty) states, then a connect on each: NODE is its own broker.
        synced = read_until(lambda ls: len([m for m in ls if m["kind"] == KIND + "SYNCED"]) == 3)
        self.assertEqual(sorted(m["node"] for m in synced if m["kind"] == KIND + "SYNCED"),
                         ["node 1", "node 2", "node 3"])
        clients = [Client(broker, f"fw-cli-{i}") for i, broker in enumerate(self.fleet)]
        self.addCleanup(lambda: [c.disconnect() for c in clients])
        opened = read_until(lambda ls: len([m for m in ls if m["kind"] == KIND + "OPENED"]) == 3)
        self.assertEqual(sorted((m["node"], m["connection"]["clientId"]) for m in opened
                                if m["kind"] == KIND + "OPENED"),
                         [(f"node {i + 1}", f"fw-cli-{i}") for i in range(3)])

    def test_z_a_peer_stopped_mid_watch_is_reported(self):
        stream = self.open_stream(self.fleet[0])
        stream.until(lambda ms: self.synced_nodes(ms) == {1, 2, 3})
        self.fleet[2].stop()
        lost = stream.until(lambda ms: kinds_of(ms, "PEER_LOST"), limit=1000)[-1]
        self.assertEqual(lost["peerError"]["peer"], f"http://127.0.0.1:{self.fleet[2].http_port}")
        self.assertEqual(lost["nodeId"], 3)
        self.assertTrue(lost["peerError"]["code"])
        # The others go on.
        late = Client(self.fleet[1], "fw-after-stop")
        self.addCleanup(late.disconnect)
        after = stream.until(lambda ms: kinds_of(ms, "OPENED"))
        self.assertEqual(kinds_of(after, "OPENED"), [("OPENED", 2, "fw-after-stop")])


class GarbageHandler(http.server.BaseHTTPRequestHandler):
    """A peer that is no broker: HTTP 200 with bytes that are no ListConnectionsResponse."""
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = b"\x0a\xff\xff\xff\xff garbage"
        self.send_response(200)
        self.send_header("Content-Type", "application/proto")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class SilentHandler(GarbageHandler):
    """A peer that takes the request and never answers in time."""
    def do_POST(self):
        time.sleep(4)


class LoopbackHttpServer:
    def __init__(self, handler):
        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


class FleetPartialTest(unittest.TestCase):
    """Peers that fail: a garbage answer, nothing in time, a port nobody listens on, and a broker
    stopped in the middle of a walk. Each is named in peerErrors; nothing hangs."""

    @classmethod
    def setUpClass(cls):
        cls.garbage = LoopbackHttpServer(GarbageHandler)
        cls.silent = LoopbackHttpServer(SilentHandler)
        cls.nobody = f"http://127.0.0.1:{free_port()}"  # reserved by the harness, never bound
        try:
            cls.fleet = start_fleet(extra_peers=(cls.garbage.url, cls.silent.url, cls.nobody))
        except BaseException:
            cls.garbage.close()
            cls.silent.close()
            raise
        cls.clients = [Client(broker, f"part-{index}-{n}")
                       for index, broker in enumerate(cls.fleet) for n in range(3)]
        for broker in cls.fleet:
            wait_for(lambda b=broker: len(node_list(b, 'client_id = "part-*"')) == 3,
                     what="the clients listed")

    @classmethod
    def tearDownClass(cls):
        disconnect_all(cls.clients)
        stop_fleet(cls.fleet)
        cls.garbage.close()
        cls.silent.close()

    def errors_by_peer(self, body):
        return {e["peer"]: (e["code"], e["message"]) for e in body.get("peerErrors", [])}

    def test_failing_peers_are_named_and_the_rest_answered_by_the_deadline(self):
        started = time.monotonic()
        status, body = list_connections(self.fleet[0], {"filter": 'client_id = "part-*"',
                                                        "scope": "CONNECTION_SCOPE_FLEET"},
                                        timeout_ms=1500)
        took = time.monotonic() - started
        self.assertEqual(status, 200, body)
        self.assertLess(took, 3.0)  # the silent peer is not awaited beyond the deadline
        # The other test of the class stops a broker: it is then missing too.
        stopped = {f"http://127.0.0.1:{b.http_port}" for b in self.fleet[1:]
                   if b.process.poll() is not None}
        self.assertEqual(int(body["totalSize"]), 3 * (3 - len(stopped)))
        errors = self.errors_by_peer(body)
        self.assertEqual(set(errors), {self.garbage.url, self.silent.url, self.nobody} | stopped)
        self.assertEqual(errors[self.garbage.url][0], "internal")
        self.assertIn("not a valid binary", errors[self.garbage.url][1])
        self.assertEqual(errors[self.silent.url][0], "deadline_exceeded")
        self.assertEqual(errors[self.nobody][0], "unavailable")
        self.assertIn("cannot connect", errors[self.nobody][1])
        # The CLI shows the rows it got and names each peer that failed, once.
        result = cli_list(self.fleet[0], "--fleet", "--filter", 'client_id = "part-*"')
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("part-0-0", result.stdout)
        for peer in (self.garbage.url, self.silent.url, self.nobody):
            self.assertEqual(result.stderr.count(f"partial answer: peer {peer}:"), 1,
                             result.stderr)
        # The CLI's brokers: a row per peer that failed, with why, and exit 1.
        result = cli_list(self.fleet[0], "--filter", 'client_id = "part-*"', command="brokers")
        self.assertEqual(result.returncode, 1, result.stderr)
        failed = {line.split()[1]: line.split(None, 4)[4] for line in result.stdout.splitlines()
                  if line.startswith("-")}
        self.assertTrue(failed[self.nobody].startswith("unavailable: cannot connect"), failed)
        self.assertTrue(failed[self.garbage.url].startswith("internal: "), failed)
        self.assertTrue(failed[self.silent.url].startswith("deadline_exceeded: "), failed)

    def test_a_broker_stopped_mid_walk_is_named_and_the_walk_ends(self):
        request = {"filter": 'client_id = "part-*"', "orderBy": "client_id", "pageSize": 2,
                   "scope": "CONNECTION_SCOPE_FLEET"}
        status, first = list_connections(self.fleet[0], request, timeout_ms=1500)
        self.assertEqual(status, 200, first)
        self.assertEqual(int(first["totalSize"]), 9)
        seen = [c["clientId"] for c in first["connections"]]
        stopped = self.fleet[2]
        stopped_url = f"http://127.0.0.1:{stopped.http_port}"
        stopped.stop()
        token = first["nextPageToken"]
        for _ in range(20):
            status, body = list_connections(self.fleet[0], dict(request, pageToken=token),
                                            timeout_ms=1500)
            self.assertEqual(status, 200, body)
            errors = self.errors_by_peer(body)
            self.assertEqual(errors[stopped_url][0], "unavailable")
            self.assertEqual(int(body["totalSize"]), 6)
            seen += [c["clientId"] for c in body.get("connections", [])]
            token = body.get("nextPageToken", "")
            if not token:
                break
        self.assertEqual(token, "")
        self.assertEqual(seen, sorted(seen))
        self.assertEqual(len(seen), len(set(seen)))
        self.assertTrue({f"part-0-{n}" for n in range(3)} | {f"part-1-{n}" for n in range(3)}
                        <= set(seen))



class FleetKeptConnectionTest(unittest.TestCase):
    """The asking broker keeps its connections to peers open between fleet requests
    (docs/fleet.md, "Connections to peers"): a peer restarted between two requests is asked
    again on a new connection, with no peer error."""

    @classmethod
    def setUpClass(cls):
        cls.fleet = start_fleet()
        cls.clients = [Client(broker, f"kept-{index}") for index, broker in enumerate(cls.fleet)]

    @classmethod
    def tearDownClass(cls):
        disconnect_all(cls.clients)
        stop_fleet(cls.fleet)

    def fleet_ids(self):
        status, body = list_connections(self.fleet[0], {"filter": 'client_id = "kept-*"',
                                                        "orderBy": "client_id",
                                                        "scope": "CONNECTION_SCOPE_FLEET"},
                                        timeout_ms=5000)
        self.assertEqual(status, 200, body)
        self.assertNotIn("peerErrors", body)
        return [(c["clientId"], c["nodeId"]) for c in body.get("connections", [])]

    def peer_connections(self):
        """The asking companion's established TCP connections to its peers' API ports, as
        (local, remote) hex addresses of /proc/net/tcp."""
        inodes = set()
        for pid in self.fleet[0].companion_pids():
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith("socket:["):
                    inodes.add(target[len("socket:["):-1])
        ports = {b.http_port for b in self.fleet[1:]}
        found = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with open(table) as f:
                for line in f.readlines()[1:]:
                    fields = line.split()
                    if (fields[3] == "01" and fields[9] in inodes
                            and int(fields[2].rsplit(":", 1)[1], 16) in ports):
                        found.add((fields[1], fields[2]))
        return found

    def test_a_peer_restarted_between_two_requests_answers_the_second(self):
        everyone = [("kept-0", 1), ("kept-1", 2), ("kept-2", 3)]
        wait_for(lambda: self.fleet_ids() == everyone, what="every broker's client")
        # The connections to the peers are kept: the next request goes on the same ones (at
        # most 4 idle per peer), the peers' API keeps them open between requests.
        before = self.peer_connections()
        self.assertEqual(self.fleet_ids(), everyone)
        after = self.peer_connections()
        self.assertTrue(before & after, (before, after))
        self.assertLessEqual(len(after), 8)
        restarted = self.fleet[1]
        restarted.restart()
        self.clients.append(Client(restarted, "kept-1-again"))
        wait_for(lambda: node_list(restarted, 'client_id = "kept-*"'), what="the new client")
        # The very next request, on a kept connection to the old process that is gone: node 2
        # answers as its own list does (kept-1 may have come back; paho reconnects).
        own = sorted(c["clientId"] for c in node_list(restarted, 'client_id = "kept-*"'))
        self.assertIn("kept-1-again", own)
        ids = self.fleet_ids()
        self.assertEqual(sorted(c for c, node in ids if node == 2), own)
        self.assertEqual([c for c, node in ids if node != 2], ["kept-0", "kept-2"])


class FleetHttpsTest(unittest.TestCase):
    """An https peer (2.1 serving its API over TLS): checked against plugin_opt_fleet_ca_file;
    a broker given another CA names the peer and the failed check, and so does one that reaches
    it by a name its certificate does not hold."""

    @classmethod
    def setUpClass(cls):
        folder = tempfile.mkdtemp(prefix="mqc-fleet-tls-")
        try:
            cert, key = make_certificate(folder, "peer")
            other_cert, _ = make_certificate(folder, "other")
        finally:
            for name in os.listdir(folder):
                os.remove(os.path.join(folder, name))
            os.rmdir(folder)
        tls_port = free_port()
        cls.tls_url = f"https://127.0.0.1:{tls_port}"
        cls.peer = Broker(build=build("2.1-cmake"), files={
            "tokens": TOKEN + "\n", "cert.pem": cert, "key.pem": key}, options={
            "http_port": str(tls_port), "node_id": "2", "http_token_file": "{dir}/tokens",
            "http_tls_cert": "{dir}/cert.pem", "http_tls_key": "{dir}/key.pem"})
        cls.trusting = Broker(files={"tokens": TOKEN + "\n", "ca.pem": cert}, options={
            "node_id": "1", "http_token_file": "{dir}/tokens", "fleet_token_file": "{dir}/tokens",
            "fleet_peers": cls.tls_url, "fleet_ca_file": "{dir}/ca.pem"})
        cls.distrusting = Broker(files={"tokens": TOKEN + "\n", "ca.pem": other_cert}, options={
            "node_id": "3", "http_token_file": "{dir}/tokens", "fleet_token_file": "{dir}/tokens",
            "fleet_peers": cls.tls_url, "fleet_ca_file": "{dir}/ca.pem"})
        # The certificate names 127.0.0.1 only (its subjectAltName), not localhost.
        cls.by_name_url = f"https://localhost:{tls_port}"
        cls.by_name = Broker(files={"tokens": TOKEN + "\n", "ca.pem": cert}, options={
            "node_id": "4", "http_token_file": "{dir}/tokens", "fleet_token_file": "{dir}/tokens",
            "fleet_peers": cls.by_name_url, "fleet_ca_file": "{dir}/ca.pem"})
        cls.brokers = [cls.peer, cls.trusting, cls.distrusting, cls.by_name]
        try:
            for broker in cls.brokers:
                broker.start()
        except BaseException:
            stop_fleet(cls.brokers)
            raise
        cls.clients = [Client(cls.peer, "tls-peer-0"), Client(cls.peer, "tls-peer-1"),
                       Client(cls.trusting, "tls-self-0")]

    @classmethod
    def tearDownClass(cls):
        disconnect_all(cls.clients)
        stop_fleet(cls.brokers)

    def fleet_page(self, broker):
        status, body = list_connections(broker, {"filter": 'client_id = "tls-*"',
                                                 "orderBy": "client_id",
                                                 "scope": "CONNECTION_SCOPE_FLEET"},
                                        timeout_ms=5000)
        self.assertEqual(status, 200, body)
        return body

    def test_an_https_peer_signed_by_the_ca_file_is_listed(self):
        body = wait_for(lambda: (lambda b: b if int(b["totalSize"]) == 3 else None)(
            self.fleet_page(self.trusting)), what="the https peer's clients")
        self.assertNotIn("peerErrors", body)
        self.assertEqual([(c["clientId"], c["nodeId"]) for c in body["connections"]],
                         [("tls-peer-0", 2), ("tls-peer-1", 2), ("tls-self-0", 1)])

    def assert_handshake_refused(self, broker, url, why):
        """`broker`'s fleet answer lists none of `url`'s clients and names it, with a failed
        handshake whose message says `why`."""
        body = self.fleet_page(broker)
        self.assertEqual(int(body["totalSize"]), 0)
        [error] = body["peerErrors"]
        self.assertEqual(error["peer"], url)
        self.assertEqual(error["code"], "unavailable")
        self.assertIn("TLS handshake failed", error["message"])
        self.assertIn(why, error["message"])

    def test_an_https_peer_of_another_ca_is_named_with_the_failed_check(self):
        self.assert_handshake_refused(self.distrusting, self.tls_url, "certificate")

    def test_an_https_peer_reached_by_a_name_its_certificate_lacks_is_refused(self):
        self.assert_handshake_refused(self.by_name, self.by_name_url, "name")


class FleetOptionsTest(unittest.TestCase):
    def refused(self, options, files=None):
        broker = Broker(options=options, files=files or {}, expect_start=False)
        broker.start()
        try:
            self.assertIsNotNone(broker.wait_exit(), "the broker kept running")
            return broker.log()
        finally:
            broker.stop()
            broker.cleanup_dir()

    def test_bad_peers_are_refused_at_start_naming_the_option(self):
        self.assertIn("plugin_opt_fleet_peers", self.refused({"fleet_peers": "ftp://127.0.0.1:1"}))
        self.assertIn("names http://127.0.0.1:9 again", self.refused(
            {"fleet_peers": "http://127.0.0.1:9, http://127.0.0.1:9/"}))
        port = free_port()
        self.assertIn("this broker's own API", self.refused(
            {"http_port": str(port), "fleet_peers": f"http://localhost:{port}"}))

    def test_an_unreadable_token_file_is_refused_naming_the_option(self):
        log = self.refused({"fleet_peers": "http://127.0.0.1:9",
                            "fleet_token_file": "{dir}/missing-token"})
        self.assertIn("plugin_opt_fleet_token_file", log)


if __name__ == "__main__":
    unittest.main()
