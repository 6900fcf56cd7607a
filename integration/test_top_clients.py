# SPDX-License-Identifier: BSD-3-Clause
"""The top talkers (plugin_opt_metrics_top_clients) against the real broker: after a minute of
real traffic, /metrics has kubemq_mqtt_top_client_messages_per_second for the N clients with the
most publishes plus deliveries in the previous complete minute and for no other; the Grafana
panel's query names only what that scrape serves; the CLI's top and the console show the same
N first, in the same order. Off (the default), the family is absent.

The figures are those of the previous complete minute of Unix time (recentRequestStatistics), so
the test sends its traffic early in a minute and reads the figures once the next one began: it
waits up to a minute, the one long wait of the suite.

Every client sends right after its CONNECT while the companion is stopped (SIGSTOP), so that the
companion reads each CONNECT event only after the traffic it must count: the report this came
from lost such a burst from the next minute's figures (recentRequestStatistics 0, or 205 of 300,
and no top client). A second broker, in the same minute, does it across a restart of its
companion, with a subscriber and a resumed persistent session for the deliveries; then, to the
restarted companion, a device connects, sends a burst and leaves, twice under one client id (the
second time while the companion is stopped): its closed records show nothing of the minute while
it runs, each its own burst the next minute, and the top clients list the client id once with
the sum."""

import contextlib
import json
import os
import signal
import subprocess
import time
import unittest

from browser import dump_dom, parse_html
from harness import Broker, Client, disconnect_all, wait_for
from test_grafana_dashboard import DASHBOARD, TARGET_LABELS, promql_names, queries, scrape_series
from test_list_connections import by_client, connections

FAMILY = "kubemq_mqtt_top_client_messages_per_second"
CLI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli",
                   "mosquitto-connections")
# Messages each client publishes (no subscriber: no deliveries). Alphabetical order is the
# reverse of the traffic order, so that a list sorted by client id cannot pass for the ranking.
TRAFFIC = {"zeta": 30, "yak": 12, "alpha": 3}
TOP_N = 2
OFFLINE = "MQTT_CONNECTION_STATE_OFFLINE"
# The restarted broker's traffic: a burst a subscriber receives, and messages for a persistent
# session, queued while it is offline and sent live after it resumes.
BURST, QUEUED, LIVE = 120, 15, 15
# The device that connects, sends a burst and leaves: its two visits of the minute.
LEAVER, VISITS = "leaver", (20, 25)
CLOSED = "MQTT_CONNECTION_STATE_CLOSED"


def wait_for_minute_start(latest_second=45):
    """Returns at a point of the current Unix minute no later than `latest_second`, waiting for
    the next minute when this one is too far gone (at most ~15 s)."""
    second = time.time() % 60
    if second > latest_second:
        time.sleep(60.5 - second)


def burst(client, topic, count):
    """`count` PUBLISH packets right after each other: QoS 0, the last QoS 1, whose PUBACK says
    the broker has taken (and counted) them all."""
    for _ in range(count - 1):
        client.publish(topic, b"x", qos=0)
    client.publish(topic, b"x", qos=1)


@contextlib.contextmanager
def companion_stopped(broker):
    """The broker's companion stopped (SIGSTOP) for the block: the broker goes on, and the
    companion reads the events of the block only after it (the one running now: the first, or
    the one that replaced it). Yields the companion's pid."""
    pids = broker.companion_pids()
    assert len(pids) == 1, f"one companion expected, found {pids}"
    pid = pids[0]
    os.kill(pid, signal.SIGSTOP)
    try:
        yield pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


def counts(stats):
    """(publishCount, deliverCount) of a statistics object (zeros are left out of the JSON)."""
    return int(stats.get("publishCount", 0)), int(stats.get("deliverCount", 0))


def recent(broker, client_id):
    """(publishCount, deliverCount) of the client's open connection: recent and total."""
    c = by_client(broker, client_id)
    assert c is not None, f"{client_id} is not listed open"
    return counts(c.get("recentRequestStatistics", {})), counts(c["totalRequestStatistics"])


