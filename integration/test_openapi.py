# SPDX-License-Identifier: BSD-3-Clause
"""api/openapi.json against the real broker: every answer of every endpoint (successes and
errors, from real clients' connections, open and closed) is validated with python3-jsonschema
against the schema the document gives for its path, method and status, and its Content-Type
against the documented media type. Every documented status but 500 must be met, so that the
document lists nothing the code no longer answers."""

import base64
import contextlib
import http.client
import json
import os
import time
import unittest
import urllib.parse

import jsonschema

from harness import Broker, Client, close_reason, raw_connect, wait_for

DOCUMENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "api", "openapi.json")
LIST = "/mqtt.connections.v1.ConnectionsService/ListConnections"
CONNECT_HEADERS = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
UNREACHABLE = {"500"}  # an internal error cannot be caused from outside
DISCONNECT = "/mqtt.connections.v1.ConnectionsService/DisconnectConnection"
CLIENT_PATH = "/api/mqtt/connections/{client_id}"
BAN_PATH = "/api/mqtt/bans/{as}/{who}"
SERVICE = "/mqtt.connections.v1.ConnectionsService/"
# A broker that does not close a kicked client within 5 s cannot be arranged from outside.
# /healthz's 503 needs a companion without the broker's state: test_operations.py stops the
# broker for it.
UNREACHABLE_OPERATIONS = {(CLIENT_PATH, "delete", "504"), (DISCONNECT, "post", "504"),
                          ("/healthz", "get", "503")}
BAN_FILE = "data/mosquitto-connections-bans.json"  # the companion's, under persistence
PRELOADED_BANS = 990  # of the 1000 a broker keeps at most: the API adds the last ten
READ_TOKEN = "openapi-read-token-0123456789"
ADMIN_TOKEN = "openapi-admin-token-0123456789"


class OpenApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(DOCUMENT) as f:
            cls.document = json.load(f)
        cls.resolver = jsonschema.RefResolver.from_schema(cls.document)
        cls.met = set()
        cls.broker = Broker(passwords={"alice": "secret"},
                            options={"node_id": "3", "activity_interval": "1"},
                            allow_anonymous=True)
        cls.broker.start()

    @classmethod
    def tearDownClass(cls):
        cls.broker.stop()
        cls.broker.cleanup_dir()

    # -- checking one answer ------------------------------------------------------------------
    def operation(self, path, method):
        """The document's operation for a request; unknown paths fall to the envelope of their
        family (404 on the KubeMQ side, Connect errors under the service prefix)."""
        paths = self.document["paths"]
        if path.startswith("/api/mqtt/connections/") and len(path) > len("/api/mqtt/connections/"):
            path = CLIENT_PATH
        if path.startswith("/api/mqtt/bans/") and len(path) > len("/api/mqtt/bans/"):
            path = BAN_PATH
        if path not in paths:
            path = LIST if path.startswith("/mqtt.connections.v1.") else "/api/mqtt/connections"
        method = method.lower()
        operations = paths[path]
        # Another method than the documented ones is answered 405 by the same route: the
        # document lists 405 under the route's GET (or its only operation).
        fallback = "get" if "get" in operations else next(iter(operations))
        return path, (fallback if method not in operations else method), operations.get(
            method, operations[fallback])

    def declare_huge_body(self, path, method, headers):
        """(status, headers, body) of a request that declares a body above the server's limit
        and sends none of it: the server answers at the headers (a client still sending would
        meet a closed connection)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.broker.http_port, timeout=10)
        try:
            connection.putrequest(method, path)
            for name, value in dict(headers or {}, **{"Content-Length": "100000000"}).items():
                connection.putheader(name, value)
            connection.endheaders()
            response = connection.getresponse()
            return response.status, dict(response.headers), response.read().decode()
        finally:
            connection.close()

    def check(self, path, method="GET", body=None, headers=None, expect=None, huge=False):
        if huge:
            status, response_headers, text = self.declare_huge_body(path, method, headers)
        else:
            status, response_headers, text = self.broker.http(path, method=method, body=body,
                                                              headers=headers)
        if expect is not None:
            self.assertEqual(status, expect, f"{method} {path}: {text}")
        doc_path, doc_method, operation = self.operation(urllib.parse.urlsplit(path).path,
                                                         method)
        responses = operation["responses"]
        self.assertIn(str(status), responses,
                      f"{method} {path} answered {status}, which the document does not list "
                      f"under {doc_method.upper()} {doc_path}: {text}")
        self.met.add((doc_path, doc_method, str(status)))
        content = responses[str(status)]["content"]
        content_type = {k.lower(): v for k, v in response_headers.items()}["content-type"]
        # One documented media type per answer, except where the request chose the codec
        # (the Connect service's 200: application/json or application/proto).
        self.assertIn(content_type, list(content), f"{method} {path}")
        schema = content[content_type]["schema"]
        value = json.loads(text) if content_type == "application/json" else text
        validator = jsonschema.Draft202012Validator(schema, resolver=self.resolver)
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        self.assertEqual([], [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
                              for e in errors],
                         f"{method} {path} ({status}) does not match the document")
        return status, value

    def list_rich(self, message, expect=200, headers=None, **kwargs):
        return self.check(LIST, "POST", json.dumps(message).encode(),
                          dict(CONNECT_HEADERS, **(headers or {})), expect, **kwargs)[1]

    @contextlib.contextmanager
    def broker_with_tokens(self, bans=()):
        """A broker of its own that asks for READ_TOKEN and ADMIN_TOKEN, started, and
        self.broker while the block runs (self.check's), then the class's again. `bans` (client
        ids) are in its ban file when it starts (persistence on)."""
        files = {"read.tokens": READ_TOKEN + "\n", "admin.tokens": ADMIN_TOKEN + "\n"}
        if bans:
            files[BAN_FILE] = json.dumps({"version": 1, "bans": [
                {"as": "clientid", "who": who, "by": "openapi", "reason": "", "at": "",
                 "until": ""} for who in bans]})
        with self.own_broker(files=files, persistence=bool(bans),
                             options={"http_token_file": "{dir}/read.tokens",
                                      "http_admin_token_file": "{dir}/admin.tokens"}) as broker:
            yield broker

    @contextlib.contextmanager
    def own_broker(self, **kwargs):
        """A broker of its own (Broker's arguments), started, and self.broker while the block
        runs, then the class's again."""
        broker = Broker(**kwargs)
        shared, self.broker = self.broker, broker
        try:
            broker.start()
            yield broker
        finally:
            self.broker = shared
            broker.stop()
            broker.cleanup_dir()

    # -- the tests ------------------------------------------------------------------------------
    # Runs before test_every_endpoint_answers_as_documented (alphabetical order), whose last
    # check counts what this one met too.
    def test_access_and_disconnect_answer_as_documented(self):
        read = {"Authorization": f"Bearer {READ_TOKEN}"}
        admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        with self.broker_with_tokens() as broker:
            for path in ("/api/mqtt/connections", "/metrics"):
                self.check(path, expect=401)
            self.check(LIST, "POST", b"{}", CONNECT_HEADERS, expect=401)
            self.check(f"{LIST}?connect=v1&encoding=json", expect=401)
            self.check("/api/mqtt/connections/someone", "DELETE", expect=401)
            self.check(DISCONNECT, "POST", b"{}", CONNECT_HEADERS, expect=401)
            self.check("/api/mqtt/connections/someone", "DELETE", headers=read, expect=403)
            self.check(DISCONNECT, "POST", b'{"clientId":"someone"}',
                       dict(CONNECT_HEADERS, **read), expect=403)
            self.check("/api/mqtt/connections/someone", "DELETE", headers=admin, expect=404)
            self.check("/api/mqtt/connections/someone", "GET", headers=admin, expect=405)
            self.check(DISCONNECT, "POST", b'{"uid":"nope"}', dict(CONNECT_HEADERS, **admin),
                       expect=404)
            self.check(DISCONNECT, "POST", b'{}', dict(CONNECT_HEADERS, **admin), expect=400)
            self.check(DISCONNECT, "POST", b'{}', {"Content-Type": "text/plain",
                                                   "Connect-Protocol-Version": "1", **admin},
                       expect=415)
            self.check(DISCONNECT, "GET", headers=admin, expect=405)
            by_id, by_uid = Client(broker, "oa-kick-id"), Client(broker, "oa-kick-uid")
            # The CONNACK can come before the companion lists the connection: wait for both.
            def both_listed():
                found = self.list_rich({"filter": 'client_id = "oa-kick-*"'},
                                       headers=read).get("connections", [])
                return found if len(found) == 2 else None
            listed = wait_for(both_listed, what="both oa-kick clients listed")
            self.check("/api/mqtt/connections/oa-kick-id", "DELETE", headers=admin, expect=200)
            uid = next(c["uid"] for c in listed if c["clientId"] == "oa-kick-uid")
            self.check(DISCONNECT, "POST", json.dumps({"uid": uid}).encode(),
                       dict(CONNECT_HEADERS, **admin), expect=200)
            for c in (by_id, by_uid):
                c.client.loop_stop()

    # Before test_every_endpoint_answers_as_documented too.
    def test_bans_answer_as_documented(self):
        read = dict(CONNECT_HEADERS, Authorization=f"Bearer {READ_TOKEN}")
        admin = dict(CONNECT_HEADERS, Authorization=f"Bearer {ADMIN_TOKEN}")
        proto = dict(admin, **{"Content-Type": "application/proto"})
        ban = json.dumps({"as": "clientid", "who": "oa-banned", "reason": "r"}).encode()
        target = json.dumps({"as": "clientid", "who": "oa-banned"}).encode()
        # The broker starts with PRELOADED_BANS of its 1000 from its ban file: each ban the API
        # adds is answered once the broker applied it (at its next TICK), so the 1000 are not
        # all added one by one.
        preloaded = [f"oa-many-{i}" for i in range(PRELOADED_BANS)]
        with self.broker_with_tokens(bans=preloaded) as broker:
            victim = Client(broker, "oa-banned")
            wait_for(lambda: self.list_rich({"filter": 'client_id = "oa-banned"'},
                                            headers=read).get("connections"),
                     what="oa-banned listed")
            self.check("/api/mqtt/bans", expect=401)
            self.check("/api/mqtt/bans", "POST", ban, expect=401)
            self.check("/api/mqtt/bans/clientid/x", "DELETE", expect=401)
            self.check("/api/mqtt/bans", "POST", ban, read, expect=403)
            self.check("/api/mqtt/bans/clientid/x", "DELETE", headers=read, expect=403)
            self.check("/api/mqtt/bans", "PUT", b"{}", admin, expect=405)
            self.check("/api/mqtt/bans/clientid/x", "GET", headers=admin, expect=405)
            self.check("/api/mqtt/bans", "POST", b'{"as":"ip","who":"x"}', admin, expect=400)
            self.check("/api/mqtt/bans/peerhost/x", "DELETE", headers=admin, expect=400)
            self.check("/api/mqtt/bans/clientid/x", "DELETE", headers=admin, expect=404)
            _, added = self.check("/api/mqtt/bans", "POST", ban, admin, expect=200)
            self.assertEqual(added["data"]["kicked"], 1)
            victim.client.loop_stop()
            _, listed = self.check("/api/mqtt/bans", headers=read, expect=200)
            self.assertEqual(listed["data"]["count"], PRELOADED_BANS + 1)
            self.check("/api/mqtt/bans/clientid/oa-banned", "DELETE", headers=admin, expect=200)
            for method in ("ListBans", "BanClient", "UnbanClient"):
                path = SERVICE + method
                self.check(path, "POST", b"{}", CONNECT_HEADERS, expect=401)
                self.check(path, "POST", b"[]", admin, expect=400)
                self.check(path, "POST", b"{}", dict(admin, **{"Content-Type": "text/plain"}),
                           expect=415)
                self.check(path, "GET", headers=admin, expect=405)
                if method != "ListBans":
                    self.check(path, "POST", target, read, expect=403)
            self.check(SERVICE + "ListBans", "POST", b"{}", read, expect=200)
            self.check(SERVICE + "ListBans", "POST", b"", proto, expect=200)
            self.check(SERVICE + "BanClient", "POST", ban, admin, expect=200)
            self.check(SERVICE + "UnbanClient", "POST", target, admin, expect=200)
            self.check(SERVICE + "UnbanClient", "POST", target, admin, expect=404)
            # 1000 bans at most: 429. A slow broker may also answer 429 on the way, when its
            # request queue is full: that one says so, and the same request is sent again.
            deadline = time.monotonic() + 120
            count = PRELOADED_BANS
            while count < 1000 and time.monotonic() < deadline:
                status, _, body = broker.http("/api/mqtt/bans", "POST", json.dumps(
                    {"as": "clientid", "who": f"oa-many-{count}"}).encode(), admin)
                if status == 200:
                    count += 1
                    continue
                self.assertEqual(status, 429, body)
                self.assertIn("request queue is full", body)
                time.sleep(0.05)
            self.assertEqual(count, 1000)
            _, full = self.check("/api/mqtt/bans", "POST", ban, admin, expect=429)
            self.assertIn("at most 1000 bans", full["error_string"])
            self.check(SERVICE + "BanClient", "POST", ban, admin, expect=429)

    # Before test_every_endpoint_answers_as_documented too.
    def test_client_history_answers_as_documented(self):
        path = SERVICE + "GetClientHistory"
        read = dict(CONNECT_HEADERS, Authorization=f"Bearer {READ_TOKEN}")
        ask = json.dumps({"clientId": "oa-history"}).encode()
        first = Client(self.broker, "oa-history")
        first.subscribe("events/a/#", 1)
        first.subscribe("events/b/#", 1)
        first.disconnect()
        wait_for(lambda: len(self.check(path, "POST", ask, CONNECT_HEADERS)[1].get(
            "events", [])) == 3, what="oa-history's three events")
        _, history = self.check(path, "POST", ask, CONNECT_HEADERS, expect=200)
        self.assertEqual([(e["kind"], e.get("count")) for e in history["events"]],
                         [("CLIENT_EVENT_KIND_CONNECTED", None), ("CLIENT_EVENT_KIND_SUBSCRIBED", 2),
                          ("CLIENT_EVENT_KIND_CLOSED", None)])
        self.check(path, "POST", b"", dict(CONNECT_HEADERS, **{"Content-Type": "application/proto"}),
                   expect=400)  # no client id
        self.check(path, "POST", json.dumps({"clientId": "oa-nobody"}).encode(), CONNECT_HEADERS,
                   expect=404)
        for bad in (b"{}", b'{"clientId": 5}', b"[", b'{"clientId": ""}'):
            self.check(path, "POST", bad, CONNECT_HEADERS, expect=400)
        self.check(path, "POST", ask, dict(CONNECT_HEADERS, **{"Content-Type": "text/plain"}),
                   expect=415)
        self.check(path, "GET", expect=405)
        with self.broker_with_tokens():
            self.check(path, "POST", ask, CONNECT_HEADERS, expect=401)
            self.check(path, "POST", ask, read, expect=404)
        with self.own_broker(options={"history_events": "0"}):
            self.check(path, "POST", ask, CONNECT_HEADERS, expect=403)

    # Before test_every_endpoint_answers_as_documented too.
    def test_activity_answers_as_documented(self):
        path = SERVICE + "GetActivity"
        wait_for(lambda: self.check(path, "POST", b"{}", CONNECT_HEADERS, expect=200)[1][
            "samples"], timeout=15, what="a first sample")
        self.check(path, "POST", b"[", CONNECT_HEADERS, expect=400)
        self.check(path, "POST", b"{}", dict(CONNECT_HEADERS, **{"Content-Type": "text/plain"}),
                   expect=415)
        self.check(path, "GET", expect=405)
        with self.broker_with_tokens():
            self.check(path, "POST", b"{}", CONNECT_HEADERS, expect=401)

    def test_document_is_valid_openapi_json_schema(self):
        self.assertEqual(self.document["openapi"], "3.1.0")
        for name, schema in self.document["components"]["schemas"].items():
            with self.subTest(schema=name):
                jsonschema.Draft202012Validator.check_schema(schema)

    def test_served_document_is_the_repository_file(self):
        status, _, text = self.broker.http("/api/openapi.json")
        self.assertEqual(status, 200)
        with open(DOCUMENT, encoding="utf-8") as f:
            self.assertEqual(text, f.read())
        self.assertEqual(json.loads(text), self.document)

    def test_every_endpoint_answers_as_documented(self):
        broker = self.broker
        alice = Client(broker, "oa-alice", version=5, clean=False, username="alice",
                       password="secret")
        alice.subscribe("events/site1/#", 1)
        alice.subscribe("$share/workers/queues/jobs/email", 2)
        alice.subscribe("#", 0)
        anon = Client(broker, "oa-anon", keepalive=20)
        anon.subscribe("commands/doors/open", 1)
        for _ in range(3):
            alice.publish("events/site1/temp", b"21.5", qos=1)
        closed = Client(broker, "oa-closed")
        silent, _ = raw_connect(broker, "oa-raw", 30)
        refused = Client(broker, "oa-refused", username="alice", password="wrong")
        self.assertNotEqual(refused.connack, 0)
        refused.disconnect()
        taken = Client(broker, "oa-taken")
        # A persistent session whose client left: listed by ListConnections as offline.
        gone = Client(broker, "oa-offline", clean=False)
        gone.subscribe("store/orders/#", 1)
        gone.disconnect()
        broker.wait_connections(lambda cs: {"oa-alice", "oa-anon", "oa-closed", "oa-raw",
                                            "oa-taken"} <= {c["client_id"] for c in cs})
        taker = Client(broker, "oa-taken")
        closed.disconnect()
        silent.close()
        wait_for(lambda: len(self.list_rich(
            {"filter": "state = MQTT_CONNECTION_STATE_CLOSED"})["connections"]) >= 3,
            what="closed connections")
        try:
            # The KubeMQ endpoint: every parameter, and every error.
            for query in ("", "?client_id=oa-*", "?username=alice", "?pattern=queues",
                          "?protocol_version=5", "?limit=1&offset=1", "?offset=100"):
                self.check("/api/mqtt/connections" + query, expect=200)
            listed = self.check("/api/mqtt/connections", expect=200)[1]["data"]["connections"]
            self.assertTrue(any(c.get("username") == "alice" for c in listed))
            for query in ("?nope=1", "?limit=0", "?limit=x", "?pattern=other", "?client_id=",
                          "?limit=1&limit=2", "?protocol_version=6"):
                self.check("/api/mqtt/connections" + query, expect=400)
            self.check("/api/mqtt/nothing", expect=404)
            self.check("/index.html", expect=404)
            for method in ("POST", "DELETE", "PUT"):
                self.check("/api/mqtt/connections", method, b"", expect=405)
            self.check("/api/mqtt/connections", "GET", expect=413, huge=True)

            # The Connect API: every connection (open and closed), pages, the GET form, errors.
            page = self.list_rich({})
            states = {c["state"] for c in page["connections"]}
            self.assertEqual(states, {"MQTT_CONNECTION_STATE_OPEN",
                                      "MQTT_CONNECTION_STATE_CLOSED",
                                      "MQTT_CONNECTION_STATE_OFFLINE"})
            reasons = {c.get("closeReason") for c in page["connections"]}
            self.assertTrue({close_reason("CLIENT_DISCONNECT"), "SESSION_TAKEN_OVER"} <= reasons,
                            reasons)
            first = self.list_rich({"pageSize": 1, "orderBy": "client_id desc"})
            self.assertIn("nextPageToken", first)
            self.list_rich({"pageSize": "1", "orderBy": "client_id desc",
                            "pageToken": first["nextPageToken"]})
            self.list_rich({"filter": 'username = "alice" AND protocol_version = 5'})
            message = urllib.parse.quote(json.dumps({"filter": 'client_id = "oa-*"'}))
            self.check(f"{LIST}?connect=v1&encoding=json&message={message}", expect=200)
            encoded = base64.urlsafe_b64encode(b'{"pageSize":2}').decode().rstrip("=")
            self.check(f"{LIST}?connect=v1&encoding=json&base64=1&message={encoded}",
                       expect=200)
            self.check(f"{LIST}?encoding=json", expect=400)
            # Binary protobuf is served since the schema ships (test_connect_clients.py drives
            # it with real clients); an unknown codec is still 415.
            self.check(f"{LIST}?connect=v1&encoding=protobuf", expect=415)
            self.check(f"{LIST}?connect=v1&encoding=json&compression=gzip", expect=501)
            for bad in ({"filter": "nonsense = 1"}, {"pageSize": 10001}, {"orderBy": "x"},
                        {"pageToken": "garbage"}, {"filter": 5}):
                self.list_rich(bad, expect=400)
            self.check(LIST, "POST", b"{", CONNECT_HEADERS, expect=400)
            self.check(LIST, "POST", b"{}", {"Content-Type": "application/json"}, expect=400)
            self.check(LIST, "POST", b"{}", {"Content-Type": "text/plain",
                                             "Connect-Protocol-Version": "1"}, expect=415)
            self.check(LIST, "POST", b"{}", dict(CONNECT_HEADERS, **{"Connect-Timeout-Ms": "0"}),
                       expect=504)
            self.check(LIST, "POST", b"{}", dict(CONNECT_HEADERS, **{"Connect-Timeout-Ms": "x"}),
                       expect=400)
            self.check(f"{LIST}?connect=v1&encoding=json", headers={"Connect-Timeout-Ms": "0"},
                       expect=504)
            self.check(LIST, "DELETE", expect=405)
            self.check(LIST, "POST", None, CONNECT_HEADERS, expect=413, huge=True)
            self.check("/mqtt.connections.v1.ConnectionsService/Nope", "POST", b"{}",
                       CONNECT_HEADERS, expect=501)

            # The files compiled into the companion: the web console and this document.
            for path in ("/", "/console.js", "/console.css", "/api/openapi.json"):
                self.check(path, expect=200)
                self.check(path, "POST", b"", expect=405)

            # /metrics, after the traffic above.
            self.check("/metrics", expect=200)
            self.check("/metrics", "POST", b"", expect=405)
            self.check("/healthz", expect=200)
            self.check("/healthz", "POST", b"", expect=405)

            # The Host check, on every operation: a foreign host 421, a malformed one 400.
            for doc_path, operations in self.document["paths"].items():
                path = doc_path.replace("{client_id}", "oa-alice").replace(
                    "{as}/{who}", "clientid/oa-alice")
                for method in operations:
                    body = b"{}" if method == "post" else None
                    for host, status in (("attacker.example", 421), ("127.1", 400)):
                        self.check(path, method.upper(), body,
                                   dict(CONNECT_HEADERS, Host=host), expect=status)
        finally:
            for c in (alice, anon, taker):
                c.disconnect()
            taken.client.loop_stop()  # its connection was taken over by `taker`

        # Every documented answer but an internal error was met.
        documented = {(path, method, status)
                      for path, operations in self.document["paths"].items()
                      for method, operation in operations.items()
                      for status in operation["responses"] if status not in UNREACHABLE
                      and (path, method, status) not in UNREACHABLE_OPERATIONS}
        self.assertEqual(sorted(documented - self.met), [],
                         "documented answers the code was never seen to give")


if __name__ == "__main__":
    unittest.main()
