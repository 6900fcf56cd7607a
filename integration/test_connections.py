# SPDX-License-Identifier: BSD-3-Clause
"""GET /api/mqtt/connections against the real broker: fields, life cycle, errors, restarts."""

import datetime
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import unittest

from harness import (BROKER_NAME, BROKER_VERSION, MOSQUITTO_CTRL, Broker, Client,
                     SharedBrokerTestCase, broker_plugin, broker_tool, disconnect_all, free_port,
                     raw_connect, wait_for)


def parse_time(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc)


class ConnectionsEndpointTest(SharedBrokerTestCase):
    """One broker, many clients: the KubeMQ endpoint's fields and life cycle."""

    def test_empty_list_is_the_kubemq_envelope(self):
        status, headers, body = self.broker.http("/api/mqtt/connections")
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("application/json"))
        self.assertEqual(json.loads(body), {"error": False, "error_string": "",
                                            "data": {"connections": [], "total": 0}})

    def test_mqtt311_and_mqtt5_clients_are_listed_with_their_real_fields(self):
        before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
        c4 = self.client("it-v4", version=4, username="alice", password="pw")
        c5 = self.client("it-v5", version=5, clean=False)
        after = datetime.datetime.now(datetime.timezone.utc)
        self.assertEqual((c4.connack, c5.connack), (0, 0))
        listed = self.broker.wait_connections(lambda cs: len(cs) == 2 and cs)
        by_id = {c["client_id"]: c for c in listed}
        v4, v5 = by_id["it-v4"], by_id["it-v5"]
        self.assertEqual(v4["protocol_version"], 4)
        self.assertEqual(v5["protocol_version"], 5)
        self.assertEqual(v4["remote_addr"], f"127.0.0.1:{c4.local_port}")
        self.assertEqual(v5["remote_addr"], f"127.0.0.1:{c5.local_port}")
        self.assertEqual(v4["username"], "alice")
        self.assertNotIn("username", v5)
        self.assertIs(v4["clean_session"], True)
        self.assertIs(v5["clean_session"], False)
        self.assertEqual(v4["subscriptions"], [])
        for c in (v4, v5):
            self.assertTrue(before <= parse_time(c["connected_at"]) <= after, c)
            self.assertEqual(list(c.keys())[:5], ["client_id", "protocol_version", "remote_addr",
                                                   "connected_at", "clean_session"])

    def test_order_is_connected_at_then_client_id(self):
        for name in ("zeta", "alpha", "mid"):
            self.client(name)
        time.sleep(1.1)  # connected_at has whole seconds: make the next one later
        self.client("aaa-last")
        listed = self.broker.wait_connections(lambda cs: len(cs) == 4 and cs)
        ids = [c["client_id"] for c in listed]
        self.assertEqual(ids[-1], "aaa-last")
        firsts = [(c["connected_at"], c["client_id"]) for c in listed]
        self.assertEqual(firsts, sorted(firsts))

    def test_clean_disconnect_and_abrupt_close_remove_the_connection(self):
        a = self.client("leaves-cleanly")
        b = self.client("drops")
        self.broker.wait_connections(lambda cs: len(cs) == 2)
        a.disconnect()
        self.broker.wait_connections(lambda cs: [c["client_id"] for c in cs] == ["drops"])
        b.drop()
        self.broker.wait_connections(lambda cs: cs == [])

    def test_killed_client_process_disappears(self):
        sub = subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(self.broker.port),
                                "-i", "killed-sub", "-t", "events/x"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self.broker.wait_connections(lambda cs: [c["client_id"] for c in cs] == ["killed-sub"])
        finally:
            sub.send_signal(signal.SIGKILL)
            sub.wait(timeout=5)
        self.broker.wait_connections(lambda cs: cs == [])

    def test_keepalive_timeout_removes_a_silent_client(self):
        sock, rc = raw_connect(self.broker, "silent", keepalive=2)
        try:
            self.assertEqual(rc, 0)
            self.broker.wait_connections(lambda cs: [c["client_id"] for c in cs] == ["silent"])
            # Mosquitto drops it after 1.5 x keepalive, checked about once a second.
            self.broker.wait_connections(lambda cs: cs == [], timeout=3 * 2 + 2)
        finally:
            sock.close()

    def test_takeover_never_shows_two_connections_with_one_id(self):
        first = self.client("same-id")
        self.broker.wait_connections(lambda cs: len(cs) == 1)
        first.client.loop_stop()  # no automatic reconnect: its socket stays open until taken over
        seen_two = []
        second = self.client("same-id", connect=False)
        second.client.connect_async("127.0.0.1", self.broker.port)
        second.client.loop_start()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            listed = self.broker.connections()
            if len(listed) > 1:
                seen_two.append(listed)
            if second.connack == 0 and listed and \
                    listed[0]["remote_addr"].endswith(f":{second.local_port}"):
                break
        self.assertEqual(seen_two, [])
        listed = self.broker.connections()
        self.assertEqual(len(listed), 1)
        self.assertEqual(listed[0]["remote_addr"], f"127.0.0.1:{second.local_port}")

    def test_query_parameters_filter_and_page(self):
        self.client("qa-1", version=5, username="u1", password="p")
        self.client("qa-2", version=4, username="u2", password="p")
        self.client("qb-3", version=4)
        self.broker.wait_connections(lambda cs: len(cs) == 3)
        ids = lambda q: [c["client_id"] for c in self.broker.connections(q)]
        self.assertEqual(ids("?client_id=qa-2"), ["qa-2"])
        self.assertEqual(sorted(ids("?client_id=qa-*")), ["qa-1", "qa-2"])
        self.assertEqual(ids("?username=u1"), ["qa-1"])
        self.assertEqual(ids("?protocol_version=5"), ["qa-1"])
        self.assertEqual(sorted(ids("?protocol_version=4&client_id=q*")), ["qa-2", "qb-3"])
        all_ids = ids("")
        self.assertEqual(ids("?limit=2"), all_ids[:2])
        self.assertEqual(ids("?limit=2&offset=2"), all_ids[2:])
        self.assertEqual(ids("?offset=3"), [])

    def test_bad_requests_get_the_error_envelope(self):
        cases = [
            ("/api/mqtt/connections?nope=1", "GET", 400, "nope"),
            ("/api/mqtt/connections?limit=0", "GET", 400, "limit"),
            ("/api/mqtt/connections?limit=abc", "GET", 400, "limit"),
            ("/api/mqtt/connections?offset=-1", "GET", 400, "offset"),
            ("/api/mqtt/connections?protocol_version=6", "GET", 400, "protocol_version"),
            ("/api/mqtt/connections?pattern=topics", "GET", 400, "pattern"),
            ("/api/mqtt/connections?limit=1&limit=2", "GET", 400, "limit"),
            ("/api/mqtt/nothing", "GET", 404, ""),
            ("/api/mqtt/connections", "POST", 405, ""),
            ("/api/mqtt/connections", "DELETE", 405, ""),
        ]
        for path, method, status, word in cases:
            with self.subTest(path=path, method=method):
                got, headers, body = self.broker.http(path, method=method,
                                                      body=b"" if method == "POST" else None)
                self.assertEqual(got, status, body)
                self.assertTrue(headers["Content-Type"].startswith("application/json"))
                document = json.loads(body)
                self.assertIs(document["error"], True)
                self.assertIsNone(document["data"])
                self.assertIn(word, document["error_string"])
                self.assertNotEqual(document["error_string"], "")
        # The broker kept routing through all of it.
        sub = self.client("after-errors")
        sub.subscribe("events/after", qos=1)
        pub = self.client("after-errors-pub")
        pub.publish("events/after", b"still routing", qos=1)
        wait_for(lambda: sub.messages, what="delivery after bad requests")

    def test_broker_process_has_one_thread(self):
        self.client("threads")
        self.broker.wait_connections(lambda cs: len(cs) == 1)
        self.assertEqual(self.broker.thread_count(), 1)


