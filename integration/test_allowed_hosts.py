# SPDX-License-Identifier: BSD-3-Clause
"""The Host check against DNS rebinding (README, Security; plugin_opt_http_allowed_hosts), against
the real broker: a forged Host is refused on every path before anything else, with or without
tokens, in the format of the path; the names and addresses the server is reached by are served;
bad values of the option stop the start naming it; and in Debian's headless Chromium a page whose
name is re-pointed to this machine cannot read the list through the browser (while the same page
can, in a control run, once its name is listed)."""

import http.client
import json
import os
import re
import select
import socket
import threading
import time
import unittest

import browser
from harness import Broker, Client, disconnect_all, wait_for
from test_reload import reload_broker, rewrite_config

OPTION = "plugin_opt_http_allowed_hosts"
CLIENT_ID = "rebinding-victim-7f3a"
LIST_RPC = "/mqtt.connections.v1.ConnectionsService/ListConnections"
RPC_HEADERS = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
READ_TOKEN = "read-token-0123456789abcdef"

# Every path the server has, and some it has not, with the format its errors come in.
PATHS = [
    ("GET", "/api/mqtt/connections", None, "kubemq"),
    ("HEAD", "/api/mqtt/connections", None, "none"),
    ("POST", "/api/mqtt/connections", b"", "kubemq"),  # otherwise 405
    ("PUT", "/api/mqtt/connections", b"", "kubemq"),  # answered at the headers
    ("OPTIONS", "/api/mqtt/connections", None, "kubemq"),
    ("DELETE", f"/api/mqtt/connections/{CLIENT_ID}", None, "kubemq"),
    ("GET", "/nothing-here", None, "kubemq"),  # otherwise 404
    ("GET", "/", None, "kubemq"),
    ("GET", "/console.js", None, "kubemq"),
    ("GET", "/console.css", None, "kubemq"),
    ("GET", "/api/openapi.json", None, "kubemq"),
    ("GET", "/metrics", None, "text"),
    ("POST", LIST_RPC, b"{}", "connect"),
    ("GET", LIST_RPC + "?connect=v1&encoding=json&message=%7B%7D", None, "connect"),
    ("POST", "/mqtt.connections.v1.ConnectionsService/DisconnectConnection",
     json.dumps({"clientId": CLIENT_ID}).encode(), "connect"),
    ("POST", "/mqtt.connections.v1.ConnectionsService/NoSuchMethod", b"{}", "connect"),
]


def request(port, method, path, host, body=None, headers=None):
    """(status, headers, body) of one request whose Host header is `host`, exactly."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        all_headers = {"Host": host}
        if path.startswith("/mqtt."):
            all_headers.update(RPC_HEADERS)
        all_headers.update(headers or {})
        connection.request(method, path, body=body, headers=all_headers)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode()
    finally:
        connection.close()


def raw_request(port, data):
    """The status line's code and the rest of the answer of raw request bytes."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        answer = b""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
            if b"\r\n\r\n" in answer:
                head, _, rest = answer.partition(b"\r\n\r\n")
                length = re.search(rb"(?i)content-length: *(\d+)", head)
                if length and len(rest) >= int(length.group(1)):
                    break
    status = int(answer.split(b" ", 2)[1])
    return status, answer.decode("utf-8", "replace")


def assert_format(test, status, headers, body, fmt, words):
    if fmt == "none":
        return
    for word in words:
        test.assertIn(word, body)
    if fmt == "kubemq":
        test.assertEqual(headers.get("Content-Type"), "application/json")
        document = json.loads(body)
        test.assertIs(document["error"], True)
        test.assertIsNone(document["data"])
    elif fmt == "connect":
        test.assertEqual(headers.get("Content-Type"), "application/json")
        test.assertEqual(json.loads(body)["code"],
                         "permission_denied" if status == 421 else "invalid_argument")
    else:
        test.assertTrue(headers.get("Content-Type", "").startswith("text/plain"), headers)


