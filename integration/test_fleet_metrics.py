# SPDX-License-Identifier: BSD-3-Clause
"""The fleet's metrics (docs/fleet.md): the recording rules of conf/prometheus-rules.yml against
real scrapes of three brokers, each with the plugin and its own plugin_opt_node_id (three broker
versions when the build tree has them: the suite's broker, then other versions of
MQC_BUILD_DIR/brokers/brokers.json).

Each broker gets its own number of open clients, of clients that come and go, and of messages,
so that a sum that left a broker out, or counted one twice, cannot come out right. Two scrapes of
each /metrics (before and after the traffic) are checked by `promtool check metrics`, then
become the input series of a `promtool test rules` file: gauges at their second value, counters
going from the first value up by the traffic between the scrapes each second, so that a 5-minute
rate is that traffic, a whole number (whatever Prometheus' extrapolation at the window's edges);
values are compared in thousandths, since promtool compares floats exactly.
The expected fleet values are the sums of the three scrapes' own numbers. Then a real Prometheus
scrapes the three brokers with conf/prometheus.yml's job and `node` labels and evaluates the
shipped rules, and a stopped broker drops out of the sums and of job:mosquitto_connections_up:sum.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest
import urllib.parse
import urllib.request

import brokers
from broker_matrix import LAYOUT_BROKERS
from harness import (BROKER, Broker, Client, disconnect_all, free_port, parse_scrape, stop_process,
                     wait_for)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
RULES = os.path.abspath(os.path.join(ROOT, "conf", "prometheus-rules.yml"))
SCRAPE_CONFIG = os.path.join(ROOT, "conf", "prometheus.yml")
JOB = "mosquitto_connections"  # conf/prometheus.yml's job, which the rules' `up` selects
# Per broker: node id, clients left open, clients that connect and disconnect between the two
# scrapes, messages published between them (each delivered to one subscriber on that broker).
PLAN = [(11, 2, 1, 3), (12, 3, 2, 5), (13, 5, 4, 7)]
SECONDS = 600  # the promtool test's series: a sample a second for 10 minutes, evaluated at the end
PRECISION = 1000  # the promtool test compares the rules' values in thousandths


def family_type(name, types):
    for suffix in ("", "_bucket", "_sum", "_count"):
        if suffix and name.endswith(suffix) and name[:-len(suffix)] in types:
            return types[name[:-len(suffix)]]
        if not suffix and name in types:
            return types[name]
    raise AssertionError(f"{name} has no # TYPE line")


def number(value):
    """A float as promtool's series notation takes it."""
    return repr(float(value))


def fleet_builds():
    """The suite's broker first, then up to two builds of other versions of the manifest; the
    suite's broker again where there are not enough."""
    chosen = [BROKER]
    build_dir = os.environ.get("MQC_BUILD_DIR", "")
    for name in sorted(brokers.read_manifest(build_dir) if build_dir else {}):
        if len(chosen) == len(PLAN) or name in LAYOUT_BROKERS:
            continue
        build = brokers.load(name, build_dir)
        if build.version not in {b.version for b in chosen}:
            chosen.append(build)
    return chosen + [BROKER] * (len(PLAN) - len(chosen))


class Node:
    """One broker of the fleet, its clients and its two scrapes."""

    def __init__(self, build, node_id, open_count, churn, messages):
        self.node_id, self.open_count, self.churn, self.messages = (node_id, open_count, churn,
                                                                    messages)
        self.broker = Broker(build=build, options={"node_id": str(node_id)})
        self.clients = []
        self.before = self.after = None

    @property
    def instance(self):
        return f"127.0.0.1:{self.broker.http_port}"

    def scrape(self):
        status, _, text = self.broker.http("/metrics")
        assert status == 200, (status, text)
        return text

    def value(self, text, name):
        return parse_scrape(text)[0].get((name, ""))


class FleetMetricsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.nodes = [Node(build, *plan) for build, plan in zip(fleet_builds(), PLAN)]
        try:
            for node in cls.nodes:
                node.broker.start()
                node.clients = [Client(node.broker, f"fleet-{node.node_id}-open-{i}")
                                for i in range(node.open_count)]
                node.clients[0].subscribe("fleet/events", 0)
            for node in cls.nodes:
                wait_for(lambda: node.value(node.scrape(), "kubemq_mqtt_connections") ==
                         node.open_count, what=f"node {node.node_id}'s open connections")
                node.before = node.scrape()
            for node in cls.nodes:
                for i in range(node.churn):
                    Client(node.broker, f"fleet-{node.node_id}-brief-{i}").disconnect()
                publisher = node.clients[-1]
                for _ in range(node.messages):
                    publisher.publish("fleet/events", b"reading", qos=1)
                wait_for(lambda: len(node.clients[0].messages) == node.messages,
                         what=f"node {node.node_id}'s deliveries")
            for node in cls.nodes:
                base = parse_scrape(node.before)[0]

                def caught_up():
                    now = parse_scrape(node.scrape())[0]
                    grown = lambda name: now[(name, "")] - base[(name, "")]
                    return (now[("kubemq_mqtt_connections", "")] == node.open_count
                            and grown("kubemq_mqtt_connects_total") == node.churn
                            and grown("kubemq_mqtt_delivered_messages_total") == node.messages)
                wait_for(caught_up, what=f"node {node.node_id}'s traffic in /metrics")
                node.after = node.scrape()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for node in cls.nodes:
            disconnect_all(node.clients)
            node.broker.stop()
            if node.broker.dir:
                node.broker.cleanup_dir()

    def test_the_brokers_are_those_of_the_plan(self):
        versions = [node.broker.build.version for node in self.nodes]
        print(f"fleet of {', '.join(versions)}")
        for node in self.nodes:
            samples, _ = parse_scrape(node.after)
            self.assertEqual(samples[("kubemq_mqtt_connections", "")], node.open_count)
            # The node id is in the gauge's help text only (src/companion/metrics.h): the scrape
            # target, and conf/prometheus.yml's `node` label, tell brokers apart.
            self.assertIn(f"(node_id {node.node_id})", node.after)
            self.assertIn(f'broker_version="{node.broker.build.version}"', node.after)

    def test_promtool_accepts_each_scrape(self):
        for node in self.nodes:
            for text in (node.before, node.after):
                result = subprocess.run(["promtool", "check", "metrics"], input=text,
                                        capture_output=True, text=True, timeout=60)
                self.assertEqual(result.returncode, 0,
                                 f"node {node.node_id}: {result.stdout}{result.stderr}")

    # -- promtool test rules on the real scrapes -------------------------------------------
    def target_labels(self, node):
        return f'job="{JOB}",instance="{node.instance}",node="{node.node_id}"'

    def input_series(self):
        series = []
        for node in self.nodes:
            before, _ = parse_scrape(node.before)
            after, types = parse_scrape(node.after)
            series.append({"series": f"up{{{self.target_labels(node)}}}",
                           "values": f"1x{SECONDS}"})
            for (name, labels), value in sorted(after.items()):
                all_labels = ", ".join(filter(None, [labels, self.target_labels(node)]))
                selector = f"{name}{{{all_labels}}}"
                if family_type(name, types) == "gauge":
                    values = f"{number(value)}x{SECONDS}"
                else:
                    first = before.get((name, labels), value)
                    values = f"{number(first)}+{number(value - first)}x{SECONDS}"
                series.append({"series": selector, "values": values})
        return series

    def per_second(self, name, node):
        """The traffic between the two scrapes of `node`: what the test's series add each
        second."""
        return node.value(node.after, name) - node.value(node.before, name)

    def expected(self):
        """{recorded name: [(labels, value)]} from the three scrapes' own numbers."""
        job = {"job": JOB}
        fleet = lambda f: [(job, sum(f(node) for node in self.nodes))]
        by_node = lambda f: [({"job": JOB, "instance": node.instance, "node": str(node.node_id)},
                              f(node)) for node in self.nodes]
        total = lambda name: (lambda node: sum(
            v for (n, _), v in parse_scrape(node.after)[0].items() if n == name))
        expected = {
            "job:mosquitto_connections_targets:count": [(job, len(self.nodes))],
            "job:mosquitto_connections_up:sum": [(job, len(self.nodes))],
            "job:kubemq_mqtt_connections:sum": fleet(total("kubemq_mqtt_connections")),
            "job:kubemq_mqtt_subscriptions:sum": fleet(total("kubemq_mqtt_subscriptions")),
        }
        for metric in ("connects", "connects_refused", "received_messages", "delivered_messages"):
            rate = lambda node, m=metric: self.per_second(f"kubemq_mqtt_{m}_total", node)
            expected[f"instance:kubemq_mqtt_{metric}:rate5m"] = by_node(rate)
            expected[f"job:kubemq_mqtt_{metric}:rate5m"] = fleet(rate)

        def disconnects(node, reason=None):
            before, after = parse_scrape(node.before)[0], parse_scrape(node.after)[0]
            return sum(v - before[(n, labels)] for (n, labels), v in after.items()
                       if n == "kubemq_mqtt_disconnects_total"
                       and (reason is None or labels == f'reason="{reason}"'))
        expected["instance:kubemq_mqtt_disconnects:rate5m"] = by_node(disconnects)
        expected["job:kubemq_mqtt_disconnects:rate5m"] = fleet(disconnects)
        reasons = sorted(re.findall(r'^kubemq_mqtt_disconnects_total\{reason="(\w+)"\}',
                                    self.nodes[0].after, re.M))
        expected["job_reason:kubemq_mqtt_disconnects:rate5m"] = [
            ({"job": JOB, "reason": reason},
             sum(disconnects(node, reason) for node in self.nodes)) for reason in reasons]
        versions = {}
        for node in self.nodes:
            for labels in re.findall(r"^mosquitto_connections_build_info\{(.*)\} 1$",
                                     node.after, re.M):
                key = tuple(sorted(re.findall(r'(\w+)="([^"]*)"', labels)))
                versions[key] = versions.get(key, 0) + 1
        self.assertEqual(sum(versions.values()), len(self.nodes))
        expected["job_version:mosquitto_connections_build_info:count"] = [
            ({"job": JOB, **dict(key)}, count) for key, count in sorted(versions.items())]
        return expected

    def promtool_test(self, expected):
        tests = []
        for name, samples in sorted(expected.items()):
            # Prometheus' rate() multiplies and divides by the window: 7 per second can come out
            # 7.000000000000001. Thousandths, rounded, are exact, and still tell 7 from 7.001.
            tests.append({"expr": f"round({PRECISION} * {name})", "eval_time": f"{SECONDS}s",
                          "exp_samples": [
                              {"labels": "{" + ",".join(f'{k}="{v}"'
                                                        for k, v in sorted(labels.items())) + "}",
                               "value": round(PRECISION * value)} for labels, value in samples]})
        document = {"rule_files": [RULES], "evaluation_interval": "1m",
                    "tests": [{"interval": "1s", "input_series": self.input_series(),
                               "promql_expr_test": tests}]}
        folder = tempfile.mkdtemp(prefix="mqc-fleet-")
        try:
            path = os.path.join(folder, "fleet_test.yml")
            with open(path, "w") as f:
                json.dump(document, f, indent=1)  # JSON is YAML
            return subprocess.run(["promtool", "test", "rules", path], capture_output=True,
                                  text=True, timeout=120)
        finally:
            shutil.rmtree(folder)

    def test_the_fleet_rules_sum_the_three_real_scrapes(self):
        expected = self.expected()
        # Every recording rule of the fleet group is checked, and the traffic is there to sum.
        with open(RULES) as f:
            recorded = set(re.findall(r"^\s*- record: (\S+)$", f.read(), re.M))
        self.assertEqual(set(expected), recorded)
        self.assertEqual(expected["job:kubemq_mqtt_connections:sum"][0][1],
                         sum(open_count for _, open_count, _, _ in PLAN))
        self.assertEqual(expected["job:kubemq_mqtt_connects:rate5m"][0][1],
                         sum(churn for _, _, churn, _ in PLAN))
        self.assertEqual(expected["job:kubemq_mqtt_delivered_messages:rate5m"][0][1],
                         sum(messages for _, _, _, messages in PLAN))
        result = self.promtool_test(expected)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

        # The comparison bites: one broker's open connections left out of the fleet's sum.
        wrong = dict(expected)
        wrong["job:kubemq_mqtt_connections:sum"] = [
            ({"job": JOB}, expected["job:kubemq_mqtt_connections:sum"][0][1] - PLAN[0][1])]
        result = self.promtool_test(wrong)
        self.assertNotEqual(result.returncode, 0, result.stdout)
        self.assertIn("job:kubemq_mqtt_connections:sum", result.stdout + result.stderr)

    # -- a real Prometheus ------------------------------------------------------------------
    def test_a_real_prometheus_records_the_fleet(self):
        prometheus = shutil.which("prometheus")
        self.assertIsNotNone(prometheus, "Debian's prometheus package is needed")
        with open(SCRAPE_CONFIG) as f:
            shipped = f.read()
        # conf/prometheus.yml's job and its `node` label, one target per broker, quicker clocks.
        self.assertIn('node: "0"', shipped)
        job = shipped[shipped.index("scrape_configs:"):shipped.index("    static_configs:")]
        targets = "".join(f'      - targets: ["{node.instance}"]\n'
                          f'        labels:\n          node: "{node.node_id}"\n'
                          for node in self.nodes)
        config = ("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                  f"rule_files: [{json.dumps(RULES)}]\n"
                  + job.replace("scrape_interval: 5s", "scrape_interval: 1s")
                  .replace("scrape_timeout: 4s", "scrape_timeout: 1s")
                  + "    static_configs:\n" + targets)
        workdir = tempfile.mkdtemp(prefix="mqc-fleet-prom-")
        port = free_port()
        with open(os.path.join(workdir, "prometheus.yml"), "w") as f:
            f.write(config)
        log = open(os.path.join(workdir, "prometheus.log"), "wb")
        process = subprocess.Popen(
            [prometheus, f"--config.file={workdir}/prometheus.yml",
             f"--storage.tsdb.path={workdir}/data", f"--web.listen-address=127.0.0.1:{port}"],
            stdout=log, stderr=subprocess.STDOUT)

        def query(expr):
            url = (f"http://127.0.0.1:{port}/api/v1/query?"
                   + urllib.parse.urlencode({"query": expr}))
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    result = json.load(response)["data"]["result"]
            except OSError:
                return None
            return {json.dumps({k: v for k, v in r["metric"].items() if k != "__name__"},
                               sort_keys=True): float(r["value"][1]) for r in result}

        def settles(expr, value, what):
            one = lambda: (query(expr) or {}).get(json.dumps({"job": JOB}))
            wait_for(lambda: one() == value, timeout=60, interval=0.5, what=what)

        try:
            opened = sum(node.open_count for node in self.nodes)
            settles("job:mosquitto_connections_up:sum", 3, "three brokers up")
            settles("job:kubemq_mqtt_connections:sum", opened, "the fleet's connections")
            per_node = query('kubemq_mqtt_connections{job="%s"}' % JOB)
            self.assertEqual(sorted((json.loads(k)["node"], v) for k, v in per_node.items()),
                             [(str(node.node_id), node.open_count) for node in self.nodes])

            stopped = self.nodes[0]
            disconnect_all(stopped.clients)
            stopped.clients = []
            stopped.broker.stop()
            settles("job:mosquitto_connections_up:sum", 2, "the stopped broker down")
            settles("job:mosquitto_connections_targets:count", 3, "three targets still")
            settles("job:kubemq_mqtt_connections:sum", opened - stopped.open_count,
                    "the fleet's sum without the stopped broker")
        finally:
            stop_process(process)
            log.close()
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
