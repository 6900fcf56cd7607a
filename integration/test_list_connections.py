# SPDX-License-Identifier: BSD-3-Clause
"""POST /mqtt.connections.v1.ConnectionsService/ListConnections against the real broker: every
field checked against what the clients really are (ports, TLS with a test CA, password and
anonymous auth), closed connections with their reasons, paging through hundreds of
connections, and the Connect error cases."""

import base64
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import unittest
import urllib.parse

from harness import Broker, Client, close_reason, free_port, raw_connect, wait_for

PATH = "/mqtt.connections.v1.ConnectionsService/ListConnections"
HEADERS = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
NANOS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$")


def list_connections(broker, request=None, headers=None):
    status, response_headers, body = broker.http(
        PATH, method="POST", body=json.dumps(request or {}).encode(),
        headers=headers if headers is not None else HEADERS)
    return status, response_headers, json.loads(body) if body else None


def connections(broker, filter_=""):
    status, _, body = list_connections(broker, {"filter": filter_})
    assert status == 200, body
    return body["connections"]


def by_client(broker, client_id, state="MQTT_CONNECTION_STATE_OPEN"):
    found = [c for c in connections(broker) if c["clientId"] == client_id and c["state"] == state]
    return found[0] if len(found) == 1 else None


class FieldsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.broker = Broker(passwords={"alice": "secret"}, options={"node_id": "7"})
        cls.broker.start()

    @classmethod
    def tearDownClass(cls):
        cls.broker.stop()
        cls.broker.cleanup_dir()

    def test_open_connection_fields_are_what_the_client_is(self):
        anon = Client(self.broker, "rich-anon", version=4, keepalive=30)
        alice = Client(self.broker, "rich-alice", version=5, clean=False, username="alice",
                       password="secret")
        alice.subscribe("events/site1/#", 1)
        alice.subscribe("$share/workers/queues/jobs/email", 1)
        for _ in range(3):
            alice.publish("events/site1/temp", b"12345", qos=1)
        wait_for(lambda: len(alice.messages) == 3, what="own deliveries")

        def settled():
            c = by_client(self.broker, "rich-alice")
            # idleDuration comes with the first sock_diag dump after the client connected (at
            # most a quarter second on). The counts are words the broker writes in place, while
            # the subscriptions come through the event ring: a slow companion (a sanitized
            # build) can show the three deliveries before the second subscription.
            return c if c and c["totalRequestStatistics"]["deliverCount"] == "3" and \
                len(c.get("subscriptions", [])) == 2 and "idleDuration" in c else None
        c = wait_for(settled, what="alice's statistics")
        self.assertEqual(c["nodeId"], 7)
        self.assertRegex(c["uid"], UUID4)
        self.assertRegex(c["openTime"], NANOS)
        self.assertNotIn("closeTime", c)
        self.assertEqual(c["username"], "alice")
        self.assertEqual(c["protocolVersion"], 5)
        self.assertIs(c["cleanSession"], False)
        self.assertEqual(c["keepAlive"], 60)
        self.assertEqual(c["source"], {"ipAddress": "127.0.0.1", "port": alice.local_port})
        self.assertEqual(c["listenerName"], f"mqtt:{self.broker.port}")
        self.assertEqual(c["tlsInfo"], {"enabled": False})
        self.assertEqual(c["authenticationInfo"], {
            "mechanism": "AUTHENTICATION_MECHANISM_PASSWORD",
            "state": "AUTHENTICATION_STATE_SUCCESS", "userPrincipal": "alice"})
        self.assertEqual(c["subscriptions"], [
            {"filter": "events/site1/#", "qos": 1, "pattern": "events", "channel": "site1.>",
             "sharedGroup": "", "kubemqValid": True},
            {"filter": "$share/workers/queues/jobs/email", "qos": 1, "pattern": "queues",
             "channel": "jobs.email", "sharedGroup": "workers", "kubemqValid": True}])
        self.assertEqual(c["totalRequestStatistics"], {
            "publishCount": "3", "publishBytes": "15", "deliverCount": "3", "deliverBytes": "15",
            "requestCount": "5"})
        self.assertRegex(c["idleDuration"], r"^\d+(\.\d+)?s$")
        self.assertLess(float(c["idleDuration"][:-1]), 5)
        self.assertIn("recentRequestStatistics", c)
        a = by_client(self.broker, "rich-anon")
        self.assertEqual(a["keepAlive"], 30)
        self.assertNotIn("username", a)
        self.assertEqual(a["authenticationInfo"], {
            "mechanism": "AUTHENTICATION_MECHANISM_ANONYMOUS",
            "state": "AUTHENTICATION_STATE_UNAUTHENTICATED"})
        self.assertNotEqual(a["uid"], c["uid"])
        # The KubeMQ endpoint shows the same open connections.
        kubemq = {k["client_id"] for k in self.broker.connections()}
        self.assertTrue({"rich-anon", "rich-alice"} <= kubemq)
        anon.disconnect()
        alice.disconnect()

    def test_idle_duration_grows_while_a_client_is_silent(self):
        sock, _ = raw_connect(self.broker, "rich-silent", keepalive=60)
        try:
            time.sleep(1.2)
            c = wait_for(lambda: by_client(self.broker, "rich-silent"))
            self.assertGreaterEqual(float(c["idleDuration"][:-1]), 1.0)
        finally:
            sock.close()

    def test_closed_connections_carry_their_reason(self):
        clean = Client(self.broker, "close-clean", version=4)
        dropped = Client(self.broker, "close-dropped", version=5)
        old = Client(self.broker, "close-taken", version=4)
        old.client.loop_stop()
        wait_for(lambda: by_client(self.broker, "close-taken"))
        uid_old = by_client(self.broker, "close-taken")["uid"]
        clean.publish("events/x", b"abc", qos=1)
        clean.disconnect()
        dropped.drop()
        new = Client(self.broker, "close-taken", version=4)
        refused = Client(self.broker, "close-refused", version=4, username="alice",
                         password="wrong")
        refused.client.loop_stop()
        self.assertNotEqual(refused.connack, 0)
        closed = "MQTT_CONNECTION_STATE_CLOSED"

        def reason(client_id):
            c = by_client(self.broker, client_id, closed)
            return c and c.get("closeReason")
        wait_for(lambda: reason("close-clean") and reason("close-dropped") and
                 reason("close-taken") and reason("close-refused"), what="four closed")
        self.assertEqual(reason("close-clean"), close_reason("CLIENT_DISCONNECT"))
        self.assertEqual(reason("close-dropped"), close_reason("CONNECTION_LOST"))
        self.assertEqual(reason("close-taken"), "SESSION_TAKEN_OVER")
        self.assertEqual(reason("close-refused"), "AUTHENTICATION_FAILED")
        c = by_client(self.broker, "close-clean", closed)
        self.assertRegex(c["closeTime"], NANOS)
        self.assertGreaterEqual(c["closeTime"], c["openTime"])
        self.assertEqual(c["totalRequestStatistics"]["publishCount"], "1")
        self.assertEqual(c["totalRequestStatistics"]["publishBytes"], "3")
        taken = by_client(self.broker, "close-taken", closed)
        self.assertEqual(taken["uid"], uid_old)
        self.assertNotEqual(by_client(self.broker, "close-taken")["uid"], uid_old)
        r = by_client(self.broker, "close-refused", closed)
        self.assertEqual(r["authenticationInfo"]["state"], "AUTHENTICATION_STATE_FAILURE")
        self.assertEqual(r["authenticationInfo"]["mechanism"], "AUTHENTICATION_MECHANISM_PASSWORD")
        # Never listed as open, and not on the KubeMQ endpoint.
        self.assertIsNone(by_client(self.broker, "close-refused"))
        self.assertNotIn("close-refused", {k["client_id"] for k in self.broker.connections()})
        # Filters see the state.
        open_only = connections(self.broker, "state = MQTT_CONNECTION_STATE_OPEN")
        self.assertTrue(all(c["state"] == "MQTT_CONNECTION_STATE_OPEN" for c in open_only))
        lost = connections(self.broker, f"close_reason = {close_reason('CONNECTION_LOST')}")
        self.assertIn("close-dropped", [c["clientId"] for c in lost])
        new.disconnect()

    def test_keepalive_timeout_is_a_lost_connection(self):
        sock, _ = raw_connect(self.broker, "close-silent", keepalive=2)
        try:
            # Mosquitto 2.0.11 checks keepalives only when more than 5 whole seconds have passed
            # since its last check (src/keepalive.c), so a client silent for 1.5 x 2 s is
            # dropped at the next check: up to about 3 + 7 s after it went silent, depending on
            # where the broker's check cycle stands (a fresh broker: 5.2-6.0 s).
            wait_for(lambda: by_client(self.broker, "close-silent", "MQTT_CONNECTION_STATE_CLOSED"),
                     timeout=3 + 7 + 2, what="the keepalive timeout")
            c = by_client(self.broker, "close-silent", "MQTT_CONNECTION_STATE_CLOSED")
            self.assertEqual(c["closeReason"], close_reason("CONNECTION_LOST"))
            self.assertGreaterEqual(float(c["idleDuration"][:-1]), 2.0)
        finally:
            sock.close()

    def test_get_form_matches_post(self):
        Client(self.broker, "get-form", version=4)
        # Announced at the broker's next callback after the CONNACK: wait until it is listed.
        wait_for(lambda: by_client(self.broker, "get-form"), what="get-form listed")
        message = json.dumps({"filter": 'client_id = "get-form"'})
        for query in (f"connect=v1&encoding=json&message={urllib.parse.quote(message)}",
                      "connect=v1&encoding=json&base64=1&message=" +
                      base64.urlsafe_b64encode(message.encode()).decode().rstrip("=")):
            status, headers, body = self.broker.http(f"{PATH}?{query}")
            self.assertEqual(status, 200, body)
            self.assertEqual([c["clientId"] for c in json.loads(body)["connections"]],
                             ["get-form"])

    def test_connect_errors(self):
        cases = [
            ({"Content-Type": "text/plain", "Connect-Protocol-Version": "1"}, b"{}", 415,
             "invalid_argument", ""),
            ({"Content-Type": "application/json"}, b"{}", 400, "invalid_argument",
             "Connect-Protocol-Version"),
            ({**HEADERS, "Connect-Protocol-Version": "2"}, b"{}", 400, "invalid_argument",
             "Connect-Protocol-Version"),
            ({**HEADERS, "Connect-Timeout-Ms": "soon"}, b"{}", 400, "invalid_argument",
             "Connect-Timeout-Ms"),
            ({**HEADERS, "Connect-Timeout-Ms": "12345678901"}, b"{}", 400, "invalid_argument",
             "Connect-Timeout-Ms"),
            (HEADERS, b"{not json", 400, "invalid_argument", ""),
            (HEADERS, b'{"pageSize":"many"}', 400, "invalid_argument", "pageSize"),
            (HEADERS, b'{"pageSize":10001}', 400, "invalid_argument", "10001"),
            (HEADERS, b'{"filter":"client_id = x"}', 400, "invalid_argument",
             "Expected quoted literal for field 'client_id'"),
            (HEADERS, b'{"filter":"nope = 1"}', 400, "invalid_argument", "nope"),
            (HEADERS, b'{"orderBy":"client_id sideways"}', 400, "invalid_argument", "sideways"),
            (HEADERS, b'{"pageToken":"garbage"}', 400, "invalid_argument", "page_token"),
        ]
        for headers, body, status, code, word in cases:
            with self.subTest(headers=headers, body=body):
                got, response_headers, text = self.broker.http(PATH, method="POST", body=body,
                                                               headers=headers)
                self.assertEqual(got, status, text)
                self.assertTrue(response_headers["Content-Type"].startswith("application/json"))
                error = json.loads(text)
                self.assertEqual(error["code"], code)
                self.assertIn(word, error["message"])
        status, _, text = self.broker.http(
            "/mqtt.connections.v1.ConnectionsService/KickConnection", method="POST", body=b"{}",
            headers=HEADERS)
        self.assertEqual(status, 501)
        error = json.loads(text)
        self.assertEqual(error["code"], "unimplemented")
        # The answer names every method the schema declares, each of which the companion serves.
        schema = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "proto", "mqtt",
                              "connections", "v1", "connections.proto")
        with open(schema) as f:
            methods = sorted(re.findall(r"^\s*rpc\s+(\w+)\s*\(", f.read(), re.MULTILINE))
        self.assertGreaterEqual(len(methods), 6, methods)
        self.assertEqual(error["message"], "method 'KickConnection' is not implemented; "
                         "implemented: " + ", ".join(methods))
        # The broker kept routing through all of it.
        sub = Client(self.broker, "after-connect-errors")
        sub.subscribe("events/ok", 1)
        Client(self.broker, "after-connect-errors-pub").publish("events/ok", b"1", qos=1)
        wait_for(lambda: sub.messages, what="delivery after bad requests")


