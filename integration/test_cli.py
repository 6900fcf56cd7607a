# SPDX-License-Identifier: BSD-3-Clause
"""The command line, cli/mosquitto-connections, against two real brokers at once (each with the
plugin, node_id 1 and 2) and real clients: list (table, wide, json, filter, order, pages,
closed), get, top (also live under tmux), a broker that is down, bad flags, and the
Authorization and HTTPS flags through a TLS-terminating proxy in front of a real broker."""

import http.server
import json
import re
import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.parse
import urllib.request

from harness import Broker, Client, close_reason, disconnect_all, free_port, wait_for

CLI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli",
                   "mosquitto-connections")
HEADER = ["CLIENT-ID", "STATE", "USER", "IP:PORT", "NODE", "PROTO", "OPEN-TIME", "IDLE", "SUBS", "PUB/S",
          "DELIVER/S", "PENDING"]


def run_cli(*args, timeout=60):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout)


def table(text):
    """[{column: cell}] of a table the CLI printed (cells hold no spaces in these tests)."""
    lines = [line for line in text.splitlines() if line.strip()]
    header = lines[0].split()
    rows = [dict(zip(header, line.split())) for line in lines[1:]]
    for cells in rows:
        assert len(cells) == len(header), (header, cells)
    return header, rows


def url(broker):
    return f"http://127.0.0.1:{broker.http_port}"


def node(broker):
    return f"127.0.0.1:{broker.http_port}"


class TwoBrokersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.one = Broker(options={"node_id": "1"})
        cls.two = Broker(options={"node_id": "2"})
        cls.one.start()
        cls.two.start()

    @classmethod
    def tearDownClass(cls):
        for broker in (cls.one, cls.two):
            broker.stop()
            broker.cleanup_dir()

    def setUp(self):
        self.clients = []

    def tearDown(self):
        disconnect_all(self.clients)
        for broker in (self.one, self.two):
            wait_for(lambda: broker.connections() == [], what="no connections left")

    def client(self, broker, *args, **kwargs):
        c = Client(broker, *args, **kwargs)
        self.clients.append(c)
        return c

    def urls(self):
        return ["--url", url(self.one), "--url", url(self.two)]

    def wait_listed(self, broker, client_ids):
        broker.wait_connections(
            lambda cs: set(client_ids) <= {c["client_id"] for c in cs},
            what=f"{client_ids} listed")

    def test_watch_merges_both_brokers_one_json_line_per_change(self):
        process = subprocess.Popen([CLI, "watch", "-o", "json", "--changes-only",
                                    "--filter", 'client_id = "cli-watch-*"', *self.urls()],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = []
        reader = threading.Thread(target=lambda: lines.extend(json.loads(line)
                                                              for line in process.stdout),
                                  daemon=True)
        reader.start()
        try:
            time.sleep(1.5)  # both streams past their current state (left out here)
            one = self.client(self.one, "cli-watch-one")
            two = self.client(self.two, "cli-watch-two")
            one.subscribe("events/a/#", 1)
            wanted = {(node(self.one), "CONNECTION_CHANGE_KIND_OPENED", "cli-watch-one"),
                      (node(self.two), "CONNECTION_CHANGE_KIND_OPENED", "cli-watch-two"),
                      (node(self.one), "CONNECTION_CHANGE_KIND_SUBSCRIBED", "cli-watch-one")}
            seen = wait_for(lambda: wanted <= {(m["node"], m["kind"], m["connection"]["clientId"])
                                               for m in list(lines)} and list(lines),
                            timeout=20, what="both brokers' changes")
            self.assertTrue(all(m["kind"] not in ("CONNECTION_CHANGE_KIND_CURRENT",
                                                  "CONNECTION_CHANGE_KIND_SYNCED") for m in seen))
            subscribed = [m for m in seen if m["kind"].endswith("SUBSCRIBED")]
            self.assertEqual(subscribed[0]["subscription"]["filter"], "events/a/#")
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=10)
            reader.join(10)
            errors = process.stderr.read()
            process.stdout.close()
            process.stderr.close()
        self.assertEqual(process.returncode, 0, errors)

    def test_list_merges_both_brokers_with_a_node_column(self):
        a = self.client(self.one, "cli-a", username="alice")
        a.subscribe("events/site1/#", 1)
        a.subscribe("queues/jobs", 1)
        b = self.client(self.two, "cli-b", version=5)
        self.wait_listed(self.one, ["cli-a"])
        self.wait_listed(self.two, ["cli-b"])
        result = run_cli("list", *self.urls())
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr, "")
        # Flags before the command count too, also joined with those after it.
        before = run_cli("--url", url(self.one), "list", "--url", url(self.two))
        self.assertEqual(before.returncode, 0, before.stderr)
        self.assertEqual(sorted((r["CLIENT-ID"], r["NODE"]) for r in table(before.stdout)[1]),
                         sorted((r["CLIENT-ID"], r["NODE"]) for r in table(result.stdout)[1]))
        header, rows = table(result.stdout)
        self.assertEqual(header, HEADER)
        by_id = {r["CLIENT-ID"]: r for r in rows}
        self.assertEqual(set(by_id), {"cli-a", "cli-b"})
        self.assertEqual(by_id["cli-a"]["NODE"], node(self.one))
        self.assertEqual(by_id["cli-b"]["NODE"], node(self.two))
        self.assertEqual(by_id["cli-a"]["USER"], "alice")
        self.assertEqual(by_id["cli-b"]["USER"], "-")
        self.assertEqual(by_id["cli-a"]["IP:PORT"], f"127.0.0.1:{a.local_port}")
        self.assertEqual(by_id["cli-b"]["IP:PORT"], f"127.0.0.1:{b.local_port}")
        self.assertEqual(by_id["cli-a"]["PROTO"], "3.1.1")
        self.assertEqual(by_id["cli-b"]["PROTO"], "5.0")
        self.assertEqual(by_id["cli-a"]["SUBS"], "2")
        self.assertEqual(by_id["cli-b"]["SUBS"], "0")
        print("\n" + result.stdout)  # the README's sample comes from this output

    def test_json_output_is_the_api_message_with_the_node(self):
        self.client(self.one, "cli-json-a")
        self.client(self.two, "cli-json-b")
        self.wait_listed(self.one, ["cli-json-a"])
        self.wait_listed(self.two, ["cli-json-b"])
        result = run_cli("list", "--output", "json", *self.urls())
        self.assertEqual(result.returncode, 0, result.stderr)
        document = json.loads(result.stdout)
        self.assertEqual(document["failedNodes"], [])
        got = {c["clientId"]: c for c in document["connections"]}
        self.assertEqual(set(got), {"cli-json-a", "cli-json-b"})
        self.assertEqual(got["cli-json-a"]["node"], node(self.one))
        self.assertEqual(got["cli-json-a"]["nodeId"], 1)
        self.assertEqual(got["cli-json-b"]["nodeId"], 2)
        # Everything but the added node is what the API answers (idle time moves on).
        api = self.api_connection(self.one, "cli-json-a")
        for key in ("uid", "openTime", "source", "tlsInfo", "authenticationInfo",
                    "subscriptions", "protocolVersion", "keepAlive"):
            self.assertEqual(got["cli-json-a"][key], api[key], key)

    def api_connection(self, broker, client_id):
        status, _, body = broker.http(
            "/mqtt.connections.v1.ConnectionsService/ListConnections", method="POST",
            body=json.dumps({"filter": f'client_id = "{client_id}"'}).encode(),
            headers={"Content-Type": "application/json", "Connect-Protocol-Version": "1"})
        self.assertEqual(status, 200, body)
        connections = json.loads(body)["connections"]
        self.assertEqual(len(connections), 1, connections)
        return connections[0]

    def test_wide_filter_order_and_pages(self):
        for n in range(5):
            self.client(self.one, f"cli-page-{n}")
        self.client(self.one, "cli-other")
        self.wait_listed(self.one, [f"cli-page-{n}" for n in range(5)] + ["cli-other"])
        # Page size 2: three requests, every row still listed, in the broker's order.
        result = run_cli("list", "--url", url(self.one), "--filter", 'client_id = "cli-page-*"',
                         "--order-by", "client_id desc", "--page-size", "2", "--output", "wide")
        self.assertEqual(result.returncode, 0, result.stderr)
        header, rows = table(result.stdout)
        self.assertEqual(header[:len(HEADER)], HEADER)
        self.assertIn("UID", header)
        for column in ("QUEUED", "INFLIGHT", "IN-PENDING", "DROPPED"):
            self.assertIn(column, header)
        self.assertEqual([r["CLIENT-ID"] for r in rows],
                         [f"cli-page-{n}" for n in range(4, -1, -1)])
        self.assertEqual(rows[0]["UID"], self.api_connection(self.one, "cli-page-4")["uid"])
        self.assertEqual({r["STATE"] for r in rows}, {"OPEN"})
        self.assertEqual({r["NODE-ID"] for r in rows}, {"1"})
        # No ACL source refuses anything here, and this broker shows denials: none, counted.
        self.assertEqual({r["DENIED"] for r in rows}, {"0/0"})

    def test_an_or_in_the_filter_keeps_the_state_clause_and_errors_point_into_it(self):
        self.client(self.two, "cli-or-open")
        gone = self.client(self.two, "cli-or-closed")
        self.wait_listed(self.two, ["cli-or-open", "cli-or-closed"])
        gone.disconnect()
        self.two.wait_connections(lambda cs: "cli-or-closed" not in {c["client_id"] for c in cs},
                                  what="cli-or-closed gone")
        either = 'client_id = "cli-or-closed" OR client_id IN ("cli-or-open")'
        result = run_cli("list", "--url", url(self.two), "--filter", either)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual([r["CLIENT-ID"] for r in table(result.stdout)[1]], ["cli-or-open"])
        result = run_cli("list", "--url", url(self.two), "--closed", "--filter", either,
                         "--order-by", "client_id")
        self.assertEqual([r["CLIENT-ID"] for r in table(result.stdout)[1]],
                         ["cli-or-closed", "cli-or-open"])
        # The error is the one of what the user wrote (18 characters: the end is position 19).
        result = run_cli("list", "--url", url(self.two), "--filter", 'client_id = "x" OR')
        self.assertEqual(result.returncode, 1)
        self.assertIn("HTTP 400: invalid_argument: Expected a field name after OR, got end of "
                      "filter at position 19", result.stderr)

    def test_closed_lists_recently_closed_connections_with_their_reason(self):
        gone = self.client(self.two, "cli-closed")
        self.wait_listed(self.two, ["cli-closed"])
        gone.disconnect()
        self.two.wait_connections(lambda cs: "cli-closed" not in {c["client_id"] for c in cs},
                                  what="cli-closed gone")
        result = run_cli("list", "--url", url(self.two), "--filter", 'client_id = "cli-closed"')
        self.assertEqual(table(result.stdout)[1], [])
        result = run_cli("list", "--url", url(self.two), "--closed", "--output", "wide",
                         "--filter", 'client_id = "cli-closed"')
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = table(result.stdout)[1]
        self.assertEqual(len(rows), 1, result.stdout)
        self.assertEqual(rows[0]["STATE"], "CLOSED")
        self.assertEqual(rows[0]["CLOSE-REASON"], close_reason("CLIENT_DISCONNECT"))

    def test_get_prints_every_field(self):
        c = self.client(self.two, "cli-get", username="bob")
        c.subscribe("$share/workers/queues/jobs/email", 1)
        # The registry learns of the subscription a moment after the SUBACK: wait for it, so
        # that the figures below do not move between the API's answer and the command's.
        self.two.wait_connections(
            lambda cs: any(x["client_id"] == "cli-get" and x["subscriptions"] for x in cs),
            what="cli-get listed with its subscription")
        api = self.api_connection(self.two, "cli-get")
        result = run_cli("get", "cli-get", *self.urls())
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        self.assertEqual(lines[0], f"node: {node(self.two)}")

        def leaves(value, prefix=""):
            for key, item in value.items():
                if isinstance(item, dict):
                    yield from leaves(item, prefix + key + ".")
                elif isinstance(item, list):
                    for element in item:
                        yield from leaves(element, prefix + key + ".")
                else:
                    yield key, item

        text = result.stdout
        # The kernel's figures move on between the two requests.
        volatile = {"idleDuration", "rttMicros", "rttVarianceMicros", "retransmits",
                    "sendQueueBytes", "receiveQueueBytes", "sinceLastReceive", "sinceLastSend"}
        for key, value in leaves(api):
            if key in volatile:
                continue
            shown = json.dumps(value) if isinstance(value, bool) else str(value)
            self.assertRegex(text, rf"(?m)^\s*{key}: {re.escape(shown)}$", key)
        result = run_cli("get", "cli-get", "--output", "json", *self.urls())
        got = json.loads(result.stdout)
        self.assertEqual(len(got), 1)
        self.assertEqual(got[0]["uid"], api["uid"])
        self.assertEqual(got[0]["node"], node(self.two))

    def test_brokers_of_a_broker_without_peers_is_that_broker(self):
        self.client(self.one, "cli-brokers-a")
        self.client(self.one, "cli-brokers-b")
        self.wait_listed(self.one, ["cli-brokers-a", "cli-brokers-b"])
        result = run_cli("brokers", "--url", url(self.one), "--filter",
                         'client_id = "cli-brokers-*"')
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual([line.split() for line in result.stdout.splitlines()],
                         [["NODE", "BROKER", "CONNECTIONS", "ANSWER", "STATUS"],
                          ["node", "1", url(self.one), "(this", "broker)", "2", "-",
                           "answered"]])
        self.assertIn(": 1 of 1 brokers answered, 2 connections", result.stderr)
        result = run_cli("brokers", *self.urls())
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("give one --url", result.stderr)

    def test_get_unknown_client(self):
        result = run_cli("get", "no-such-client", *self.urls())
        self.assertEqual(result.returncode, 1)
        self.assertIn('no open connection with client id "no-such-client"', result.stderr)

    def test_top_sorts_by_message_rate(self):
        self.client(self.one, "cli-top-quiet")
        reader = self.client(self.two, "cli-top-reader")
        reader.subscribe("top/#", 0)
        loud = self.client(self.two, "cli-top-loud")
        self.wait_listed(self.one, ["cli-top-quiet"])
        self.wait_listed(self.two, ["cli-top-reader", "cli-top-loud"])
        stop = threading.Event()

        def publish():
            for _ in range(20000):  # bounded: about 200 s at most
                if stop.is_set():
                    return
                loud.publish("top/x", b"payload")
                time.sleep(0.01)

        publisher = threading.Thread(target=publish)
        publisher.start()
        try:
            result = run_cli("top", "--iterations", "2", "--interval", "1", *self.urls())
        finally:
            stop.set()
            publisher.join(timeout=10)
        self.assertEqual(result.returncode, 0, result.stderr)
        frames = [f for f in result.stdout.split("mosquitto-connections top")[1:]]
        self.assertEqual(len(frames), 2, result.stdout)
        for frame in frames:
            header, rows = table("\n".join(frame.splitlines()[2:]))
            self.assertEqual(header, HEADER)
            by_id = {r["CLIENT-ID"]: r for r in rows}
            self.assertEqual(set(by_id), {"cli-top-quiet", "cli-top-reader", "cli-top-loud"})
            self.assertEqual(by_id["cli-top-quiet"]["NODE"], node(self.one))
            self.assertGreater(float(by_id["cli-top-loud"]["PUB/S"]), 0)
            self.assertGreater(float(by_id["cli-top-reader"]["DELIVER/S"]), 0)
            self.assertEqual(by_id["cli-top-quiet"]["PUB/S"], "0.0")
            self.assertEqual(rows[-1]["CLIENT-ID"], "cli-top-quiet")  # the slowest last
        result = run_cli("top", "--once", "--interval", "0.2", "--url", url(self.one))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.count("mosquitto-connections top"), 1)
        self.assertNotIn("\033[", result.stdout)  # no screen control codes when not live

    def test_one_broker_down_is_reported_and_the_other_still_listed(self):
        self.client(self.one, "cli-survivor")
        self.wait_listed(self.one, ["cli-survivor"])
        down = f"http://127.0.0.1:{free_port()}"  # nothing listens there
        for command in (["list"], ["top", "--once", "--interval", "0.2"]):
            result = run_cli(*command, "--url", down, "--url", url(self.one))
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn(f"cannot reach {down}", result.stderr)
            self.assertIn("cli-survivor", result.stdout)
        for command in (["list"], ["list", "-o", "json"], ["get", "x"],
                        ["top", "--once", "--interval", "0.2"]):
            result = run_cli(*command, "--url", down)
            self.assertEqual(result.returncode, 1, command)
            self.assertIn(f"cannot reach {down}", result.stderr)
            self.assertEqual(result.stdout, "", command)
        # An API error (here a bad filter) is reported with the server's message.
        result = run_cli("list", "--url", url(self.one), "--filter", "nonsense = 1")
        self.assertEqual(result.returncode, 1)
        self.assertIn("HTTP 400: invalid_argument", result.stderr)
        self.assertIn("nonsense", result.stderr)

    def test_bad_flags_are_refused_naming_the_flag(self):
        missing = os.path.join(tempfile.gettempdir(), "mqc-no-such-token-file")
        cases = [
            (["list", "--output", "xml"], "--output"),
            (["list", "--page-size", "0"], "--page-size"),
            (["list", "--page-size", "10001"], "--page-size"),
            (["list", "--page-size", "ten"], "--page-size"),
            (["list", "--url", "ftp://127.0.0.1:1"], "--url"),
            (["list", "--url", "http://127.0.0.1:8080/api"], "--url"),
            (["list", "--token-file", missing], "--token-file"),
            (["list", "--cacert", missing], "--cacert"),
            (["list", "--timeout", "-1"], "--timeout"),
            (["top", "--interval", "0"], "--interval"),
            (["top", "--iterations", "0"], "--iterations"),
            (["top", "--once", "--iterations", "2"], "--once"),
            (["get", "--output", "wide", "x"], "--output"),
            (["list", "--no-such-flag"], "--no-such-flag"),
            (["get"], "CLIENT_ID"),
            (["disconnect"], "CLIENT_ID"),
            (["disconnect", "--token-file", missing, "x"], "--token-file"),
            ([], "COMMAND"),
        ]
        for args, named in cases:
            with self.subTest(args=args):
                result = run_cli(*args)
                self.assertEqual(result.returncode, 2, result)
                self.assertIn(named, result.stderr)
                self.assertEqual(result.stdout, "")


