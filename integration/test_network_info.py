# SPDX-License-Identifier: BSD-3-Clause
"""networkInfo and idleDuration of open connections in ListConnections, against the real broker:
the companion reads them from the kernel (sock_diag netlink) by itself, so a request needs
nothing of the broker thread and waits for no TICK; and the companion runs at a lower CPU
priority than the broker."""

import json
import os
import signal
import statistics
import time
import unittest

from harness import SharedBrokerTestCase, raw_connect, wait_for

PATH = "/mqtt.connections.v1.ConnectionsService/ListConnections"
HEADERS = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
NETWORK_NUMBERS = ("rttMicros", "rttVarianceMicros", "retransmits", "sendQueueBytes",
                   "receiveQueueBytes")
DURATION = r"^\d+(\.(\d{3}|\d{6}|\d{9}))?s$"
# The companion keeps one sock_diag dump for up to a second; a new client shows after that.
DUMP_MAX_AGE = 1.0


def seconds(duration):
    return float(duration[:-1])


def nice_of(pid, tid=None):
    """The nice value in /proc/PID[/task/TID]/stat (field 19; the name may hold spaces)."""
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[16])  # fields[0] is field 3, the state


def publish_packet(topic, payload):
    """An MQTT 3.1.1 QoS 0 PUBLISH (remaining length below 128)."""
    body = len(topic).to_bytes(2, "big") + topic.encode() + payload
    return b"\x30" + bytes([len(body)]) + body


class NetworkInfoTest(SharedBrokerTestCase):
    def list_one(self, client_id):
        status, _, body = self.broker.http(
            PATH, method="POST", headers=HEADERS,
            body=json.dumps({"filter": f'client_id = "{client_id}" AND '
                                       f'state = MQTT_CONNECTION_STATE_OPEN'}).encode())
        self.assertEqual(status, 200, body)
        connections = json.loads(body)["connections"]
        return connections[0] if len(connections) == 1 else None

    def network_info(self, client_id):
        """The connection, once it shows networkInfo (a dump younger than the client may be
        served for up to a second)."""
        def shown():
            c = self.list_one(client_id)
            return c if c and "networkInfo" in c else None
        return wait_for(shown, timeout=DUMP_MAX_AGE + 10, interval=0.05,
                        what=f"networkInfo of {client_id}")

    def test_an_open_connection_shows_its_sockets_figures(self):
        c = self.client("net-paho", version=5)
        c.subscribe("events/net/#", 1)
        c.publish("events/net/x", b"hello", qos=1)
        connection = self.network_info("net-paho")
        network = connection["networkInfo"]
        self.assertEqual(set(network), set(NETWORK_NUMBERS) | {"sinceLastReceive",
                                                               "sinceLastSend"})
        for key in NETWORK_NUMBERS:
            self.assertIsInstance(network[key], int, key)
            self.assertGreaterEqual(network[key], 0, key)
        # A loopback round trip is tens of microseconds, and never nothing once data flowed.
        self.assertGreater(network["rttMicros"], 0)
        self.assertLess(network["rttMicros"], 1_000_000)
        self.assertEqual(network["retransmits"], 0)  # loopback loses nothing
        self.assertRegex(network["sinceLastReceive"], DURATION)
        self.assertRegex(network["sinceLastSend"], DURATION)
        # idleDuration is the time since data last arrived: the same reading.
        self.assertEqual(connection["idleDuration"], network["sinceLastReceive"])
        self.assertLess(seconds(network["sinceLastReceive"]), 30)

    def test_since_last_receive_grows_while_silent_and_resets_when_the_client_publishes(self):
        sock, _ = raw_connect(self.broker, "net-silent", keepalive=60)
        try:
            first = seconds(self.network_info("net-silent")["networkInfo"]["sinceLastReceive"])

            def grown():
                c = self.network_info("net-silent")
                return c if seconds(c["networkInfo"]["sinceLastReceive"]) >= first + 1.5 else None
            # Silent: it grows, and idleDuration with it.
            c = wait_for(grown, timeout=15, interval=0.2, what="sinceLastReceive to grow")
            self.assertGreaterEqual(seconds(c["idleDuration"]), first + 1.5)

            published = time.monotonic()
            sock.sendall(publish_packet("events/net/silent", b"now"))

            def reset():
                c = self.network_info("net-silent")
                since_publish = time.monotonic() - published
                # Jiffies and milliseconds of tcp_info: a little slack.
                return c if seconds(c["networkInfo"]["sinceLastReceive"]) <= since_publish + 0.1 \
                    else None
            # A dump after the PUBLISH (at most a second later) counts from it.
            c = wait_for(reset, timeout=DUMP_MAX_AGE + 10, interval=0.05,
                         what="sinceLastReceive to count from the PUBLISH")
            self.assertEqual(c["idleDuration"], c["networkInfo"]["sinceLastReceive"])
        finally:
            sock.close()

    def test_a_detailed_list_waits_for_no_tick_even_with_the_broker_stopped(self):
        # The old path asked the broker thread for idle times and waited up to 300 ms for its
        # next TICK; with the broker stopped (SIGSTOP) every request took that long. Now the
        # companion answers alone: a few milliseconds. 100 ms leaves room for a loaded machine
        # and is still well under what a TICK wait took.
        self.client("net-tick")
        self.network_info("net-tick")
        body = json.dumps({"pageSize": 1000}).encode()
        durations = []
        os.kill(self.broker.process.pid, signal.SIGSTOP)
        try:
            for _ in range(20):
                started = time.monotonic()
                status, _, text = self.broker.http(PATH, method="POST", headers=HEADERS,
                                                   body=body)
                durations.append(time.monotonic() - started)
                self.assertEqual(status, 200, text)
                listed = {c["clientId"]: c for c in json.loads(text)["connections"]
                          if c["state"] == "MQTT_CONNECTION_STATE_OPEN"}
                self.assertIn("networkInfo", listed["net-tick"])
                self.assertIn("idleDuration", listed["net-tick"])
        finally:
            os.kill(self.broker.process.pid, signal.SIGCONT)
        self.assertLess(statistics.median(durations), 0.100, durations)

    def test_the_companion_runs_at_a_lower_cpu_priority_than_the_broker(self):
        broker_nice = nice_of(self.broker.process.pid)
        companion = self.broker.companion_pid
        self.assertIn(companion, self.broker.companion_pids())
        threads = os.listdir(f"/proc/{companion}/task")
        self.assertGreater(len(threads), 1)  # the HTTP server's threads are there
        for tid in threads:
            self.assertGreater(nice_of(companion, tid), broker_nice, f"thread {tid}")
        self.assertEqual(nice_of(companion), min(broker_nice + 10, 19))


if __name__ == "__main__":
    unittest.main()
