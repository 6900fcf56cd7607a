# SPDX-License-Identifier: BSD-3-Clause
"""The top talkers (plugin_opt_metrics_top_clients) against the real broker: after a minute of
real traffic, /metrics has kubemq_mqtt_top_client_messages_per_second for the N clients with the
most publishes plus deliveries in the previous complete minute and for no other; the Grafana
panel's query names only what that scrape serves; the CLI's top and the console show the same
N first, in the same order. Off (the default), the family is absent.

The figures are those of the previous complete minute of Unix time (recentRequestStatistics), so
the test sends its traffic early in a minute and reads the figures once the next one began: it
waits up to a minute, the one long wait of the suite."""

import json
import os
import subprocess
import time
import unittest

from browser import dump_dom, parse_html
from harness import Broker, Client, disconnect_all, wait_for
from test_grafana_dashboard import DASHBOARD, TARGET_LABELS, promql_names, queries, scrape_series

FAMILY = "kubemq_mqtt_top_client_messages_per_second"
CLI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli",
                   "mosquitto-connections")
# Messages each client publishes (no subscriber: no deliveries). Alphabetical order is the
# reverse of the traffic order, so that a list sorted by client id cannot pass for the ranking.
TRAFFIC = {"zeta": 30, "yak": 12, "alpha": 3}
TOP_N = 2


def wait_for_minute_start(latest_second=45):
    """Returns at a point of the current Unix minute no later than `latest_second`, waiting for
    the next minute when this one is too far gone (at most ~15 s)."""
    second = time.time() % 60
    if second > latest_second:
        time.sleep(60.5 - second)


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
        broker.start()
        clients = []
        try:
            for client_id in TRAFFIC:
                clients.append(Client(broker, client_id))
            # A connection's statistics window starts when the registry sees it: publishing
            # before that (a slow companion, under TSan) would leave messages out of the minute.
            broker.wait_connections(lambda cs: len(cs) == len(TRAFFIC))
            wait_for_minute_start()
            minute = int(time.time() // 60)
            for client, count in zip(clients, TRAFFIC.values()):
                for _ in range(count):
                    client.publish(f"events/{client.client._client_id.decode()}", b"x", qos=1)
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
            broker.stop()
            broker.cleanup_dir()


if __name__ == "__main__":
    unittest.main()
