# SPDX-License-Identifier: BSD-3-Clause
"""conf/grafana/mosquitto-connections.json against a real /metrics scrape: after real traffic
(publishes, deliveries, subscriptions of several patterns, a refused CONNECT, disconnects, API
requests), every metric name that a panel query or a template variable uses is served, or is
a recording rule of conf/prometheus-rules.yml whose own expression names served metrics, or
Prometheus' `up`; and every label it groups or matches by exists on those metrics (or is a
label Prometheus adds, or a rule keeps). Every query also passes Prometheus' own parser
(promtool check rules). The Fleet row (docs/fleet.md) sums every broker: its queries use the
fleet's recording rules and no `$instance` filter."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import Broker, Client, passwd_file, wait_for

DASHBOARD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conf", "grafana",
                         "mosquitto-connections.json")
RULES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conf",
                     "prometheus-rules.yml")
# Added by Prometheus at scrape time: `node` is the target label of conf/prometheus.yml (each
# broker's plugin_opt_node_id), since /metrics carries no broker label.
TARGET_LABELS = {"instance", "job", "node"}
# Series Prometheus makes itself for every scrape target, with the target's labels only.
PROMETHEUS_SERIES = {"up"}
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
                "unless", "bool", "offset", "inf", "nan"}
# Families served only when an option turns them on, each checked against a real scrape by the
# suite named here instead of the scrape below.
OPT_IN = {"kubemq_mqtt_top_client_messages_per_second": "test_top_clients.py"}
# Grafana's variables, replaced by what they stand for when the query runs.
VARIABLES = {"$__rate_interval": "1m", "$__interval": "1m", "$instance": ".*"}


def scrape_series(text):
    """{sample name: set of label names} of a Prometheus text exposition."""
    series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = re.match(r"^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s", line)
        assert match, f"not a sample line: {line!r}"
        labels = set(re.findall(r'([a-zA-Z_]\w*)="', match.group(2) or ""))
        series.setdefault(match.group(1), set()).update(labels)
    return series


def promql_names(expr):
    """(metric names, label names) a PromQL expression uses."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    labels = set()
    for matchers in re.findall(r"\{([^}]*)\}", text):
        labels.update(re.findall(r"([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)", matchers))
    for grouping in re.findall(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)", text):
        labels.update(name.strip() for name in grouping.split(",") if name.strip())
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"(?<![\w:.])([a-zA-Z_:][\w:]*)(?![\w:])(?!\s*\()", text):
        if match.group(1).lower() not in PROMQL_WORDS:
            names.add(match.group(1))
    return names, labels


def recording_rules():
    """{recorded name: PromQL} of conf/prometheus-rules.yml (each rule's expr on one line)."""
    with open(RULES) as f:
        text = f.read()
    rules = dict(re.findall(r"^\s*- record: (\S+)\n\s*expr: (.+)$", text, re.M))
    assert len(rules) == text.count("- record:"), "a recording rule's expr is not on one line"
    return rules


def kept_labels(expr):
    """The labels an aggregation `op by (a, b) (...)` keeps, or None for other expressions."""
    match = re.match(r"\s*(?:sum|count|min|max|avg)\s+by\s*\(([^)]*)\)", expr)
    return {name.strip() for name in match.group(1).split(",")} if match else None


def served_names(name, rules):
    """The metric names `name` stands for in a scrape: itself, or what its rule uses."""
    if name not in rules:
        return {name}
    names, _ = promql_names(rules[name])
    return set().union(*(served_names(n, rules) for n in names))


def panels_of(dashboard):
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])  # panels inside a collapsed row


def row_panels(dashboard, title):
    """The panels of the (open) row called `title`: those after it, up to the next row."""
    found, inside = [], False
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            inside = panel["title"] == title
        elif inside:
            found.append(panel)
    return found


