#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""What an idle broker's companion costs: CPU seconds and wake-ups over a quiet spell.

For each build named, one broker with the plugin of that build, `--connections` idle MQTT
connections (connected and subscribed, then silent) and no API request; after a settling second
the companion's CPU time (utime + stime of /proc/PID/stat) and its context switches (voluntary,
/proc/PID/status: one per wake-up of a sleeping thread) are counted over `--seconds`. Builds run
one after the other, each on its own broker, so two mains compare side by side in one run:

  bench/companion_idle.py build-release /path/to/previous/build --seconds 60

Prints one line per build. No target is judged here: docs/benchmarks.md records the figures.
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
import broker_overhead  # noqa: E402
import harness  # noqa: E402
import mqtt_load  # noqa: E402


def switches(pid):
    """Voluntary context switches of every thread of `pid`."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/status") as f:
            for line in f:
                if line.startswith("voluntary_ctxt_switches:"):
                    total += int(line.split()[1])
    return total


def measure(build, connections, seconds):
    harness.use_build(build)
    broker = harness.Broker()
    broker.start()
    try:
        clients = mqtt_load.IdleClients(broker.port, connections, prefix="quiet").open()
        try:
            harness.wait_for(lambda: len(broker.connections()) == connections, timeout=60)
            time.sleep(1.0)
            pid = broker.companion_pid
            cpu, woke = broker_overhead.cpu_seconds(pid), switches(pid)
            time.sleep(seconds)
            cpu, woke = broker_overhead.cpu_seconds(pid) - cpu, switches(pid) - woke
        finally:
            clients.close()
    finally:
        broker.stop()
        broker.cleanup_dir()
    return cpu, woke


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("builds", nargs="+", help="build folders (mosquitto_connections.so ...)")
    parser.add_argument("--connections", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    for build in args.builds:
        cpu, woke = measure(os.path.abspath(build), args.connections, args.seconds)
        print(f"{build}: companion CPU {cpu:.3f} s in {args.seconds:.0f} s "
              f"({100 * cpu / args.seconds:.3f} % of a CPU), {woke} wake-ups "
              f"({woke / args.seconds:.1f}/s), {args.connections} idle connections, no request")


if __name__ == "__main__":
    main()