class TlsProxy:
    """HTTPS on a free loopback port, with a certificate signed by a fresh test CA, forwarding
    every request to a real broker's HTTP API and recording the Authorization headers seen."""

    def __init__(self, target_port):
        self.dir = tempfile.mkdtemp(prefix="mqc-cli-tls-")
        self.authorizations = []
        ca_key, ca_cert = self.path("ca.key"), self.path("ca.pem")
        key, csr, cert = self.path("server.key"), self.path("server.csr"), self.path("server.pem")
        openssl = ["openssl"]
        subprocess.run(openssl + ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                                  "-subj", "/CN=mqc test CA", "-keyout", ca_key, "-out", ca_cert],
                       check=True, capture_output=True)
        subprocess.run(openssl + ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
                                  "-keyout", key, "-out", csr], check=True, capture_output=True)
        with open(self.path("ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\n")
        subprocess.run(openssl + ["x509", "-req", "-in", csr, "-CA", ca_cert, "-CAkey", ca_key,
                                  "-CAcreateserial", "-days", "1", "-extfile", self.path("ext"),
                                  "-out", cert], check=True, capture_output=True)
        self.ca = ca_cert
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                proxy.authorizations.append(self.headers.get("Authorization"))
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                request = urllib.request.Request(
                    f"http://127.0.0.1:{target_port}{self.path}", data=body, method="POST",
                    headers={k: v for k, v in self.headers.items()
                             if k.lower() in ("content-type", "connect-protocol-version")})
                with urllib.request.urlopen(request, timeout=10) as response:
                    answer = response.read()
                    self.send_response(response.status)
                    self.send_header("Content-Type", response.headers["Content-Type"])
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever)
        self.thread.start()

    def path(self, name):
        return os.path.join(self.dir, name)

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