class DefaultHostsTest(unittest.TestCase):
    """The default set-up (loopback, no tokens, no option): loopback names only."""

    @classmethod
    def setUpClass(cls):
        cls.broker = Broker()
        cls.broker.start()
        cls.client = Client(cls.broker, CLIENT_ID)
        cls.client.connect()
        cls.broker.wait_connections(lambda c: any(x["client_id"] == CLIENT_ID for x in c))

    @classmethod
    def tearDownClass(cls):
        disconnect_all([cls.client])
        cls.broker.stop()
        cls.broker.cleanup_dir()

    def test_a_forged_host_is_421_on_every_path_and_reveals_nothing(self):
        port = self.broker.http_port
        for host in ("attacker.example", f"attacker.example:{port}", "ATTACKER.example.",
                     f"localhost.attacker.example:{port}", "10.11.12.13", "[2001:db8::1]:80"):
            for method, path, body, fmt in PATHS:
                with self.subTest(host=host, method=method, path=path):
                    status, headers, text = request(port, method, path, host, body)
                    self.assertEqual(status, 421, text)
                    self.assertNotIn(CLIENT_ID, text)
                    self.assertNotIn("kubemq_mqtt_connections", text)
                    assert_format(self, status, headers, text, fmt, [OPTION, "is not a host"])
        # The client is still connected: the forged DELETE and DisconnectConnection did nothing.
        self.assertTrue(any(c["client_id"] == CLIENT_ID for c in self.broker.connections()))

    def test_loopback_names_and_addresses_are_served_on_any_port(self):
        port = self.broker.http_port
        for host in ("localhost", f"localhost:{port}", f"LocalHost.:{port}",
                     f"console.localhost:{port}", f"127.0.0.1:{port}", "127.0.0.1",
                     f"127.1.2.3:{port}", f"[::1]:{port}", "[::ffff:127.0.0.1]:1"):
            with self.subTest(host=host):
                status, _, text = request(port, "GET", "/api/mqtt/connections", host)
                self.assertEqual(status, 200, text)
                self.assertIn(CLIENT_ID, text)
                status, _, text = request(port, "POST", LIST_RPC, host, b"{}")
                self.assertEqual(status, 200, text)
                self.assertIn(CLIENT_ID, text)
                status, _, text = request(port, "GET", "/metrics", host)
                self.assertEqual(status, 200, text)

    def test_malformed_host_is_400_naming_the_option(self):
        port = self.broker.http_port
        for host in ("127.1", f"127.1:{port}", "0x7f.0.0.1", "::1", "localhost:http",
                     "a..example", "x" * 300):
            for method, path, body, fmt in PATHS:
                with self.subTest(host=host[:20], method=method, path=path):
                    status, headers, text = request(port, method, path, host, body)
                    self.assertEqual(status, 400, text)
                    self.assertNotIn(CLIENT_ID, text)
                    assert_format(self, status, headers, text, fmt, [OPTION])
                    self.assertLess(len(text), 600)  # the echoed host is cut short

    def test_missing_or_repeated_host(self):
        port = self.broker.http_port
        # HTTP/1.1 requires Host (RFC 9112 section 3.2): 400.
        status, answer = raw_request(port, b"GET /api/mqtt/connections HTTP/1.1\r\n"
                                           b"Connection: close\r\n\r\n")
        self.assertEqual(status, 400, answer)
        self.assertNotIn(CLIENT_ID, answer)
        # HTTP/1.0 has no Host: served (no browser sends such a request).
        status, answer = raw_request(port, b"GET /api/mqtt/connections HTTP/1.0\r\n\r\n")
        self.assertEqual(status, 200, answer)
        self.assertIn(CLIENT_ID, answer)
        # HTTP/1.0 with a foreign Host is checked like any other.
        status, answer = raw_request(port, b"GET /api/mqtt/connections HTTP/1.0\r\n"
                                           b"Host: attacker.example\r\n\r\n")
        self.assertEqual(status, 421, answer)
        # Two Host headers: 400, whichever comes first.
        for first, second in (("localhost", "attacker.example"), ("attacker.example", "localhost")):
            status, answer = raw_request(
                port, f"GET /api/mqtt/connections HTTP/1.1\r\nHost: {first}\r\nHost: {second}\r\n"
                      f"Connection: close\r\n\r\n".encode())
            self.assertEqual(status, 400, answer)
            self.assertNotIn(CLIENT_ID, answer)
        # A control character in Host comes back as '?', in a line of its own.
        status, answer = raw_request(port, b"GET /metrics HTTP/1.1\r\nHost: evil\x01\x7f.example"
                                           b"\r\nConnection: close\r\n\r\n")
        self.assertEqual(status, 400, answer)
        self.assertIn("Host 'evil??.example'", answer)

    def test_refusals_are_counted_by_status(self):
        port = self.broker.http_port
        for _ in range(3):
            request(port, "GET", "/api/mqtt/connections", "attacker.example")
        status, _, text = request(port, "GET", "/metrics", "localhost")
        self.assertEqual(status, 200)
        match = re.search(r'^kubemq_mqtt_http_requests_total\{path="/api/mqtt/connections",'
                          r'status="421"\} (\d+)', text, re.M)
        self.assertIsNotNone(match, text)
        self.assertGreaterEqual(int(match.group(1)), 3)


