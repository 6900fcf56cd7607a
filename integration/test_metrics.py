# SPDX-License-Identifier: BSD-3-Clause
"""GET /metrics against the real broker: exact counter and histogram deltas for known traffic,
MQTT 5 command/query round trips, the connections gauge, and a real Prometheus scrape."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest
import urllib.request

from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from harness import (BROKER_VERSION, MOSQUITTO_PASSWD, Broker, Client, broker_tool, free_port,
                     parse_scrape, stop_process, wait_for)

# The contract's label values (../shared/spec/README.md, "GET /metrics"): exactly these, so that
# a KubeMQ dashboard's `sum by (operation)` sees no value of this project's own.
OPERATIONS = ["publish_events", "publish_store", "publish_queues", "rpc_command", "rpc_query",
              "deliver_events", "deliver_store", "deliver_queues", "rpc_response"]
STATUSES = ["success", "error", "dropped"]
DURATION_OPERATIONS = ["rpc_command", "rpc_query", "rpc_response"]
BUCKETS = ["0.01", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60", "+Inf"]
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """Prometheus text -> {(name, frozenset(labels)): value}, and the TYPE lines."""
    samples, types = parse_scrape(text)
    return {(name, frozenset(LABEL.findall(labels))): value
            for (name, labels), value in samples.items()}, types


class Metrics:
    def __init__(self, broker):
        status, headers, body = broker.http("/metrics")
        assert status == 200, (status, body)
        self.content_type = headers["Content-Type"]
        self.samples, self.types = parse(body)

    def get(self, name, **labels):
        return self.samples.get((name, frozenset(labels.items())))

    def ops(self, operation, status):
        return self.get("kubemq_mqtt_operations_total", operation=operation, status=status)

    def histogram_count(self, operation):
        return self.get("kubemq_mqtt_operation_duration_seconds_count", operation=operation)

    def subscribes(self, status):
        """mosquitto_connections_subscribes_total: SUBSCRIBE filters made (success) or refused by
        strict mode (error)."""
        return self.get("mosquitto_connections_subscribes_total", status=status)

    def off_contract_labels(self):
        """The kubemq_mqtt_* samples with an `operation` or `status` outside the contract's sets,
        or whose seed family carries other label names than the contract's ([] when none).
        kubemq_mqtt_http_requests_total's `status` is an HTTP status, not an outcome."""
        wrong = []
        for (name, labels) in sorted(self.samples, key=repr):
            if not name.startswith("kubemq_mqtt_"):
                continue
            values = dict(labels)
            if "operation" in values and values["operation"] not in OPERATIONS:
                wrong.append((name, values))
            if ("status" in values and values["status"] not in STATUSES
                    and name != "kubemq_mqtt_http_requests_total"):
                wrong.append((name, values))
            if name == "kubemq_mqtt_operations_total" and set(values) != {"operation", "status"}:
                wrong.append((name, values))
            if name.startswith("kubemq_mqtt_operation_duration_seconds"):
                if values.get("operation") not in DURATION_OPERATIONS or (
                        set(values) - {"operation", "le"}):
                    wrong.append((name, values))
            if name == "kubemq_mqtt_connections" and values:
                wrong.append((name, values))
        return wrong


def delta(before, after, operation, status):
    return after.ops(operation, status) - before.ops(operation, status)


def deltas(before, after, expected):
    """The change between two scrapes of each (operation, status) counter `expected` names
    ({(operation, status): change}): one assertion compares them all, and its message shows
    every counter that differs."""
    return {key: delta(before, after, *key) for key in expected}


def wait_metrics(broker, predicate, what, timeout=10):
    """The first scrape for which predicate(scrape) holds."""
    def scrape():
        m = Metrics(broker)
        return m if predicate(m) else None
    return wait_for(scrape, timeout=timeout, what=what)


def park_session(broker, client_id, topic, qos):
    """A persistent MQTT 3.1.1 session subscribed to `topic`, left offline."""
    sleeper = Client(broker, client_id, version=4, clean=False)
    sleeper.subscribe(topic, qos)
    sleeper.disconnect()
    wait_for(lambda: broker.connection(client_id) is None, what=f"{client_id} offline")


