# SPDX-License-Identifier: BSD-3-Clause
"""The API's security against the real broker (README, "Security"): bearer tokens for reading and
for disconnecting, /metrics made public on its own, the refusal of an exposed API without a
token, an admin's disconnect through the broker thread (closeReason KICKED), token files read
again at a reload, HTTPS, the companion's isolation from the broker's sockets, and every bad security option refused at start with its name."""

import json
import os
import re
import signal
import socket
import ssl
import subprocess
import tempfile
import unittest
import urllib.request
import warnings

from harness import (Broker, Client, SharedBrokerTestCase, disconnect_all, make_certificate,
                     wait_for)

READ_TOKEN = "read-token-0123456789abcdef"
ADMIN_TOKEN = "admin-token-fedcba9876543210"
CHALLENGE = 'Bearer realm="mosquitto-connections"'
LIST_RPC = "/mqtt.connections.v1.ConnectionsService/ListConnections"
DISCONNECT_RPC = "/mqtt.connections.v1.ConnectionsService/DisconnectConnection"
RPC_HEADERS = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}

TOKEN_FILES = {
    "read.tokens": f"# readers\n\n{READ_TOKEN}\n",
    "admin.tokens": f"# admins: the token is on line 3\n\n{ADMIN_TOKEN}\n",
}
TOKEN_OPTIONS = {"http_token_file": "{dir}/read.tokens",
                 "http_admin_token_file": "{dir}/admin.tokens"}


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def secured_broker(**kwargs):
    """A broker with both token files; option values may name files in its folder as {dir}."""
    options = dict(TOKEN_OPTIONS)
    options.update(kwargs.pop("options", {}))
    files = dict(TOKEN_FILES)
    files.update(kwargs.pop("files", {}))
    return Broker(options=options, files=files, **kwargs)


def rpc(broker, path, message, headers=None):
    return broker.http(path, method="POST", body=json.dumps(message).encode(),
                       headers={**RPC_HEADERS, **(headers or {})})


