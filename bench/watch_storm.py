#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A storm of connect+close while WatchConnections streams watch (docs/benchmarks.md, "Watch
storm").

Usage: bench/watch_storm.py BUILD_DIR [--pairs N] [--streams S]

One broker with the plugin (Debian's /usr/sbin/mosquitto); S streams (default 3) in the JSON
codec, each read by a process of its own as fast as it can; N (default 10,000) clients
connecting and closing one after the other from another process; meanwhile the ping client of
bench/mqtt_load.py times the broker thread (a QoS 0 message to itself every 2 ms). Prints,
per stream, the changes seen and whether they came every one and in order, or the stream was
cut off with resource_exhausted (the only other allowed outcome); then the storm's rate and the
ping's p50 / p99 / max during the storm and before it. Asserts the streams' outcome, not the
timing. Processes are stopped by their own PIDs.
"""

import argparse
import multiprocessing
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import mqtt_load  # noqa: E402
from test_watch_connections import Stream  # noqa: E402


def read_stream(port, pairs, start_barrier, results):
    """One stream: every storm change in order, or the end message that cut it off."""
    broker = type("B", (), {"http_port": port})()
    stream = Stream(broker, timeout=300)
    stream.until_synced()
    start_barrier.wait()
    expected, seen, in_order = 2 * pairs, 0, True
    previous = 0
    began = time.monotonic()
    while seen < expected:
        message = stream.next()
        if message is None:
            break
        sequence = int(message["sequence"])
        in_order = in_order and sequence > previous
        previous = sequence
        client = message.get("connection", {}).get("clientId", "")
        if not client.startswith("storm-"):
            continue
        kind = message["kind"].rsplit("_", 1)[-1]
        index = int(client.split("-")[1])
        want = ("OPENED", "CLOSED")[seen % 2]
        in_order = in_order and kind == want and index == seen // 2
        seen += 1
    results.put({"seen": seen, "in_order": in_order, "end": stream.end,
                 "seconds": time.monotonic() - began})


def storm(port, pairs):
    for i in range(pairs):
        sock, rc = harness.raw_connect(type("B", (), {"port": port})(), f"storm-{i}", 60)
        assert rc == 0
        sock.sendall(b"\xe0\x00")
        sock.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build")
    parser.add_argument("--pairs", type=int, default=10000)
    parser.add_argument("--streams", type=int, default=3)
    args = parser.parse_args()
    harness.use_build(args.build)
    broker = harness.Broker(log_types=("error", "warning", "notice"))
    broker.start()
    processes = []
    try:
        ping = mqtt_load.PingClient(broker.port)
        (idle_p50, idle_p99, idle_max), _ = ping.run(3)
        results = multiprocessing.Queue()
        barrier = multiprocessing.Barrier(args.streams + 1)
        for _ in range(args.streams):
            process = multiprocessing.Process(target=read_stream,
                                              args=(broker.http_port, args.pairs, barrier, results))
            process.start()
            processes.append(process)
        barrier.wait(timeout=60)
        stormer = multiprocessing.Process(target=storm, args=(broker.port, args.pairs))
        began = time.monotonic()
        stormer.start()
        processes.append(stormer)
        times = []
        while stormer.is_alive() and len(times) < 200000:
            times.append(ping.ping())
            time.sleep(0.002)
        stormer.join()
        storm_seconds = time.monotonic() - began
        outcomes = [results.get(timeout=300) for _ in range(args.streams)]
        p50, p99, peak = mqtt_load.summary_ms(times)
        print(f"storm: {args.pairs} connect+close in {storm_seconds:.1f} s "
              f"({2 * args.pairs / storm_seconds:.0f} changes/s), {args.streams} streams")
        failed = False
        for index, outcome in enumerate(outcomes):
            end = outcome["end"]
            complete = outcome["seen"] == 2 * args.pairs and outcome["in_order"]
            cut = end is not None and end.get("error", {}).get("code") == "resource_exhausted"
            print(f"stream {index}: {outcome['seen']} changes, in order {outcome['in_order']}, "
                  f"{'complete' if complete else 'cut off: ' + str(end)}")
            failed = failed or not (complete or (cut and outcome["in_order"]))
        print(f"ping during the storm: p50 {p50:.3f} ms, p99 {p99:.3f} ms, max {peak:.3f} ms "
              f"({len(times)} pings)")
        print(f"ping before (idle):    p50 {idle_p50:.3f} ms, p99 {idle_p99:.3f} ms, "
              f"max {idle_max:.3f} ms")
        ping.close()
        if failed:
            sys.exit("a stream missed a change without being cut off")
    finally:
        for process in processes:
            if process.is_alive():
                os.kill(process.pid, 9)
            process.join(5)
        broker.stop()
        broker.cleanup_dir()


if __name__ == "__main__":
    main()