def v5_properties(response_topic=None, correlation=None):
    props = Properties(PacketTypes.PUBLISH)
    if response_topic is not None:
        props.ResponseTopic = response_topic
    if correlation is not None:
        props.CorrelationData = correlation
    return props


class Responder:
    """An MQTT 5 service answering commands/ and queries/ on the request's ResponseTopic."""

    def __init__(self, broker, client_id="responder", answer=True):
        self.client = Client(broker, client_id, version=5)
        self.answer = answer
        self.client.client.on_message = self.on_message
        self.client.subscribe("commands/svc/#", 1)
        self.client.subscribe("queries/svc/#", 1)

    def on_message(self, client, userdata, message):
        props = getattr(message, "properties", None)
        topic = getattr(props, "ResponseTopic", None)
        if not self.answer or not topic:
            return
        correlation = getattr(props, "CorrelationData", None)
        client.publish(topic, b"done", qos=1, properties=v5_properties(correlation=correlation))


class MetricsTest(unittest.TestCase):
    def test_families_names_labels_buckets_and_content_type(self):
        with Broker() as broker:
            m = Metrics(broker)
            self.assertEqual(m.content_type, "text/plain; version=0.0.4; charset=utf-8")
            self.assertEqual(m.types["kubemq_mqtt_connections"], "gauge")
            self.assertEqual(m.types["kubemq_mqtt_operations_total"], "counter")
            self.assertEqual(m.types["kubemq_mqtt_operation_duration_seconds"], "histogram")
            for operation in OPERATIONS:
                for status in STATUSES:
                    self.assertEqual(m.ops(operation, status), 0, (operation, status))
            for operation in ("rpc_command", "rpc_query", "rpc_response"):
                for le in BUCKETS:
                    self.assertEqual(m.get("kubemq_mqtt_operation_duration_seconds_bucket",
                                           operation=operation, le=le), 0, (operation, le))
                self.assertEqual(m.histogram_count(operation), 0)
            histogram_ops = {dict(labels)["operation"] for (name, labels) in m.samples
                             if name == "kubemq_mqtt_operation_duration_seconds_count"}
            self.assertEqual(histogram_ops, {"rpc_command", "rpc_query", "rpc_response"})
            operations = {dict(labels)["operation"] for (name, labels) in m.samples
                          if name == "kubemq_mqtt_operations_total"}
            self.assertEqual(operations, set(OPERATIONS))
            self.assertEqual(m.types["mosquitto_connections_subscribes_total"], "counter")
            self.assertEqual((m.subscribes("success"), m.subscribes("error")), (0, 0))
            self.assertEqual(m.off_contract_labels(), [])
            for (name, labels) in m.samples:
                for key, _ in labels:
                    self.assertNotIn(key, ("client_id", "client", "username"), name)
        broker.cleanup_dir()

    def test_subscriptions_count_in_the_projects_own_family_not_as_an_operation(self):
        """Subscriptions, publishes, deliveries and an RPC round trip: every kubemq_mqtt_* sample
        keeps the contract's operations and statuses, and each SUBSCRIBE filter counts in
        mosquitto_connections_subscribes_total."""
        with Broker() as broker:
            before = Metrics(broker)
            responder = Responder(broker, "l-responder")  # two filters
            sub = Client(broker, "l-sub", version=5)
            for topic in ("events/#", "store/orders", "$share/g/queues/jobs", "$SYS/#"):
                sub.subscribe(topic, 1)
            requester = Client(broker, "l-requester", version=5)
            requester.subscribe("$reply/l-requester/#", 1)
            requester.publish("commands/svc/x", b"go", qos=1,
                              properties=v5_properties("$reply/l-requester/c", b"c"))
            requester.publish("events/a", b"x", qos=1)
            requester.publish("events//bad", b"x", qos=1)
            after = wait_metrics(broker, lambda m: delta(before, m, "rpc_response", "success") == 1,
                                 what="the RPC response delivered")
            self.assertEqual(after.subscribes("success") - before.subscribes("success"), 2 + 4 + 1)
            self.assertEqual(after.subscribes("error"), 0)
            self.assertEqual(after.off_contract_labels(), [])
            for c in (responder.client, sub, requester):
                c.disconnect()
        broker.cleanup_dir()

    def test_publishes_and_deliveries_by_pattern(self):
        with Broker() as broker:
            sub = Client(broker, "m-sub", version=5)
            for topic in ("events/#", "store/#", "$share/g/queues/#", "site1/#"):
                sub.subscribe(topic, 1)
            pub = Client(broker, "m-pub", version=4)
            before = Metrics(broker)
            for i in range(5):
                pub.publish(f"events/e{i}", b"12345", qos=1)
            for i in range(3):
                pub.publish("store/orders", b"x", qos=1)
            for i in range(2):
                pub.publish("queues/jobs/email", b"x", qos=1)
            pub.publish("site1/temp", b"x", qos=1)  # default pattern: events
            pub.publish("events//bad", b"x", qos=1)  # an invalid mapping
            wait_for(lambda: len(sub.messages) == 12, what="12 deliveries")
            after = wait_metrics(broker, lambda m: delta(before, m, "deliver_events", "success") == 6,
                                 what="counters")
            expected = {("publish_events", "success"): 6, ("publish_events", "error"): 1,
                        ("publish_store", "success"): 3, ("publish_queues", "success"): 2,
                        ("deliver_events", "success"): 6, ("deliver_events", "error"): 1,
                        ("deliver_store", "success"): 3, ("deliver_queues", "success"): 2}
            self.assertEqual(deltas(before, after, expected), expected)
            received = (after.get("kubemq_mqtt_received_bytes_total") -
                        before.get("kubemq_mqtt_received_bytes_total"))
            self.assertEqual(received, 5 * 5 + 7)
            sub.disconnect()
            pub.disconnect()
        broker.cleanup_dir()

    def test_qos0_to_an_offline_persistent_session_is_dropped(self):
        with Broker() as broker:
            park_session(broker, "m-sleeper", "events/offline", 0)
            pub = Client(broker, "m-pub2", version=4)
            before = Metrics(broker)
            pub.publish("events/offline", b"lost", qos=1)
            after = wait_metrics(broker, lambda m: delta(before, m, "deliver_events", "dropped"),
                                 what="a dropped delivery")
            self.assertEqual(delta(before, after, "deliver_events", "dropped"), 1)
            self.assertEqual(delta(before, after, "deliver_events", "success"), 0)
            # The session resumes: nothing queued is counted a second time. A marker published
            # after the resume is delivered after the broker's re-check of the session, so once
            # the client has it, any second count would be in the counters too.
            again = Client(broker, "m-sleeper", version=4, clean=False)
            pub.publish("events/offline", b"marker", qos=1)
            wait_for(lambda: ("events/offline", b"marker") in again.messages, what="the marker")
            self.assertEqual(delta(before, Metrics(broker), "deliver_events", "success"), 1)
            again.disconnect()
            pub.disconnect()
        broker.cleanup_dir()

    def test_messages_queued_for_a_resumed_session_are_counted_once(self):
        with Broker() as broker:
            park_session(broker, "m-resume", "store/queued", 1)
            pub = Client(broker, "m-pub3", version=4)
            before = Metrics(broker)
            for i in range(3):
                pub.publish("store/queued", f"q{i}".encode(), qos=1)
            if BROKER_VERSION < (2, 1, 0):
                # 2.0 counts a delivery when the broker queues it (its ACL READ check); 2.1 when
                # it sends it (MESSAGE_OUT), here once the session resumes.
                wait_for(lambda: delta(before, Metrics(broker), "deliver_store", "success") == 3,
                         what="three queued deliveries")
            # The session resumes: the broker re-checks the queued messages and sends them.
            again = Client(broker, "m-resume", version=4, clean=False, connect=False)
            again.connect()
            wait_for(lambda: len(again.messages) == 3, what="the queued messages")
            # A marker published now is delivered after every re-check of the queued messages:
            # once the client has it, a second count of those would be in the counters.
            pub.publish("store/queued", b"marker", qos=1)
            wait_for(lambda: ("store/queued", b"marker") in again.messages, what="the marker")
            after = Metrics(broker)
            self.assertEqual(delta(before, after, "deliver_store", "success"), 3 + 1)
            again.disconnect()
            pub.disconnect()
        broker.cleanup_dir()

    def test_command_and_query_round_trips(self):
        with Broker(options={"rpc_timeout": "1"}) as broker:
            responder = Responder(broker)
            requester = Client(broker, "m-requester", version=5)
            requester.subscribe("$reply/m-requester/#", 1)
            before = Metrics(broker)
            for i in range(3):
                requester.publish("commands/svc/reboot", b"go", qos=1,
                                  properties=v5_properties("$reply/m-requester/c", f"c{i}".encode()))
                wait_for(lambda: len(requester.messages) == i + 1, what="command response")
            for i in range(2):
                requester.publish("queries/svc/status", b"?", qos=1,
                                  properties=v5_properties("$reply/m-requester/q"))
                wait_for(lambda: len(requester.messages) == 3 + i + 1, what="query response")
            after = wait_metrics(broker, lambda m: delta(before, m, "rpc_response", "success") == 5,
                                 what="five rpc_response")
            self.assertEqual(delta(before, after, "rpc_command", "success"), 3)
            self.assertEqual(delta(before, after, "rpc_query", "success"), 2)
            self.assertEqual(after.histogram_count("rpc_command") -
                             before.histogram_count("rpc_command"), 3)
            self.assertEqual(after.histogram_count("rpc_query") -
                             before.histogram_count("rpc_query"), 2)
            self.assertEqual(after.histogram_count("rpc_response") -
                             before.histogram_count("rpc_response"), 5)
            self.assertEqual(after.get("kubemq_mqtt_operation_duration_seconds_bucket",
                                       operation="rpc_command", le="+Inf"), 3)
            # Unanswered: an error after rpc_timeout (1 s). Without ResponseTopic: at once.
            responder.answer = False
            requester.publish("commands/svc/x", b"", qos=1, properties=v5_properties("$reply/m-requester/n"))
            requester.publish("queries/svc/x", b"", qos=1, properties=v5_properties())
            v311 = Client(broker, "m-v311", version=4)
            v311.publish("commands/svc/y", b"", qos=1)
            final = wait_metrics(broker, lambda m: delta(before, m, "rpc_command", "error") == 2,
                                 what="the timeout error", timeout=5)
            self.assertEqual(delta(before, final, "rpc_query", "error"), 1)
            self.assertEqual(delta(before, final, "rpc_command", "success"), 3)
            for c in (responder.client, requester, v311):
                c.disconnect()
        broker.cleanup_dir()

    def test_requests_beyond_max_pending_are_dropped(self):
        with Broker(options={"rpc_max_pending": "2", "rpc_timeout": "30"}) as broker:
            requester = Client(broker, "m-flood", version=5)
            before = Metrics(broker)
            for i in range(5):
                requester.publish("commands/none/x", b"", qos=1,
                                  properties=v5_properties(f"r/{i}", b"c"))
            after = wait_metrics(broker, lambda m: delta(before, m, "rpc_command", "dropped") == 3,
                                 what="three dropped")
            self.assertEqual(delta(before, after, "rpc_command", "success"), 0)
            requester.disconnect()
        broker.cleanup_dir()

    def test_connections_gauge_never_counts_a_takeover_twice_or_a_refused_connect(self):
        passwd_dir = tempfile.mkdtemp()
        try:
            path = os.path.join(passwd_dir, "passwd")
            broker_tool([MOSQUITTO_PASSWD, "-b", "-c", path, "user", "secret"], check=True)
            with open(path) as f:
                files = {"passwd": f.read()}
        finally:
            shutil.rmtree(passwd_dir)
        with Broker(files=files, extra="password_file {dir}/passwd") as broker:
            gauge = lambda: Metrics(broker).get("kubemq_mqtt_connections")
            a = Client(broker, "g-1", username="user", password="secret")
            b = Client(broker, "g-2")
            wait_for(lambda: gauge() == 2, what="gauge 2")
            old_addr = broker.connection("g-1")["remote_addr"]
            bad = Client(broker, "g-bad", username="user", password="wrong")
            self.assertNotEqual(bad.connack, 0)
            bad.client.loop_stop()
            a.client.loop_stop()  # no automatic reconnect: its socket stays open until taken over
            taker = Client(broker, "g-1", username="user", password="secret")
            # The companion has applied the takeover (the old connection's close comes before the
            # new one in the events) once g-1 is listed from the taker's socket; the refused
            # CONNECT came before both. From then on the gauge must read exactly 2.
            wait_for(lambda: (broker.connection("g-1") or {}).get("remote_addr") not in
                     (None, old_addr), what="the takeover seen by the companion")
            self.assertEqual(gauge(), 2)
            m = Metrics(broker)
            self.assertGreaterEqual(m.get("kubemq_mqtt_connects_refused_total"), 1)
            for c in (b, taker):
                c.disconnect()
            wait_for(lambda: gauge() == 0, what="gauge 0")
        broker.cleanup_dir()


