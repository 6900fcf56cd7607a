# SPDX-License-Identifier: BSD-3-Clause
"""Real Connect clients against the real broker, from the shipped schema
(proto/mqtt/connections/v1/connections.proto, compiled by protoc into the build's descriptor
set): Connect-ES (the official TypeScript/JavaScript client, pinned by
integration/connect_es/package-lock.json, installed with `npm ci` into the build tree) with its
default binary codec and with JSON, by POST and by GET: pages with tokens, filters, every kind
of field, InvalidArgument for a bad filter or token, DeadlineExceeded for a 1 ms deadline,
Unauthenticated without the bearer token, and the admin's DisconnectConnection (PermissionDenied
with a read token). A second client in another
language: Python's protobuf (Debian's python3-protobuf) with the binary codec over plain HTTP,
its message classes also built from the descriptor set.

Node.js and the npm registry are required: without them this test fails and says why (CI
installs them); it never skips."""

import base64
import json
import os
import shutil
import signal
import subprocess
import time
import unittest
import urllib.error
import urllib.request

from google.protobuf import descriptor_pb2, message_factory

from harness import Broker, Client, close_reason, raw_connect, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "connect_es")
DESCRIPTOR_SET = os.environ.get("MQC_PROTO_DESCRIPTOR_SET", "")
NODE_DIR = os.environ.get("MQC_CONNECT_ES_DIR", "")
OPEN_COUNT = 25
READ_TOKEN = "connect-es-read-token-1"
ADMIN_TOKEN = "connect-es-admin-token-1"


