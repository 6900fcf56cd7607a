# SPDX-License-Identifier: BSD-3-Clause
"""Flapping clients and takeover ping-pong against the real broker: two raw MQTT clients that
share one client id, one from 127.0.0.1 and one from ::1, take the session from each other in
turns; the rich API shows the id's connects and takeovers of the last minute and the two
addresses taking turns, filters and orders by them, the command line's `top --sort reconnects`
puts the id first, and /metrics counts the takeovers by reason."""

import json
import os
import re
import socket
import subprocess
import unittest

from browser import dump_dom, parse_html
from harness import (Broker, Client, disconnect_all, free_port, mqtt_string, mqtt_varint,
                     wait_for)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CLI = os.path.join(ROOT, "cli", "mosquitto-connections")
LIST_RPC = "/mqtt.connections.v1.ConnectionsService/ListConnections"
RPC_HEADERS = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
OPEN = "MQTT_CONNECTION_STATE_OPEN"
CLOSED = "MQTT_CONNECTION_STATE_CLOSED"
SHARED_ID = "pingpong-device"
TURNS = 6


def raw_connect_code(host, port, client_id):
    """A bare MQTT 3.1.1 CONNECT (clean session, keepalive 60) from `host`: the open socket
    and the CONNACK's return code."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.settimeout(5)
    sock.connect((host, port))
    body = b"\x00\x04MQTT\x04\x02" + (60).to_bytes(2, "big") + mqtt_string(client_id)
    sock.sendall(b"\x10" + mqtt_varint(len(body)) + body)
    connack = sock.recv(4)
    assert connack[:2] == b"\x20\x02", connack
    return sock, connack[3]


def raw_connect(host, port, client_id):
    """raw_connect_code for a CONNECT that must be accepted: the open socket."""
    sock, code = raw_connect_code(host, port, client_id)
    assert code == 0, code
    return sock


def takeovers_metric(broker):
    _, _, body = broker.http("/metrics")
    match = re.search(r'^kubemq_mqtt_disconnects_total\{reason="session_taken_over"\} (\d+)',
                      body, re.M)
    return int(match.group(1)) if match else 0


class PingPongTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.port6 = free_port()
        cls.broker = Broker(listener_extra=f"listener {cls.port6} ::1")
        cls.broker.start()

    @classmethod
    def tearDownClass(cls):
        cls.broker.stop()
        cls.broker.cleanup_dir()

    def list(self, message):
        status, _, body = self.broker.http(LIST_RPC, method="POST",
                                           body=json.dumps(message).encode(),
                                           headers=RPC_HEADERS)
        self.assertEqual(status, 200, body)
        return json.loads(body).get("connections", [])

    def open_of(self, client_id):
        found = self.list({"filter": f'client_id = "{client_id}" AND state = {OPEN}'})
        return found[0] if found else None

    def test_a_ping_pong_shows_takeovers_and_the_two_addresses(self):
        calm = Client(self.broker, "calm-client")
        self.addCleanup(disconnect_all, [calm])
        before = takeovers_metric(self.broker)
        sockets = []
        self.addCleanup(lambda: [s.close() for s in sockets])
        for turn in range(TURNS):
            # The devices take turns: each CONNECT takes the session over from the other.
            host, port = (("127.0.0.1", self.broker.port) if turn % 2 == 0
                          else ("::1", self.port6))
            sockets.append(raw_connect(host, port, SHARED_ID))
        listed = wait_for(
            lambda: (lambda c: c if c and c.get("takeoversLastMinute") == TURNS - 1 else None)(
                self.open_of(SHARED_ID)),
            what="the takeovers counted")
        self.assertEqual(listed["reconnectsLastMinute"], TURNS)
        self.assertEqual(listed["reconnectsLastHour"], TURNS)
        self.assertEqual(listed["takeoversLastHour"], TURNS - 1)
        # The last CONNECT came from ::1 (turn 5), the one before from 127.0.0.1.
        self.assertEqual(listed["takeoverAddresses"], ["::1", "127.0.0.1"])
        # The closed connections of the id carry the id's counts too; each closed as taken over.
        closed = self.list({"filter": f'client_id = "{SHARED_ID}" AND state = {CLOSED}'})
        self.assertEqual(len(closed), TURNS - 1)
        self.assertEqual({c["closeReason"] for c in closed}, {"SESSION_TAKEN_OVER"})
        # A client that connected once counts one connect, no takeover, no addresses.
        calm_listed = self.open_of("calm-client")
        self.assertEqual(calm_listed["reconnectsLastMinute"], 1)
        self.assertNotIn("takeoversLastMinute", calm_listed)
        self.assertNotIn("takeoverAddresses", calm_listed)

        # Filterable and orderable.
        found = self.list({"filter": f"takeovers_last_minute > 0 AND state = {OPEN}"})
        self.assertEqual([c["clientId"] for c in found], [SHARED_ID])
        ordered = self.list({"filter": f"state = {OPEN}", "orderBy": "reconnects_last_minute desc"})
        self.assertEqual([c["clientId"] for c in ordered], [SHARED_ID, "calm-client"])
        ordered = self.list({"filter": f"state = {OPEN}", "orderBy": "reconnects_last_minute asc"})
        self.assertEqual([c["clientId"] for c in ordered], ["calm-client", SHARED_ID])

        # /metrics counts the takeovers by reason.
        self.assertEqual(takeovers_metric(self.broker) - before, TURNS - 1)

        # The command line ranks the flapping id first, with its counts.
        done = subprocess.run([CLI, "--url", f"http://127.0.0.1:{self.broker.http_port}", "top",
                               "--once", "--interval", "0.2", "--sort", "reconnects"],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = [line.split() for line in done.stdout.splitlines() if line.strip()]
        header = next(i for i, line in enumerate(lines) if line and line[0] == "CLIENT-ID")
        self.assertEqual(lines[header][-2:], ["RECONN/M", "TAKEOVER/M"])
        self.assertEqual(lines[header + 1][0], SHARED_ID)
        self.assertEqual(lines[header + 1][-2:], [str(TURNS), str(TURNS - 1)])
        self.assertEqual(lines[header + 2][0], "calm-client")

        # The console: a badge on the flapping id, and the "flapping only" view lists it alone.
        page = f"http://127.0.0.1:{self.broker.http_port}/"
        rows = parse_html(dump_dom(page)).by_id("connections").find_all("tr")
        badges = {row.attrs.get("data-client-id"): [span.text() for span in row.find_all("span")]
                  for row in rows if row.attrs.get("data-client-id")}
        self.assertEqual(badges[SHARED_ID], ["flapping"])
        self.assertEqual(badges["calm-client"], [])
        rows = parse_html(dump_dom(page + "#flapping=1")).by_id("connections").find_all("tr")
        self.assertEqual([row.attrs.get("data-client-id") for row in rows
                          if row.attrs.get("data-client-id")], [SHARED_ID])

    def test_a_bad_order_field_is_refused_by_name(self):
        status, _, body = self.broker.http(
            LIST_RPC, method="POST",
            body=json.dumps({"orderBy": "reconnects_last_week desc"}).encode(),
            headers=RPC_HEADERS)
        self.assertEqual(status, 400, body)
        self.assertIn("reconnects_last_week", json.loads(body)["message"])


class AutoBanTest(unittest.TestCase):
    """plugin_opt_flapping_max_count 3 within 60 s: the fourth connect of one client id bans
    it for plugin_opt_flapping_ban_time through the ban list, audited as by "flapping"."""

    def test_a_client_id_connecting_too_often_is_banned(self):
        broker = Broker(options={"flapping_max_count": "3", "flapping_window_time": "60",
                                 "flapping_ban_time": "120"}, persistence=True)
        with broker:
            calm = Client(broker, "calm-once")
            self.addCleanup(disconnect_all, [calm])
            sockets = [raw_connect("127.0.0.1", broker.port, "flapper") for _ in range(3)]
            self.addCleanup(lambda: [s.close() for s in sockets])

            def bans():
                status, _, body = broker.http("/api/mqtt/bans")
                self.assertEqual(status, 200, body)
                return json.loads(body)["data"]["bans"]
            self.assertEqual(bans(), [])  # three connects are allowed
            sockets.append(raw_connect("127.0.0.1", broker.port, "flapper"))
            ban = wait_for(lambda: next((b for b in bans() if b["who"] == "flapper"), None),
                           what="the flapping client banned")
            self.assertEqual((ban["as"], ban["by"]), ("clientid", "flapping"))
            self.assertIsNotNone(ban["until"])
            self.assertEqual([b["who"] for b in bans()], ["flapper"])  # not the calm client
            # Banned: the next CONNECT is refused (3.1.1: not authorised), and the log says why.
            sock, code = raw_connect_code("127.0.0.1", broker.port, "flapper")
            sockets.append(sock)
            self.assertEqual(code, 5)
            # The ban list reaches the broker as the ban is stored, the log line just after it:
            # the refusal can come first.
            line = wait_for(lambda: next((line for line in broker.log().splitlines()
                                          if "banned clientid 'flapper' until " in line), None),
                            what="the automatic ban's log line")
            self.assertIn("plugin_opt_flapping_max_count", line)

    def test_bad_flapping_options_are_refused_by_name(self):
        for option, value in (("flapping_max_count", "-1"), ("flapping_window_time", "0"),
                              ("flapping_window_time", "3601"), ("flapping_ban_time", "soon")):
            with self.subTest(option=option, value=value):
                broker = Broker(options={option: value}, expect_start=False)
                broker.start()
                try:
                    self.assertIsNotNone(broker.wait_exit(), "the broker kept running")
                    self.assertIn(f"plugin_opt_{option}", broker.log())
                    self.assertNotIn("serving on", broker.log())
                finally:
                    broker.stop()
                    broker.cleanup_dir()


if __name__ == "__main__":
    unittest.main()