class BooleanFilterTest(unittest.TestCase):
    """OR, NOT / -, parentheses and IN over real clients (3.1.1 and 5, with and without a
    username, subscribed or not, one closed), the errors of each form with their positions, and
    the KubeMQ endpoint's repeated client_id."""

    @classmethod
    def setUpClass(cls):
        cls.broker = Broker(passwords={"alice": "secret"})
        cls.broker.start()
        cls.clients = [
            Client(cls.broker, "bool-sensor-1", version=5),
            Client(cls.broker, "bool-sensor-2", version=4, username="alice", password="secret"),
            Client(cls.broker, "bool-door-1", version=5, username="alice", password="secret"),
            Client(cls.broker, "bool-door-2", version=4),
        ]
        cls.clients[0].subscribe("events/bool/#", 1)
        cls.clients[2].subscribe("commands/door", 0)
        gone = Client(cls.broker, "bool-gone", version=5)
        wait_for(lambda: {c["clientId"] for c in connections(cls.broker, 'client_id = "bool-*"')}
                 == {"bool-sensor-1", "bool-sensor-2", "bool-door-1", "bool-door-2",
                     "bool-gone"}, what="every client listed")
        gone.disconnect()
        wait_for(lambda: connections(cls.broker, 'state = MQTT_CONNECTION_STATE_CLOSED AND '
                                                 'client_id = "bool-gone"'),
                 what="bool-gone closed")
        wait_for(lambda: len(connections(cls.broker, 'subscriptions.filter = "events/bool/#" OR '
                                                     'subscriptions.filter = "commands/door"'))
                 == 2, what="both subscriptions listed")

    @classmethod
    def tearDownClass(cls):
        for client in cls.clients:
            client.disconnect()
        cls.broker.stop()
        cls.broker.cleanup_dir()

    def ids(self, filter_):
        return sorted(c["clientId"] for c in connections(self.broker, filter_))

    def test_or_not_parentheses_and_in_select_the_real_clients(self):
        rows = [
            ('client_id = "bool-sensor-*" OR client_id = "bool-door-2"',
             ["bool-door-2", "bool-sensor-1", "bool-sensor-2"]),
            # AND binds tighter than OR; parentheses change that.
            ('client_id = "bool-door-*" OR client_id = "bool-sensor-*" AND protocol_version = 5',
             ["bool-door-1", "bool-door-2", "bool-sensor-1"]),
            ('(client_id = "bool-door-*" OR client_id = "bool-sensor-*") AND protocol_version = 5',
             ["bool-door-1", "bool-sensor-1"]),
            ('client_id = "bool-*" AND NOT username = "alice" AND '
             'state = MQTT_CONNECTION_STATE_OPEN',
             ["bool-door-2", "bool-sensor-1"]),
            ('client_id = "bool-*" AND -(state = MQTT_CONNECTION_STATE_OPEN)', ["bool-gone"]),
            ('client_id IN ("bool-door-1", "bool-gone", "bool-nobody")',
             ["bool-door-1", "bool-gone"]),
            ('client_id IN ("bool-door-1", "bool-sensor-*") AND '
             'NOT client_id IN ("bool-sensor-2")',
             ["bool-door-1", "bool-sensor-1"]),
            ('client_id = "bool-*" AND '
             'authentication_info.mechanism IN (AUTHENTICATION_MECHANISM_PASSWORD)',
             ["bool-door-1", "bool-sensor-2"]),
            ('subscriptions.qos IN (0, 1) OR client_id = "bool-gone"',
             ["bool-door-1", "bool-gone", "bool-sensor-1"]),
            ('client_id = "bool-*" AND NOT subscriptions.pattern IN ("events", "commands")',
             ["bool-door-2", "bool-gone", "bool-sensor-2"]),
        ]
        for filter_, expected in rows:
            with self.subTest(filter_=filter_):
                self.assertEqual(self.ids(filter_), expected)

    def test_a_long_in_list_is_a_lookup_by_client_id(self):
        # 2000 ids, far more than 1024 characters: the list does not count against the limit.
        wanted = [f"bool-absent-{n}" for n in range(1998)] + ["bool-sensor-2", "bool-door-2"]
        filter_ = "client_id IN (" + ", ".join(json.dumps(i) for i in wanted) + ")"
        self.assertGreater(len(filter_), 20000)
        status, _, body = list_connections(self.broker, {"filter": filter_, "pageSize": 1})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["totalSize"], "2")
        self.assertEqual(len(body["connections"]), 1)

    def test_each_new_form_is_refused_at_its_position(self):
        rows = [
            ('client_id = "a" OR',
             "Expected a field name after OR, got end of filter at position 19"),
            ('client_id = "a" or client_id = "b"',
             "'or' is not supported: write OR in upper case at position 17"),
            ("NOT", "Expected a field name or '(' after NOT, got end of filter at position 4"),
            ('- client_id = "a"',
             "Expected a field name or '(' right after '-' (no space between) at position 1"),
            ('(client_id = "a"',
             "Expected ')' to close the '(' at position 1, got end of filter at position 17"),
            ('client_id = "a")', "Unmatched ')' at position 16"),
            ("client_id IN ()", "Expected a value in the IN list of field 'client_id', got ')' "
                                "(an empty list) at position 15"),
            ('client_id IN ("a" "b")', "Expected ',' or ')' in the IN list of field 'client_id', "
                                       "got quoted \"b\" at position 19"),
        ]
        for filter_, message in rows:
            with self.subTest(filter_=filter_):
                status, _, body = list_connections(self.broker, {"filter": filter_})
                self.assertEqual(status, 400, body)
                self.assertEqual(body, {"code": "invalid_argument", "message": message})

    def test_kubemq_client_id_may_repeat(self):
        ids = lambda q: [c["client_id"] for c in self.broker.connections(q)]
        self.assertEqual(sorted(ids("?client_id=bool-door-2&client_id=bool-sensor-1")),
                         ["bool-door-2", "bool-sensor-1"])
        # Closed connections are not in this list; a prefix mixes with exact ids.
        self.assertEqual(sorted(ids("?client_id=bool-gone&client_id=bool-door-*")),
                         ["bool-door-1", "bool-door-2"])
        self.assertEqual(ids("?client_id=bool-door-1&protocol_version=4&client_id=bool-door-2"),
                         ["bool-door-2"])
        status, _, body = self.broker.http("/api/mqtt/connections?client_id=a&client_id=")
        self.assertEqual(status, 400)
        self.assertIn("query parameter 'client_id' is empty", json.loads(body)["error_string"])


