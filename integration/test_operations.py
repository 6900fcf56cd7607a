# SPDX-License-Identifier: BSD-3-Clause
"""Running the plugin in production (docs/operations.md) against the real broker: the versions in
the start line, in /metrics and in the command line; GET /healthz (no token, no data, 503 while
the companion catches up with the broker); the HTTPS certificate read again at a reload without
dropping MQTT clients, the old one kept on a bad file; the command line's STATE column,
--offline and the hint of `get`; and the alert rules (conf/prometheus-rules.yml) checked by
promtool against the metrics a real broker serves."""

import os
import re
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

from harness import (BROKER_VERSION, Broker, Client, disconnect_all, make_certificate_files,
                     wait_for)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CLI = os.path.join(ROOT, "cli", "mosquitto-connections")
RULES = os.path.join(ROOT, "conf", "prometheus-rules.yml")
RULE_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prometheus_rules_test.yml")
READ_TOKEN = "read-token-0123456789abcdef"
BROKER_TEXT = ".".join(map(str, BROKER_VERSION))


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        match = re.search(r"project\(mosquitto_connections VERSION (\S+)", f.read())
    assert match, "CMakeLists.txt names no project version"
    return match.group(1)


def run_cli(*args, timeout=60):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout)


def table(text):
    lines = [line for line in text.splitlines() if line.strip()]
    header = lines[0].split()
    return [dict(zip(header, line.split())) for line in lines[1:]]



def https_status(port, cafile):
    """The status of GET /api/mqtt/connections over HTTPS verified against `cafile`; an ssl.SSLError when the
    server's certificate is not that one."""
    context = ssl.create_default_context(cafile=cafile)
    request = urllib.request.Request(f"https://127.0.0.1:{port}/api/mqtt/connections")
    with urllib.request.urlopen(request, context=context, timeout=10) as response:
        return response.status


class VersionTest(unittest.TestCase):
    def test_versions_in_the_start_line_in_metrics_and_in_the_command_line(self):
        version = project_version()
        with open(os.path.join(ROOT, "cli", "mosquitto-connections")) as f:
            self.assertIn(f'VERSION = "{version}"', f.read())
        broker = Broker(options={"http_token_file": "{dir}/read.tokens"},
                        files={"read.tokens": READ_TOKEN + "\n"})
        with broker:
            try:
                line = (f"mosquitto_connections: version {version} on broker {BROKER_TEXT}, "
                        f"serving on http://127.0.0.1:{broker.http_port} (companion pid ")
                self.assertIn(line, broker.log())
                status, _, text = broker.http(
                    "/metrics", headers={"Authorization": f"Bearer {READ_TOKEN}"})
                self.assertEqual(status, 200)
                self.assertIn("# TYPE mosquitto_connections_build_info gauge", text)
                self.assertIn(f'mosquitto_connections_build_info{{broker_version="{BROKER_TEXT}",'
                              f'version="{version}"}} 1', text)
                started = re.search(r"^mosquitto_connections_companion_start_time_seconds (\S+)$",
                                    text, re.M)
                self.assertIsNotNone(started, text)
                self.assertLess(abs(float(started.group(1)) - time.time()), 600)

                token_file = os.path.join(broker.dir, "read.tokens")
                url = f"http://127.0.0.1:{broker.http_port}"
                result = run_cli("--version", "--url", url, "--token-file", token_file)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(result.stdout.splitlines(), [
                    f"mosquitto-connections {version}",
                    f"127.0.0.1:{broker.http_port}: plugin {version} on broker {BROKER_TEXT}"])
                # Without the token the server's version is not read; the program's still prints.
                result = run_cli("--version", "--url", url)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(result.stdout.splitlines(), [f"mosquitto-connections {version}"])
                self.assertIn("HTTP 401", result.stderr)
            finally:
                broker.stop()
                broker.cleanup_dir()