class TokenAndHttpsTest(unittest.TestCase):
    def test_token_file_and_cacert(self):
        with Broker() as broker:
            proxy = TlsProxy(broker.http_port)
            client = Client(broker, "cli-https")
            try:
                broker.wait_connections(lambda cs: cs, what="cli-https listed")
                token_file = proxy.path("token")
                with open(token_file, "w") as f:
                    f.write("# read token for the CLI\n\n  s3cret-token  \n")
                https = f"https://127.0.0.1:{proxy.port}"
                result = run_cli("list", "--url", https, "--cacert", proxy.ca,
                                 "--token-file", token_file)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertIn("cli-https", result.stdout)
                self.assertEqual(proxy.authorizations, ["Bearer s3cret-token"])
                # Without the CA the certificate is refused, and no request gets through.
                result = run_cli("list", "--url", https)
                self.assertEqual(result.returncode, 1)
                self.assertIn("CERTIFICATE_VERIFY_FAILED", result.stderr)
                self.assertEqual(len(proxy.authorizations), 1)
                # Without a token file no Authorization header is sent.
                result = run_cli("list", "--url", https, "--cacert", proxy.ca)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(proxy.authorizations[-1], None)
                empty = proxy.path("empty-token")
                with open(empty, "w") as f:
                    f.write("# nothing\n")
                result = run_cli("list", "--url", https, "--token-file", empty)
                self.assertEqual(result.returncode, 2)
                self.assertIn("--token-file", result.stderr)
            finally:
                client.disconnect()
                proxy.close()
                broker.cleanup_dir()