class CompanionRestartTest(unittest.TestCase):
    def test_killed_companion_is_back_within_a_second_with_the_full_list(self):
        with Broker() as broker:
            clients = [Client(broker, f"keep-{i}", version=4 if i % 2 else 5) for i in range(20)]
            sub = clients[0]
            sub.subscribe("events/routing", qos=1)
            # The SUBACK can come before the registry has the subscription (the broker's ring is
            # read a moment later): the list to compare with is the one that has it.
            def complete():
                listed = broker.connections()
                return listed if len(listed) == 20 and any(
                    c["client_id"] == "keep-0" and c["subscriptions"] for c in listed) else None

            before = wait_for(complete, what="20 clients listed, keep-0 with its subscription")
            old = broker.companion_pid
            os.kill(old, signal.SIGKILL)
            killed_at = time.monotonic()
            # The broker keeps routing while the companion is away.
            clients[1].publish("events/routing", b"during restart", qos=1)
            wait_for(lambda: sub.messages, what="delivery while the companion restarts")
            listed = wait_for(broker.connections_when_up, timeout=5, interval=0.01,
                              what="the API to answer again")
            self.assertLess(time.monotonic() - killed_at, 1.0)
            self.assertEqual(listed, before)
            new = broker.companion_pids()
            self.assertEqual(len(new), 1)
            self.assertNotEqual(new[0], old)
            self.assertIn("companion killed by signal 9", broker.log())
            # The companion's own log lines reach the broker's log, the second after the restart.
            wait_for(lambda: broker.log().count("registry synchronised with the broker") == 2 and
                     "registry synchronised with the broker: 20 open connections" in broker.log(),
                     what="the restarted companion's log line")
            self.assertEqual(broker.process.poll(), None)
            for c in clients:
                c.disconnect()
        broker.cleanup_dir()

    def test_a_companion_that_stops_answering_is_replaced(self):
        with Broker() as broker:
            client = Client(broker, "stall-watch")
            broker.wait_connections(lambda cs: len(cs) == 1)
            old = broker.companion_pid
            os.kill(old, signal.SIGSTOP)  # alive, but its event loop no longer runs
            try:
                wait_for(lambda: "companion stopped answering" in broker.log(), timeout=10,
                         what="the stall to be noticed")
                wait_for(lambda: not os.path.exists(f"/proc/{old}"), timeout=5,
                         what="the stalled companion to be killed")
                listed = wait_for(broker.connections_when_up, timeout=5,
                                  what="the new companion's list")
                self.assertEqual([c["client_id"] for c in listed], ["stall-watch"])
                self.assertEqual(len(broker.companion_pids()), 1)
            finally:
                if os.path.exists(f"/proc/{old}"):
                    os.kill(old, signal.SIGCONT)
            client.disconnect()
        broker.cleanup_dir()

    def test_clean_shutdown_leaves_no_companion(self):
        broker = Broker()
        broker.start()
        companion = broker.companion_pid
        broker.stop()
        self.assertEqual(broker.process.returncode, 0, broker.log())
        self.assertFalse(os.path.exists(f"/proc/{companion}"))
        broker.cleanup_dir()

    def test_companion_dies_with_a_killed_broker(self):
        broker = Broker()
        broker.start()
        companion = broker.companion_pid
        broker.process.send_signal(signal.SIGKILL)
        broker.process.wait(timeout=5)
        wait_for(lambda: not os.path.exists(f"/proc/{companion}"), timeout=5,
                 what="the companion to die with the broker")
        broker.stop()
        broker.cleanup_dir()