class HealthTest(unittest.TestCase):
    def test_healthz_needs_no_token_and_says_nothing_else(self):
        broker = Broker(options={"http_token_file": "{dir}/read.tokens"},
                        files={"read.tokens": READ_TOKEN + "\n"})
        with broker:
            client = Client(broker, "health-secret-client")
            try:
                status, _, _ = broker.http("/api/mqtt/connections")
                self.assertEqual(status, 401)
                wait_for(lambda: broker.http("/healthz")[0] == 200, what="/healthz 200")
                status, headers, body = broker.http("/healthz")
                self.assertEqual(body, "ok\n")
                self.assertTrue(headers["Content-Type"].startswith("text/plain"))
                self.assertNotIn("health-secret-client", body)
                status, _, body = broker.http("/healthz", method="HEAD")
                self.assertEqual((status, body), (200, ""))
                status, headers, _ = broker.http("/healthz", method="POST", body=b"")
                self.assertEqual(status, 405)
            finally:
                disconnect_all([client])
                broker.stop()
                broker.cleanup_dir()

    def test_503_while_a_restarted_companion_waits_for_the_brokers_state(self):
        # A restarted companion serves at once and gets the broker's state at the broker's next
        # TICKs. With the broker stopped (SIGSTOP) right after the restart, that state cannot
        # come: /healthz must say 503 until the broker runs again. The broker may send the state
        # before it is stopped (a race with the restart); each attempt is a fresh restart.
        with Broker() as broker:
            client = Client(broker, "health-client")
            try:
                wait_for(lambda: broker.http("/healthz")[0] == 200, what="/healthz 200")
                seen_503 = False
                for _ in range(8):
                    old = set(broker.companion_pids())
                    os.kill(next(iter(old)), signal.SIGKILL)
                    new = wait_for(lambda: set(self.children(broker)) - old or None,
                                   timeout=20, interval=0.001, what="a new companion")
                    broker.process.send_signal(signal.SIGSTOP)
                    try:
                        status = wait_for(lambda: self.status_or_none(broker), timeout=20,
                                          what=f"companion {new} answering")
                        if status == 503:
                            seen_503 = True
                            time.sleep(1.0)  # still catching up: nothing arrives while stopped
                            self.assertEqual(self.status_or_none(broker), 503)
                            self.assertEqual(broker.http("/healthz")[2],
                                             "catching up with the broker\n")
                    finally:
                        broker.process.send_signal(signal.SIGCONT)
                    wait_for(lambda: self.status_or_none(broker) == 200, timeout=20,
                             what="/healthz 200 once the broker runs again")
                    if seen_503:
                        break
                self.assertTrue(seen_503, "no attempt saw 503 while the broker was stopped")
                # The restarted companion lists the client it learnt from the broker.
                self.assertEqual([c["client_id"] for c in broker.connections()], ["health-client"])
            finally:
                disconnect_all([client])

    @staticmethod
    def children(broker):
        """The broker's child processes, in one read (the companion is its only child)."""
        pid = broker.process.pid
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]

    @staticmethod
    def status_or_none(broker):
        try:
            return broker.http("/healthz", timeout=2)[0]
        except (urllib.error.URLError, OSError):
            return None


