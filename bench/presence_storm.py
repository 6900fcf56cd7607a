#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""What presence messages (plugin_opt_presence_events) cost the broker: the plugin with them
off and on, side by side in one run, in alternating rounds, figures the median over the rounds.

Two workloads per broker:
- storm: WORKERS processes each open and close CYCLES / WORKERS MQTT 3.1.1 connections one
  after another (CONNECT, CONNACK, DISCONNECT, close), while WATCHERS mosquitto_sub (1 by
  default) listen on $SYS/brokers/# (so that the presence messages are delivered, as when
  someone watches them; 0: published to no one).
  Figures: connect+close cycles per second (wall), and broker CPU per cycle.
- fan-out: the QoS 0 fan-out of bench/broker_overhead.py (MESSAGES to SUBSCRIBERS): broker CPU
  per delivered message, which presence must leave unchanged.

Usage: bench/presence_storm.py BUILD_DIR [--cycles N] [--workers N] [--messages N]
                               [--subscribers N] [--rounds N] [--retained] [--watchers N]
                               [--broker NAME] [--retained-cost CLIENTS]
With --callgrind CYCLES it also counts the broker's instructions under valgrind (repeatable,
whatever else the machine does): per connect+close cycle and per delivery, off and on; their
ratio is the rate ratio a broker saturated by the storm would see.
With --retained-cost CLIENTS it also holds CLIENTS connections open on a broker with the
retained state on and one with it off: the broker's resident memory per client it costs, and
how long a new subscriber to every state topic takes to get them all.
Prints one line per round and broker, then the ratios on/off: the storm's rate (target >= 0.90)
and CPU per cycle, and the fan-out's CPU per delivery. --retained turns the retained state
topic on too in the "on" broker.
"""

import argparse
import multiprocessing
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from broker_overhead import (LOG_TYPES, add_workload_arguments,  # noqa: E402
                             callgrind_broker_total, cpu_seconds, run_workload, use_broker,
                             write_payload_file)
from mqtt_load import IdleClients, connect_packet, raise_file_limit  # noqa: E402
from run_all import settle_rss  # noqa: E402

DISCONNECT = b"\xe0\x00"


def read_connack(sock):
    data = b""
    deadline = time.monotonic() + 10
    while len(data) < 4:
        if time.monotonic() > deadline:
            raise TimeoutError("no CONNACK")
        chunk = sock.recv(4 - len(data))
        if not chunk:
            raise ConnectionError("closed before CONNACK")
        data += chunk
    if data[0] != 0x20 or data[3] != 0:
        raise ConnectionError(f"CONNACK refused: {data!r}")


def storm_worker(port, worker, cycles):
    for i in range(cycles):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        try:
            sock.sendall(connect_packet(f"storm-{worker}-{i}", keepalive=60))
            read_connack(sock)
            sock.sendall(DISCONNECT)
        finally:
            sock.close()


def run_storm(broker, cycles, workers, watchers):
    """(broker CPU seconds, wall seconds, cycles done) of `cycles` connect+close cycles, with
    `watchers` subscribers on $SYS/brokers/#."""
    names = [f"storm-watcher-{i}" for i in range(watchers)]
    subs = [subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(broker.port),
                              "-t", "$SYS/brokers/#", "-i", name],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for name in names]
    try:
        if names:
            broker.wait_subscribed(names, "$SYS/brokers/#")
        per_worker = cycles // workers
        before = cpu_seconds(broker.process.pid)
        started = time.monotonic()
        with multiprocessing.Pool(workers) as pool:
            pool.starmap(storm_worker, [(broker.port, w, per_worker) for w in range(workers)])
        elapsed = time.monotonic() - started
        # The last closes are handled once the broker lists nothing but the watcher (with
        # closed_max 0 only open connections are listed).
        harness.wait_for(lambda: len(broker.connections()) <= watchers or None, timeout=30,
                         what="the storm's connections closed")
        return cpu_seconds(broker.process.pid) - before, elapsed, per_worker * workers
    finally:
        for sub in subs:
            sub.terminate()
            sub.wait(timeout=10)


def retained_cost(build, count):
    """The retained state topic at `count` connected clients: the broker's resident memory with
    presence_retained on against off, and how long a new subscriber to every state topic takes
    to receive the `count` retained messages."""
    rss = {}
    catch_up = None
    for on in (False, True):
        options = {"closed_max": "0"}
        if on:
            options.update({"presence_retained": "true", "presence_node": "bench"})
        broker = harness.Broker(options=options, log_types=LOG_TYPES, build=build)
        broker.start()
        try:
            with IdleClients(broker.port, count, prefix="held", filters=lambda i: ["x/y"]):
                harness.wait_for(lambda: len(broker.connections()) >= count or None,
                                 timeout=120, what="every client listed")
                rss[on] = settle_rss(broker.process.pid)
                if on:
                    started = time.monotonic()
                    subprocess.run(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(broker.port),
                                    "-t", "$SYS/brokers/bench/clients/+/state", "-C", str(count),
                                    "-i", "state-reader"], stdout=subprocess.DEVNULL,
                                   check=True, timeout=120)
                    catch_up = time.monotonic() - started
        finally:
            broker.stop()
            broker.cleanup_dir()
    per_client = (rss[True] - rss[False]) * 1024 / count
    print(f"retained state at {count} clients: broker RSS off {rss[False]} KiB, on "
          f"{rss[True]} KiB, {per_client:.0f} bytes per client ({per_client * 100000 / 2**20:.1f} "
          f"MiB at 100,000); a new subscriber received all {count} states in {catch_up:.2f} s",
          flush=True)