class UncheckedUsernameTest(unittest.TestCase):
    def test_a_username_nothing_checks_is_unauthenticated(self):
        with Broker() as broker:  # no password_file, no auth plugin: allow_anonymous decides
            c = Client(broker, "unchecked", username="bob", password="anything")
            listed = wait_for(lambda: by_client(broker, "unchecked"))
            self.assertEqual(listed["authenticationInfo"], {
                "mechanism": "AUTHENTICATION_MECHANISM_PASSWORD",
                "state": "AUTHENTICATION_STATE_UNAUTHENTICATED", "userPrincipal": "bob"})
            c.disconnect()
        broker.cleanup_dir()


class PagingTest(unittest.TestCase):
    def test_several_hundred_connections_each_returned_exactly_once(self):
        count = 300
        with Broker(options={"closed_max": "0"},
                    log_types=("error", "warning", "notice")) as broker:
            sockets = {}
            try:
                for i in range(count):
                    client_id = f"page-{i:03d}"
                    sock, rc = raw_connect(broker, client_id, keepalive=120)
                    self.assertEqual(rc, 0)
                    sockets[client_id] = sock
                wait_for(lambda: len(connections(broker, 'client_id = "page-*"')) == count,
                         timeout=30, what="all connections listed")
                for round_, order in enumerate(("", "client_id desc",
                                                "source.port, open_time desc")):
                    stayed = set(sockets)
                    seen, token, pages = [], None, 0
                    while True:
                        request = {"filter": 'client_id = "page-*"', "orderBy": order,
                                   "pageSize": 37}
                        if token:
                            request["pageToken"] = token
                        status, _, body = list_connections(broker, request)
                        self.assertEqual(status, 200, body)
                        if pages == 0:
                            self.assertEqual(body["totalSize"], str(len(sockets)))
                        seen += [c["clientId"] for c in body["connections"]]
                        pages += 1
                        token = body.get("nextPageToken")
                        # Connections come and go between pages: the pages stay consistent.
                        if pages == 3:
                            gone = sorted(sockets)[100 + round_]
                            sockets.pop(gone).close()
                            stayed.discard(gone)
                            new_id = f"page-new-{round_}"
                            sockets[new_id], _ = raw_connect(broker, new_id, keepalive=120)
                            # Listed from the broker's next callback (a TICK for a silent
                            # client); the next round expects it.
                            wait_for(lambda: connections(broker, f'client_id = "{new_id}"'),
                                     what=f"{new_id} listed")
                        if not token:
                            break
                        self.assertLess(pages, 50)
                    self.assertEqual(len(seen), len(set(seen)), order)
                    self.assertEqual(stayed - set(seen), set(), order)
                    if order == "client_id desc":
                        self.assertEqual(seen, sorted(seen, reverse=True))
                status, _, body = list_connections(broker, {"pageSize": 10,
                                                            "filter": 'client_id = "page-*"'})
                token = body["nextPageToken"]
                status, _, body = list_connections(broker, {"pageSize": 10, "pageToken": token,
                                                            "filter": 'client_id = "x*"'})
                self.assertEqual(status, 400)
                self.assertIn("does not belong", body["message"])
            finally:
                for sock in sockets.values():
                    sock.close()
        broker.cleanup_dir()


