#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The plugin's cost to the broker: plain Mosquitto and Mosquitto with the plugin, side by side
in one run, on the same workload, compared by the broker's own CPU time per delivered message.

Workload: QoS 0 fan-out. SUBSCRIBERS mosquitto_sub clients subscribe to events/bench/#; one
mosquitto_pub -l publishes MESSAGES lines to events/bench/t (a KubeMQ events topic, so the
plugin classifies and counts every publish and every delivery). The brokers run one after the
other in alternating rounds, and the figures are the median over the rounds.

Usage: bench/broker_overhead.py BUILD_DIR [--messages N] [--subscribers N] [--rounds N]
                                [--acl-file] [--callgrind N [--floor] [--keep DIR]]
                                [--broker NAME] [--strict]
Prints one line per round and a summary: CPU microseconds per delivered message, and the
ratio with/without the plugin. With --callgrind N it also counts the broker's instructions
per delivered message under valgrind (repeatable, whatever else the machine does) from runs
of N and 2N messages, which takes longer. With --acl-file both brokers get an acl_file that
allows the workload (ACL_FILE_TEXT), so that the plugin asks the broker's ACL for every delivery.
With --floor the callgrind figures include a third broker: plain Mosquitto with the build's
mqc_floor_plugin.so, which registers the plugin's per-message callbacks and does nothing in
them (plugin/floor_plugin.c): what the broker's own dispatch to a plugin costs.
--strict adds a third broker to every round and to the callgrind figures: the plugin with
plugin_opt_kubemq_strict true (docs/topic-mapping.md, "Strict mode"), so that strict on and off
are compared in the same run.
--broker NAME runs every broker of the comparison (plain, floor, plugin) as that build of
Mosquitto: `system` (Debian 12's /usr/sbin/mosquitto, the default) or a name of the manifest
scripts/prepare-brokers.py writes into BUILD_DIR/brokers/ (integration/brokers.py), with its
library path. --keep DIR copies the callgrind output files into DIR
(callgrind.<plain|plugin|floor>.<messages>.out), for callgrind_annotate: the difference of a
function's cost between the N and 2N runs, divided by N x subscribers, is its cost per delivery.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import brokers  # noqa: E402
import harness  # noqa: E402


# Lines before the first `user` line apply to the anonymous benchmark clients; the pattern
# line makes the broker's check walk its pattern list too, as a typical acl_file does.
ACL_FILE_TEXT = """\
topic readwrite events/#
pattern read clients/%c/#
"""


# The subscribe lines tell when the subscribers are in place (Broker.wait_subscribed).
LOG_TYPES = ("error", "warning", "notice", "subscribe")


# Set by --floor: the do-nothing plugin, loaded into the broker started "without the plugin" when
# `floor` is asked for (broker_arguments).
FLOOR_PLUGIN = None


def broker_arguments(acl_file, floor=False, strict=False):
    arguments = {"extra": ""}
    if acl_file:
        arguments = {"extra": "acl_file {dir}/acl\n", "files": {"acl": ACL_FILE_TEXT}}
    if floor:
        arguments["extra"] += f"plugin {FLOOR_PLUGIN}\n"
    if strict:
        arguments["options"] = {"kubemq_strict": "true"}
    return arguments


def write_payload_file(workdir, messages, name="payload"):
    """A file of `messages` lines, one message each, for mosquitto_pub -l; returns its path."""
    path = os.path.join(workdir, name)
    with open(path, "w") as f:
        for i in range(messages):
            f.write(f"reading {i:08d} value 21.5\n")
    return path


def cpu_seconds(pid):
    """CPU seconds of process `pid`, every thread's, ended ones included: its process CPU clock
    (the scheduler's nanoseconds, as clock_getcpuclockid gives it), where /proc/PID/stat's user
    and system time come in clock ticks of 10 ms, half a percent of a 2 s round each. Falls back
    to those ticks where the clock cannot be read (OSError: no such process, as before)."""
    try:
        return time.clock_gettime(((~pid) << 3) | 2)  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
    except OSError:
        if not os.path.exists(f"/proc/{pid}"):
            raise
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


def run_workload(broker, messages, subscribers, payload_file):
    subs = [subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(broker.port),
                              "-t", "events/bench/#", "-C", str(messages), "-i", f"bench-sub-{i}"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for i in range(subscribers)]
    broker.wait_subscribed([f"bench-sub-{i}" for i in range(subscribers)], "events/bench/#")
    before = cpu_seconds(broker.process.pid)
    started = time.monotonic()
    with open(payload_file, "rb") as lines:
        subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(broker.port), "-l",
                        "-t", "events/bench/t", "-q", "0", "-i", "bench-pub"],
                       stdin=lines, check=True, timeout=600)
    deadline = time.monotonic() + 120
    for s in subs:
        try:
            s.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            s.kill()  # QoS 0 may lose a few under load: count what the broker did anyway
            s.wait()
    elapsed = time.monotonic() - started
    return cpu_seconds(broker.process.pid) - before, elapsed


