#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Time and memory of reading mosquitto.db at plugin start, with many persistent sessions.

Writes a version 6 persistence file (the format Mosquitto 2.0 writes: src/persist_write*.c)
with SESSIONS clients (MQTT 3.1.1 persistent sessions with a username), each with 2
subscriptions, then starts the real broker with the plugin on it. The broker restores the file itself, then loads
the plugin, which reads it again and logs how long that took; the broker's peak RSS (VmHWM)
is printed for the same start without the plugin and with it, and how long after the broker
is up ListConnections lists every session as offline (the companion's first resync).

Usage: bench/persistence_read.py BUILD_DIR [--sessions N]
"""

import argparse
import json
import os
import re
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402

MAGIC = b"\x00\xb5\x00mosquitto db"


def chunk(kind, body):
    return struct.pack(">II", kind, len(body)) + body


def write_file(path, sessions):
    out = [MAGIC, struct.pack(">II", 0, 6), chunk(1, struct.pack("<QBB6x", sessions + 1, 1, 8))]
    for i in range(sessions):
        client_id = f"fleet-{i:07d}".encode()
        username = b"device"
        # PF_client: expiry time (host order), then big-endian fields, 4 bytes of padding.
        body = struct.pack("<q", 0) + struct.pack(">IHHHH4x", 0xFFFFFFFF, 0, len(client_id),
                                                  1883, len(username))
        out.append(chunk(6, body + client_id + username))
    for i in range(sessions):
        client_id = f"fleet-{i:07d}".encode()
        for topic in (f"events/site/{i}/#".encode(), f"queues/jobs/{i % 100}".encode()):
            body = struct.pack(">IHHBB2x", 0, len(client_id), len(topic), 1, 0)
            out.append(chunk(5, body + client_id + topic))
    with open(path, "wb") as f:
        f.write(b"".join(out))


def peak_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"^VmHWM:\s+(\d+) kB", f.read(), re.M).group(1))


def offline_total(broker):
    body = json.dumps({"filter": "state = MQTT_CONNECTION_STATE_OFFLINE", "pageSize": 1})
    try:
        status, _, text = broker.http(
            "/mqtt.connections.v1.ConnectionsService/ListConnections", method="POST",
            body=body.encode(),
            headers={"Content-Type": "application/json", "Connect-Protocol-Version": "1"})
    except OSError:
        return -1
    return int(json.loads(text)["totalSize"]) if status == 200 else -1


def run(build, sessions, plugin):
    harness.use_build(build)
    broker = harness.Broker(plugin=plugin, persistence=True, log_types=("error", "warning",
                                                                        "notice"))
    broker.start()
    try:
        path = broker.persistence_file
        broker.restart(between=lambda: write_file(path, sessions))
        started = time.monotonic()
        harness.wait_for(broker._mqtt_ready, timeout=120, what="the broker")
        listed = None
        if plugin:
            harness.wait_for(lambda: offline_total(broker) == sessions, timeout=120,
                             interval=0.1, what="every session listed")
            listed = time.monotonic() - started
        size = os.path.getsize(path)
        rss = peak_rss_kib(broker.process.pid)
        line = re.search(r"mosquitto_connections: (\d+) persistent sessions.* in (\d+) ms",
                         broker.log())
        return size, rss, line.group(0) if line else None, listed
    finally:
        broker.stop()
        broker.cleanup_dir()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build")
    parser.add_argument("--sessions", type=int, default=100000)
    args = parser.parse_args()
    size, plain_rss, _, _ = run(args.build, args.sessions, plugin=False)
    _, plugin_rss, line, listed = run(args.build, args.sessions, plugin=True)
    print(f"file: {size} bytes, {args.sessions} sessions, {2 * args.sessions} subscriptions")
    print(f"broker peak RSS: {plain_rss} KiB without the plugin, {plugin_rss} KiB with it")
    print(line or "no read line in the log")
    print(f"all {args.sessions} listed offline {listed:.2f} s after the broker was up (serving)")


if __name__ == "__main__":
    main()