class TokenTest(SharedBrokerTestCase):
    """One broker with a read token file and an admin token file."""

    @classmethod
    def make_broker(cls):
        return secured_broker()

    def listed(self):
        status, _, body = self.broker.http("/api/mqtt/connections", headers=bearer(READ_TOKEN))
        self.assertEqual(status, 200, body)
        return json.loads(body)["data"]["connections"]

    def assert_unauthenticated(self, headers):
        status, answer, body = self.broker.http("/api/mqtt/connections", headers=headers)
        self.assertEqual(status, 401, body)
        self.assertEqual(answer.get("WWW-Authenticate"), CHALLENGE)
        document = json.loads(body)
        self.assertEqual(document["error"], True)
        self.assertIsNone(document["data"])
        self.assertIn("token", document["error_string"])

        status, answer, body = rpc(self.broker, LIST_RPC, {}, headers)
        self.assertEqual(status, 401, body)
        self.assertEqual(answer.get("WWW-Authenticate"), CHALLENGE)
        self.assertEqual(json.loads(body)["code"], "unauthenticated")

        status, answer, body = self.broker.http("/metrics", headers=headers)
        self.assertEqual(status, 401, body)
        self.assertEqual(answer.get("WWW-Authenticate"), CHALLENGE)
        self.assertTrue(answer.get("Content-Type", "").startswith("text/plain"), answer)
        self.assertNotIn("kubemq_mqtt_connections", body)

    def test_missing_token_is_401_in_the_format_of_each_path(self):
        self.assert_unauthenticated({})

    def test_wrong_or_malformed_token_is_401(self):
        for value in (f"Bearer {READ_TOKEN}x", f"Bearer {READ_TOKEN[:-1]}", "Bearer ",
                      f"Basic {READ_TOKEN}", READ_TOKEN):
            with self.subTest(value=value):
                self.assert_unauthenticated({"Authorization": value})

    def test_read_and_admin_tokens_read_every_api(self):
        for token in (READ_TOKEN, ADMIN_TOKEN):
            with self.subTest(token=token[:5]):
                status, _, body = self.broker.http("/api/mqtt/connections", headers=bearer(token))
                self.assertEqual(status, 200, body)
                self.assertFalse(json.loads(body)["error"])
                status, _, body = rpc(self.broker, LIST_RPC, {}, bearer(token))
                self.assertEqual(status, 200, body)
                self.assertIn("connections", json.loads(body))
                status, _, body = self.broker.http("/metrics", headers=bearer(token))
                self.assertEqual(status, 200, body)
                self.assertIn("kubemq_mqtt_connections", body)
        # "Bearer" is case-insensitive.
        status, _, _ = self.broker.http("/metrics", headers={"Authorization": f"bearer {READ_TOKEN}"})
        self.assertEqual(status, 200)

    def test_read_token_on_an_admin_action_is_403(self):
        self.client("victim-403")
        wait_for(lambda: self.connection("victim-403"), what="victim-403 listed")
        status, _, body = self.broker.http("/api/mqtt/connections/victim-403", method="DELETE",
                                           headers=bearer(READ_TOKEN))
        self.assertEqual(status, 403, body)
        self.assertEqual(json.loads(body)["error"], True)
        status, _, body = rpc(self.broker, DISCONNECT_RPC, {"clientId": "victim-403"},
                              bearer(READ_TOKEN))
        self.assertEqual(status, 403, body)
        self.assertEqual(json.loads(body)["code"], "permission_denied")
        status, answer, body = self.broker.http("/api/mqtt/connections/victim-403",
                                                method="DELETE")
        self.assertEqual(status, 401, body)
        self.assertEqual(answer.get("WWW-Authenticate"), CHALLENGE)
        self.assertIsNotNone(self.connection("victim-403"))

    def connection(self, client_id, state="MQTT_CONNECTION_STATE_OPEN"):
        status, _, body = rpc(self.broker, LIST_RPC,
                              {"filter": f'client_id = "{client_id}"'}, bearer(READ_TOKEN))
        self.assertEqual(status, 200, body)
        for c in json.loads(body).get("connections", []):
            if c["state"] == state:
                return c
        return None

    def test_admin_disconnects_by_client_id(self):
        victim = self.client("victim-delete")
        lost = []
        victim.client.on_disconnect = lambda *args: lost.append(args)
        uid = wait_for(lambda: self.connection("victim-delete"), what="listed")["uid"]
        status, _, body = self.broker.http("/api/mqtt/connections/victim-delete",
                                           method="DELETE", headers=bearer(ADMIN_TOKEN))
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body), {"error": False, "error_string": "", "data": {
            "client_id": "victim-delete", "disconnected": True}})
        closed = wait_for(lambda: self.connection("victim-delete", "MQTT_CONNECTION_STATE_CLOSED"),
                          what="the kicked connection listed as closed")
        self.assertEqual(closed["uid"], uid)
        self.assertEqual(closed["closeReason"], "KICKED")
        # The client saw it (paho then reconnects on its own: a new connection, a new uid).
        wait_for(lambda: lost, what="the client to lose its connection")
        line = wait_for(lambda: re.search(r".*disconnected client 'victim-delete'.*",
                                          self.broker.log()), what="the broker's log line")
        self.assertRegex(line.group(0), r"at the request of 127\.0\.0\.1:\d+ "
                                        r"\(admin token file line 3\)")
        self.assertNotIn(ADMIN_TOKEN, self.broker.log())
        self.assertNotIn(READ_TOKEN, self.broker.log())

    def test_a_kicked_persistent_client_keeps_its_subscriptions_qos(self):
        # Before its DISCONNECT the broker re-checks each subscription of a persistent client it
        # kicks as a SUBSCRIBE with QoS 0 (2.0.12 on, and Debian's 2.0.11): no SUBSCRIBE.
        victim = self.client("victim-qos", clean=False)
        victim.client.reconnect_delay_set(min_delay=30, max_delay=30)
        victim.subscribe("events/kick/one", qos=1)
        victim.subscribe("store/kick/two", qos=2)
        wait_for(lambda: len((self.connection("victim-qos") or {}).get("subscriptions", [])) == 2,
                 what="both subscriptions listed")
        status, _, body = self.broker.http("/api/mqtt/connections/victim-qos", method="DELETE",
                                           headers=bearer(ADMIN_TOKEN))
        self.assertEqual(status, 200, body)
        expected = {("events/kick/one", 1), ("store/kick/two", 2)}
        for state in ("MQTT_CONNECTION_STATE_CLOSED", "MQTT_CONNECTION_STATE_OFFLINE"):
            listed = wait_for(lambda: self.connection("victim-qos", state), what=state)
            self.assertEqual({(s["filter"], s["qos"]) for s in listed["subscriptions"]}, expected,
                             state)

    def test_admin_disconnects_by_rpc_with_client_id_or_uid(self):
        self.client("victim-rpc-id")
        self.client("victim-rpc-uid", version=5)
        uid = wait_for(lambda: self.connection("victim-rpc-uid"), what="listed")["uid"]
        status, _, body = rpc(self.broker, DISCONNECT_RPC, {"uid": uid}, bearer(ADMIN_TOKEN))
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body), {"clientId": "victim-rpc-uid", "uid": uid,
                                            "disconnected": True})
        self.assertEqual(wait_for(lambda: self.connection(
            "victim-rpc-uid", "MQTT_CONNECTION_STATE_CLOSED"), what="closed")["closeReason"],
            "KICKED")
        status, _, body = rpc(self.broker, DISCONNECT_RPC, {"clientId": "victim-rpc-id"},
                              bearer(ADMIN_TOKEN))
        self.assertEqual(status, 200, body)
        answer = json.loads(body)
        self.assertEqual(answer["clientId"], "victim-rpc-id")
        self.assertTrue(answer["disconnected"])

    def test_admin_disconnects_by_rpc_in_binary_protobuf(self):
        # DisconnectConnectionRequest{client_id = 1}, written by hand: field 1, length-delimited.
        victim = b"victim-rpc-proto"
        self.client(victim.decode())
        uid = wait_for(lambda: self.connection(victim.decode()), what="listed")["uid"]
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.broker.http_port}{DISCONNECT_RPC}", method="POST",
            data=b"\x0a" + bytes([len(victim)]) + victim,
            headers={"Content-Type": "application/proto", "Connect-Protocol-Version": "1",
                     **bearer(ADMIN_TOKEN)})
        with urllib.request.urlopen(request, timeout=10) as response:
            self.assertEqual(response.headers["Content-Type"], "application/proto")
            body = response.read()
        # DisconnectConnectionResponse{client_id = 1, uid = 2, disconnected = 3}.
        self.assertEqual(body, b"\x0a" + bytes([len(victim)]) + victim +
                         b"\x12" + bytes([len(uid)]) + uid.encode() + b"\x18\x01")
        self.assertEqual(wait_for(lambda: self.connection(
            victim.decode(), "MQTT_CONNECTION_STATE_CLOSED"), what="closed")["closeReason"],
            "KICKED")

    def test_unknown_client_is_404(self):
        status, _, body = self.broker.http("/api/mqtt/connections/nobody-here", method="DELETE",
                                           headers=bearer(ADMIN_TOKEN))
        self.assertEqual(status, 404, body)
        self.assertEqual(json.loads(body)["error"], True)
        for message in ({"clientId": "nobody-here"},
                        {"uid": "00000000-0000-4000-8000-000000000000"}):
            status, _, body = rpc(self.broker, DISCONNECT_RPC, message, bearer(ADMIN_TOKEN))
            self.assertEqual(status, 404, body)
            self.assertEqual(json.loads(body)["code"], "not_found")
        status, _, body = rpc(self.broker, DISCONNECT_RPC, {"clientId": "a", "uid": "b"},
                              bearer(ADMIN_TOKEN))
        self.assertEqual(status, 400, body)
        self.assertEqual(json.loads(body)["code"], "invalid_argument")