class HttpBindTest(unittest.TestCase):
    def test_ipv6_loopback_bind(self):
        if not socket.has_ipv6:
            self.skipTest("no IPv6")
        with Broker(options={"http_bind": "::1"}) as broker:
            self.assertIn(f"serving on http://[::1]:{broker.http_port} ", broker.log())
            with socket.create_connection(("::1", broker.http_port), timeout=5) as s:
                s.sendall(b"GET /api/mqtt/connections HTTP/1.0\r\n\r\n")
                reply = s.recv(4096)
            self.assertTrue(reply.startswith(b"HTTP/1.0 200") or reply.startswith(b"HTTP/1.1 200"),
                            reply)
            # The IPv4 loopback is not served when bound to ::1.
            with self.assertRaises(OSError):
                socket.create_connection(("127.0.0.1", broker.http_port), timeout=2).close()
        broker.cleanup_dir()


def readme_start_line(broker_name):
    """The start line the README's broker table shows for `broker_name`, without the plugin's
    prefix; a "(...)" in it stands for the rest of the line."""
    readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")
    with open(readme) as f:
        for line in f:
            cells = [c.strip() for c in line.split("|")]
            if len(cells) > 4 and cells[2] == f"`{broker_name}`":
                return cells[4].strip("`")
    raise AssertionError(f"README.md's broker table has no row for {broker_name}")