READ_TOKEN = "cli-read-token-1"
ADMIN_TOKEN = "cli-admin-token-1"


class DisconnectTest(unittest.TestCase):
    """`disconnect CLIENT_ID`: DELETE /api/mqtt/connections/{client_id} with the admin token."""

    def test_disconnect_needs_the_admin_token_and_names_what_happened(self):
        with Broker(files={"tokens": f"{READ_TOKEN}\n", "admin": f"{ADMIN_TOKEN}\n"},
                    plugin_after="plugin_opt_http_token_file {dir}/tokens\n"
                                 "plugin_opt_http_admin_token_file {dir}/admin") as broker:
            folder = tempfile.mkdtemp(prefix="mqc-cli-tokens-")
            client = Client(broker, "cli-victim #1")  # a client id that needs escaping in a URL
            try:
                read, admin = os.path.join(folder, "read"), os.path.join(folder, "admin")
                for path, token in ((read, READ_TOKEN), (admin, ADMIN_TOKEN)):
                    with open(path, "w") as f:
                        f.write(f"# token\n{token}\n")
                target = ["disconnect", "cli-victim #1", "--url", url(broker)]

                def refusal(client_id, token):
                    """The server's own refusal of this DELETE: (status, error_string)."""
                    status, _, body = broker.http(
                        "/api/mqtt/connections/" + urllib.parse.quote(client_id, safe=""),
                        "DELETE", headers={"Authorization": f"Bearer {token}"} if token else {})
                    return status, json.loads(body)["error_string"]

                # No token: 401; a read token: 403; an unknown client: 404. Each exits 1 with
                # the server's message, and the client stays connected.
                for token_file, client_id, token, status in (
                        (None, "cli-victim #1", None, 401),
                        (read, "cli-victim #1", READ_TOKEN, 403),
                        (admin, "cli-nobody", ADMIN_TOKEN, 404)):
                    with self.subTest(status=status):
                        expected = refusal(client_id, token)
                        self.assertEqual(expected[0], status)
                        result = run_cli("disconnect", client_id, "--url", url(broker),
                                         *(["--token-file", token_file] if token_file else []))
                        self.assertEqual(result.returncode, 1, result)
                        self.assertEqual(result.stdout, "")
                        self.assertEqual(result.stderr, f"mosquitto-connections: {node(broker)}: "
                                                        f"HTTP {status}: {expected[1]}\n")
                listed = run_cli("get", "cli-victim #1", "--url", url(broker), "-o", "json",
                                 "--token-file", read)
                self.assertEqual(listed.returncode, 0, listed.stderr)
                self.assertEqual([c["state"] for c in json.loads(listed.stdout)],
                                 ["MQTT_CONNECTION_STATE_OPEN"])
                # The admin token disconnects it: KICKED.
                result = run_cli(*target, "--token-file", admin)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(result.stdout,
                                 f'{node(broker)}: disconnected client "cli-victim #1"\n')

                def close_reason():  # of its closed connections (paho may connect again)
                    answer = run_cli("get", "cli-victim #1", "--closed", "-o", "json",
                                     "--url", url(broker), "--token-file", read)
                    return [c.get("closeReason") for c in json.loads(answer.stdout or "[]")
                            if c["state"] == "MQTT_CONNECTION_STATE_CLOSED"]

                wait_for(lambda: close_reason() == ["KICKED"], what="the client closed, KICKED")
            finally:
                client.client.loop_stop()
                shutil.rmtree(folder, ignore_errors=True)
                broker.cleanup_dir()