class MetricsPublicTest(unittest.TestCase):
    def test_metrics_without_token_while_the_apis_still_need_one(self):
        with secured_broker(options={"metrics_public": "true"}) as broker:
            try:
                status, _, body = broker.http("/metrics")
                self.assertEqual(status, 200, body)
                self.assertIn("kubemq_mqtt_connections", body)
                status, _, _ = broker.http("/api/mqtt/connections")
                self.assertEqual(status, 401)
                status, _, _ = rpc(broker, LIST_RPC, {})
                self.assertEqual(status, 401)
            finally:
                broker.stop()
                broker.cleanup_dir()


class AnonymousLoopbackTest(unittest.TestCase):
    def test_loopback_without_tokens_reads_and_cannot_disconnect(self):
        with Broker() as broker:
            try:
                c = Client(broker, "anonymous-victim")
                # The registry learns of the connection just after its CONNACK: wait for it, so
                # that the refusals below are for a listed client.
                broker.wait_connections(lambda cs: any(x["client_id"] == "anonymous-victim"
                                                       for x in cs), what="the victim listed")
                status, _, _ = broker.http("/api/mqtt/connections")
                self.assertEqual(status, 200)
                status, _, body = broker.http("/api/mqtt/connections/anonymous-victim",
                                              method="DELETE")
                self.assertEqual(status, 403, body)
                self.assertIn("http_admin_token_file", json.loads(body)["error_string"])
                status, _, body = rpc(broker, DISCONNECT_RPC, {"clientId": "anonymous-victim"})
                self.assertEqual(status, 403, body)
                self.assertEqual(json.loads(body)["code"], "permission_denied")
                self.assertIsNotNone(broker.connection("anonymous-victim"))
                c.disconnect()
            finally:
                broker.stop()
                broker.cleanup_dir()