def callgrind_total(build, options, workdir, name, workload):
    """Instructions the broker executes over its whole life (callgrind) with plugin `options`
    while `workload(broker)` runs."""
    return callgrind_broker_total(os.path.join(workdir, f"callgrind.{name}.out"), workload,
                                  options=options, build=build)


def callgrind_figures(build, cycles, watchers, messages, subscribers, workdir, on_options):
    """Instructions per connect+close cycle and per delivery, presence off and on: each the
    difference between a run of 2N and one of N, which cancels start-up and shutdown."""
    payloads = {}
    for n in (messages, 2 * messages):
        payloads[n] = write_payload_file(workdir, n, f"payload-{n}")
    figures = {}
    for on in (False, True):
        options = dict(on_options) if on else {}
        options["closed_max"] = "0"
        label = "on" if on else "off"
        storm = [callgrind_total(build, options, workdir, f"storm.{label}.{n}",
                                 lambda b, n=n: run_storm(b, n, 1, watchers))
                 for n in (cycles, 2 * cycles)]
        fan = [callgrind_total(build, options, workdir, f"fan.{label}.{n}",
                               lambda b, n=n: run_workload(b, n, subscribers, payloads[n]))
               for n in (messages, 2 * messages)]
        figures[on] = ((storm[1] - storm[0]) / cycles,
                       (fan[1] - fan[0]) / (messages * subscribers))
        print(f"callgrind presence {label}: {figures[on][0]:.0f} instructions per "
              f"connect+close ({watchers} watcher(s)), {figures[on][1]:.0f} per delivery",
              flush=True)
    print(f"callgrind ratio on/off: per connect+close {figures[True][0] / figures[False][0]:.3f} "
          f"(rate ratio {figures[False][0] / figures[True][0]:.3f}), per delivery "
          f"{figures[True][1] / figures[False][1]:.4f}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    add_workload_arguments(parser, messages=100000)
    parser.add_argument("--cycles", type=int, default=4000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--retained", action="store_true")
    parser.add_argument("--watchers", type=int, default=1,
                        help="subscribers on $SYS/brokers/# during the storm (0: none)")
    parser.add_argument("--callgrind", type=int, default=0, metavar="CYCLES",
                        help="also count the broker's instructions under callgrind: per "
                             "connect+close from CYCLES and 2 x CYCLES, per delivery from "
                             "--messages / 10 and twice that")
    parser.add_argument("--keep", metavar="DIR",
                        help="with --callgrind, copy the callgrind output files into DIR")
    parser.add_argument("--retained-cost", type=int, default=0, metavar="CLIENTS",
                        help="also measure the retained state topic's memory at CLIENTS")
    args = parser.parse_args()
    build = use_broker(args)
    raise_file_limit()
    workdir = tempfile.mkdtemp(prefix="mqc-bench-")
    os.chmod(workdir, 0o755)
    payload_file = write_payload_file(workdir, args.messages)
    deliveries = args.messages * args.subscribers
    rate = {False: [], True: []}
    cpu_cycle = {False: [], True: []}
    cpu_delivery = {False: [], True: []}
    try:
        for round_ in range(args.rounds):
            for on in (False, True) if round_ % 2 == 0 else (True, False):
                options = {}
                if on:
                    options = {"presence_events": "true"}
                    if args.retained:
                        options["presence_retained"] = "true"
                # closed_max 0: the closed list would otherwise grow with the storm.
                options["closed_max"] = "0"
                broker = harness.Broker(options=options, log_types=LOG_TYPES, build=build)
                broker.start()
                try:
                    cpu, elapsed, done = run_storm(broker, args.cycles, args.workers,
                                                   args.watchers)
                    fan_cpu, _ = run_workload(broker, args.messages, args.subscribers,
                                              payload_file)
                finally:
                    broker.stop()
                    broker.cleanup_dir()
                rate[on].append(done / elapsed)
                cpu_cycle[on].append(cpu / done * 1e6)
                cpu_delivery[on].append(fan_cpu / deliveries * 1e6)
                print(f"round {round_ + 1} presence {'on ' if on else 'off'}: storm "
                      f"{done / elapsed:.0f} cycles/s, broker CPU {cpu / done * 1e6:.1f} us "
                      f"per cycle; fan-out {fan_cpu / deliveries * 1e6:.3f} us per delivery",
                      flush=True)
        if args.rounds > 0:
            med = {k: {on: statistics.median(v[on]) for on in (False, True)}
                   for k, v in (("rate", rate), ("cycle", cpu_cycle),
                                ("delivery", cpu_delivery))}
            print(f"median storm rate: off {med['rate'][False]:.0f}/s, on "
                  f"{med['rate'][True]:.0f}/s, ratio on/off {med['rate'][True] / med['rate'][False]:.3f}")
            print(f"median broker CPU per connect+close: off {med['cycle'][False]:.1f} us, on "
                  f"{med['cycle'][True]:.1f} us, ratio {med['cycle'][True] / med['cycle'][False]:.3f}")
            print(f"median broker CPU per delivery (fan-out): off "
                  f"{med['delivery'][False]:.3f} us, on {med['delivery'][True]:.3f} us, ratio "
                  f"{med['delivery'][True] / med['delivery'][False]:.3f}")
        if args.callgrind:
            on_options = {"presence_events": "true"}
            if args.retained:
                on_options["presence_retained"] = "true"
            callgrind_figures(build, args.callgrind, args.watchers, max(1, args.messages // 10),
                              args.subscribers, workdir, on_options)
        if args.retained_cost:
            retained_cost(build, args.retained_cost)
        if args.callgrind and args.keep:
            os.makedirs(args.keep, exist_ok=True)
            for name in sorted(os.listdir(workdir)):
                if name.startswith("callgrind."):
                    shutil.copy(os.path.join(workdir, name), args.keep)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
