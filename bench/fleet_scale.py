#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The fleet API at scale (docs/fleet.md, "Cost"; docs/benchmarks.md, "The fleet at
3 x 15,000"): three brokers
with the plugin, each naming the other two in plugin_opt_fleet_peers, N idle connections each
(default 15,000), and three requests, each asked of the fleet (scope CONNECTION_SCOPE_FLEET) and
of one broker (node scope) in the same run:

- the first page of 1000 in `order_by: "client_id"` (client ids interleave across the brokers,
  so the merge takes from all three);
- a lookup by client id (`filter: client_id = "..."`) of a connection on node 2; its node figure
  is asked of node 2;
- the count, `totalSize` of a page of 1.

Fleet requests go to node 1. Each figure is the median and p99 of `--repeats` requests on one
kept-alive HTTP connection, node and fleet taking turns in blocks of ten, so that a change of
the machine's load touches both; beside them the CPU time of all three companions per request
(/proc, clock ticks), which the load moves less. Every answer is checked once before it is
timed (the page against the sorted union of the ids opened, the lookup's one connection, the
counts), so a figure never times an error. A second table shows where the fleet page's CPU
goes: what node 1 asks of each peer for it (the page, and the lookup of its client ids that
flags duplicates), asked of node 2 alone in binary, and the companions' CPU with no request.

Usage: bench/fleet_scale.py BUILD_DIR [--connections N] [--repeats R] [--broker NAME] [--quick]

Connections are opened by one process per broker (bench/mqtt_load.py's IdleClients), so that
no process needs more than N + a few files; every broker likewise holds N + a few. --quick runs
3 x 200 with few repeats and asserts no timing. Processes are started with their PIDs recorded
and stopped by them.
"""

import argparse
import http.client
import json
import multiprocessing
import os
import queue
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
import brokers  # noqa: E402
import harness  # noqa: E402
import mqtt_load  # noqa: E402
import run_all  # noqa: E402

TOKEN = "fleet-bench-read-token-0123456789abcdef"
HEADERS = {"Content-Type": "application/json", "Connect-Protocol-Version": "1",
           "Authorization": "Bearer " + TOKEN}
BROKERS = 3
FLEET = "CONNECTION_SCOPE_FLEET"
ORDER = "client_id"
BLOCK = 10  # requests of one series before the other takes its turn
SMALL = 10  # the lookup's and the count's repeats, per page repeat
CLOCK_TICK = os.sysconf("SC_CLK_TCK")


def client_id(node, i):
    """Connection i of node `node`: ids of the three brokers interleave in client_id order."""
    return f"dev-{i:06d}-n{node}"


class FleetClients(mqtt_load.IdleClients):
    """IdleClients named by client_id() for one broker of the fleet."""

    def __init__(self, port, count, node):
        super().__init__(port, count, prefix=f"n{node}", timeout=600)
        self.node = node

    def client_id(self, i):
        return client_id(self.node, i)


def hold_clients(port, count, node, ready, stop):
    """A process of its own: opens `count` connections to `port`, says so, and keeps them open
    until `stop` is set (bounded: an hour)."""
    mqtt_load.raise_file_limit()
    with FleetClients(port, count, node):
        ready.put(node)
        stop.wait(timeout=3600)


def wait_ready(holders, ready, timeout):
    """Until every holder has said its connections are open; RuntimeError if one ends first."""
    deadline = time.monotonic() + timeout
    waiting = len(holders)
    while waiting:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{waiting} client processes not ready after {timeout} s")
        try:
            ready.get(timeout=1)
            waiting -= 1
        except queue.Empty:
            ended = [h.pid for h in holders if h.exitcode is not None]
            if ended:
                raise RuntimeError(f"client processes {ended} ended before their connections "
                                   f"were open")


def node_total(broker):
    """The broker's count, or None while its companion is being restarted (a companion starved
    of CPU while thousands connect misses its heartbeat and its plugin restarts it)."""
    api = Api(broker)
    try:
        return int(api.ask({"pageSize": 1})["totalSize"])
    except OSError:
        return None
    finally:
        api.close()


def cpu_each(pids):
    """User + system CPU seconds of each process."""
    seconds = []
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        seconds.append((int(fields[11]) + int(fields[12])) / CLOCK_TICK)  # utime, stime
    return seconds


def cpu_seconds(pids):
    return sum(cpu_each(pids))


class Api:
    """One kept-alive HTTP connection to a broker's API."""

    IDLE_SECONDS = 5  # the companion closes a connection idle for 10 s (its MHD timeout)

    def __init__(self, broker):
        self.connection = http.client.HTTPConnection("127.0.0.1", broker.http_port, timeout=60)
        self.used = time.monotonic()

    def ready(self):
        """Connects again, before a timed request, if the companion may have closed it."""
        if time.monotonic() - self.used > self.IDLE_SECONDS:
            self.connection.close()
            self.connection.connect()

    def post(self, body, headers=None):
        """(status, body bytes) of a ListConnections request with the JSON `body` (or another
        with its `headers`)."""
        self.connection.request("POST", run_all.LIST_CONNECTIONS, body=body,
                                headers=headers or HEADERS)
        response = self.connection.getresponse()
        data = response.read()
        self.used = time.monotonic()
        return response.status, data

    def ask(self, request):
        status, body = self.post(json.dumps(request))
        if status != 200:
            raise RuntimeError(f"{request}: HTTP {status}: {body[:300]!r}")
        return json.loads(body)

    def close(self):
        self.connection.close()