class TmuxSession:
    """A command in a detached tmux session of 160 x 30 (TERM=xterm), on a tmux server of its
    own: what a user at a terminal sees of it, and Ctrl-C."""

    def __init__(self, name):
        self.name = name
        self.tmux = ["tmux", "-L", f"mqc-cli-{name}-{os.getpid()}", "-f", "/dev/null"]

    def start(self, command):
        subprocess.run(self.tmux + ["new-session", "-d", "-s", self.name, "-x", "160", "-y", "30",
                                    command],
                       check=True, env=dict(os.environ, TERM="xterm"), timeout=30)

    def screen(self):
        return subprocess.run(self.tmux + ["capture-pane", "-p", "-t", self.name],
                              capture_output=True, text=True, timeout=30).stdout

    def interrupt(self):
        """Ctrl-C, then waits for the command, and so the session, to end."""
        subprocess.run(self.tmux + ["send-keys", "-t", self.name, "C-c"], check=True, timeout=30)
        wait_for(lambda: subprocess.run(self.tmux + ["has-session", "-t", self.name],
                                        capture_output=True).returncode != 0,
                 timeout=30, what=f"{self.name} to exit on Ctrl-C")

    def kill_server(self):
        subprocess.run(self.tmux + ["kill-server"], capture_output=True, timeout=30)