class TokenReloadTest(unittest.TestCase):
    def test_sighup_reads_the_token_files_again(self):
        new_token = "rotated-token-00112233445566"
        with secured_broker() as broker:
            try:
                status, _, _ = broker.http("/metrics", headers=bearer(READ_TOKEN))
                self.assertEqual(status, 200)
                with open(os.path.join(broker.dir, "read.tokens"), "w") as f:
                    f.write(f"{new_token}\n")
                broker.process.send_signal(signal.SIGHUP)
                wait_for(lambda: "token files read again" in broker.log(), timeout=20,
                         what="the companion's reload line")
                status, _, _ = broker.http("/metrics", headers=bearer(new_token))
                self.assertEqual(status, 200)
                status, _, _ = broker.http("/metrics", headers=bearer(READ_TOKEN))
                self.assertEqual(status, 401)
                # A broken file at the next reload keeps the tokens read before.
                with open(os.path.join(broker.dir, "read.tokens"), "w") as f:
                    f.write("short\n")
                count = broker.log().count("keeping the tokens read before")
                broker.process.send_signal(signal.SIGHUP)
                wait_for(lambda: broker.log().count("keeping the tokens read before") > count,
                         timeout=20, what="the refusal of the broken file")
                status, _, _ = broker.http("/metrics", headers=bearer(new_token))
                self.assertEqual(status, 200)
                self.assertNotIn(new_token, broker.log())
            finally:
                broker.stop()
                broker.cleanup_dir()