PROTO_HEADERS = dict(HEADERS, **{"Content-Type": "application/proto"})


def node_request_proto(filter_text="", order_by="", page_size=0):
    """A binary ListConnectionsRequest as a fleet query sends it to a peer: filter (field 1),
    order_by (2), page_size (3), scope NODE (5). Protobuf's varint is MQTT's remaining length."""
    body = b""
    for field, text in ((1, filter_text), (2, order_by)):
        if text:
            data = text.encode()
            body += bytes([field << 3 | 2]) + mqtt_load.remaining_length(len(data)) + data
    if page_size:
        body += b"\x18" + mqtt_load.remaining_length(page_size)
    return body + b"\x28\x01"


IDLE_SECONDS = 2


def first_ask(page_size):
    """What a fleet page asks each broker for first (fleet_merge.cc, FirstAskSize)."""
    share = -(-page_size // BROKERS)
    return min(page_size, share + share // 4 + 16)


def duplicates_filter(client_ids):
    """The filter of a fleet page's lookup of duplicate client ids (fleet_query.cc)."""
    return ("state = MQTT_CONNECTION_STATE_OPEN AND client_id IN (" +
            ", ".join(f'"{c}"' for c in client_ids) + ")")


def check_answers(fleet, n, page_size, lookup_id):
    """Each request's answer, checked against what was opened; returns the fleet's first page
    (client ids)."""
    expected = sorted(client_id(node, i) for node in range(1, BROKERS + 1) for i in range(n))
    asked = Api(fleet[0])
    holder = Api(fleet[1])
    try:
        page = asked.ask({"scope": FLEET, "orderBy": ORDER, "pageSize": page_size})
        got = [c["clientId"] for c in page.get("connections", [])]
        if page.get("peerErrors") or got != expected[:page_size]:
            raise RuntimeError(f"fleet page: {len(got)} connections, peer errors "
                               f"{page.get('peerErrors')}, first {got[:3]}, expected "
                               f"{expected[:3]}")
        nodes = {c["nodeId"] for c in page["connections"]}
        if nodes != set(range(1, BROKERS + 1)) or int(page["totalSize"]) != BROKERS * n:
            raise RuntimeError(f"fleet page: nodes {nodes}, totalSize {page['totalSize']}")
        node_page = asked.ask({"orderBy": ORDER, "pageSize": page_size})
        own = sorted(client_id(1, i) for i in range(n))[:page_size]
        if [c["clientId"] for c in node_page["connections"]] != own:
            raise RuntimeError("node page: not node 1's first ids in order")
        for scope, api in ((FLEET, asked), (None, holder)):
            request = {"filter": f'client_id = "{lookup_id}"'}
            if scope:
                request["scope"] = scope
            found = api.ask(request).get("connections", [])
            if [(c["clientId"], c["nodeId"]) for c in found] != [(lookup_id, 2)]:
                raise RuntimeError(f"lookup {scope or 'node'}: {found}")
        for scope, want in ((FLEET, BROKERS * n), (None, n)):
            request = {"pageSize": 1}
            if scope:
                request["scope"] = scope
            answer = asked.ask(request)
            if int(answer["totalSize"]) != want or answer.get("peerErrors"):
                raise RuntimeError(f"count {scope or 'node'}: {answer.get('totalSize')} != {want}")
        return got
    finally:
        asked.close()
        holder.close()


def measure(series, repeats, companions):
    """Runs the series (name -> (Api, body, headers or None)) in turns of BLOCK requests until
    each has `repeats` (a number, or name -> number): name -> (seconds per request, CPU seconds
    of each companion per request, bytes of the last answer)."""
    wanted = repeats if isinstance(repeats, dict) else {name: repeats for name in series}
    times = {name: [] for name in series}
    cpu = {name: [0.0] * len(companions) for name in series}
    sizes = {}
    while any(len(times[name]) < wanted[name] for name in series):
        for name, (api, body, headers) in series.items():
            count = min(BLOCK * max(1, wanted[name] // min(wanted.values())),
                        wanted[name] - len(times[name]))
            if count <= 0:
                continue
            api.ready()
            before = cpu_each(companions)
            for _ in range(count):
                started = time.perf_counter()
                status, data = api.post(body, headers)
                times[name].append(time.perf_counter() - started)
                sizes[name] = len(data)
                if status != 200:
                    raise RuntimeError(f"{name}: HTTP {status}")
            cpu[name] = [t + b - a for t, a, b in zip(cpu[name], before, cpu_each(companions))]
    return {name: (times[name], [c / wanted[name] for c in cpu[name]], sizes[name])
            for name in series}


def p99(values):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def row(figure, node, fleet, judge):
    """A table row: median, p99 and CPU of node and fleet, the ratio of the medians, and two
    ratios of CPU: the fleet's summed over the three companions, and its critical path (the
    asked companion's plus the busiest peer's: what a request waits for when each broker has
    its own cores), each against one broker's (all three companions' CPU in its series)."""
    (node_times, node_cpu, _), (fleet_times, fleet_cpu, _) = node, fleet
    ratio = statistics.median(fleet_times) / statistics.median(node_times)
    node_sum = sum(node_cpu)
    if node_sum <= 0:  # under one clock tick in all: no ratio
        summed = path = float("nan")
    else:
        summed = sum(fleet_cpu) / node_sum
        path = (fleet_cpu[0] + max(fleet_cpu[1:])) / node_sum
    met = ("yes" if summed <= 2.0 else "NO") if judge else ""

    def cell(times, cpu):
        return (f"{statistics.median(times) * 1e3:.2f} / {p99(times) * 1e3:.2f} ms, "
                f"CPU {sum(cpu) * 1e3:.2f} ms (" + " + ".join(f"{c * 1e3:.2f}" for c in cpu)
                + ")")
    return f"| {figure} | {cell(node_times, node_cpu)} | {cell(fleet_times, fleet_cpu)} | " \
           f"{ratio:.2f} | {summed:.2f} | {path:.2f} | {met} |"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build_dir")
    parser.add_argument("--connections", type=int, default=None,
                        help="connections per broker (default 15000, quick 200)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="requests per figure and scope (default 200, quick 10)")
    parser.add_argument("--quick", action="store_true",
                        help="3 x 200 connections, few repeats; prints figures, asserts none")
    brokers.add_argument(parser, "the Mosquitto build of the three brokers")
    args = parser.parse_args()
    build_dir = os.path.abspath(args.build_dir)
    harness.use_build(build_dir)
    for built in (harness.PLUGIN, harness.COMPANION):
        if not os.path.exists(built):
            sys.exit(f"{built} is missing: build {build_dir} first")
    try:
        build = brokers.load(args.broker, build_dir)
    except LookupError as e:
        sys.exit(str(e))
    n = args.connections or (200 if args.quick else 15000)
    repeats = args.repeats or (10 if args.quick else 200)
    page_size = min(1000, n)  # the quick run's page still takes from every broker
    if n < 2 or repeats < 1:
        sys.exit(f"--connections {n} --repeats {repeats}: at least 2 and 1")
    limit = mqtt_load.raise_file_limit()
    if n + 500 > limit:
        sys.exit(f"--connections {n}: each broker and client process needs more open files "
                 f"than the limit of {limit}")
    load_before = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average (1 / 5 / 15 min) at the start: {load_before}", flush=True)
    started = time.monotonic()
    fleet = harness.start_fleet([build] * BROKERS, files={"tokens": TOKEN + "\n"},
                                options={"http_token_file": "{dir}/tokens",
                                         "fleet_token_file": "{dir}/tokens"},
                                log_types=run_all.QUIET_LOG)
    context = multiprocessing.get_context("spawn")
    ready, stop = context.Queue(), context.Event()
    holders = []
    apis = []
    try:
        holders = [context.Process(target=hold_clients, args=(b.port, n, node, ready, stop))
                   for node, b in enumerate(fleet, start=1)]
        for holder in holders:
            holder.start()
        wait_ready(holders, ready, timeout=900)
        print(f"{BROKERS} x {n} connections open in {time.monotonic() - started:.1f} s",
              flush=True)
        for b in fleet:
            harness.wait_for(lambda b=b: node_total(b) == n, timeout=120, interval=0.5,
                             what=f"{n} connections listed")
        lookup_id = client_id(2, n // 2)
        first_page = check_answers(fleet, n, page_size, lookup_id)
        # A companion starved of CPU while thousands connect is restarted by its plugin (after
        # 5 s without an answer): the ones serving now are the brokers' children of this moment.
        companions = []
        for b in fleet:
            pids = b.companion_pids()
            if len(pids) != 1:
                raise RuntimeError(f"broker {b.port}: companions {pids}, not one")
            companions += pids
        restarts = [b.log().count("companion restarted") for b in fleet]
        rss_before = [run_all.rss_kib(pid) for pid in companions]
        asked, holder = Api(fleet[0]), Api(fleet[1])
        apis = [asked, holder]
        page = {"orderBy": ORDER, "pageSize": page_size}
        lookup = {"filter": f'client_id = "{lookup_id}"'}
        count = {"pageSize": 1}
        series = {
            "page node": (asked, json.dumps(page), None),
            "page fleet": (asked, json.dumps(dict(page, scope=FLEET)), None),
            "lookup node": (holder, json.dumps(lookup), None),
            "lookup fleet": (asked, json.dumps(dict(lookup, scope=FLEET)), None),
            "count node": (asked, json.dumps(count), None),
            "count fleet": (asked, json.dumps(dict(count, scope=FLEET)), None),
        }
        cpu_started = cpu_seconds(companions)
        # The lookup and the count cost a fraction of a clock tick (10 ms) each: ten times as
        # many of them, so that their CPU per request is more than a few ticks' rounding.
        figures = measure(series, {name: repeats * (1 if name.startswith("page") else SMALL)
                                   for name in series}, companions)
        # Where the fleet page's time goes: what node 1 asks of each peer for it, asked of
        # node 2 alone (binary, node scope), and what the companions spend with no request
        # (the network figures' refresh goes on for a while after requests).
        # Node 2 is asked for its share of the page and a margin, and its lookup is of the
        # page's ids it did not show itself (fleet_merge.h, FirstAskSize; fleet_query.cc).
        others = [c for c in first_page if not c.endswith("-n2")]
        parts = measure({
            "peer page": (holder, node_request_proto(order_by=ORDER,
                                                     page_size=first_ask(page_size)),
                          PROTO_HEADERS),
            "peer duplicates": (holder, node_request_proto(duplicates_filter(others),
                                                           page_size=len(others)),
                                PROTO_HEADERS)}, repeats, companions)
        idle_before = cpu_each(companions)
        time.sleep(IDLE_SECONDS)
        idle = [(b - a) / IDLE_SECONDS for a, b in zip(idle_before, cpu_each(companions))]
        rss_after = [run_all.rss_kib(pid) for pid in companions]
        print(f"companions' CPU over the run: {cpu_seconds(companions) - cpu_started:.2f} s",
              flush=True)
    except BaseException:
        for node, b in enumerate(fleet, start=1):
            lines = [line for line in b.log().splitlines() if "mosquitto_connections" in line]
            print(f"--- broker {node}'s log, the plugin's lines:\n" + "\n".join(lines[-30:]),
                  file=sys.stderr)
        raise
    finally:
        for api in apis:
            api.close()
        stop.set()
        for holder in holders:
            holder.join(timeout=120)
            if holder.is_alive():
                holder.kill()
                holder.join(timeout=10)
        harness.stop_fleet(fleet)
    judge = not args.quick
    print(f"\n{BROKERS} brokers ({build.name}, Mosquitto {build.version}) x {n} connections of 2 "
          f"subscriptions, {'quick run' if args.quick else 'full run'}, {repeats} requests a "
          f"page figure and scope ({repeats * SMALL} for the lookup and the count), {time.monotonic() - started:.0f} s; load average (1 / 5 / 15 min) "
          f"{load_before} at the start, "
          f"{' / '.join(f'{x:.2f}' for x in os.getloadavg())} at the end\n")
    print("| figure | one broker (node scope): median / p99, companions' CPU per request "
          "(1 + 2 + 3) | fleet of 3 (scope FLEET) | fleet / node: wall medians | CPU summed | "
          "CPU critical path | met (summed CPU <= 2) |")
    print("|---|---|---|---|---|---|---|")
    print(row(f"first page of {page_size}, order_by client_id "
              f"({figures['page node'][2] / 1e6:.2f} and {figures['page fleet'][2] / 1e6:.2f} MB "
              f"JSON)", figures["page node"], figures["page fleet"], judge))
    print(row("lookup by client id (on node 2)", figures["lookup node"], figures["lookup fleet"],
              judge))
    print(row(f"count: totalSize of a page of 1 ({n} and {BROKERS * n})", figures["count node"],
              figures["count fleet"], judge))
    print(f"\nWhere the first page's CPU goes, ms per request of companion 1 (asked) / 2 / 3; "
          f"the peers' parts asked of node 2 alone, binary, {repeats} times each:\n")
    print("| request | wall median / p99 | CPU 1 / 2 / 3 | answer |")
    print("|---|---|---|---|")
    for name, (times, cpu, size) in [("node page, JSON, of node 1", figures["page node"]),
                                     ("fleet page, JSON, of node 1", figures["page fleet"]),
                                     (f"a peer's page of {first_ask(page_size)}, binary",
                                      parts["peer page"]),
                                     (f"a peer's lookup of the page's {len(others)} client ids "
                                      f"it did not show (duplicates), binary",
                                      parts["peer duplicates"])]:
        print(f"| {name} | {statistics.median(times) * 1e3:.2f} / {p99(times) * 1e3:.2f} ms | "
              + " / ".join(f"{c * 1e3:.1f}" for c in cpu) + f" | {size:,} B |")
    print(f"| no request, {IDLE_SECONDS} s right after (ms of CPU per second) | | "
          + " / ".join(f"{c * 1e3:.1f}" for c in idle) + " | |")
    print(f"\ncompanions' resident memory before / after the requests: "
          + ", ".join(f"{a / 1024:.1f} / {b / 1024:.1f} MiB"
                      for a, b in zip(rss_before, rss_after)))
    print(f"companions restarted by their plugin while the connections opened (starved of CPU "
          f"for 5 s): {', '.join(str(r) for r in restarts)} times")


if __name__ == "__main__":
    main()