@unittest.skipUnless(shutil.which("tmux"), "tmux is not installed")
class TopUnderTmuxTest(unittest.TestCase):
    def test_live_view_redraws_and_quits_on_ctrl_c(self):
        with Broker() as broker:
            client = Client(broker, "cli-tmux-client")
            session = TmuxSession("top")
            try:
                broker.wait_connections(lambda cs: cs, what="cli-tmux-client listed")
                session.start(f"{CLI} top --interval 0.5 --url {url(broker)}")

                def screen_with_client():
                    text = session.screen()
                    return text if "cli-tmux-client" in text else None

                first = wait_for(screen_with_client, timeout=30, what="the client in top's screen")
                self.assertTrue(first.startswith("mosquitto-connections top"), first)
                self.assertEqual(first.count("mosquitto-connections top"), 1)  # redrawn in place
                self.assertIn("CLIENT-ID", first)
                header = first.splitlines()[0]
                # Redrawn: the clock in the header line moves on.
                wait_for(lambda: session.screen().splitlines()[0] != header, timeout=30,
                         what="top to redraw")
                session.interrupt()
            finally:
                session.kill_server()
                client.disconnect()
                broker.cleanup_dir()

    def test_watch_prints_a_line_per_change_and_quits_on_ctrl_c(self):
        with Broker() as broker:
            session = TmuxSession("watch")
            try:
                session.start(f"{CLI} watch --url {url(broker)}")
                time.sleep(1.5)  # the stream past its (empty) current state
                client = Client(broker, "cli-watch-tmux")
                client.subscribe("commands/#", 1)
                client.disconnect()
                text = wait_for(lambda: (lambda t: t if " CLOSED cli-watch-tmux" in t else None)(
                    session.screen()), timeout=20, what="the CLOSED line")
                lines = [line for line in text.splitlines() if "cli-watch-tmux" in line]
                self.assertEqual([line.split()[2] for line in lines],
                                 ["OPENED", "SUBSCRIBED", "CLOSED"], text)
                self.assertIn(node(broker), lines[0])
                self.assertIn("commands/# qos=1", lines[1])
                self.assertIn(close_reason("CLIENT_DISCONNECT"), lines[2])
                session.interrupt()
            finally:
                session.kill_server()
                broker.cleanup_dir()


if __name__ == "__main__":
    unittest.main()


def load_cli():
    """cli/mosquitto-connections as a module, for its tables without a broker."""
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader("mosquitto_connections_cli", CLI)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


class ReadmeSamplesTest(unittest.TestCase):
    def test_the_readmes_list_samples_have_the_columns_the_cli_prints(self):
        """Each `list` table in the README has the header the CLI prints and a cell per column
        in each row, so that a new column cannot leave the samples behind."""
        columns = load_cli().COLUMNS
        self.assertEqual(columns, HEADER)
        readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")
        with open(readme) as f:
            lines = f.read().splitlines()
        tables = 0
        for number, line in enumerate(lines):
            if not line.startswith("CLIENT-ID "):
                continue
            tables += 1
            self.assertEqual(line.split(), columns, f"README.md line {number + 1}")
            for row in lines[number + 1:]:
                if not row.strip() or row.startswith(("$", "```")):
                    break
                self.assertEqual(len(row.split()), len(columns), f"README.md: {row}")
        self.assertGreaterEqual(tables, 3)