def closed_figures(broker, client_id):
    """[(recent, total)] of the client's closed connections, oldest first, as (publishCount,
    deliverCount) each: ListConnections with the closed state."""
    listed = connections(broker, f'client_id = "{client_id}" AND state = {CLOSED}')
    listed.sort(key=lambda c: c["closeTime"])
    return [(counts(c.get("recentRequestStatistics", {})), counts(c["totalRequestStatistics"]))
            for c in listed]


def top_samples(text):
    """{(client_id, direction): value} of the family in a /metrics text."""
    samples = {}
    for line in text.splitlines():
        if line.startswith(FAMILY + "{"):
            labels, value = line[len(FAMILY) + 1:].rsplit("} ", 1)
            pairs = dict(part.split("=", 1) for part in labels.split(","))
            samples[(json.loads(pairs["client_id"]), json.loads(pairs["direction"]))] = \
                float(value)
    return samples


class TopClientsTest(unittest.TestCase):
    def test_off_by_default(self):
        with Broker() as broker:
            status, _, text = broker.http("/metrics")
            self.assertEqual(status, 200)
            self.assertNotIn(FAMILY, text)

    def test_the_top_n_in_metrics_dashboard_cli_and_console(self):
        broker = Broker(options={"metrics_top_clients": str(TOP_N)})
        restarted = Broker(options={"metrics_top_clients": "10"})
        broker.start()
        restarted.start()
        clients = []
        try:
            # Before the minute: a persistent session with a subscription, now offline.
            resumer = Client(restarted, "resumer", clean=False)
            resumer.subscribe("events/resume", qos=1)
            resumer.disconnect()
            wait_for(lambda: by_client(restarted, "resumer", OFFLINE), what="the offline session")
            wait_for_minute_start(latest_second=40)
            minute = int(time.time() // 60)
            with companion_stopped(broker) as live_companion:
                for client_id, count in TRAFFIC.items():
                    clients.append(Client(broker, client_id))
                    burst(clients[-1], f"events/{client_id}", count)
            self.restart_after_traffic(restarted, clients)
            self.burst_and_leave(restarted)
            self.assertEqual(int(time.time() // 60), minute, "the traffic spans one minute")

            def ranked():
                status, _, text = broker.http("/metrics")
                self.assertEqual(status, 200)
                return text if top_samples(text) else None
            text = wait_for(ranked, timeout=75, what="the previous minute's top clients")
            samples = top_samples(text)
            self.assertEqual(samples, {
                ("zeta", "publish"): 30 / 60, ("zeta", "deliver"): 0.0,
                ("yak", "publish"): 12 / 60, ("yak", "deliver"): 0.0})
            self.assertIn(f"# TYPE {FAMILY} gauge", text)
            for client_id, count in TRAFFIC.items():
                self.assertEqual(recent(broker, client_id), ((count, 0), (count, 0)), client_id)
            # The stopped companion went on (no restart): these were read as live events.
            self.assertEqual(broker.companion_pids(), [live_companion])
            self.check_restarted(restarted)

            # The dashboard's panels on this family: every name and label served.
            with open(DASHBOARD) as f:
                dashboard = json.load(f)
            series = scrape_series(text)
            checked = 0
            for where, expr in queries(dashboard):
                names, labels = promql_names(expr)
                if FAMILY not in names:
                    continue
                checked += 1
                known = set(TARGET_LABELS).union(*(series[n] for n in names))
                self.assertTrue(labels <= known, f"{where}: {labels - known} not served")
            self.assertGreaterEqual(checked, 1, "a panel shows the top clients")

            # The CLI's top: the same two first, in the same order, then the rest.
            result = subprocess.run(
                [CLI, "top", "--once", "--interval", "0.2", "--url",
                 f"http://127.0.0.1:{broker.http_port}"],
                capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 0, result.stderr)
            lines = result.stdout.splitlines()
            header = next(i for i, line in enumerate(lines) if line.startswith("CLIENT-ID"))
            order = [line.split()[0] for line in lines[header + 1:] if line.strip()]
            self.assertEqual(order, ["zeta", "yak", "alpha"])

            # The console: its top clients list, the same two in the same order.
            dom = parse_html(dump_dom(f"http://127.0.0.1:{broker.http_port}/"))
            section = dom.by_id("top-clients")
            self.assertIsNone(section.attrs.get("hidden"))
            listed = [a.text() for a in dom.by_id("top-clients-list").find_all("a")]
            self.assertEqual(listed, ["zeta", "yak"])
            self.assertIn("0.5 pub/s", dom.by_id("top-clients-list").text())
        finally:
            disconnect_all(clients)
            for b in (broker, restarted):
                b.stop()
                b.cleanup_dir()

    def restart_after_traffic(self, broker, clients):
        """Sends the restarted broker's traffic while its companion is stopped, then kills the
        companion: the new one learns of every connection from the broker's resync, after all
        their traffic."""
        old = broker.companion_pid
        with companion_stopped(broker):
            watcher = Client(broker, "watcher")
            watcher.subscribe("events/burst", qos=0)
            publisher = Client(broker, "publisher")
            feeder = Client(broker, "feeder")
            clients.extend([watcher, publisher, feeder])
            burst(publisher, "events/burst", BURST)
            for _ in range(QUEUED):
                feeder.publish("events/resume", b"q", qos=1)
            resumer = Client(broker, "resumer", clean=False)
            clients.append(resumer)
            self.assertTrue(resumer.session_present)
            for _ in range(LIVE):
                feeder.publish("events/resume", b"l", qos=1)
            wait_for(lambda: len(resumer.messages) == QUEUED + LIVE, what="the resumed session's")
            wait_for(lambda: len(watcher.messages) == BURST, what="the burst delivered")
            os.kill(old, signal.SIGKILL)
        wait_for(lambda: {"watcher", "publisher", "feeder", "resumer"} <=
                 {c["client_id"] for c in broker.connections_when_up() or []},
                 timeout=10, what="the restarted companion's list")
        self.assertNotIn(old, broker.companion_pids())

    def burst_and_leave(self, broker):
        """A device connects, sends a burst and disconnects, twice under one client id, the
        second time while the companion is stopped (it reads the CONNECT and the close only
        after both). Until the minute ends, its closed records show the minute before (it was
        not there: zeros)."""
        for visit, count in enumerate(VISITS):
            with companion_stopped(broker) if visit == 1 else contextlib.nullcontext():
                leaver = Client(broker, LEAVER)
                burst(leaver, f"events/{LEAVER}", count)
                leaver.disconnect()
            wait_for(lambda: len(closed_figures(broker, LEAVER)) == visit + 1,
                     what=f"the device's closed record {visit + 1}")
        self.assertEqual(closed_figures(broker, LEAVER),
                         [((0, 0), (count, 0)) for count in VISITS])

    def check_restarted(self, broker):
        """The restarted companion's figures of the minute: every connection opened in it, so
        its whole life is the minute (recent equals total), and the top clients show them; the
        device that left shows each visit in its closed record, their sum in the top clients."""
        def ranked():
            text = broker.http("/metrics")[2]
            return text if top_samples(text) else None
        samples = top_samples(wait_for(ranked, timeout=15, what="the restarted broker's top"))
        figures = {client_id: recent(broker, client_id)
                   for client_id in ("watcher", "publisher", "feeder", "resumer")}
        for client_id, (last_minute, total) in figures.items():
            self.assertEqual(last_minute, total, client_id)
        self.assertEqual(figures["publisher"][0], (BURST, 0))
        self.assertEqual(figures["watcher"][0], (0, BURST))
        self.assertEqual(figures["feeder"][0], (QUEUED + LIVE, 0))
        # The live ones on every broker; the queued ones where the broker counts its resend as
        # deliveries (2.1: docs/broker-versions.md).
        self.assertIn(figures["resumer"][0], ((0, LIVE), (0, QUEUED + LIVE)))
        self.assertEqual(closed_figures(broker, LEAVER),
                         [((count, 0), (count, 0)) for count in VISITS])
        figures[LEAVER] = ((sum(VISITS), 0), None)
        expected = {}
        for client_id, ((publishes, deliveries), _) in figures.items():
            expected[(client_id, "publish")] = publishes / 60
            expected[(client_id, "deliver")] = deliveries / 60
        self.assertEqual(samples.keys(), expected.keys())
        for key, value in expected.items():
            self.assertAlmostEqual(samples[key], value, places=9, msg=str(key))


if __name__ == "__main__":
    unittest.main()