class ListedHostsWithTokensTest(unittest.TestCase):
    """Tokens and a list: the Host check still comes first, a listed name is served."""

    @classmethod
    def setUpClass(cls):
        cls.broker = Broker(options={"http_token_file": "{dir}/read.tokens",
                                     "http_allowed_hosts":
                                         "MQTT-API.example.com., 192.0.2.10 [2001:db8::10]"},
                            files={"read.tokens": READ_TOKEN + "\n"})
        cls.broker.start()

    @classmethod
    def tearDownClass(cls):
        cls.broker.stop()
        cls.broker.cleanup_dir()

    def test_listed_names_need_the_token_and_others_are_421_even_with_it(self):
        port = self.broker.http_port
        token = {"Authorization": f"Bearer {READ_TOKEN}"}
        for host in (f"mqtt-api.example.com:{port}", "mqtt-api.example.com.", "192.0.2.10:8080",
                     "[2001:DB8::10]:443", "localhost", f"127.0.0.1:{port}"):
            with self.subTest(host=host):
                self.assertEqual(request(port, "GET", "/api/mqtt/connections", host)[0], 401)
                status, _, text = request(port, "GET", "/api/mqtt/connections", host,
                                          headers=token)
                self.assertEqual(status, 200, text)
        for host in ("attacker.example", "api.example.com", "x.mqtt-api.example.com",
                     "192.0.2.11", "mqtt-api.example.com.attacker.example"):
            with self.subTest(host=host):
                status, headers, text = request(port, "GET", "/api/mqtt/connections", host,
                                                headers=token)
                self.assertEqual(status, 421, text)
                self.assertNotIn("WWW-Authenticate", headers)  # no token is asked for
                self.assertIn(OPTION, json.loads(text)["error_string"])


class ReloadTest(unittest.TestCase):
    def test_a_reload_keeps_the_list_with_a_warning(self):
        with Broker(options={"http_allowed_hosts": "mqtt-api.example.com"}) as broker:
            try:
                port = broker.http_port
                broker.options["http_allowed_hosts"] = "attacker.example"
                rewrite_config(broker)
                reload_broker(broker)
                wait_for(lambda: "plugin_opt_http_allowed_hosts changed; keeping" in broker.log(),
                         what="the warning naming the option")
                self.assertEqual(request(port, "GET", "/metrics", "mqtt-api.example.com")[0], 200)
                self.assertEqual(request(port, "GET", "/metrics", "attacker.example")[0], 421)
            finally:
                broker.cleanup_dir()


class RefusedValuesTest(unittest.TestCase):
    """Each bad value of the option stops the broker with a line naming the option and why."""

    def test_bad_values_refuse_the_start_naming_the_option(self):
        cases = [
            ("*", "wildcards are not accepted"),
            ("*.example.com", "DNS rebinding"),
            ("api.example.com:8080", "without a port"),
            ("api.example.com, 127.1", "four decimal numbers"),
            ("http://api.example.com/", "not a host name"),
            ("a..example", "empty label"),
        ]
        for value, reason in cases:
            with self.subTest(value=value):
                broker = Broker(options={"http_allowed_hosts": value}, expect_start=False)
                broker.start()
                try:
                    self.assertIsNotNone(broker.wait_exit(), "the broker kept running")
                    log = broker.log()
                    line = next((l for l in log.splitlines() if OPTION in l), None)
                    self.assertIsNotNone(line, log)
                    self.assertIn(reason, line)
                    self.assertNotIn("serving on", log)
                finally:
                    broker.stop()
                    broker.cleanup_dir()