class ManualPageTest(unittest.TestCase):
    def test_the_manual_page_names_every_command_and_option(self):
        """cli/mosquitto-connections.1.in (the .deb's and `cmake --install`'s manual page) has a
        line for each command and each option string of the program's parser."""
        import argparse
        page_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli",
                                 "mosquitto-connections.1.in")
        with open(page_path) as f:
            page = f.read().replace("\\-", "-")  # roff's minus signs as the program spells them
        parser = load_cli().build_parser()
        names = set()

        def collect(parser):
            for action in parser._actions:
                names.update(action.option_strings)
                if isinstance(action, argparse._SubParsersAction):
                    for command, subparser in action.choices.items():
                        names.add(command)
                        collect(subparser)
        collect(parser)
        self.assertGreater(len(names), 20)
        for name in sorted(names):
            pattern = r"(?m)^\.(B|BR|BI|TP)\b.*(?<![\w-])" + re.escape(name) + r"(?![\w-])"
            self.assertTrue(re.search(pattern, page), f"{name} is not in {page_path}")


class TopPinningTest(unittest.TestCase):
    """top's order without a broker: each server's top-clients metric first, in its order, then
    the rest by the rate measured between the two samples (the real broker's figures:
    test_top_clients)."""

    @classmethod
    def setUpClass(cls):
        cls.cli = load_cli()

    def frame_order(self, top, sort="rate", held=None):
        class Node:
            def __init__(self, node):
                self.node = node

        one, two = Node("one:1"), Node("two:2")

        def connection(client_id, publishes):
            return dict({"uid": client_id, "clientId": client_id,
                         "state": "MQTT_CONNECTION_STATE_OPEN",
                         "totalRequestStatistics": {"publishCount": str(publishes)}},
                        **(held or {}).get(client_id, {}))
        first = {(b.node, c): (b, connection(c, 0)) for b, c in
                 ((one, "a"), (one, "b"), (one, "c"), (two, "d"))}
        publishes = {"a": 50, "b": 5, "c": 0, "d": 20}
        second = {(b.node, c): (b, connection(c, publishes[c])) for b, c in
                  ((one, "a"), (one, "b"), (one, "c"), (two, "d"))}
        text = self.cli.top_frame(first, 0.0, second, 1.0, [], 100, top, sort)
        return [line.split()[0] for line in text.splitlines()[3:] if line.strip()]

    def test_sort_by_the_messages_the_broker_holds(self):
        # The slow consumer first whatever its rate; a client whose count is unknown (closed,
        # a layout not verified, queued on 2.0.11) last; the top-clients metric pins nothing.
        held = {"a": {"messagesPending": 0, "messagesQueued": 0},
                "b": {"messagesPending": 7, "messagesQueued": 5},
                "c": {"messagesPending": 900, "messagesQueued": 880},
                "d": {"messagesPending": 40}}
        self.assertEqual(self.frame_order({}, "pending", held), ["c", "d", "b", "a"])
        self.assertEqual(self.frame_order({"one:1": ["a"]}, "queued", held),
                         ["c", "b", "a", "d"])

    def test_the_servers_top_clients_come_first_then_the_live_rate(self):
        self.assertEqual(self.frame_order({}), ["a", "d", "b", "c"])
        self.assertEqual(self.frame_order({"one:1": ["c", "b"]}), ["c", "b", "a", "d"])
        self.assertEqual(self.frame_order({"one:1": ["c"], "two:2": ["d"]}),
                         ["c", "d", "a", "b"])

    def test_top_clients_are_read_from_the_metric_with_escapes(self):
        text = ('# TYPE kubemq_mqtt_top_client_messages_per_second gauge\n'
                'kubemq_mqtt_top_client_messages_per_second{client_id="q\\"}",'
                'direction="deliver"} 2\n'
                'kubemq_mqtt_top_client_messages_per_second{client_id="q\\"}",'
                'direction="publish"} 1\n'
                'kubemq_mqtt_top_client_messages_per_second{client_id="b",direction="publish"} 10\n'
                'kubemq_mqtt_top_client_messages_per_second{client_id="a",direction="publish"} 3\n')

        class Fake(self.cli.Broker):
            def __init__(self):
                pass

            def metrics(self):
                return text
        self.assertEqual(Fake().top_clients(), ["b", "a", 'q"}'])