def callgrind_instructions(with_plugin, messages, subscribers, payload_file, workdir, acl_file,
                           floor=False, build=None, strict=False):
    """Instructions the broker executes over its whole life for the workload (callgrind);
    `build` is the Mosquitto build (brokers.BrokerBuild; the harness's default if None)."""
    kind = "floor" if floor else "strict" if strict else "plugin" if with_plugin else "plain"
    return callgrind_broker_total(
        os.path.join(workdir, f"callgrind.{kind}.{messages}.out"),
        lambda broker: run_workload(broker, messages, subscribers, payload_file),
        plugin=with_plugin, build=build, **broker_arguments(acl_file, floor, strict))


def callgrind_broker_total(out, workload, **broker_options):
    """Instructions a broker (harness.Broker(**broker_options)) executes over its whole life
    under callgrind, written to `out`, while `workload(broker)` runs."""
    # The broker drops to user mosquitto, and callgrind writes its totals as that user at exit.
    with open(out, "w"):
        pass
    os.chmod(out, 0o666)
    broker = harness.Broker(log_types=LOG_TYPES,
                            command_prefix=["valgrind", "--tool=callgrind",
                                            f"--callgrind-out-file={out}"],
                            **broker_options)
    broker.start()
    try:
        workload(broker)
    finally:
        broker.stop()  # callgrind writes its totals when the broker exits
        broker.cleanup_dir()
    with open(out) as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    raise RuntimeError(f"no totals in {out}")


def instructions_per_delivery(with_plugin, messages, subscribers, payload, workdir,
                              acl_file=False, floor=False, build=None, strict=False):
    """The difference between a run with 2N messages and one with N cancels start-up and
    shutdown: what remains is the cost of N messages delivered to every subscriber."""
    small = os.path.join(workdir, "payload-n")
    large = os.path.join(workdir, "payload-2n")
    with open(payload) as src, open(small, "w") as n, open(large, "w") as n2:
        for i, line in zip(range(2 * messages), src):
            (n2 if i >= messages else n).write(line)
            if i < messages:
                n2.write(line)
    once = callgrind_instructions(with_plugin, messages, subscribers, small, workdir, acl_file,
                                  floor, build, strict)
    twice = callgrind_instructions(with_plugin, 2 * messages, subscribers, large, workdir,
                                   acl_file, floor, build, strict)
    return (twice - once) / (messages * subscribers)


