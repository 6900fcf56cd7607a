#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every benchmark of the plugin in one command, printed as one table: each figure, its target,
and plain Mosquitto where a ratio applies.

Usage: bench/run_all.py BUILD_DIR [--connections N] [--quick] [--broker NAME]
       bench/run_all.py BUILD_DIR --brokers NAME,NAME,... [--quick]

- Broker ping: one client publishing QoS 0 to itself (bench/mqtt_load.py), p99 and max round
  trip, idle and while two processes hammer the API (full KubeMQ list, ListConnections pages of
  10 and 1000, /metrics), with N connections of 2 subscriptions each open.
- API latency at N connections: curl's total time, median of 5.
- Companion resident memory after serving the lists; broker memory per connection, with and
  without the plugin (resident memory delta / N).
- Throughput with/without the plugin (median of 3 rounds), QoS 0 and QoS 1 fan-out of 64-byte
  messages to 2 subscribers, 500 idle connections each, both brokers pinned to one CPU and
  loaded at once, the plugin's connection list polled 10 times a second: deliveries per CPU
  second of the broker (and its companion). QoS 0 is published by mosquitto_pub -l; QoS 1 by
  mqtt_load.py with 100 messages in flight.
- Instructions per delivery under callgrind (bench/broker_overhead.py's method).
- Requests/s of the KubeMQ list of 100 connections against nginx serving the same bytes from a
  file (wrk, 2 threads, 32 connections, same run).
- One sock_diag dump of the broker's sockets at N connections (build's mqc_sock_diag_bench).
- In process, 100,000 connections fed through the real event path (build's mqc_view_bench): a
  ListConnections page of 1000, filters `client_id IN (1000 ids)` and an OR of two prefixes,
  and the full KubeMQ list through the router, and what the full list would cost as a cJSON
  tree.

The ratio figures (throughput QoS 0 and QoS 1, instructions per delivery) run on the Mosquitto
build --broker names: `system` (Debian 12's /usr/sbin/mosquitto, the default) or a name of the
manifest scripts/prepare-brokers.py writes into BUILD_DIR/brokers/ (integration/brokers.py);
plain and plugin runs of one ratio always use the same build. The other figures run on
`system`. --brokers runs only the ratio figures, for each named build in turn, and prints
them as one row per build.

--quick runs every tool in seconds with small N; it prints figures and asserts no timing. It
also runs the ratio figures once on a 2.1 build of the manifest (tiny N), so that path keeps
working; without a manifest it says so and skips that part only.
Processes are started with their own PIDs recorded and stopped by them.
"""

import argparse
import json
import multiprocessing
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
import broker_overhead  # noqa: E402
import brokers  # noqa: E402
import harness  # noqa: E402
import mqtt_load  # noqa: E402

LIST_CONNECTIONS = "/mqtt.connections.v1.ConnectionsService/ListConnections"
CONNECT_HEADERS = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
QUIET_LOG = ("error", "warning", "notice")


class Table:
    """The figures; `judge` False (the quick run) leaves the "met" column empty, since a run of
    seconds on small N says nothing about the targets."""

    def __init__(self, judge=True):
        self.rows = []
        self.judge = judge

    def add(self, figure, value, target="", plain="", meets=None):
        if not self.judge:
            meets = None
        self.rows.append((figure, value, plain, target,
                          "" if meets is None else ("yes" if meets else "NO")))
        print(f"  {figure}: {value}" + (f" (plain {plain})" if plain else "") +
              (f" target {target}" if target else ""), flush=True)

    def render(self):
        header = ("figure", "measured", "plain Mosquitto", "target", "met")
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in self.rows]
        return "\n".join(lines)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M).group(1))


def settle_rss(pid, seconds=1.0):
    """Resident memory once it stops moving (bounded)."""
    last = rss_kib(pid)
    deadline = time.monotonic() + seconds * 5
    while time.monotonic() < deadline:
        time.sleep(seconds / 4)
        now = rss_kib(pid)
        if now == last:
            return now
        last = now
    return last


def http_request(port, path, body=None, timeout=60):
    """(status, body bytes): a GET, or a Connect POST when body is given."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                     data=None if body is None else body.encode(),
                                     headers=CONNECT_HEADERS if body is not None else {},
                                     method="GET" if body is None else "POST")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.status, response.read()


def open_connections_gauge(port):
    _, text = http_request(port, "/metrics")
    match = re.search(rb"^kubemq_mqtt_connections (\d+)", text, re.M)
    return int(match.group(1)) if match else -1


def curl_seconds(port, path, body=None, repeats=5):
    """Median of curl's total time over `repeats` requests, and the last body's size."""
    times = []
    size = 0
    for _ in range(repeats):
        command = ["curl", "-s", "-o", "/dev/null", "-w", "%{time_total} %{size_download} "
                   "%{http_code}", "--max-time", "60", f"http://127.0.0.1:{port}{path}"]
        if body is not None:
            command[1:1] = ["-X", "POST", "-H", "Content-Type: application/json", "-H",
                            "Connect-Protocol-Version: 1", "--data-binary", body]
        out = subprocess.run(command, check=True, capture_output=True, text=True,
                             timeout=90).stdout.split()
        if out[2] != "200":
            raise RuntimeError(f"{path} {body}: HTTP {out[2]}")
        times.append(float(out[0]))
        size = int(out[1])
    return statistics.median(times), size


# What an API client asks, round and round: (path, Connect JSON body or None for a GET).
HAMMER_REQUESTS = [("/api/mqtt/connections", None), (LIST_CONNECTIONS, '{"pageSize":10}'),
                   (LIST_CONNECTIONS, '{"pageSize":1000}'), ("/metrics", None)]


def hammer(port, seconds, counter, nice=0, requests=None):
    """One API client: `requests` (HAMMER_REQUESTS: the full KubeMQ list, ListConnections pages
    of 10 and 1000, /metrics) round and round for `seconds` (a process of its own, so the ping
    client keeps its CPU), at `nice` levels below the caller's priority."""
    if nice:
        os.nice(nice)
    requests = requests or HAMMER_REQUESTS
    deadline = time.monotonic() + seconds
    done = 0
    while time.monotonic() < deadline:
        path, body = requests[done % len(requests)]
        try:
            http_request(port, path, body, timeout=30)
        except OSError:
            time.sleep(0.01)
        done += 1
    with counter.get_lock():
        counter.value += done


def ping_under_hammer(broker, ping, seconds, hammers=2, hammer_nice=0, port=None,
                      requests=None):
    """The ping's figures while `hammers` processes ask `requests` of `port` (the broker's API
    and HAMMER_REQUESTS unless told), and how many requests they made."""
    context = multiprocessing.get_context("spawn")
    counter = context.Value("i", 0)
    workers = [context.Process(target=hammer,
                               args=(port or broker.http_port, seconds + 0.5, counter, hammer_nice,
                                     requests))
               for _ in range(hammers)]
    for w in workers:
        w.start()
    try:
        time.sleep(0.5)  # the spawned interpreters are up and requesting
        result, count = ping.run(seconds)
    finally:
        for w in workers:
            w.join(timeout=seconds + 120)
            if w.is_alive():
                w.kill()
                w.join(timeout=5)
    return result, count, counter.value


def fmt_ms(seconds):
    return f"{seconds * 1e3:.1f} ms"


# --- broker ping, API latency, memory -----------------------------------------------------------
def plain_broker_figures(n, ping_seconds):
    """Plain Mosquitto with N connections: ping idle, resident memory per connection."""
    broker = harness.Broker(plugin=False, log_types=QUIET_LOG)
    broker.start()
    try:
        before = settle_rss(broker.process.pid)
        with mqtt_load.IdleClients(broker.port, n, prefix="plain"):
            after = settle_rss(broker.process.pid)
            ping = mqtt_load.PingClient(broker.port)
            try:
                (p50, p99, peak), _ = ping.run(ping_seconds)
            finally:
                ping.close()
        return {"bytes_per_connection": (after - before) * 1024 / n, "ping": (p50, p99, peak)}
    finally:
        broker.stop()
        broker.cleanup_dir()


def plugin_broker_figures(table, plain, n, ping_seconds, sock_diag_bench):
    broker = harness.Broker(plugin=True, log_types=QUIET_LOG)
    broker.start()
    try:
        before = settle_rss(broker.process.pid)
        companion_start = rss_kib(broker.companion_pid)
        opened = time.monotonic()
        with mqtt_load.IdleClients(broker.port, n, prefix="bench"):
            print(f"  {n} connections open in {time.monotonic() - opened:.1f} s", flush=True)
            harness.wait_for(lambda: open_connections_gauge(broker.http_port) == n,
                             timeout=120, interval=0.5, what=f"{n} connections in /metrics")
            after = settle_rss(broker.process.pid)
            per_connection = (after - before) * 1024 / n
            companion_before = rss_kib(broker.companion_pid)
            ping = mqtt_load.PingClient(broker.port)
            try:
                (p50, p99, peak), count = ping.run(ping_seconds)
                table.add(f"broker ping idle, p99 / max ({n} connections)",
                          f"{p99:.2f} / {peak:.2f} ms",
                          plain=f"{plain['ping'][1]:.2f} / {plain['ping'][2]:.2f} ms")
                latency_figures(table, broker, n)
                (p50, p99, peak), count, requests = ping_under_hammer(broker, ping, ping_seconds)
                table.add(f"broker ping while the API is hammered, p99 / max ({requests} API "
                          f"requests in {ping_seconds:.0f} s)", f"{p99:.2f} / {peak:.2f} ms",
                          target="p99 <= 2 ms", meets=p99 <= 2.0)
            finally:
                ping.close()
            companion_after = settle_rss(broker.companion_pid)
            table.add("companion resident memory: started / N open / after serving lists",
                      f"{companion_start / 1024:.1f} / {companion_before / 1024:.1f} / "
                      f"{companion_after / 1024:.1f} MiB", target="<= 48 MiB",
                      meets=companion_after <= 48 * 1024)
            added = per_connection - plain["bytes_per_connection"]
            table.add("broker memory per connection (resident delta / N)",
                      f"{per_connection:.0f} B (+{added:.0f} B)",
                      plain=f"{plain['bytes_per_connection']:.0f} B",
                      target="added <= 512 B", meets=added <= 512)
            sock_diag_figure(table, broker, n, sock_diag_bench)
    finally:
        broker.stop()
        broker.cleanup_dir()


def latency_figures(table, broker, n):
    port = broker.http_port
    middle = f"bench-{n // 2:06d}"
    page = 1000 if n > 1000 else n // 2  # smaller N (the quick run): still a next page
    request = json.dumps({"pageSize": page})
    seconds, size = curl_seconds(port, LIST_CONNECTIONS, request)
    table.add(f"ListConnections page of {page}, first (median of 5)", fmt_ms(seconds),
              target="<= 20 ms", meets=seconds <= 0.020)
    _, first = http_request(port, LIST_CONNECTIONS, request)
    token = json.loads(first).get("nextPageToken", "")
    if not token:
        raise RuntimeError(f"no nextPageToken in a page of {page} of {n} connections")
    seconds, size = curl_seconds(port, LIST_CONNECTIONS, json.dumps(
        {"pageSize": page, "pageToken": token}))
    table.add(f"ListConnections page of {page}, next (median of 5)", fmt_ms(seconds),
              target="<= 20 ms", meets=seconds <= 0.020)
    # The one-client requests must find that client, or they measure nothing.
    one = json.dumps({"filter": f'client_id = "{middle}"'})
    found = json.loads(http_request(port, LIST_CONNECTIONS, one)[1])["connections"]
    lookup = json.loads(http_request(port, f"/api/mqtt/connections?client_id={middle}")[1])
    if len(found) != 1 or lookup["data"]["total"] != 1:
        raise RuntimeError(f"{middle}: {len(found)} by filter, {lookup['data']['total']} by "
                           f"lookup, not 1")
    seconds, _ = curl_seconds(port, LIST_CONNECTIONS, one)
    table.add("ListConnections filter on one client id (median of 5)", fmt_ms(seconds),
              target="<= 10 ms", meets=seconds <= 0.010)
    seconds, _ = curl_seconds(port, f"/api/mqtt/connections?client_id={middle}")
    table.add("KubeMQ lookup by client_id (median of 5)", fmt_ms(seconds), target="<= 10 ms",
              meets=seconds <= 0.010)
    seconds, size = curl_seconds(port, "/api/mqtt/connections")
    table.add(f"full KubeMQ list, {size / 1e6:.1f} MB (median of 5)", fmt_ms(seconds),
              target="<= 60 ms", meets=seconds <= 0.060)
    seconds, _ = curl_seconds(port, "/metrics")
    table.add("/metrics (median of 5)", fmt_ms(seconds), target="<= 20 ms",
              meets=seconds <= 0.020)


def sock_diag_figure(table, broker, n, tool):
    out = subprocess.run([tool, "--port", str(broker.port), "--repeat", "5"], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    match = re.search(r"sockets (\d+) median_ms ([\d.]+)", out)
    if not match:
        raise RuntimeError(f"unexpected output from {tool}: {out}")
    table.add(f"sock_diag dump of the broker's sockets ({match.group(1)} found, median of 5)",
              f"{float(match.group(2)):.1f} ms", target="(in the companion, <= 1 a second)")


def view_bench_figures(table, tool, quick):
    n = 2000 if quick else 100000
    out = subprocess.run([tool, "--connections", str(n), "--repeat", "3" if quick else "5"],
                         check=True, capture_output=True, text=True, timeout=600).stdout
    figures = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    try:
        page = int(figures["list_page_size"])
        first, first_cpu = float(figures["list_page_first_ms"]), float(
            figures["list_page_first_cpu_ms"])
        full, full_cpu = float(figures["kubemq_full_ms"]), float(figures["kubemq_full_cpu_ms"])
        tree = float(figures["cjson_tree_ms"])
        size = int(figures["kubemq_full_bytes"])
        in_query, in_request = float(figures["query_in_1000_ms"]), float(
            figures["list_filter_in_1000_ms"])
        or_request = float(figures["list_filter_or_prefixes_ms"])
    except (KeyError, ValueError) as e:
        raise RuntimeError(f"unexpected output from {tool}: {out}") from e
    table.add(f"in process, {n} connections: ListConnections page of {page}, first (median; "
              f"CPU {first_cpu:.1f} ms)", f"{first:.1f} ms", target="<= 20 ms",
              meets=first <= 20)
    table.add(f"in process, {n} connections: filter client_id IN (1000 ids), the query engine "
              f"(median; the whole request with its page of 1000 encoded: {in_request:.1f} ms)",
              f"{in_query:.2f} ms", target="<= 10 ms", meets=in_query <= 10)
    table.add(f"in process, {n} connections: filter, an OR of two client id prefixes, page of "
              f"{page} (median)", f"{or_request:.1f} ms",
              target=f"<= the first page ({first:.1f} ms)", meets=or_request <= first)
    table.add(f"in process, {n} connections: full KubeMQ list, {size / 1e6:.1f} MB (median; CPU "
              f"{full_cpu:.0f} ms; the same list built and printed as a cJSON tree: {tree:.0f} ms)",
              f"{full:.0f} ms", target="<= 400 ms", meets=full <= 400)


# --- throughput, both brokers pinned to one CPU -------------------------------------------------
def cpu_seconds_of(pids):
    total = 0.0
    for pid in pids:
        try:
            total += broker_overhead.cpu_seconds(pid)
        except OSError:
            pass
    return total


def fan_out(broker, qos, messages, subscribers, workdir, client_cpu):
    """Starts the subscribers of one broker; returns their processes and output files."""
    pin = ["taskset", "-c", client_cpu] if client_cpu else []
    outputs = []
    subs = []
    for i in range(subscribers):
        path = os.path.join(workdir, f"sub-{broker.port}-{i}")
        outputs.append(path)
        with open(path, "wb") as out:
            subs.append(subprocess.Popen(
                pin + ["mosquitto_sub", "-h", "127.0.0.1", "-p", str(broker.port), "-q",
                       str(qos), "-t", "events/fan/#", "-C", str(messages), "-i",
                       f"fan-sub-{i}"], stdout=out, stderr=subprocess.DEVNULL))
    return subs, outputs


def throughput(qos, messages, idle, poll, workdir, quick, build):
    """Deliveries per CPU second of each broker (plus its companion), both brokers loaded at
    once on one CPU, both of the Mosquitto build `build`."""
    cpu = str(os.cpu_count() - 1)
    client_cpu = "0" if os.cpu_count() > 1 else ""
    payload_file = os.path.join(workdir, f"payload-64-{messages}")
    with open(payload_file, "w") as f:
        for i in range(messages):
            f.write(f"{i:010d}" + "x" * 54 + "\n")  # 64 bytes a line, without its newline
    # No queue limit: a subscriber that falls behind gets every message late rather than some
    # dropped, so both brokers do the same work.
    brokers = {p: harness.Broker(plugin=p, log_types=broker_overhead.LOG_TYPES,
                                 extra="max_queued_messages 0",
                                 command_prefix=["taskset", "-c", cpu], build=build)
               for p in (False, True)}
    started = []
    idle_sets = []
    subs = {}
    stop_poll = threading.Event()
    try:
        for b in brokers.values():
            b.start()
            started.append(b)
        for p, b in brokers.items():
            idle_sets.append(mqtt_load.IdleClients(b.port, idle, prefix=f"idle{int(p)}").open())
            subs[p] = fan_out(b, qos, messages, 2, workdir, client_cpu)
        harness.wait_for(lambda: open_connections_gauge(brokers[True].http_port) == idle + 2,
                         timeout=30, what="the subscribers in /metrics")
        for b in brokers.values():
            b.wait_subscribed([f"fan-sub-{i}" for i in range(2)], "events/fan/#")

        def poller():
            while not stop_poll.is_set():
                try:
                    http_request(brokers[True].http_port, "/api/mqtt/connections", timeout=10)
                except OSError:
                    pass
                stop_poll.wait(0.1)
        poll_thread = threading.Thread(target=poller, daemon=True)
        if poll:
            poll_thread.start()
        pids = {p: [b.process.pid] + ([b.companion_pid] if p else []) for p, b in brokers.items()}
        before = {p: cpu_seconds_of(pids[p]) for p in brokers}
        companion_before = cpu_seconds_of([brokers[True].companion_pid])
        pin = ["taskset", "-c", client_cpu] if client_cpu else []
        publishers = {}
        for p, b in brokers.items():
            if qos == 0:  # the workload of bench/broker_overhead.py, 64-byte lines
                with open(payload_file, "rb") as lines:
                    publishers[p] = subprocess.Popen(
                        pin + ["mosquitto_pub", "-h", "127.0.0.1", "-p", str(b.port), "-l",
                               "-q", "0", "-t", "events/fan/t", "-i", f"fan-pub-{int(p)}"],
                        stdin=lines, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            else:  # mosquitto_pub -l loses the QoS 1 messages still queued at end of input
                publishers[p] = subprocess.Popen(
                    pin + [sys.executable, os.path.join(HERE, "mqtt_load.py"), "publish",
                           str(b.port), f"fan-pub-{int(p)}", "events/fan/t", str(messages),
                           "1"])
        deadline = time.monotonic() + (60 if quick else 600)
        for p in brokers:
            if publishers[p].wait(timeout=max(1, deadline - time.monotonic())) != 0:
                raise RuntimeError(f"the publisher to {brokers[p].port} failed")
            for s in subs[p][0]:
                try:
                    s.wait(timeout=max(1, min(30, deadline - time.monotonic())))
                except subprocess.TimeoutExpired:
                    s.kill()  # QoS 0 may drop a few under load: count what arrived
                    s.wait()
        after = {p: cpu_seconds_of(pids[p]) for p in brokers}
        companion = cpu_seconds_of([brokers[True].companion_pid]) - companion_before
        stop_poll.set()
        rates = {}
        for p in brokers:
            delivered = 0
            for path in subs[p][1]:
                with open(path, "rb") as f:
                    delivered += f.read().count(b"\n")
            rates[p] = (delivered / max(after[p] - before[p], 1e-3), delivered)
            print(f"    {'plugin' if p else 'plain '}: {delivered} deliveries, "
                  f"{after[p] - before[p]:.2f} s CPU"
                  + (f" ({companion:.2f} s of it the companion's)" if p else ""), flush=True)
        return rates
    finally:
        stop_poll.set()
        for p in subs:
            for s in subs[p][0]:
                if s.poll() is None:
                    s.kill()
                    s.wait()
        for s in idle_sets:
            s.close()
        for b in started:
            b.stop()
            b.cleanup_dir()


THROUGHPUT_TARGETS = {0: 0.95, 1: 0.98}
INSTRUCTIONS_TARGET = 1.05


def throughput_ratio(qos, messages, workdir, quick, build):
    """The median over rounds of the ratio; each round loads both brokers at once.
    Returns (idle connections, rounds, sorted ratios, median plain rate, median plugin rate)."""
    idle = 50 if quick else 500
    rounds = 1 if quick else 3
    results = [throughput(qos, messages, idle, True, workdir, quick, build)
               for _ in range(rounds)]
    ratios = sorted(r[True][0] / r[False][0] for r in results)
    plain = statistics.median(r[False][0] for r in results)
    with_plugin = statistics.median(r[True][0] for r in results)
    return idle, rounds, ratios, plain, with_plugin


def ratio_text(ratios):
    return f"ratio {statistics.median(ratios):.3f}" + (
        f" ({ratios[0]:.3f}-{ratios[-1]:.3f})" if len(ratios) > 1 else "")


def throughput_figures(table, messages, workdir, quick, build):
    for qos, target in THROUGHPUT_TARGETS.items():
        idle, rounds, ratios, plain, with_plugin = throughput_ratio(qos, messages, workdir, quick,
                                                                    build)
        ratio = statistics.median(ratios)
        table.add(f"throughput QoS {qos} fan-out to 2, {idle} idle, list polled 10/s "
                  f"(deliveries per CPU second of broker+companion, median of {rounds})",
                  f"{with_plugin:,.0f}/s, {ratio_text(ratios)}",
                  plain=f"{plain:,.0f}/s", target=f">= {target}", meets=ratio >= target)


def instructions_ratio(messages, workdir, build):
    """(plain, plugin) instructions per delivery under callgrind, 4 subscribers."""
    payload = os.path.join(workdir, "payload-callgrind")
    with open(payload, "w") as f:
        for i in range(2 * messages):
            f.write(f"reading {i:08d} value 21.5\n")
    per = {p: broker_overhead.instructions_per_delivery(p, messages, 4, payload, workdir,
                                                        build=build)
           for p in (False, True)}
    return per[False], per[True]


def callgrind_figure(table, messages, workdir, build):
    plain, with_plugin = instructions_ratio(messages, workdir, build)
    ratio = with_plugin / plain
    table.add(f"instructions per delivery (callgrind, {messages} and {2 * messages} messages "
              f"to 4 subscribers)", f"{with_plugin:,.0f}, ratio {ratio:.3f}",
              plain=f"{plain:,.0f}", target=f"<= {INSTRUCTIONS_TARGET}",
              meets=ratio <= INSTRUCTIONS_TARGET)


class BrokerTable:
    """The ratio figures, one row per Mosquitto build (--brokers, and the quick run's 2.1 row)."""

    def __init__(self, judge=True):
        self.rows = []
        self.judge = judge

    def add(self, build, cells, missed):
        met = "" if not self.judge else ("yes" if not missed else "NO: " + ", ".join(missed))
        self.rows.append((f"{build.name} ({build.version}, {build.build})", *cells, met))
        print(f"  {build.name}: " + "; ".join(cells), flush=True)

    def render(self, messages, callgrind_messages, idle, rounds):
        header = (
            "broker",
            f"throughput QoS 0, plugin / plain deliveries per CPU s (median of {rounds})",
            f"throughput QoS 1, plugin / plain deliveries per CPU s (median of {rounds})",
            f"instructions per delivery, plugin / plain ({callgrind_messages} and "
            f"{2 * callgrind_messages} messages to 4 subscribers)",
            f"met (>= {THROUGHPUT_TARGETS[0]}, >= {THROUGHPUT_TARGETS[1]}, "
            f"<= {INSTRUCTIONS_TARGET})")
        lines = [f"{messages} messages a throughput round, fan-out to 2, {idle} idle "
                 f"connections, list polled 10/s", "",
                 "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in self.rows]
        return "\n".join(lines)


def broker_ratio_row(broker_table, build, messages, callgrind_messages, workdir, quick):
    """Throughput QoS 0 and QoS 1 ratios and the instructions ratio on one Mosquitto build."""
    print(f"ratios on {build.name}: Mosquitto {build.version} ({build.build}) {build.mosquitto}",
          flush=True)
    cells = []
    missed = []
    for qos, target in THROUGHPUT_TARGETS.items():
        idle, rounds, ratios, plain, with_plugin = throughput_ratio(qos, messages, workdir, quick,
                                                                    build)
        cells.append(f"{with_plugin:,.0f} / {plain:,.0f}/s, {ratio_text(ratios)}")
        if statistics.median(ratios) < target:
            missed.append(f"QoS {qos}")
    plain, with_plugin = instructions_ratio(callgrind_messages, workdir, build)
    cells.append(f"{with_plugin:,.0f} / {plain:,.0f}, ratio {with_plugin / plain:.3f}")
    if with_plugin / plain > INSTRUCTIONS_TARGET:
        missed.append("instructions")
    broker_table.add(build, cells, missed)
    return idle, rounds


def quick_broker_21(build_dir):
    """The quick run's 2.1 build: 2.1-cmake, else any 2.1 of the manifest; None (and a line
    saying why) without one."""
    entries = brokers.read_manifest(build_dir)
    if not entries:
        print(f"no broker manifest at {brokers.manifest_path(build_dir)} (scripts/prepare-"
              f"brokers.py writes it): the ratios on 2.1 are skipped", flush=True)
        return None
    names = sorted((n for n, e in entries.items() if e.get("version", "").startswith("2.1.")),
                   key=lambda n: (n != "2.1-cmake", n))
    if not names:
        print(f"no 2.1 broker in {brokers.manifest_path(build_dir)}: the ratios on 2.1 are "
              f"skipped", flush=True)
        return None
    return brokers.load(names[0], build_dir)


def load_average():
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


# --- requests/s against nginx -------------------------------------------------------------------
def wrk_rate(url, seconds):
    out = subprocess.run(["wrk", "-t2", "-c32", f"-d{seconds}s", url], check=True,
                         capture_output=True, text=True, timeout=seconds + 60).stdout
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if not match or "Non-2xx" in out:
        raise RuntimeError(f"wrk against {url}:\n{out}")
    return float(match.group(1))


def nginx_config(folder, port):
    return f"""worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
daemon off;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {folder}/tmp;
  proxy_temp_path {folder}/tmp;
  fastcgi_temp_path {folder}/tmp;
  uwsgi_temp_path {folder}/tmp;
  scgi_temp_path {folder}/tmp;
  server {{
    listen 127.0.0.1:{port};
    root {folder}/www;
    location / {{ default_type application/json; }}
  }}
}}
"""


def start_nginx(folder, files):
    """nginx serving `files` ({name: bytes}) from a new folder `folder`: (process, port), once it
    serves them. Stop it with stop_nginx."""
    for sub in ("www", "tmp"):
        os.makedirs(os.path.join(folder, sub))
    for name, body in files.items():
        with open(os.path.join(folder, "www", name), "wb") as f:
            f.write(body)
    # nginx's worker drops to user nobody: the files and their folders must be readable.
    for path in [folder, os.path.join(folder, "www")] + [os.path.join(folder, "www", name)
                                                          for name in files]:
        os.chmod(path, 0o755)
    port = harness.free_port()
    with open(os.path.join(folder, "nginx.conf"), "w") as f:
        f.write(nginx_config(folder, port))
    nginx = subprocess.Popen(["/usr/sbin/nginx", "-c", os.path.join(folder, "nginx.conf"),
                              "-p", folder], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    name, body = next(iter(files.items()))

    def serves():
        try:
            return http_request(port, "/" + name, timeout=1)[1] == body
        except OSError:
            return False
    try:
        harness.wait_for(serves, timeout=10, what="nginx serving the files")
    except BaseException:
        stop_nginx(nginx)
        raise
    return nginx, port


def stop_nginx(nginx):
    # SIGQUIT: a graceful stop of the master and its worker.
    harness.stop_process(nginx, signal.SIGQUIT, timeout=10)


def nginx_comparison(table, workdir, seconds):
    broker = harness.Broker(plugin=True, log_types=QUIET_LOG)
    broker.start()
    nginx = None
    folder = os.path.join(workdir, "nginx")
    try:
        with mqtt_load.IdleClients(broker.port, 100, prefix="list"):
            harness.wait_for(lambda: open_connections_gauge(broker.http_port) == 100,
                             timeout=30, what="100 connections")
            _, body = http_request(broker.http_port, "/api/mqtt/connections")
            nginx, port = start_nginx(folder, {"connections.json": body})
            static_url = f"http://127.0.0.1:{port}/connections.json"
            plugin_rate = wrk_rate(f"http://127.0.0.1:{broker.http_port}/api/mqtt/connections",
                                   seconds)
            nginx_rate = wrk_rate(static_url, seconds)
            share = plugin_rate / nginx_rate
            table.add(f"requests/s, KubeMQ list of 100 connections ({len(body) / 1024:.0f} KiB), "
                      f"wrk -t2 -c32, against nginx serving the same bytes",
                      f"{plugin_rate:,.0f}/s = {share * 100:.1f} % of nginx",
                      plain=f"nginx {nginx_rate:,.0f}/s", target=">= 25 %", meets=share >= 0.25)
    finally:
        if nginx is not None:
            stop_nginx(nginx)
        broker.stop()
        broker.cleanup_dir()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build_dir")
    parser.add_argument("--connections", type=int, default=None,
                        help="connections of 2 subscriptions each (default 15000, quick 100)")
    parser.add_argument("--quick", action="store_true",
                        help="every tool in seconds, small N; prints figures, asserts none")
    brokers.add_argument(parser, "the Mosquitto build of the ratio figures")
    parser.add_argument("--brokers", default=None, metavar="NAME,NAME,...",
                        help="only the ratio figures, on each of these builds, one row each")
    args = parser.parse_args()
    build = os.path.abspath(args.build_dir)
    harness.use_build(build)
    sock_diag_bench = os.path.join(build, "mqc_sock_diag_bench")
    view_bench = os.path.join(build, "mqc_view_bench")
    needed = [harness.PLUGIN, harness.COMPANION]
    if not args.brokers:
        needed += [sock_diag_bench, view_bench]
    for built in needed:
        if not os.path.exists(built):
            sys.exit(f"{built} is missing: build {build} first")
    try:
        ratio_builds = [brokers.load(name, build) for name in
                        (args.brokers.split(",") if args.brokers else [args.broker])]
    except LookupError as e:
        sys.exit(str(e))
    n = args.connections or (100 if args.quick else 15000)
    if n < 2:
        sys.exit(f"--connections {n}: at least 2")
    limit = mqtt_load.raise_file_limit()
    if n + 1000 > limit:
        sys.exit(f"--connections {n} needs more open files than the limit of {limit}")
    ping_seconds = 1.0 if args.quick else 10.0
    messages = 2000 if args.quick else 500000
    callgrind_messages = 100 if args.quick else 3000
    table = Table(judge=not args.quick)
    broker_table = BrokerTable(judge=not args.quick)
    workdir = tempfile.mkdtemp(prefix="mqc-bench-")
    os.chmod(workdir, 0o755)
    started = time.monotonic()
    load_before = load_average()
    print(f"load average (1 / 5 / 15 min) at the start: {load_before}", flush=True)
    shape = None
    try:
        if args.brokers:
            for ratio_build in ratio_builds:
                shape = broker_ratio_row(broker_table, ratio_build, messages, callgrind_messages,
                                         workdir, args.quick)
        else:
            ratio_build = ratio_builds[0]
            print(f"plain Mosquitto, {n} connections", flush=True)
            plain = plain_broker_figures(n, ping_seconds)
            print(f"with the plugin, {n} connections", flush=True)
            plugin_broker_figures(table, plain, n, ping_seconds, sock_diag_bench)
            print("views in process", flush=True)
            view_bench_figures(table, view_bench, args.quick)
            print(f"throughput, both brokers on one CPU ({ratio_build.name})", flush=True)
            throughput_figures(table, messages, workdir, args.quick, ratio_build)
            print(f"callgrind ({ratio_build.name})", flush=True)
            callgrind_figure(table, callgrind_messages, workdir, ratio_build)
            print("requests/s against nginx", flush=True)
            nginx_comparison(table, workdir, 1 if args.quick else 10)
            if args.quick:
                build_21 = quick_broker_21(build)
                if build_21 is not None:
                    shape = broker_ratio_row(broker_table, build_21, messages,
                                             callgrind_messages, workdir, args.quick)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n{n} connections, {'quick run' if args.quick else 'full run'}, "
          f"{time.monotonic() - started:.0f} s; load average (1 / 5 / 15 min) {load_before} at "
          f"the start, {load_average()} at the end\n")
    if not args.brokers:
        print(f"ratio figures on {ratio_builds[0].name} (Mosquitto {ratio_builds[0].version}, "
              f"{ratio_builds[0].build})\n")
        print(table.render())
    if shape is not None:
        print()
        print(broker_table.render(messages, callgrind_messages, *shape))


if __name__ == "__main__":
    main()
