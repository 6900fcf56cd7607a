# SPDX-License-Identifier: BSD-3-Clause
"""GetClientHistory against the real broker: a client id's events (connected, subscribed, taken
over, kicked, refused, closed) as real clients make them, kept after the closed list let the
connections go (plugin_opt_closed_max 0), in the API, the CLI and the console's timeline."""

import json
import os
import subprocess
import tempfile
import time
import unittest
import urllib.parse

from browser import dump_dom, parse_html
from harness import Broker, Client, close_reason, wait_for

HISTORY = "/mqtt.connections.v1.ConnectionsService/GetClientHistory"
DISCONNECT = "/mqtt.connections.v1.ConnectionsService/DisconnectConnection"
LIST = "/mqtt.connections.v1.ConnectionsService/ListConnections"
CONNECT_HEADERS = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
CLI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli",
                   "mosquitto-connections")
ADMIN_TOKEN = "history-admin-token-0123456789"
PREFIX = "CLIENT_EVENT_KIND_"


def call(broker, path, message, token=None):
    headers = dict(CONNECT_HEADERS)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    status, _, body = broker.http(path, "POST", json.dumps(message).encode(), headers)
    return status, json.loads(body)


def once(client):
    """`client`, never reconnecting (paho would reconnect a taken-over or kicked client)."""
    client.client._reconnect_on_failure = False
    return client


def kinds(events):
    return [event["kind"].replace(PREFIX, "") for event in events]


class ClientHistoryTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.broker = Broker(passwords={"alice": "secret"}, allow_anonymous=True,
                            files={"admin.tokens": ADMIN_TOKEN + "\n"},
                            options={"closed_max": "0", "history_events": "6",
                                     "http_admin_token_file": "{dir}/admin.tokens"})
        cls.broker.start()

    @classmethod
    def tearDownClass(cls):
        cls.broker.stop()
        cls.broker.cleanup_dir()

    def history(self, client_id):
        return call(self.broker, HISTORY, {"clientId": client_id}, ADMIN_TOKEN)

    def wait_events(self, client_id, last_kind, count=1):
        """The history once its last event is `last_kind`, the count-th of that kind in a
        row (events, oldest first)."""
        def done():
            answer = self.history(client_id)[1]
            tail = kinds(answer.get("events", []))[-count:]
            return answer if tail == [last_kind] * count else None
        return wait_for(done, what=f"{client_id}'s {last_kind}")

    def test_what_happened_to_a_client_after_its_connections_left_the_list(self):
        first = once(Client(self.broker, "hist-1", version=5))
        first.subscribe("events/a/#", 1)
        first.subscribe("events/b/#", 1)
        port = first.local_port
        self.wait_events("hist-1", "SUBSCRIBED")
        second = once(Client(self.broker, "hist-1", version=5))  # takes the client id over
        self.wait_events("hist-1", "CONNECTED")
        status, answer = call(self.broker, DISCONNECT, {"clientId": "hist-1"}, ADMIN_TOKEN)
        self.assertEqual(status, 200, answer)
        self.wait_events("hist-1", "KICKED")
        refused = Client(self.broker, "hist-1", username="alice", password="wrong")
        self.assertNotEqual(refused.connack, 0)
        refused.disconnect()
        last = Client(self.broker, "hist-1")
        last.disconnect()
        answer = self.wait_events("hist-1", "CLOSED")
        for client in (first, second):
            client.client.loop_stop()

        # Six kept of eight: the oldest two dropped, and counted.
        self.assertEqual(kinds(answer["events"]),
                         ["TAKEN_OVER", "CONNECTED", "KICKED", "REFUSED", "CONNECTED", "CLOSED"])
        self.assertEqual(answer["droppedEvents"], "2")
        taken, _, kicked, refused_event, _, closed = answer["events"]
        self.assertEqual((taken["closeReason"], taken["ipAddress"], taken["port"]),
                         ("SESSION_TAKEN_OVER", "127.0.0.1", port))
        self.assertEqual(kicked["closeReason"], "KICKED")
        self.assertEqual((refused_event["closeReason"], refused_event["username"]),
                         ("AUTHENTICATION_FAILED", "alice"))
        self.assertEqual(closed["closeReason"], close_reason("CLIENT_DISCONNECT"))
        self.assertEqual(len({e["uid"] for e in answer["events"]}), 4)
        # In the order the broker settled them: a taker's CONNECT is read before the connection
        # it takes over is closed, so times need not grow.
        self.assertTrue(all(e["time"].startswith(time.strftime("%Y-", time.gmtime()))
                            for e in answer["events"]), answer)
        # The closed list keeps nothing here: only the history knows.
        status, listed = call(self.broker, LIST, {"filter": 'client_id = "hist-1"'}, ADMIN_TOKEN)
        self.assertEqual((status, listed.get("connections", [])), (200, []))

        # The CLI: one row per event, oldest first, and the same events as JSON.
        folder = tempfile.mkdtemp(prefix="mqc-history-cli-")
        token_file = os.path.join(folder, "token")
        with open(token_file, "w") as f:
            f.write(ADMIN_TOKEN + "\n")
        url = f"http://127.0.0.1:{self.broker.http_port}"
        result = subprocess.run([CLI, "history", "hist-1", "--url", url, "--token-file",
                                 token_file], capture_output=True, text=True, timeout=30)
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        self.assertEqual(lines[0].split()[:5], ["TIME", "NODE", "EVENT", "UID", "DETAILS"])
        self.assertEqual([line.split()[2] for line in lines[1:]],
                         ["TAKEN_OVER", "CONNECTED", "KICKED", "REFUSED", "CONNECTED", "CLOSED"])
        self.assertIn("AUTHENTICATION_FAILED", lines[4])
        self.assertIn('user "alice"', lines[4])
        result = subprocess.run([CLI, "history", "hist-1", "-o", "json", "--url", url,
                                 "--token-file", token_file], capture_output=True, text=True,
                                timeout=30)
        self.assertEqual([dict((k, v) for k, v in e.items() if k != "node")
                          for e in json.loads(result.stdout)], answer["events"])
        result = subprocess.run([CLI, "history", "hist-nobody", "--url", url, "--token-file",
                                 token_file], capture_output=True, text=True, timeout=30)
        self.assertEqual(result.returncode, 1)
        self.assertIn('no event kept for client id "hist-nobody"', result.stderr)
        os.remove(token_file)
        os.rmdir(folder)

    def test_bad_requests_are_refused_with_the_field_named(self):
        for message, code in (({}, "invalid_argument"), ({"clientId": 3}, "invalid_argument"),
                              ({"clientId": "hist-never-seen"}, "not_found")):
            status, answer = call(self.broker, HISTORY, message, ADMIN_TOKEN)
            self.assertEqual(answer["code"], code, message)
            self.assertEqual(status, 400 if code == "invalid_argument" else 404)
        self.assertIn("clientId", call(self.broker, HISTORY, {"clientId": 3}, ADMIN_TOKEN)[1][
            "message"])
        # A token is needed as for every read.
        self.assertEqual(call(self.broker, HISTORY, {"clientId": "x"})[0], 401)


class ConsoleTimelineTest(unittest.TestCase):
    def test_the_detail_panel_shows_the_timeline_of_a_client_gone_from_the_list(self):
        with Broker(options={"closed_max": "0"}) as broker:
            first = once(Client(broker, "hist-console", version=5))
            first.subscribe("store/orders/#", 1)
            second = Client(broker, "hist-console", version=5)
            second.disconnect()
            first.client.loop_stop()
            wait_for(lambda: len(call(broker, HISTORY, {"clientId": "hist-console"})[1].get(
                "events", [])) == 5, what="five events")
            url = f"http://127.0.0.1:{broker.http_port}/#" + urllib.parse.urlencode(
                {"client": "hist-console"})
            dom = parse_html(dump_dom(url))
            timeline = dom.by_id("history")
            self.assertIsNotNone(timeline, "no timeline in the detail panel")
            items = timeline.find_all("li")
            self.assertEqual([item.attrs["data-kind"] for item in items],
                             ["CONNECTED", "SUBSCRIBED", "TAKEN_OVER", "CONNECTED", "CLOSED"])
            self.assertIn("1 filter, last \"store/orders/#\"", items[1].text())
            self.assertIn("SESSION_TAKEN_OVER", items[2].text())
            self.assertIn("No connection with client id", dom.by_id("detail").text())


if __name__ == "__main__":
    unittest.main()