class RefusedOptionsTest(unittest.TestCase):
    """Each bad security option stops the broker with a line that names it."""

    def assert_refused(self, options, files, *names):
        broker = secured_broker(options=options, files=files, expect_start=False)
        broker.options = {k: v for k, v in broker.options.items() if v is not None}
        broker.start()
        try:
            self.assertIsNotNone(broker.wait_exit(), "the broker kept running")
            log = broker.log()
            for name in names:
                self.assertIn(name, log)
            self.assertNotIn("serving on", log)
            for token in (READ_TOKEN, ADMIN_TOKEN):
                self.assertNotIn(token, log)
        finally:
            broker.stop()
            broker.cleanup_dir()

    def test_each_bad_option_is_named(self):
        cases = [
            ({"http_token_file": "{dir}/missing.tokens"}, {}, ["plugin_opt_http_token_file"]),
            ({"http_token_file": "relative.tokens"}, {}, ["plugin_opt_http_token_file"]),
            ({"http_token_file": "{dir}/empty.tokens"}, {"empty.tokens": "# none\n\n"},
             ["plugin_opt_http_token_file", "holds no token"]),
            ({"http_token_file": "{dir}/short.tokens"}, {"short.tokens": "abc\n"},
             ["plugin_opt_http_token_file", "line 1"]),
            ({"http_admin_token_file": "{dir}/missing.tokens"}, {},
             ["plugin_opt_http_admin_token_file"]),
            ({"metrics_public": "yes"}, {}, ["plugin_opt_metrics_public"]),
            ({"http_allow_anonymous": "maybe"}, {}, ["plugin_opt_http_allow_anonymous"]),
            ({"http_tls_cert": "{dir}/read.tokens", "http_tls_key": "{dir}/read.tokens"}, {},
             ["plugin_opt_http_tls_cert"]),
            ({"http_tls_cert": "{dir}/cert.pem", "http_tls_key": "{dir}/read.tokens"},
             {"cert.pem": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"},
             ["plugin_opt_http_tls_key"]),
            ({"http_tls_cert": "{dir}/read.tokens"}, {},
             ["plugin_opt_http_tls_cert", "plugin_opt_http_tls_key"]),
            # Refused before anything binds: an exposed API needs a token or the explicit choice.
            ({"http_bind": "0.0.0.0", "http_token_file": None, "http_admin_token_file": None}, {},
             ["plugin_opt_http_token_file", "plugin_opt_http_allow_anonymous"]),
        ]
        for options, files, names in cases:
            with self.subTest(options=options):
                self.assert_refused(options, files, *names)


def socket_inodes(pid):
    """The socket inodes among a process's open descriptors."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        match = re.fullmatch(r"socket:\[(\d+)\]", target)
        if match:
            inodes.add(match.group(1))
    return inodes


class IsolationTest(unittest.TestCase):
    def test_companion_gains_no_privileges_and_holds_no_broker_socket(self):
        with Broker() as broker:
            try:
                clients = [Client(broker, f"isolation-{n}") for n in range(3)]
                broker.wait_connections(lambda cs: len(cs) == 3)
                with open(f"/proc/{broker.companion_pid}/status") as f:
                    self.assertRegex(f.read(), r"(?m)^NoNewPrivs:\s+1$")
                broker_sockets = socket_inodes(broker.process.pid)
                # The MQTT listener and the three clients, at least.
                self.assertGreaterEqual(len(broker_sockets), 4)
                companion_sockets = socket_inodes(broker.companion_pid)
                self.assertTrue(companion_sockets)  # its own HTTP listener
                self.assertEqual(broker_sockets & companion_sockets, set())
                # Nothing else of the broker's either: beyond stdin/out/err, only the shared
                # region (a memfd) and what the companion opened itself.
                for fd in os.listdir(f"/proc/{broker.companion_pid}/fd"):
                    try:
                        target = os.readlink(f"/proc/{broker.companion_pid}/fd/{fd}")
                    except OSError:
                        continue
                    if int(fd) <= 2:
                        continue
                    self.assertFalse(target.startswith(broker.dir), (fd, target))
                    self.assertNotIn("mosquitto.db", target)
                disconnect_all(clients)
            finally:
                broker.stop()
                broker.cleanup_dir()



class HttpsTest(unittest.TestCase):
    def test_a_key_of_another_certificate_is_refused_naming_both_options(self):
        folders = [tempfile.mkdtemp(), tempfile.mkdtemp()]
        try:
            cert, _ = make_certificate(folders[0])
            _, other_key = make_certificate(folders[1])
            broker = secured_broker(options={"http_tls_cert": "{dir}/cert.pem",
                                             "http_tls_key": "{dir}/key.pem"},
                                    files={"cert.pem": cert, "key.pem": other_key},
                                    expect_start=False)
            broker.start()
            try:
                self.assertIsNotNone(broker.wait_exit(), "the broker kept running")
                self.assertIn("plugin_opt_http_tls_cert", broker.log())
                self.assertIn("plugin_opt_http_tls_key", broker.log())
                self.assertNotIn("serving on", broker.log())
            finally:
                broker.stop()
                broker.cleanup_dir()
        finally:
            for folder in folders:
                subprocess.run(["rm", "-rf", folder], check=False)

    def test_https_with_tls_1_2_or_later_and_no_plaintext_answer(self):
        folder = tempfile.mkdtemp()
        cert, key = make_certificate(folder)
        broker = secured_broker(options={"http_tls_cert": "{dir}/cert.pem",
                                         "http_tls_key": "{dir}/key.pem"},
                                files={"cert.pem": cert, "key.pem": key})
        with broker:
            try:
                self.assertIn("serving on https://", broker.log())
                context = ssl.create_default_context(cafile=os.path.join(folder, "cert.crt"))
                request = urllib.request.Request(
                    f"https://127.0.0.1:{broker.http_port}/api/mqtt/connections",
                    headers=bearer(READ_TOKEN))
                with urllib.request.urlopen(request, context=context, timeout=10) as response:
                    self.assertEqual(response.status, 200)
                    self.assertFalse(json.loads(response.read())["error"])
                with socket.create_connection(("127.0.0.1", broker.http_port), timeout=10) as raw:
                    with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                        self.assertIn(tls.version(), ("TLSv1.2", "TLSv1.3"))

                # TLS 1.1 and older are refused by the server (the client allows them here).
                old = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                old.check_hostname = False
                old.verify_mode = ssl.CERT_NONE
                old.set_ciphers("ALL:@SECLEVEL=0")
                with warnings.catch_warnings():  # the versions are deprecated: that is the point
                    warnings.simplefilter("ignore", DeprecationWarning)
                    old.minimum_version = ssl.TLSVersion.TLSv1
                    old.maximum_version = ssl.TLSVersion.TLSv1_1
                with socket.create_connection(("127.0.0.1", broker.http_port), timeout=10) as raw:
                    with self.assertRaises((ssl.SSLError, ConnectionError)):
                        old.wrap_socket(raw).close()

                # Plain HTTP on the HTTPS port: no API answer.
                with socket.create_connection(("127.0.0.1", broker.http_port), timeout=15) as raw:
                    raw.sendall(b"GET /api/mqtt/connections HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                b"Authorization: Bearer " + READ_TOKEN.encode() + b"\r\n\r\n")
                    received = b""
                    try:
                        while len(received) < 65536:
                            chunk = raw.recv(4096)
                            if not chunk:
                                break
                            received += chunk
                    except OSError:
                        pass
                    self.assertNotIn(b"connections", received)
                    self.assertNotIn(b"HTTP/1.1 200", received)
            finally:
                broker.stop()
                broker.cleanup_dir()
                subprocess.run(["rm", "-rf", folder], check=False)


if __name__ == "__main__":
    unittest.main()