def queries(dashboard):
    """(where, PromQL) of every panel target and every query variable."""
    for panel in panels_of(dashboard):
        for target in panel.get("targets", []):
            yield f"panel '{panel['title']}' target {target['refId']}", target["expr"]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] != "query":
            continue
        query = variable["query"]["query"] if isinstance(variable["query"], dict) \
            else variable["query"]
        match = re.fullmatch(r"label_values\((.+),\s*([a-zA-Z_]\w*)\)", query)
        assert match, f"variable {variable['name']}: not label_values(): {query}"
        yield f"variable '{variable['name']}'", f"group by ({match.group(2)}) ({match.group(1)})"


class GrafanaDashboardTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(DASHBOARD) as f:
            cls.dashboard = json.load(f)

    def test_panels_cover_the_operators_questions(self):
        titles = [p["title"] for p in panels_of(self.dashboard) if p["type"] != "row"]
        for wanted in ("Open connections per node", "Operations by pattern and status",
                       "RPC latency (request to response)", "RPC latency quantiles",
                       "Connects, refusals and disconnects by reason", "Bytes in and out",
                       "HTTP requests by path and status", "Lost broker events", "Top clients"):
            self.assertIn(wanted, titles)
        heatmap = [p for p in panels_of(self.dashboard) if p["type"] == "heatmap"]
        self.assertEqual(len(heatmap), 1)
        self.assertEqual(heatmap[0]["targets"][0]["format"], "heatmap")
        ids = [p["id"] for p in panels_of(self.dashboard)]
        self.assertEqual(len(ids), len(set(ids)), "panel ids are unique")

    def test_every_query_parses_as_promql(self):
        rules = {"groups": [{"name": "dashboard", "rules": []}]}
        for number, (where, expr) in enumerate(queries(self.dashboard)):
            for variable, value in VARIABLES.items():
                expr = expr.replace(variable, value)
            self.assertNotIn("$", expr, f"{where}: an unknown Grafana variable")
            rules["groups"][0]["rules"].append({"record": f"dashboard:query_{number}",
                                                "expr": expr})
        folder = tempfile.mkdtemp()
        try:
            path = os.path.join(folder, "rules.yml")  # JSON is YAML
            with open(path, "w") as f:
                json.dump(rules, f)
            result = subprocess.run(["promtool", "check", "rules", path], capture_output=True,
                                    text=True, timeout=60)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        finally:
            shutil.rmtree(folder)

    def test_every_metric_a_query_names_is_served(self):
        broker = Broker(files={"passwd": passwd_file("alice", "secret")},
                        extra="password_file {dir}/passwd", allow_anonymous=True)
        broker.start()
        try:
            subscriber = Client(broker, "dash-sub")
            subscriber.subscribe("events/site1/#", 1)
            subscriber.subscribe("$share/workers/queues/jobs", 1)
            publisher = Client(broker, "dash-pub", username="alice", password="secret")
            for _ in range(5):
                publisher.publish("events/site1/temp", b"21.5", qos=1)
                publisher.publish("queues/jobs", b"job", qos=1)
            wait_for(lambda: len(subscriber.messages) == 10, what="deliveries")
            refused = Client(broker, "dash-refused", username="alice", password="wrong")
            self.assertNotEqual(refused.connack, 0)
            refused.disconnect()
            Client(broker, "dash-short").disconnect()
            broker.connections()
            broker.http("/no-such-path")

            def scraped():
                status, _, text = broker.http("/metrics")
                self.assertEqual(status, 200)
                series = scrape_series(text)
                counted = "kubemq_mqtt_http_requests_total" in series and \
                    re.search(r"^kubemq_mqtt_received_messages_total [1-9]", text, re.M)
                return series if counted else None

            series = wait_for(scraped, what="the traffic in /metrics")
            subscriber.disconnect()
            publisher.disconnect()
        finally:
            broker.stop()
            broker.cleanup_dir()

        rules = recording_rules()
        for name in PROMETHEUS_SERIES:
            series[name] = set()
        checked = recorded = 0
        for where, expr in queries(self.dashboard):
            names, labels = promql_names(expr)
            self.assertTrue(names, f"{where}: no metric found in {expr}")
            if names <= set(OPT_IN):
                continue
            known = set(TARGET_LABELS)
            for name in sorted(names):
                if ":" in name:
                    self.assertTrue(name in rules, f"{where} uses '{name}', which no recording "
                                                   "rule of conf/prometheus-rules.yml makes")
                    recorded += 1
                    kept = kept_labels(rules[name])
                    known |= kept if kept is not None else set()
                for served in sorted(served_names(name, rules)):
                    self.assertIn(served, series, f"{where} uses metric '{served}'"
                                  f"{f' (through {name})' if served != name else ''}, "
                                  "which /metrics does not serve")
                    checked += 1
                    if ":" not in name:
                        known |= series[served]
            for label in sorted(labels):
                self.assertIn(label, known,
                              f"{where} uses label '{label}', which none of {sorted(names)} has")
        self.assertGreaterEqual(checked, 15)
        self.assertGreaterEqual(recorded, 10)

    def test_the_fleet_row_sums_every_broker_with_the_recording_rules(self):
        self.assertEqual(self.dashboard["panels"][0]["title"], "Fleet", "the Fleet row comes first")
        panels = row_panels(self.dashboard, "Fleet")
        titles = [p["title"] for p in panels]
        for wanted in ("Fleet: open connections", "Fleet: brokers answering",
                       "Open connections by broker and fleet total", "Brokers up",
                       "Connects and disconnects by broker"):
            self.assertIn(wanted, titles)
        rules = recording_rules()
        used = set()
        for panel in panels:
            for target in panel["targets"]:
                where = f"panel '{panel['title']}' target {target['refId']}"
                self.assertNotIn("$instance", target["expr"], f"{where}: the fleet is every broker")
                names, _ = promql_names(target["expr"])
                used |= names
                for name in names:
                    self.assertTrue(name in rules or name in PROMETHEUS_SERIES
                                    or name.startswith("kubemq_mqtt_"), f"{where}: '{name}'")
        # The fleet's sums, each broker's share, and whether every broker answered.
        for name in ("job:kubemq_mqtt_connections:sum", "kubemq_mqtt_connections",
                     "job:mosquitto_connections_up:sum", "job:mosquitto_connections_targets:count",
                     "instance:kubemq_mqtt_connects:rate5m", "job:kubemq_mqtt_connects:rate5m",
                     "job_reason:kubemq_mqtt_disconnects:rate5m",
                     "job_version:mosquitto_connections_build_info:count", "up"):
            self.assertIn(name, used)
        # Per-broker series name their broker: every legend of a per-broker query shows `node`.
        for panel in panels:
            for target in panel["targets"]:
                names, _ = promql_names(target["expr"])
                if any(n.startswith("instance:") or n in ("up", "kubemq_mqtt_connections")
                       for n in names):
                    self.assertIn("{{node}}", target["legendFormat"], panel["title"])

    def test_the_name_check_itself(self):
        # What the checks above rely on: names, functions and labels told apart.
        names, labels = promql_names(
            'histogram_quantile(0.95, sum by (le, operation) (rate(a_bucket{instance=~"$i", '
            'status!="x(y)"}[5m]))) / on (job) b_total offset 5m and c')
        self.assertEqual(names, {"a_bucket", "b_total", "c"})
        self.assertEqual(labels, {"le", "operation", "instance", "status", "job"})
        self.assertEqual(scrape_series('# HELP x\nm{a="1",b="2"} 3\nm 4\nn_total 1e3\n'),
                         {"m": {"a", "b"}, "n_total": set()})
        self.assertEqual(promql_names("-instance:x_y:rate5m + job:z:sum"),
                         ({"instance:x_y:rate5m", "job:z:sum"}, set()))
        self.assertEqual(kept_labels("sum by (job, instance) (rate(x[5m]))"), {"job", "instance"})
        self.assertIsNone(kept_labels("rate(x[5m])"))
        rules = recording_rules()
        self.assertEqual(served_names("job:kubemq_mqtt_connects:rate5m", rules),
                         {"kubemq_mqtt_connects_total"})


if __name__ == "__main__":
    unittest.main()
