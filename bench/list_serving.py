#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The KubeMQ list as served, for two builds side by side (docs/benchmarks.md, "Memory and the
full list").

    bench/list_serving.py BUILD_DIR [BUILD_DIR ...] [--connections N] [--rounds R]

For each build in turn, R rounds (the builds alternate, so that both see the same load):
- a broker with the plugin and N raw clients of two subscriptions (bench/mqtt_load.py, as
  bench/run_all.py opens them): the companion's resident memory with the N open; curl's total
  time of the full KubeMQ list, the first request after the connections opened and the median
  of the five after it; then two processes hammering the API for 10 s as run_all.py's ping does
  (the full list, ListConnections pages of 10 and 1000, /metrics), and the companion's
  resident memory after serving them, at rest past the next turn of the minute (when the
  companion reads every connection's traffic slot), and the broker's ping p99: before they hammer
  (ping_idle), while they hammer at the broker's priority (ping: on 2 cores the hammers' own
  CPU competes with the broker), and while they hammer at nice 19 (ping_far: the hammers stand
  in for API clients on other machines, so what is left is the companion's effect); then the
  same at nice 19 against nginx serving the same answers from files (ping_nginx: what clients
  that fetch those bytes over loopback cost the broker with no companion at work);
- a broker with 100 connections: `wrk -t2 -c32 -d10s` on its KubeMQ list, then on nginx
  serving the same bytes from a file (run_all.py's nginx_comparison), and the ratio.
Prints one line per figure, and a table at the end.
"""

import argparse
import os
import re
import statistics
import sys
import tempfile
import shutil
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_all  # noqa: E402
from run_all import harness, mqtt_load  # noqa: E402


def companion_pid(broker):
    """The live companion's PID; fails loudly when it was started again (a crash, a watchdog)."""
    pids = broker.companion_pids()
    if pids != [broker.companion_pid]:
        lines = [line for line in broker.log().splitlines()
                 if "New client connected" not in line and "New connection from" not in line]
        raise RuntimeError(f"companion {broker.companion_pid} is not the one running ({pids}):\n"
                           + "\n".join(lines[-40:]))
    return broker.companion_pid


def rss_parts_mib(pid):
    """VmRSS split as the kernel counts it: the heap and stacks (RssAnon), the mapped program
    and libraries (RssFile) and the region shared with the broker (RssShmem)."""
    with open(f"/proc/{pid}/status") as f:
        text = f.read()
    return {part: int(re.search(rf"^{part}:\s+(\d+) kB", text, re.M).group(1)) / 1024
            for part in ("RssAnon", "RssFile", "RssShmem")}


def ping_against_nginx(broker, ping, seconds, workdir):
    """The ping's p99 while two processes at nice 19 fetch the hammer's answers, as `broker`
    gives them now, from nginx instead of the companion."""
    files, requests = {}, []
    for number, (path, body) in enumerate(run_all.HAMMER_REQUESTS):
        _, files[f"answer-{number}"] = run_all.http_request(broker.http_port, path, body)
        requests.append((f"/answer-{number}", None))
    nginx, port = run_all.start_nginx(os.path.join(workdir, "nginx-answers"), files)
    try:
        (_, p99, _), _, count = run_all.ping_under_hammer(broker, ping, seconds, hammer_nice=19,
                                                          port=port, requests=requests)
    finally:
        run_all.stop_nginx(nginx)
    return p99, count


def wait_past_minute_turn(margin_s=3.0, quiet_s=12.0):
    """Sleeps past the next turn of the wall clock's minute at least `quiet_s` away (at most
    75 s): the companion reads every open connection's traffic slot then
    (recentRequestStatistics), and has given back what only requests use (the socket dump, 10 s
    after the last), so that the memory after serving is the same walk's in every round,
    whichever second the round began at."""
    wait = 60.0 - time.time() % 60.0
    if wait < quiet_s:
        wait += 60.0
    time.sleep(wait + margin_s)


def serve_big(n, hammer_seconds, workdir):
    broker = harness.Broker(plugin=True, log_types=run_all.QUIET_LOG)
    broker.start()
    try:
        with mqtt_load.IdleClients(broker.port, n, prefix="bench"):
            harness.wait_for(lambda: run_all.open_connections_gauge(broker.http_port) == n,
                             timeout=180, interval=0.5, what=f"{n} connections in /metrics")
            open_kib = run_all.settle_rss(companion_pid(broker))
            first, size = run_all.curl_seconds(broker.http_port, "/api/mqtt/connections",
                                               repeats=1)
            median, _ = run_all.curl_seconds(broker.http_port, "/api/mqtt/connections",
                                             repeats=5)
            ping = mqtt_load.PingClient(broker.port)
            try:
                (_, idle_p99, _), _ = ping.run(hammer_seconds)
                (_, ping_p99, _), _, requests = run_all.ping_under_hammer(broker, ping,
                                                                          hammer_seconds)
                (_, far_p99, _), _, far_requests = run_all.ping_under_hammer(
                    broker, ping, hammer_seconds, hammer_nice=19)
                nginx_p99, nginx_requests = ping_against_nginx(broker, ping, hammer_seconds,
                                                               workdir)
            finally:
                ping.close()
            wait_past_minute_turn()
            after_kib = run_all.settle_rss(companion_pid(broker))
            after_parts = rss_parts_mib(companion_pid(broker))
        return {"open_mib": open_kib / 1024, "after_mib": after_kib / 1024,
                "after_parts_mib": after_parts,
                "full_first_ms": first * 1e3, "full_median_ms": median * 1e3,
                "full_bytes": size, "hammer_requests": requests, "ping_p99_ms": ping_p99,
                "ping_idle_p99_ms": idle_p99, "ping_far_p99_ms": far_p99,
                "far_hammer_requests": far_requests, "ping_nginx_p99_ms": nginx_p99,
                "nginx_hammer_requests": nginx_requests}
    finally:
        broker.stop()
        broker.cleanup_dir()


def wrk_ratio(workdir, seconds):
    table = run_all.Table(judge=False)
    run_all.nginx_comparison(table, workdir, seconds)
    return table.render().splitlines()[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build_dirs", nargs="+")
    parser.add_argument("--connections", type=int, default=15000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--hammer-seconds", type=float, default=10.0)
    parser.add_argument("--wrk-seconds", type=int, default=10)
    args = parser.parse_args()
    limit = mqtt_load.raise_file_limit()
    if args.connections + 1000 > limit:
        sys.exit(f"--connections {args.connections} needs more open files than {limit}")
    results = {b: [] for b in args.build_dirs}
    print(f"load average at the start: {run_all.load_average()}", flush=True)
    for round_number in range(args.rounds):
        for build in args.build_dirs:
            harness.use_build(os.path.abspath(build))
            workdir = tempfile.mkdtemp(prefix="mqc-list-")
            os.chmod(workdir, 0o755)
            try:
                started = time.monotonic()
                figures = serve_big(args.connections, args.hammer_seconds, workdir)
                figures["wrk"] = wrk_ratio(workdir, args.wrk_seconds)
                figures["load"] = run_all.load_average()
                print(f"round {round_number + 1} {build} ({time.monotonic() - started:.0f} s): "
                      f"{figures}", flush=True)
                results[build].append(figures)
            finally:
                shutil.rmtree(workdir, ignore_errors=True)
    print(f"\nload average at the end: {run_all.load_average()}")
    for build, rounds in results.items():
        print(f"\n{build}, {args.connections} connections, {len(rounds)} rounds:")
        for key in ("open_mib", "after_mib", "full_first_ms", "full_median_ms", "ping_idle_p99_ms",
                    "ping_p99_ms", "ping_far_p99_ms", "ping_nginx_p99_ms"):
            values = [r[key] for r in rounds]
            print(f"  {key}: {', '.join(f'{v:.1f}' for v in values)} "
                  f"(median {statistics.median(values):.1f})")
        for r in rounds:
            print(f"  wrk: {r['wrk']}")


if __name__ == "__main__":
    main()
