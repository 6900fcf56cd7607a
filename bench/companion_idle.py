#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""What an idle broker's companion costs: CPU seconds and wake-ups over a quiet spell.

For each build named, one broker with the plugin of that build, `--connections` idle MQTT
connections (connected and subscribed, then silent) and no API request; after a settling second
the companion's CPU time (its process CPU clock, broker_overhead.cpu_seconds, and the
nanoseconds on a CPU of each thread, /proc/PID/task/*/schedstat) and its context switches
(voluntary, /proc/PID/status: one per wake-up of a sleeping thread, per thread) are counted over
`--seconds`. Then, with `--latency N`, how long N CONNECTs, each after a quiet pause of 50 to
250 ms, take from the client's connect to the OPENED change on a WatchConnections stream (p50,
p99, max): the cost of a companion that sleeps until the broker wakes it. Builds run one after
the other, each on its own broker, so two mains compare side by side in one run:

  bench/companion_idle.py /path/to/previous/build build-release --seconds 60 --latency 200

MQC_BROKER (and MQC_BUILD_DIR) choose the broker, as for the integration tests. Prints a few
lines per build. No target is judged here: docs/benchmarks.md records the figures.
"""

import argparse
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
import broker_overhead  # noqa: E402
import harness  # noqa: E402
import mqtt_load  # noqa: E402
from test_watch_connections import Stream  # noqa: E402


def threads(pid):
    """{thread: (name, voluntary context switches, ns on a CPU)} of every thread of `pid`."""
    out = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                ns = int(f.read().split()[0])
            with open(f"/proc/{pid}/task/{task}/status") as f:
                woke = next(int(line.split()[1]) for line in f
                            if line.startswith("voluntary_ctxt_switches:"))
        except (OSError, StopIteration):
            continue  # a thread that ended meanwhile
        out[task] = (name, woke, ns)
    return out


def connect_latencies(broker, count):
    """Seconds from each of `count` CONNECTs (a quiet pause before each) to its OPENED change."""
    stream = Stream(broker, timeout=30)
    stream.until_synced()
    latencies = []
    for i in range(count):
        time.sleep(random.uniform(0.05, 0.25))
        client_id = f"latency-{i}"
        start = time.monotonic()
        sock, _ = harness.raw_connect(broker, client_id, 60)
        for _ in range(1000):
            message = stream.next()
            assert message is not None, stream.end
            if (message["kind"] == "CONNECTION_CHANGE_KIND_OPENED"
                    and message["connection"]["clientId"] == client_id):
                break
        latencies.append(time.monotonic() - start)
        sock.close()
    stream.connection.close()
    return sorted(latencies)


def measure(build, connections, seconds, latency_count):
    harness.use_build(build)
    broker = harness.Broker()
    broker.start()
    latencies = []
    try:
        clients = mqtt_load.IdleClients(broker.port, connections, prefix="quiet").open()
        try:
            harness.wait_for(lambda: len(broker.connections()) == connections, timeout=60)
            time.sleep(1.0)
            pid = broker.companion_pid
            cpu, before = broker_overhead.cpu_seconds(pid), threads(pid)
            time.sleep(seconds)
            cpu, after = broker_overhead.cpu_seconds(pid) - cpu, threads(pid)
            if latency_count:
                latencies = connect_latencies(broker, latency_count)
        finally:
            clients.close()
    finally:
        broker.stop()
        broker.cleanup_dir()
    per_thread = {task: (name, woke - before.get(task, (name, 0, 0))[1],
                         ns - before.get(task, (name, 0, 0))[2])
                  for task, (name, woke, ns) in after.items()}
    return cpu, per_thread, latencies


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("builds", nargs="+", help="build folders (mosquitto_connections.so ...)")
    parser.add_argument("--connections", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--latency", type=int, default=0,
                        help="CONNECTs whose time to the API (WatchConnections) is measured")
    args = parser.parse_args()
    for build in args.builds:
        cpu, per_thread, latencies = measure(os.path.abspath(build), args.connections,
                                             args.seconds, args.latency)
        woke = sum(woke for _, woke, _ in per_thread.values())
        ns = sum(ns for _, _, ns in per_thread.values())
        print(f"{build}: companion CPU {cpu:.4f} s (process clock), {ns / 1e9:.4f} s "
              f"(schedstat) in {args.seconds:.0f} s ({100 * ns / 1e9 / args.seconds:.4f} % of a "
              f"CPU), {woke} wake-ups ({woke / args.seconds:.2f}/s), {args.connections} idle "
              "connections, no request")
        print("  per thread (wake-ups, CPU ms): " + ", ".join(
            f"{name} {w} {n / 1e6:.2f}" for name, w, n in sorted(per_thread.values())))
        if latencies:
            def at(q):
                return 1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))]
            print(f"  CONNECT to OPENED over {len(latencies)} connects: p50 {at(0.50):.1f} ms, "
                  f"p99 {at(0.99):.1f} ms, max {1000 * latencies[-1]:.1f} ms")


if __name__ == "__main__":
    main()