class ClosedRetentionTest(unittest.TestCase):
    def test_closed_connections_are_kept_within_max_and_ttl(self):
        with Broker(options={"closed_max": "2", "closed_ttl": "2"}) as broker:
            for i in range(4):
                Client(broker, f"gone-{i}").disconnect()
            wait_for(lambda: len(connections(broker, "state = MQTT_CONNECTION_STATE_CLOSED")) == 2
                     and sorted(c["clientId"] for c in connections(broker)) ==
                     ["gone-2", "gone-3"], what="the two newest closed")
            wait_for(lambda: connections(broker) == [], timeout=6, what="closed ones to expire")
        broker.cleanup_dir()


def make_test_pki(folder):
    """A CA, a server certificate for 127.0.0.1 and a client certificate, made here."""
    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=folder)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=mqc test CA",
        "-keyout", "ca.key", "-out", "ca.crt")
    for name, subject in (("server", "/CN=127.0.0.1"), ("client", "/O=mqc/CN=tls-client")):
        run("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", f"{name}.key",
            "-out", f"{name}.csr")
        with open(os.path.join(folder, f"{name}.ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\n" if name == "server" else "")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-out", f"{name}.crt", "-extfile", f"{name}.ext")
    files = {}
    for name in ("ca.crt", "server.crt", "server.key", "client.crt", "client.key"):
        with open(os.path.join(folder, name)) as f:
            files[name] = f.read()
    return files


class TlsTest(unittest.TestCase):
    def test_tls_listener_with_client_certificates(self):
        pki_dir = tempfile.mkdtemp()
        try:
            pki = make_test_pki(pki_dir)
            tls_port = free_port()
            # A second listener, with TLS and client certificates, after the plain one.
            broker = Broker(files=pki, listener_extra=(
                f"listener {tls_port} 127.0.0.1\ncafile {{dir}}/ca.crt\n"
                "certfile {dir}/server.crt\nkeyfile {dir}/server.key\n"
                "require_certificate true"))
            with broker:
                from paho.mqtt.client import Client as Paho
                client = Paho(client_id="tls-client")
                client.tls_set(ca_certs=os.path.join(pki_dir, "ca.crt"),
                               certfile=os.path.join(pki_dir, "client.crt"),
                               keyfile=os.path.join(pki_dir, "client.key"))
                client.connect("127.0.0.1", tls_port)
                client.loop_start()
                plain = Client(broker, "plain-client")
                try:
                    c = wait_for(lambda: by_client(broker, "tls-client"), what="the TLS client")
                    self.assertEqual(c["listenerName"], f"mqtts:{tls_port}")
                    self.assertIs(c["tlsInfo"]["enabled"], True)
                    self.assertIn("CN=tls-client", c["tlsInfo"]["peerCertificateSubject"])
                    self.assertEqual(c["authenticationInfo"]["mechanism"],
                                     "AUTHENTICATION_MECHANISM_MTLS")
                    self.assertEqual(c["source"]["port"], client.socket().getsockname()[1])
                    p = wait_for(lambda: by_client(broker, "plain-client"),
                                 what="the plain client")
                    self.assertEqual(p["listenerName"], f"mqtt:{broker.port}")
                    self.assertEqual(p["tlsInfo"], {"enabled": False})
                finally:
                    client.disconnect()
                    client.loop_stop()
                    plain.disconnect()
            broker.cleanup_dir()
        finally:
            shutil.rmtree(pki_dir)


if __name__ == "__main__":
    unittest.main()