def install_connect_es():
    """The pinned packages in NODE_DIR (npm ci); fails loudly when that cannot be done."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            raise AssertionError(f"{tool} is not on PATH: Connect-ES cannot run (install Node.js "
                                 "20 and npm; see README, 'Generated clients')")
    os.makedirs(NODE_DIR, exist_ok=True)
    for name in ("package.json", "package-lock.json", "client.mjs", "watch.mjs",
                 "connections_api.mjs"):
        shutil.copyfile(os.path.join(PACKAGE, name), os.path.join(NODE_DIR, name))
    result = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                            cwd=NODE_DIR, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise AssertionError("npm ci of Connect-ES failed (is the npm registry reachable?):\n" +
                             result.stdout + result.stderr)


class ConnectClientsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not DESCRIPTOR_SET or not NODE_DIR:
            raise AssertionError("run through ctest: MQC_PROTO_DESCRIPTOR_SET and "
                                 "MQC_CONNECT_ES_DIR name the build's descriptor set and folder")
        if not os.path.exists(DESCRIPTOR_SET):
            raise AssertionError(f"{DESCRIPTOR_SET} is missing: build the project first")
        install_connect_es()
        # With token files, as a production broker exposing the API runs: the generated clients
        # send the bearer token through an interceptor, and the admin's one disconnects.
        cls.broker = Broker(log_types=("error", "warning", "notice"),
                            files={"tokens": f"{READ_TOKEN}\n", "admin": f"{ADMIN_TOKEN}\n"},
                            plugin_after="plugin_opt_http_token_file {dir}/tokens\n"
                                         "plugin_opt_http_admin_token_file {dir}/admin")
        cls.broker.start()
        cls.sockets = []
        try:
            for i in range(OPEN_COUNT):
                sock, rc = raw_connect(cls.broker, f"ces-{i:03d}", keepalive=120)
                assert rc == 0
                cls.sockets.append(sock)
            closed = Client(cls.broker, "ces-closed", version=5)
            closed.subscribe("events/site1/#", 1)
            closed.publish("events/site1/temp", b"12345", qos=1)
            wait_for(lambda: closed.messages, what="ces-closed's own delivery")
            closed.disconnect()
            for codec in ("binary", "json"):
                for method in ("post", "get"):
                    sock, rc = raw_connect(cls.broker, f"victim-{codec}-{method}", keepalive=120)
                    assert rc == 0
                    cls.sockets.append(sock)
            wait_for(lambda: len(cls.listed("?client_id=ces-*")) == OPEN_COUNT
                     and len(cls.listed("?client_id=victim-*")) == 4,
                     timeout=30, what="every ces- and victim- connection listed")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for sock in getattr(cls, "sockets", []):
            sock.close()
        cls.broker.stop()
        cls.broker.cleanup_dir()

    @classmethod
    def listed(cls, query):
        status, _, body = cls.broker.http("/api/mqtt/connections" + query,
                                          headers={"Authorization": f"Bearer {READ_TOKEN}"})
        assert status == 200, (status, body)
        return json.loads(body)["data"]["connections"]

    def run_client(self, codec, method):
        base_url = f"http://127.0.0.1:{self.broker.http_port}"
        result = subprocess.run(
            ["node", "client.mjs", DESCRIPTOR_SET, base_url, codec, method, ADMIN_TOKEN,
             f"victim-{codec}-{method}"], cwd=NODE_DIR,
            capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        return json.loads(result.stdout)

    def check_report(self, report, codec, method):
        # Pages of ten, in client id order, each connection exactly once, tokens until the end.
        pages = report["pages"]
        self.assertEqual(len(pages), 3, pages)
        listed = [client_id for page in pages for client_id in page["clientIds"]]
        self.assertEqual(listed, [f"ces-{i:03d}" for i in range(OPEN_COUNT)])
        self.assertEqual([page["totalSize"] for page in pages], [str(OPEN_COUNT)] * 3)
        self.assertEqual([page["hasToken"] for page in pages], [True, True, False])

        # The closed connection: enums, timestamps, nested messages and uint64 all arrive.
        [closed] = report["closed"]
        self.assertEqual(closed["clientId"], "ces-closed")
        self.assertEqual(closed["state"], "MQTT_CONNECTION_STATE_CLOSED")
        self.assertEqual(closed["closeReason"], close_reason("CLIENT_DISCONNECT"))
        self.assertTrue(closed["closeAfterOpen"])
        self.assertGreater(int(closed["openSeconds"]), 1_700_000_000)
        self.assertEqual(closed["protocolVersion"], 5)
        self.assertEqual(closed["keepAlive"], 60)
        self.assertEqual(closed["sourceIp"], "127.0.0.1")
        self.assertGreater(closed["sourcePort"], 0)
        self.assertEqual(closed["listenerName"], f"mqtt:{self.broker.port}")
        self.assertEqual(closed["subscriptions"], [["events/site1/#", 1, "events", "site1.>"]])
        self.assertEqual((closed["publishCount"], closed["publishBytes"]), ("1", "5"))

        # Errors arrive as Connect codes with the server's message.
        self.assertEqual(report["badFilter"]["code"], "InvalidArgument")
        self.assertIn("Expected quoted literal for field 'client_id'",
                      report["badFilter"]["message"])
        self.assertEqual(report["badToken"]["code"], "InvalidArgument")
        self.assertEqual(report["unauthenticated"]["code"], "Unauthenticated")

        # The admin's disconnect, in the same codec: the broker closes the victim as KICKED.
        victim = f"victim-{codec}-{method}"
        disconnect = report["disconnect"]["ok"]
        self.assertEqual((disconnect["clientId"], disconnect["disconnected"]), (victim, True))
        closed = wait_for(lambda: [c for c in self.listed_rpc(f'client_id = "{victim}"')
                                   if c["state"] == "MQTT_CONNECTION_STATE_CLOSED"],
                          what=f"{victim} closed")
        self.assertEqual(closed[0]["uid"], disconnect["uid"])
        self.assertEqual(closed[0]["closeReason"], "KICKED")

        # The codec and the HTTP method really were the ones asked for.
        content_type = "application/proto" if codec == "binary" else "application/json"
        answers = report["seen"]  # the successful calls: pages, the closed one, the disconnect
        self.assertEqual(len(answers), 5)
        for answer in answers:
            self.assertEqual(answer["contentType"], content_type, answer)
        # ListConnections (side-effect free) goes by GET when asked, DisconnectConnection never.
        encoding = "proto" if codec == "binary" else "json"
        expected = [("GET", encoding) if method == "get" else ("POST", None)] * 7 + [("POST", None)]
        self.assertEqual([(r["method"], r["encoding"]) for r in report["wire"]], expected)

    def listed_rpc(self, filter_text):
        status, _, body = self.broker.http(
            "/mqtt.connections.v1.ConnectionsService/ListConnections", method="POST",
            body=json.dumps({"filter": filter_text}).encode(),
            headers={"Content-Type": "application/json", "Connect-Protocol-Version": "1",
                     "Authorization": f"Bearer {READ_TOKEN}"})
        self.assertEqual(status, 200, body)
        return json.loads(body).get("connections", [])

    def test_binary_codec_by_post(self):  # the client's defaults
        self.check_report(self.run_client("binary", "post"), "binary", "post")

    def test_binary_codec_by_get(self):
        self.check_report(self.run_client("binary", "get"), "binary", "get")

    def test_json_codec_by_post(self):
        self.check_report(self.run_client("json", "post"), "json", "post")

    def test_json_codec_by_get(self):
        self.check_report(self.run_client("json", "get"), "json", "get")

    def test_deadline_exceeded_in_every_codec_and_method(self):
        # The companion answers in well under a millisecond here, so a 1 ms deadline could be
        # met: it is stopped for the calls, and the deadline passes for certain.
        # One call at a time: the plugin restarts a companion that stays stopped for 5 s (a
        # stall), and starting Node.js on a loaded machine takes seconds.
        base_url = f"http://127.0.0.1:{self.broker.http_port}"
        companion = self.broker.companion_pid
        for codec in ("binary", "json"):
            for method in ("post", "get"):
                os.kill(companion, signal.SIGSTOP)
                try:
                    result = subprocess.run(
                        ["node", "client.mjs", DESCRIPTOR_SET, base_url, codec, method,
                         READ_TOKEN, "nobody"], cwd=NODE_DIR, capture_output=True, text=True,
                        timeout=60, env={**os.environ, "MQC_DEADLINE_ONLY": "1"})
                finally:
                    os.kill(companion, signal.SIGCONT)
                self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
                self.assertEqual(json.loads(result.stdout)["deadline"].get("code"),
                                 "DeadlineExceeded", (codec, method, result.stdout))
                time.sleep(0.5)  # a heartbeat before the next stop
        self.assertEqual(self.broker.companion_pids(), [companion], "the companion was restarted")

    def test_broker_routes_after_the_clients(self):
        result = subprocess.run(
            ["node", "client.mjs", DESCRIPTOR_SET, f"http://127.0.0.1:{self.broker.http_port}",
             "binary", "post", READ_TOKEN, "ces-000"], cwd=NODE_DIR, capture_output=True,
            text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        # A read token may list, not disconnect.
        self.assertEqual(json.loads(result.stdout)["disconnect"]["code"], "PermissionDenied")
        sub = Client(self.broker, "after-clients-sub")
        sub.subscribe("events/after", 1)
        pub = Client(self.broker, "after-clients-pub")
        pub.publish("events/after", b"1", qos=1)
        wait_for(lambda: sub.messages, what="a delivery after the Connect clients")
        sub.disconnect()
        pub.disconnect()

    # -- Python's protobuf, binary codec -------------------------------------------------------
    def python_messages(self):
        with open(DESCRIPTOR_SET, "rb") as f:
            files = descriptor_pb2.FileDescriptorSet.FromString(f.read()).file
        return message_factory.GetMessages(files)

    def python_call(self, request, get=False):
        """(status, content type, body bytes) of ListConnections with a binary request."""
        path = "/mqtt.connections.v1.ConnectionsService/ListConnections"
        url = f"http://127.0.0.1:{self.broker.http_port}{path}"
        body = request.SerializeToString()
        if get:
            message = base64.urlsafe_b64encode(body).decode().rstrip("=")
            http_request = urllib.request.Request(
                f"{url}?connect=v1&encoding=proto&base64=1&message={message}",
                headers={"Authorization": f"Bearer {READ_TOKEN}"})
        else:
            http_request = urllib.request.Request(url, data=body, method="POST", headers={
                "Content-Type": "application/proto", "Connect-Protocol-Version": "1",
                "Authorization": f"Bearer {READ_TOKEN}"})
        try:
            with urllib.request.urlopen(http_request, timeout=10) as response:
                return response.status, response.headers["Content-Type"], response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.headers["Content-Type"], error.read()

    def test_python_protobuf_binary_codec(self):
        messages = self.python_messages()
        Request = messages["mqtt.connections.v1.ListConnectionsRequest"]
        Response = messages["mqtt.connections.v1.ListConnectionsResponse"]
        for get in (False, True):
            listed, token, total = [], "", None
            for _ in range(10):
                status, content_type, body = self.python_call(
                    Request(filter='client_id = "ces-00*" AND state = MQTT_CONNECTION_STATE_OPEN',
                            order_by="client_id desc", page_size=4, page_token=token), get)
                self.assertEqual((status, content_type), (200, "application/proto"), body)
                page = Response.FromString(body)
                total = page.total_size
                listed += [c.client_id for c in page.connections]
                token = page.next_page_token
                if not token:
                    break
            self.assertEqual(listed, [f"ces-{i:03d}" for i in reversed(range(10))], get)
            self.assertEqual(total, 10)
        status, _, body = self.python_call(Request(filter='client_id = "ces-closed"'))
        [closed] = Response.FromString(body).connections
        enums = closed.DESCRIPTOR.fields_by_name
        self.assertEqual(enums["close_reason"].enum_type.values_by_number[closed.close_reason].name,
                         close_reason("CLIENT_DISCONNECT"))
        self.assertEqual(closed.total_request_statistics.publish_bytes, 5)
        self.assertEqual(closed.subscriptions[0].channel, "site1.>")
        # A bad filter is a Connect error in JSON, whatever the codec.
        status, content_type, body = self.python_call(Request(filter="nope = 1"))
        self.assertEqual((status, content_type), (400, "application/json"))
        self.assertEqual(json.loads(body)["code"], "invalid_argument")


if __name__ == "__main__":
    unittest.main()