class PrometheusScrapeTest(unittest.TestCase):
    def scraped_connections(self, workdir, config_text, what):
        """Runs Debian's Prometheus on `config_text` (written into `workdir`, which it removes)
        until it has scraped kubemq_mqtt_connections, and returns the value it read."""
        prometheus = shutil.which("prometheus")
        self.assertIsNotNone(prometheus, "Debian's prometheus package is needed")
        port = free_port()
        config = os.path.join(workdir, "prometheus.yml")
        with open(config, "w") as f:
            f.write(config_text)
        log = open(os.path.join(workdir, "prometheus.log"), "wb")
        process = subprocess.Popen(
            [prometheus, f"--config.file={config}", f"--storage.tsdb.path={workdir}/data",
             f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
        try:
            def query():
                url = f"http://127.0.0.1:{port}/api/v1/query?query=kubemq_mqtt_connections"
                try:
                    with urllib.request.urlopen(url, timeout=2) as response:
                        result = json.load(response)["data"]["result"]
                except OSError:
                    return None
                return result[0]["value"][1] if result else None
            return wait_for(query, timeout=60, interval=0.5, what=what)
        finally:
            stop_process(process)
            log.close()
            shutil.rmtree(workdir, ignore_errors=True)

    def test_a_real_prometheus_reads_the_connections_gauge(self):
        with Broker() as broker:
            clients = [Client(broker, f"p-{i}") for i in range(3)]
            config = ("global:\n  scrape_interval: 1s\n"
                      "scrape_configs:\n  - job_name: mosquitto_connections\n"
                      f"    static_configs:\n      - targets: ['127.0.0.1:{broker.http_port}']\n")
            self.assertEqual(self.scraped_connections(tempfile.mkdtemp(prefix="mqc-prom-"), config,
                                                      "Prometheus to scrape the plugin"), "3")
            for c in clients:
                c.disconnect()
        broker.cleanup_dir()

    def test_the_shipped_configuration_scrapes_with_a_token(self):
        """conf/prometheus.yml with its authorization block turned on, against a broker that
        needs a token: the scrape succeeds with it (and the companion refuses one without)."""
        token = "prometheus-token-0123456789"
        shipped = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conf",
                               "prometheus.yml")
        with open(shipped) as f:
            text = f.read()
        broker = Broker(files={"read.tokens": token + "\n"},
                        options={"http_token_file": "{dir}/read.tokens"})
        with broker:
            client = Client(broker, "p-token")
            workdir = tempfile.mkdtemp(prefix="mqc-prom-")
            credentials = os.path.join(workdir, "token")
            with open(credentials, "w") as f:
                f.write(token + "\n")
            os.chmod(credentials, 0o600)
            # Uncommented as an operator would: "# " goes, the indentation stays.
            for line in ("# authorization:", "#   type: Bearer", "#   credentials_file:"):
                self.assertIn(line, text)
                text = text.replace(line, line.replace("# ", "", 1))
            text = re.sub(r"credentials_file: \S+", f"credentials_file: {credentials}", text)
            text = text.replace("127.0.0.1:8080", f"127.0.0.1:{broker.http_port}")
            self.assertEqual(broker.http("/metrics")[0], 401)
            self.assertEqual(self.scraped_connections(workdir, text,
                                                      "Prometheus to scrape with the token"), "1")
            client.disconnect()
        broker.cleanup_dir()


if __name__ == "__main__":
    unittest.main()