class StartLineTest(unittest.TestCase):
    def test_the_start_line_is_the_one_the_readme_shows_for_this_broker(self):
        expected = readme_start_line(BROKER_NAME)
        with Broker() as broker:
            match = re.search(r"mosquitto_connections: (broker .*)", broker.log())
            self.assertIsNotNone(match, broker.log())
            shown = match.group(1)
        broker.cleanup_dir()
        if expected.endswith("(...)"):
            self.assertTrue(shown.startswith(expected[:-len("(...)")]), (shown, expected))
        else:
            self.assertEqual(shown, expected)
        self.assertIn(f"broker {'.'.join(map(str, BROKER_VERSION))}, ", shown)

    def test_an_acl_plugin_after_it_hides_nothing(self):
        # Dynamic security after the plugin: on 2.0 the plugin reads the broker's chain of
        # callbacks (src/broker/callback_chain.h), on 2.0.21 too, which hides
        # mosquitto_acl_check, so no build of the matrix says that answers are hidden (README's
        # broker table). Before the chain was read, 2.0.21's start line named the cost.
        dynsec = broker_plugin("mosquitto_dynamic_security.so")
        with tempfile.TemporaryDirectory() as folder:
            config = os.path.join(folder, "dynsec.json")
            broker_tool([MOSQUITTO_CTRL, "dynsec", "init", config, "admin", "admin-pass"],
                        check=True, capture_output=True)
            with open(config) as f:
                dynsec_json = f.read()
        broker = Broker(files={"dynsec.json": dynsec_json},
                        plugin_after=f"plugin {dynsec}\nplugin_opt_config_file {{dir}}/dynsec.json")
        with broker:
            log = broker.log()
        broker.cleanup_dir()
        self.assertIn("mosquitto_connections: broker ", log)
        self.assertNotIn("mosquitto_acl_check", log)
        self.assertNotIn("a message they deny still counts as delivered", log)


class StartupErrorTest(unittest.TestCase):
    def refused(self, **kwargs):
        broker = Broker(expect_start=False, **kwargs)
        broker.start()
        code = broker.wait_exit()
        log = broker.log()
        broker.stop()
        broker.cleanup_dir()
        self.assertIsNotNone(code, "the broker should not have started:\n" + log)
        self.assertNotEqual(code, 0)
        return log

    def test_unknown_option_stops_the_broker_naming_it(self):
        log = self.refused(options={"http_prot": "8080"})
        self.assertIn("unknown option plugin_opt_http_prot", log)

    def test_bad_value_stops_the_broker_naming_option_and_accepted_values(self):
        log = self.refused(options={"default_pattern": "queues"})
        self.assertIn("bad value 'queues' for plugin_opt_default_pattern", log)
        self.assertIn("events, store or none", log)

    def test_port_in_use_stops_the_broker_naming_address_and_port(self):
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            log = self.refused(options={"http_port": str(port)})
        self.assertIn(f"127.0.0.1:{port}", log)
        self.assertIn("Address already in use", log)

    def test_per_listener_settings_is_refused_with_the_reason(self):
        # Before 2.0.15 the broker sends no TICK with per_listener_settings true.
        log = self.refused(extra="per_listener_settings true\n")
        self.assertIn("per_listener_settings true is not supported on this broker (2.0.", log)
        self.assertIn("before 2.0.15", log)


class PerListenerSettingsTest(unittest.TestCase):
    def test_the_plugins_listener_is_listed_and_survives_a_reload(self):
        # The plugin's line is in its listener's block: it sees that listener's clients, and
        # decides anonymous access there as the broker would (allow_anonymous true).
        broker = Broker(extra="per_listener_settings true\n", allow_anonymous=True)
        try:
            broker.start()
            client = Client(broker, "per-listener", version=5)
            client.subscribe("events/per/listener", qos=1)
            wait_for(lambda: [s["filter"] for s in (broker.connection("per-listener") or {})
                              .get("subscriptions", [])] == ["events/per/listener"],
                     what="the client listed with its subscription")
            os.kill(broker.process.pid, signal.SIGHUP)
            wait_for(lambda: "Reloading config" in broker.log() or
                     "reload" in broker.log().lower(), what="the reload")
            late = Client(broker, "per-listener-late")
            wait_for(lambda: broker.connection("per-listener-late") is not None,
                     what="a client connected after the reload listed")
            self.assertIsNone(broker.process.poll(), broker.log())
            disconnect_all([client, late])
        finally:
            broker.stop()
            broker.cleanup_dir()


if __name__ == "__main__":
    unittest.main()