class PageAndRelay:
    """What a DNS rebinding gives an attacker, on this machine: the page is served from
    http://attacker.example:<port>/ (Chromium maps the name to 127.0.0.1), and every other
    request to that same origin reaches the API. In the real attack the name's address changes
    between the page load and its script's request; here a relay on the page's port forwards
    every request but the page, byte for byte, to the API, so the API receives exactly what the
    browser sent to attacker.example (its Host header included)."""

    PAGE = """<!DOCTYPE html><html><head><title>rebinding</title></head><body>
<pre id="result">pending</pre>
<script>
fetch("/api/mqtt/connections", {cache: "no-store"})
  .then(r => r.text().then(t => {
    document.getElementById("result").textContent = "status " + r.status + " " + t; }))
  .catch(e => { document.getElementById("result").textContent = "failed " + e; });
</script></body></html>"""

    def __init__(self, api_port):
        self.api_port = api_port
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.forwarded = []  # the request heads relayed to the API
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def close(self):
        self.stopping.set()
        self.thread.join(timeout=10)
        self.listener.close()

    def _serve(self):
        while not self.stopping.is_set():
            try:
                sock, _ = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=self._connection, args=(sock,), daemon=True).start()

    def _connection(self, sock):
        with sock:
            sock.settimeout(10)
            head = b""
            try:
                while b"\r\n\r\n" not in head and len(head) < 65536:
                    chunk = sock.recv(65536)
                    if not chunk:
                        return
                    head += chunk
            except OSError:
                return
            line = head.split(b"\r\n", 1)[0]
            if line.startswith(b"GET / "):
                page = self.PAGE.encode()
                sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
                             b"Cache-Control: no-store\r\nConnection: close\r\n"
                             b"Content-Length: " + str(len(page)).encode() + b"\r\n\r\n" + page)
                return
            if line.startswith(b"GET /favicon.ico "):
                sock.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
                             b"Connection: close\r\n\r\n")
                return
            self.forwarded.append(head.split(b"\r\n\r\n", 1)[0].decode("latin-1"))
            self._relay(sock, head)

    def _relay(self, sock, head):
        try:
            with socket.create_connection(("127.0.0.1", self.api_port), timeout=10) as api:
                api.sendall(head)
                deadline = time.monotonic() + 15
                while time.monotonic() < deadline and not self.stopping.is_set():
                    readable, _, _ = select.select([sock, api], [], [], 0.5)
                    for source in readable:
                        data = source.recv(65536)
                        if not data:
                            return
                        (api if source is sock else sock).sendall(data)
        except OSError:
            return  # either side went away: the relay of this connection is over


class BrowserRebindingTest(unittest.TestCase):
    """Headless Chromium with attacker.example mapped to 127.0.0.1."""

    def run_page(self, broker):
        relay = PageAndRelay(broker.http_port)
        try:
            url = f"http://attacker.example:{relay.port}/"
            dom = browser.dump_dom(url, budget_ms=5000, extra_flags=[
                "--host-resolver-rules=MAP attacker.example 127.0.0.1", "--no-proxy-server"])
        finally:
            relay.close()
        result = browser.parse_html(dom).by_id("result")
        self.assertIsNotNone(result, dom)
        # The API got the browser's own request, for the attacker's name.
        self.assertTrue(any(re.search(rf"(?im)^host: attacker\.example:{relay.port}\r?$", h)
                            for h in relay.forwarded), relay.forwarded)
        return result.text()

    def check(self, options):
        with Broker(options=options) as broker:
            client = Client(broker, CLIENT_ID)
            client.connect()
            try:
                broker.wait_connections(lambda c: any(x["client_id"] == CLIENT_ID for x in c))
                return self.run_page(broker)
            finally:
                disconnect_all([client])
                broker.cleanup_dir()

    def test_a_rebound_page_cannot_read_the_list(self):
        text = self.check({})
        self.assertTrue(text.startswith("status 421 "), text)
        self.assertNotIn(CLIENT_ID, text)
        self.assertIn(OPTION, text)

    def test_control_the_same_page_reads_it_once_its_name_is_listed(self):
        # Shows that the page above would have read the list: the check is what stops it.
        text = self.check({"http_allowed_hosts": "attacker.example"})
        self.assertTrue(text.startswith("status 200 "), text)
        self.assertIn(CLIENT_ID, text)


if __name__ == "__main__":
    unittest.main()