class CertificateRotationTest(unittest.TestCase):
    def test_sighup_reads_the_certificate_again_without_dropping_clients(self):
        folder = tempfile.mkdtemp()
        try:
            first = make_certificate_files(folder, "first", "IP:127.0.0.1,DNS:localhost")
            second = make_certificate_files(folder, "second", "IP:127.0.0.1,DNS:localhost")
            third = make_certificate_files(folder, "third", "IP:127.0.0.1,DNS:localhost")
            with open(first[0]) as c, open(first[1]) as k:
                files = {"tls/server.crt": c.read(), "tls/server.key": k.read()}
            broker = Broker(options={"http_tls_cert": "{dir}/tls/server.crt",
                                     "http_tls_key": "{dir}/tls/server.key"},
                            files=files)
            self.run_rotation(broker, first, second, third)
        finally:
            subprocess.run(["rm", "-rf", folder], check=False)

    def run_rotation(self, broker, first, second, third):
        broker.start()
        client = None
        try:
            port = broker.http_port
            self.assertEqual(https_status(port, first[0]), 200)
            client = Client(broker, "rotation-client", clean=False)
            companion = broker.companion_pids()
            # A keep-alive HTTPS connection opened before the reload finishes its requests.
            before = socket.create_connection(("127.0.0.1", port), timeout=10)
            before = ssl.create_default_context(cafile=first[0]).wrap_socket(
                before, server_hostname="127.0.0.1")

            def install(pair):
                for source, target in zip(pair, ("server.crt", "server.key")):
                    with open(source) as f, open(os.path.join(broker.dir, "tls", target), "w") as g:
                        g.write(f.read())

            def reload_and_wait(text):
                count = broker.log().count(text)
                broker.process.send_signal(signal.SIGHUP)
                wait_for(lambda: broker.log().count(text) > count, timeout=20,
                         what=f"'{text}' in the broker's log")

            install(second)
            reload_and_wait("reload: HTTPS certificate read again from")
            self.assertEqual(https_status(port, second[0]), 200)
            with self.assertRaises(urllib.error.URLError):
                https_status(port, first[0])
            before.sendall(b"GET /api/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            self.assertIn(b"200", before.recv(4096).split(b"\r\n")[0])
            before.close()

            # A file that is not a certificate, then a key of another certificate: both keep the
            # certificate read before, and the log says so.
            with open(os.path.join(broker.dir, "tls", "server.crt"), "w") as f:
                f.write("not a certificate\n")
            reload_and_wait("keeping the HTTPS certificate read before")
            self.assertEqual(https_status(port, second[0]), 200)
            install((third[0], second[1]))
            reload_and_wait("; keeping the one read before")
            self.assertIn("reload: HTTPS certificate " + broker.dir + "/tls/server.crt not used",
                          broker.log())
            self.assertEqual(https_status(port, second[0]), 200)
            install(third)
            reload_and_wait("reload: HTTPS certificate read again from")
            self.assertEqual(https_status(port, third[0]), 200)
            reload_and_wait("reload: HTTPS certificate unchanged")

            # Neither the broker nor the companion restarted; the MQTT client never left.
            self.assertEqual(broker.companion_pids(), companion)
            self.assertIsNone(broker.process.poll())
            self.assertTrue(client.client.is_connected())
            self.assertNotIn("rotation-client", [line for line in broker.log().splitlines()
                                                 if "disconnected" in line.lower()])
        finally:
            if client is not None:
                disconnect_all([client])
            broker.stop()
            broker.cleanup_dir()


class CliStateTest(unittest.TestCase):
    def test_state_column_offline_and_the_hint_of_get(self):
        with Broker() as broker:
            url = f"http://127.0.0.1:{broker.http_port}"
            persistent = Client(broker, "cli-persistent", clean=False)
            persistent.subscribe("events/a", 1)
            persistent.disconnect()
            brief = Client(broker, "cli-brief")
            brief.disconnect()
            still = Client(broker, "cli-open")
            try:
                def states(*flags):
                    result = run_cli("list", "--url", url, *flags)
                    self.assertEqual(result.returncode, 0, result.stderr)
                    return sorted((r["CLIENT-ID"], r["STATE"]) for r in table(result.stdout))

                wait_for(lambda: ("cli-persistent", "OFFLINE") in states("--offline"),
                         what="the offline session listed")
                self.assertEqual(states(), [("cli-open", "OPEN")])
                self.assertEqual(states("--offline"),
                                 [("cli-open", "OPEN"), ("cli-persistent", "OFFLINE")])
                self.assertEqual(states("--closed"),
                                 [("cli-brief", "CLOSED"), ("cli-open", "OPEN"),
                                  ("cli-persistent", "CLOSED"), ("cli-persistent", "OFFLINE")])
                header = run_cli("list", "--url", url).stdout.splitlines()[0].split()
                self.assertEqual(header[:2], ["CLIENT-ID", "STATE"])

                result = run_cli("get", "cli-persistent", "--url", url)
                self.assertEqual(result.returncode, 1)
                self.assertIn('no open connection with client id "cli-persistent"; it has an '
                              'offline session and recently closed connections: add --closed',
                              result.stderr)
                result = run_cli("get", "cli-brief", "--url", url)
                self.assertEqual(result.returncode, 1)
                self.assertIn("; it has recently closed connections: add --closed", result.stderr)
                result = run_cli("get", "cli-persistent", "--offline", "--url", url)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertIn("state: MQTT_CONNECTION_STATE_OFFLINE", result.stdout)
                result = run_cli("get", "nobody-at-all", "--url", url)
                self.assertEqual(result.returncode, 1)
                self.assertTrue(result.stderr.rstrip().endswith('"nobody-at-all"'), result.stderr)
                result = run_cli("list", "--offline", "--closed", "--url", url)
                self.assertEqual(result.returncode, 2)
            finally:
                disconnect_all([still])


class AlertRulesTest(unittest.TestCase):
    def test_promtool_checks_the_rules_and_their_tests(self):
        result = subprocess.run(["promtool", "check", "rules", RULES], capture_output=True,
                                text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        result = subprocess.run(["promtool", "test", "rules", os.path.basename(RULE_TESTS)],
                                capture_output=True, text=True, timeout=120,
                                cwd=os.path.dirname(RULE_TESTS))
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_every_metric_the_rules_name_is_served(self):
        with open(RULES) as f:
            rules = f.read()
        # Served names only: not the recorded ones (job:kubemq_mqtt_connections:sum), made by
        # the rules themselves and checked by test_fleet_metrics.py.
        served_name = r"(?<![\w:])((?:kubemq_mqtt|mosquitto_connections)_[a-z_]+)(?![\w:])"
        named = set(re.findall(served_name, rules))
        self.assertGreaterEqual(len(named), 5, named)
        with Broker() as broker:
            client = Client(broker, "rules-client")
            try:
                # The second scrape: the first one counted is in kubemq_mqtt_http_requests_total.
                broker.http("/metrics")
                status, _, text = broker.http("/metrics")
                self.assertEqual(status, 200)
                served = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
                for name in named:
                    family = re.sub(r"_(bucket|sum|count)$", "", name)
                    self.assertIn(family, served, f"{name} is not in /metrics")
            finally:
                disconnect_all([client])


if __name__ == "__main__":
    unittest.main()