def add_workload_arguments(parser, messages):
    """BUILD_DIR, --broker and the sizes of the fan-out workload (run_workload): the arguments
    of this benchmark and of presence_storm.py, which runs the same workload."""
    parser.add_argument("build_dir")
    parser.add_argument("--messages", type=int, default=messages)
    parser.add_argument("--subscribers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    brokers.add_argument(parser)


def use_broker(args):
    """The build --broker names, announced, with the harness set to BUILD_DIR's plugin; exits
    naming what is missing when the manifest has no such build."""
    try:
        build = brokers.load(args.broker, args.build_dir)
    except LookupError as e:
        sys.exit(str(e))
    print(f"broker {build.name}: Mosquitto {build.version} ({build.build}) {build.mosquitto}",
          flush=True)
    harness.use_build(args.build_dir)
    return build


def main():
    parser = argparse.ArgumentParser()
    add_workload_arguments(parser, messages=200000)
    parser.add_argument("--callgrind", type=int, default=0, metavar="MESSAGES",
                        help="also count instructions per message under callgrind")
    parser.add_argument("--acl-file", action="store_true",
                        help="give both brokers an acl_file that allows the workload")
    parser.add_argument("--floor", action="store_true",
                        help="with --callgrind, also count a broker with the do-nothing plugin")
    parser.add_argument("--keep", metavar="DIR",
                        help="with --callgrind, copy the callgrind output files into DIR")
    parser.add_argument("--strict", action="store_true",
                        help="also run the plugin with plugin_opt_kubemq_strict true")
    args = parser.parse_args()
    build = use_broker(args)
    global FLOOR_PLUGIN
    FLOOR_PLUGIN = os.path.abspath(os.path.join(args.build_dir, "mqc_floor_plugin.so"))
    workdir = tempfile.mkdtemp(prefix="mqc-bench-")
    os.chmod(workdir, 0o755)
    payload_file = write_payload_file(workdir, args.messages)
    deliveries = args.messages * args.subscribers
    results = {False: [], True: [], "strict": []}
    kinds = [False, True] + (["strict"] if args.strict else [])
    try:
        for round_ in range(args.rounds):
            for plugin in kinds if round_ % 2 == 0 else list(reversed(kinds)):
                # No per-message log lines: they would cost more than what is measured.
                broker = harness.Broker(plugin=bool(plugin), log_types=LOG_TYPES, build=build,
                                        **broker_arguments(args.acl_file,
                                                           strict=plugin == "strict"))
                broker.start()
                try:
                    cpu, elapsed = run_workload(broker, args.messages, args.subscribers,
                                                payload_file)
                finally:
                    broker.stop()
                    broker.cleanup_dir()
                per_message_us = cpu / deliveries * 1e6
                results[plugin].append(per_message_us)
                print(f"round {round_ + 1} "
                      f"{'strict' if plugin == 'strict' else 'plugin' if plugin else 'plain '}: "
                      f"broker CPU "
                      f"{cpu:.3f} s for {deliveries} deliveries = {per_message_us:.3f} us each "
                      f"({elapsed:.1f} s wall)", flush=True)
        if args.rounds > 0:
            plain = statistics.median(results[False])
            with_plugin = statistics.median(results[True])
            print(f"median broker CPU per delivered message: plain {plain:.3f} us, "
                  f"with plugin {with_plugin:.3f} us, ratio {with_plugin / plain:.3f}",
                  flush=True)
            if args.strict:
                strict = statistics.median(results["strict"])
                print(f"median broker CPU per delivered message with kubemq_strict: "
                      f"{strict:.3f} us, ratio to the plugin without it "
                      f"{strict / with_plugin:.3f}", flush=True)
        if args.callgrind:
            def per_delivery(with_plugin, **kind):
                """One broker's instructions per delivery (`kind`: strict or floor)."""
                return instructions_per_delivery(with_plugin, args.callgrind, args.subscribers,
                                                 payload_file, workdir, args.acl_file,
                                                 build=build, **kind)
            per = {p: per_delivery(p) for p in (False, True)}
            print(f"callgrind instructions per delivered message: plain {per[False]:.0f}, "
                  f"with plugin {per[True]:.0f}, ratio {per[True] / per[False]:.4f}")
            if args.strict:
                strict = per_delivery(True, strict=True)
                print(f"callgrind with kubemq_strict: {strict:.0f}, ratio to plain "
                      f"{strict / per[False]:.4f}, to the plugin without it "
                      f"{strict / per[True]:.4f} ({strict - per[True]:+.0f} instructions)")
            if args.floor:
                floor = per_delivery(False, floor=True)
                print(f"callgrind floor (a plugin registering the same callbacks, doing "
                      f"nothing): {floor:.0f}, ratio {floor / per[False]:.4f}; the plugin's "
                      f"own work: {per[True] - floor:.0f}")
        if args.callgrind and args.keep:
            os.makedirs(args.keep, exist_ok=True)
            for name in sorted(os.listdir(workdir)):
                if name.startswith("callgrind."):
                    shutil.copy(os.path.join(workdir, name), args.keep)
            print(f"callgrind output files in {args.keep}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
