#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A soak of the plugin inside a real broker: steady clients, churn, API load, reloads and a
companion crash, for a number of minutes; then the registry must be exactly the broker's truth
and neither process may have grown.

Usage: bench/soak.py BUILD_DIR --minutes M [--broker NAME] [--steady 1000] [--churn-rate R]

For M minutes, against one broker with the plugin, a password_file (allow_anonymous false) and
persistence on:
- `--steady` long-lived connections (raw MQTT 3.1.1 sockets, bench/mqtt_load.py), 2
  subscriptions each, opened before the clock starts and kept to the end;
- churners from `--churn-procs` processes, up to `--churn-rate` a second in all (0: as fast as
  they go): MQTT 3.1.1 and 5, clean and persistent, one in four with a wrong password (refused),
  the accepted ones subscribe when their session is new, then half send DISCONNECT and half
  drop the socket (some with a reset). Persistent churners take their client id from a fixed
  pool, one connection per id at a time, so the offline sessions they leave are bounded and
  known (below);
- an API hammer, a process of its own: the full KubeMQ list, every page of ListConnections,
  `/metrics`, round and round;
- a SIGHUP to the broker every `--hup-every` seconds (the password file is unchanged, so the
  reload re-checks every client and closes none);
- the companion killed once with SIGKILL halfway (the plugin starts a new one, which resyncs).

Every 10 s one line: elapsed time, churn rate, API requests, VmRSS of the broker and of the
companion (whichever is alive), connections listed by the KubeMQ list and the gauge.

At the end, churn stopped and settled:
- the KubeMQ list is exactly the steady clients, each with its 2 subscriptions, once;
  `kubemq_mqtt_connections` equals their number;
- the offline sessions ListConnections lists are exactly the pool ids whose last accepted
  connection was persistent, each with its one subscription, and their number is what the
  broker itself counts (`$SYS/broker/clients/disconnected`); `kubemq_mqtt_subscriptions` is
  2 per steady client plus 1 per session;
- the counters moved by exactly what the churners did: connects, refused connects,
  disconnects by reason;
- each of those sessions is then ended (the id connects with a clean session and disconnects),
  and none is left, in the list or in the broker's count;
- the resident memory of the broker and of the companion grew by less than `--rss-growth-mib`
  from the sample after the warm-up (the first minute, or the first third of a shorter run) to
  the last (for the companion: the original one up to its kill, and its successor at the end,
  both against the original's warm-up sample, since the new one holds the same state).

`--plain` runs the churn alone against plain Mosquitto and checks only its memory: what the
broker does by itself (with `--resubscribe`, Mosquitto 2.0.11 grows; docs/benchmarks.md).

Exits 1 with the failed checks listed. Every loop is bounded in count and time; processes are
stopped by their own PIDs; everything talks to 127.0.0.1.
"""

import argparse
import json
import multiprocessing
import os
import random
import re
import selectors
import signal
import socket
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
import brokers  # noqa: E402
import mqtt_load  # noqa: E402

LIST_CONNECTIONS = "/mqtt.connections.v1.ConnectionsService/ListConnections"
CONNECT_HEADERS = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
USER, PASSWORD, WRONG_PASSWORD = "soak", "soak-secret", "not-the-password"
SAMPLE_EVERY = 10.0
SESSION_EXPIRY = 3600  # MQTT 5 persistent churners

# Churner statistics, one shared array per process (that process the only writer).
STARTED, ACCEPTED, REFUSED, ENDED_DISCONNECT, ENDED_DROP, ERRORS = range(6)
STAT_FIELDS = 6
# Hammer statistics.
H_OK, H_UNAVAILABLE, H_FAILED = range(3)


# --- HTTP -----------------------------------------------------------------------------------
def http_request(port, path, body=None, timeout=30):
    """(status, body bytes): a GET, or a Connect POST when body is given."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                     data=None if body is None else body.encode(),
                                     headers=CONNECT_HEADERS if body is not None else {},
                                     method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def metrics(port):
    """{series text: value} of /metrics."""
    status, text = http_request(port, "/metrics")
    if status != 200:
        raise RuntimeError(f"/metrics: HTTP {status}")
    values = {}
    for line in text.decode().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return values


def kubemq_list(port):
    status, body = http_request(port, "/api/mqtt/connections")
    if status != 200:
        raise RuntimeError(f"/api/mqtt/connections: HTTP {status}")
    return json.loads(body)["data"]["connections"]


def list_connections(port, filter_text, page_size=1000, max_pages=1000):
    """Every match of ListConnections, page after page."""
    out = []
    token = ""
    for _ in range(max_pages):
        request = {"filter": filter_text, "pageSize": page_size}
        if token:
            request["pageToken"] = token
        status, body = http_request(port, LIST_CONNECTIONS, json.dumps(request))
        if status != 200:
            raise RuntimeError(f"ListConnections {request}: HTTP {status} {body[:200]!r}")
        page = json.loads(body)
        out += page.get("connections", [])
        token = page.get("nextPageToken", "")
        if not token:
            return out
    raise RuntimeError(f"ListConnections: more than {max_pages} pages")


def cpu_seconds(pid):
    """User + system CPU time of a process so far."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return int(re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M).group(1))
    except (OSError, AttributeError):
        return None


# --- MQTT packets -----------------------------------------------------------------------------
def take_packet(buffer):
    """(packet type byte, body) of the first whole packet in `buffer`, removing it; None while
    incomplete."""
    length = 0
    shift = 0
    for i in range(1, 5):
        if i >= len(buffer):
            return None
        byte = buffer[i]
        length |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            start = i + 1
            if len(buffer) < start + length:
                return None
            packet = (buffer[0], bytes(buffer[start:start + length]))
            del buffer[:start + length]
            return packet
    raise ValueError("bad remaining length")


def connack_code(version, body):
    return body[1]  # 3.1.1: return code; 5: reason code (both after the ack flags)


def suback_codes(version, body):
    if version == 5:
        offset = 2
        props = 0
        shift = 0
        while True:  # property length, a variable byte integer
            byte = body[offset]
            offset += 1
            props |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        return list(body[offset + props:])
    return list(body[2:])


# --- churners -------------------------------------------------------------------------------
class Churn:
    """One churn connection's plan and progress."""
    __slots__ = ("client_id", "version", "persistent", "good", "end", "sock", "out", "inbuf",
                 "stage", "deadline", "pool_index", "subscribe")


def churn_process(port, index, seconds, rate, in_flight, pool, stats, pipe, seed,
                  wrong_share=0.25, persistent_share=0.5, versions=(4, 5), resubscribe=False):
    """Runs churn connections for `seconds`, at most `rate` a second (0: no limit), with at most
    `in_flight` at once. Sends back {"sessions": [...], "errors": [...]}: the pool ids that hold
    a session at the end (their last accepted connection was persistent).

    An accepted connection subscribes once its CONNACK says that its session is new, as a client
    that keeps a session does; `resubscribe` sends the SUBSCRIBE with the CONNECT instead, every
    time (Mosquitto 2.0.11 itself then grows: docs/benchmarks.md, "Soak")."""
    rng = random.Random(seed)
    selector = selectors.DefaultSelector()
    active = {}
    has_session = [False] * pool
    busy = [False] * pool
    free_at = [0.0] * pool  # an id is reused only once its previous socket is long closed
    next_pool = 0
    errors = []
    started = 0
    start = time.monotonic()
    stop = start + seconds
    hard_stop = stop + 30  # in-flight ones get 30 s more, then count as errors

    def error(c, what):
        stats[ERRORS] += 1
        if len(errors) < 20:
            errors.append(f"{c.client_id} (v{c.version}, "
                          f"{'persistent' if c.persistent else 'clean'}, "
                          f"{'good' if c.good else 'wrong'} password): {what}")
        finish(c, abort=True)

    def finish(c, abort=False):
        try:
            selector.unregister(c.sock)
        except (KeyError, ValueError):
            pass
        if abort or c.end == "reset":
            try:
                c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00"
                                  b"\x00\x00\x00\x00")
            except OSError:
                pass
        c.sock.close()
        del active[c.sock]
        if c.pool_index is not None:
            busy[c.pool_index] = False
            free_at[c.pool_index] = time.monotonic() + 0.5

    def launch(now):
        nonlocal next_pool, started
        c = Churn()
        c.version = rng.choice(versions)
        c.good = rng.random() >= wrong_share
        c.persistent = rng.random() < persistent_share
        c.end = rng.choice(("disconnect", "disconnect", "close", "reset"))
        c.pool_index = None
        if c.good:
            for _ in range(pool):  # the next id not in use, and not in use a moment ago
                i = next_pool
                next_pool = (next_pool + 1) % pool
                if not busy[i] and free_at[i] <= now:
                    c.pool_index = i
                    break
            if c.pool_index is None:
                return False
            busy[c.pool_index] = True
            c.client_id = f"churn-{index}-{c.pool_index:05d}"
        else:
            c.client_id = f"refused-{index}-{started % 1000:03d}"
        c.out = mqtt_load.connect_packet(
            c.client_id, keepalive=60, username=USER,
            password=PASSWORD if c.good else WRONG_PASSWORD, version=c.version,
            clean=not c.persistent, session_expiry=SESSION_EXPIRY if (
                c.persistent and c.version == 5) else 0)
        c.subscribe = mqtt_load.subscribe_packet(1, [f"events/churn/{c.client_id}"], qos=1,
                                                 version=c.version)
        if c.good and resubscribe:
            c.out += c.subscribe
        c.inbuf = bytearray()
        c.stage = "connack"
        c.deadline = now + 20
        c.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        c.sock.setblocking(False)
        c.sock.connect_ex(("127.0.0.1", port))
        active[c.sock] = c
        selector.register(c.sock, selectors.EVENT_WRITE)
        started += 1
        stats[STARTED] += 1
        return True

    def on_readable(c):
        try:
            data = c.sock.recv(4096)
        except OSError as e:
            return error(c, f"recv: {e}")
        if not data:
            if c.stage == "eof":
                return finish(c)
            return error(c, f"closed by the broker at {c.stage}")
        c.inbuf += data
        while True:
            try:
                packet = take_packet(c.inbuf)
            except ValueError as e:
                return error(c, str(e))
            if packet is None:
                return None
            kind, body = packet
            if c.stage == "connack":
                if kind != 0x20:
                    return error(c, f"packet 0x{kind:02x} instead of CONNACK")
                code = connack_code(c.version, body)
                if not c.good:
                    if code == 0:
                        return error(c, "accepted with a wrong password")
                    stats[REFUSED] += 1
                    c.stage = "eof"  # the broker closes a refused connection
                    continue
                if code != 0:
                    return error(c, f"refused with code {code}")
                stats[ACCEPTED] += 1
                has_session[c.pool_index] = c.persistent
                c.stage = "suback"
                session_present = body[0] & 1
                if session_present and not c.persistent:
                    return error(c, "a clean connection found a session")
                if resubscribe:
                    continue
                if not session_present:
                    c.out = c.subscribe
                    selector.modify(c.sock, selectors.EVENT_WRITE)
                    return None
                c.subscribe = None  # resumed: the session has its subscription
            if c.stage == "suback":
                if c.subscribe is not None:
                    if kind != 0x90:
                        return error(c, f"packet 0x{kind:02x} instead of SUBACK")
                    if any(code >= 0x80 for code in suback_codes(c.version, body)):
                        return error(c, f"subscription refused: {body!r}")
                # Everything the broker sent is read, so closing sends FIN, not RST (unless
                # the plan is a reset).
                if c.end == "disconnect":
                    try:
                        c.sock.send(b"\xe0\x00")
                    except OSError as e:
                        return error(c, f"DISCONNECT: {e}")
                    stats[ENDED_DISCONNECT] += 1
                else:
                    stats[ENDED_DROP] += 1
                return finish(c)
            elif c.stage == "eof":
                return error(c, f"packet 0x{kind:02x} after the refusal")

    def on_writable(c):
        try:
            sent = c.sock.send(c.out)
        except OSError as e:
            return error(c, f"send: {e}")
        c.out = c.out[sent:]
        if not c.out:
            selector.modify(c.sock, selectors.EVENT_READ)

    try:
        last_sweep = start
        while True:
            now = time.monotonic()
            if now >= hard_stop:
                for c in list(active.values()):
                    error(c, f"still at {c.stage} 30 s after the end")
                break
            if now < stop:
                allowed = (now - start) * rate if rate else float("inf")
                while len(active) < in_flight and started < allowed:
                    if not launch(now):
                        break
            elif not active:
                break
            for key, events in selector.select(timeout=0.05):
                c = active.get(key.fileobj)
                if c is None:
                    continue
                if events & selectors.EVENT_WRITE:
                    on_writable(c)
                else:
                    on_readable(c)
            if now - last_sweep > 1.0:
                last_sweep = now
                for c in list(active.values()):
                    if now > c.deadline:
                        error(c, f"no answer within 20 s at {c.stage}")
    finally:
        for c in list(active.values()):
            c.sock.close()
        selector.close()
        sessions = [f"churn-{index}-{i:05d}" for i in range(pool) if has_session[i]]
        pipe.send({"sessions": sessions, "errors": errors})
        pipe.close()


# --- API hammer ---------------------------------------------------------------------------------
def hammer_process(port, seconds, stats):
    """The full KubeMQ list, every page of ListConnections (500 a page), /metrics, round and
    round until `seconds` pass. Refused or reset connections are the companion restarting."""
    deadline = time.monotonic() + seconds
    turn = 0
    while time.monotonic() < deadline:
        try:
            if turn % 3 == 0:
                status, _ = http_request(port, "/api/mqtt/connections", timeout=30)
                stats[H_OK if status == 200 else H_FAILED] += 1
            elif turn % 3 == 1:
                token = ""
                for _ in range(200):
                    request = {"pageSize": 500}
                    if token:
                        request["pageToken"] = token
                    status, body = http_request(port, LIST_CONNECTIONS, json.dumps(request),
                                                timeout=30)
                    if status != 200:
                        stats[H_FAILED] += 1
                        break
                    stats[H_OK] += 1
                    token = json.loads(body).get("nextPageToken", "")
                    if not token:
                        break
            else:
                status, _ = http_request(port, "/metrics", timeout=30)
                stats[H_OK if status == 200 else H_FAILED] += 1
        except (OSError, ValueError):
            stats[H_UNAVAILABLE] += 1
            time.sleep(0.02)
        turn += 1


# --- the broker's own count ---------------------------------------------------------------------
def sys_clients(port, timeout=10):
    """(connected, disconnected) as the broker publishes them in $SYS (retained, every
    sys_interval of 1 s): contexts with a socket (this reader among them), and without.

    Mosquitto 2.0 counts "disconnected" as all contexts by client id minus all by socket, so a
    socket whose CONNECT is not handled yet (this reader's own, a moment ago) makes it one less:
    the reader subscribes only after two intervals, when the count retained includes it whole."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        sock.sendall(mqtt_load.connect_packet("soak-sys-reader", username=USER,
                                              password=PASSWORD))
        mqtt_load.read_exactly(sock, 4, "the broker closed the $SYS reader at CONNECT")
        time.sleep(2.2)
        sock.sendall(mqtt_load.subscribe_packet(1, ["$SYS/broker/clients/connected",
                                                    "$SYS/broker/clients/disconnected"]))
        buffer = bytearray()
        values = {}
        deadline = time.monotonic() + timeout
        while len(values) < 2:
            if time.monotonic() > deadline:
                raise RuntimeError(f"$SYS/broker/clients: only {values} in {timeout} s")
            data = sock.recv(4096)
            if not data:
                raise RuntimeError("the broker closed the $SYS reader")
            buffer += data
            while True:
                packet = take_packet(buffer)
                if packet is None:
                    break
                kind, body = packet
                if kind & 0xF0 == 0x30:
                    topic_length = int.from_bytes(body[:2], "big")
                    topic = body[2:2 + topic_length].decode()
                    offset = 2 + topic_length + (2 if kind & 0x06 else 0)
                    values[topic.rsplit("/", 1)[1]] = int(body[offset:])
        sock.sendall(b"\xe0\x00")
        return values["connected"], values["disconnected"]
    finally:
        sock.close()


def end_sessions(port, client_ids, timeout=120):
    """Each id connects with a clean session and sends DISCONNECT: its session ends."""
    deadline = time.monotonic() + timeout
    for start in range(0, len(client_ids), 50):
        socks = []
        try:
            for client_id in client_ids[start:start + 50]:
                sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                socks.append(sock)
                sock.sendall(mqtt_load.connect_packet(client_id, username=USER,
                                                      password=PASSWORD))
            for sock in socks:
                connack = mqtt_load.read_exactly(
                    sock, 4, "the broker closed a session's ending connection")
                if connack[3] != 0:
                    raise RuntimeError(f"clean reconnect refused: {connack!r}")
                sock.sendall(b"\xe0\x00")
        finally:
            for sock in socks:
                sock.close()
        if time.monotonic() > deadline:
            raise RuntimeError(f"ending {len(client_ids)} sessions took over {timeout} s")


# --- the run --------------------------------------------------------------------------------
class Soak:
    def __init__(self, args, harness):
        self.args = args
        self.harness = harness
        self.failures = []
        self.samples = []  # (elapsed, broker kib, companion kib, companion pid)
        self.hammer = None

    def check(self, ok, what):
        print(f"  {'ok  ' if ok else 'FAIL'} {what}", flush=True)
        if not ok:
            self.failures.append(what)

    def companion_pid(self, broker, old=None, timeout=30):
        """The broker's companion: its child process named so, other than `old`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pids = [p for p in broker.companion_pids() if p != old]
            if len(pids) == 1:
                return pids[0]
            time.sleep(0.05)
        raise RuntimeError(f"no single companion of broker {broker.process.pid} in {timeout} s")

    def run(self):
        args = self.args
        harness = self.harness
        seconds = args.minutes * 60
        warmup = min(60.0, seconds / 3)
        kill_at = seconds / 2
        passwd = harness.passwd_users({USER: PASSWORD})
        broker = harness.Broker(
            plugin=True, persistence=True, allow_anonymous=False,
            extra="password_file {dir}/passwd\nsys_interval 1\nmax_queued_messages 100",
            files={"passwd": passwd}, log_types=("error", "warning", "notice"))
        broker.start()
        # The broker logs every connect and disconnect at "notice", which a 30-minute run would
        # turn into a gigabyte: once the plugin's start line is read, the first reload drops it.
        with open(broker.config) as f:
            config = f.read()
        with open(broker.config, "w") as f:
            f.write(config.replace("log_type notice\n", ""))
        context = multiprocessing.get_context("spawn")
        churners = []
        try:
            self.soak(broker, context, churners, seconds, warmup, kill_at)
        finally:
            for process, _, _ in churners:
                if process.is_alive():
                    process.kill()
                    process.join(timeout=10)
            if self.hammer is not None and self.hammer.is_alive():
                self.hammer.kill()
                self.hammer.join(timeout=10)
            broker.stop()
            if self.failures and args.keep:
                print(f"broker folder kept: {broker.dir}")
            else:
                broker.cleanup_dir()
        return not self.failures

    def soak(self, broker, context, churners, seconds, warmup, kill_at):
        args = self.args
        port, http_port = broker.port, broker.http_port
        broker_pid = broker.process.pid
        companion = self.companion_pid(broker)
        opened = time.monotonic()
        steady = mqtt_load.IdleClients(port, args.steady, prefix="steady", username=USER,
                                       password=PASSWORD).open()
        try:
            print(f"{args.steady} steady connections open in {time.monotonic() - opened:.1f} s "
                  f"(broker {broker_pid}, companion {companion}, MQTT {port}, HTTP {http_port})",
                  flush=True)
            self.harness.wait_for(lambda: metrics(http_port).get("kubemq_mqtt_connections") ==
                                  args.steady, timeout=60, interval=0.2,
                                  what=f"{args.steady} connections in /metrics")
            before = metrics(http_port)
            hammer_stats = context.Array("q", 3, lock=False)
            self.hammer = context.Process(target=hammer_process,
                                          args=(http_port, seconds, hammer_stats))
            self.hammer.start()
            per_proc_rate = args.churn_rate / args.churn_procs
            pool = args.session_pool // args.churn_procs
            for i in range(args.churn_procs):
                stats = context.Array("q", STAT_FIELDS, lock=False)
                parent, child = context.Pipe(duplex=False)
                process = context.Process(target=churn_process, args=(
                    port, i, seconds, per_proc_rate, args.in_flight, pool, stats, child,
                    args.seed + i, 0.25, 0.5, (4, 5), args.resubscribe))
                process.start()
                child.close()
                churners.append((process, stats, parent))
            started = time.monotonic()
            broker_cpu = cpu_seconds(broker_pid)
            print(f"{'elapsed':>8} {'churn/s':>8} {'churned':>9} {'refused':>8} "
                  f"{'api req':>8} {'api down':>8} {'broker MiB':>10} {'compan. MiB':>11} "
                  f"{'listed':>7} {'gauge':>6}", flush=True)
            next_hup = started + args.hup_every
            next_sample = started + SAMPLE_EVERY
            killed = None
            hups = 0
            last_churned = 0
            last_sample_time = started
            while True:
                now = time.monotonic()
                elapsed = now - started
                if elapsed >= seconds + 60:
                    raise RuntimeError("the churners did not finish within 60 s of the end")
                if broker.process.poll() is not None:
                    raise RuntimeError(f"the broker exited (code {broker.process.returncode}) "
                                       f"at {elapsed:.0f} s; its log ends:\n"
                                       f"{broker.log()[-3000:]}")
                if now >= next_hup and elapsed < seconds:
                    os.kill(broker_pid, signal.SIGHUP)
                    hups += 1
                    next_hup += args.hup_every
                if killed is None and elapsed >= kill_at:
                    old = companion
                    os.kill(old, signal.SIGKILL)
                    killed = (elapsed, old, self.samples[-1] if self.samples else None)
                    companion = self.companion_pid(broker, old=old)
                    print(f"{elapsed:8.0f} companion {old} killed; the plugin started {companion}",
                          flush=True)
                if now >= next_sample:
                    next_sample += SAMPLE_EVERY
                    totals = self.churn_totals(churners)
                    churned = totals[ACCEPTED] + totals[REFUSED]
                    rate = (churned - last_churned) / (now - last_sample_time)
                    last_churned, last_sample_time = churned, now
                    broker_kib, companion_kib = rss_kib(broker_pid), rss_kib(companion)
                    self.samples.append((elapsed, broker_kib, companion_kib, companion))
                    try:
                        listed = len(kubemq_list(http_port))
                        gauge = int(metrics(http_port).get("kubemq_mqtt_connections", -1))
                    except (OSError, RuntimeError, ValueError):
                        listed = gauge = "-"
                    print(f"{elapsed:7.0f}s {rate:8.0f} {churned:9d} {totals[REFUSED]:8d} "
                          f"{hammer_stats[H_OK]:8d} {hammer_stats[H_UNAVAILABLE]:8d} "
                          f"{(broker_kib or 0) / 1024:10.1f} {(companion_kib or 0) / 1024:11.1f} "
                          f"{listed:>7} {gauge:>6}", flush=True)
                if elapsed >= seconds and not any(p.is_alive() for p, _, _ in churners):
                    break
                time.sleep(0.05)
            churn_seconds = time.monotonic() - started
            broker_cpu = cpu_seconds(broker_pid) - broker_cpu
            results = []
            for process, _, pipe in churners:
                if not pipe.poll(30):
                    raise RuntimeError(f"churn process {process.pid} sent no result")
                results.append(pipe.recv())
                process.join(timeout=30)
            self.hammer.join(timeout=max(1, seconds + 60 - (time.monotonic() - started)))
            totals = self.churn_totals(churners)
            print(f"\nbroker CPU during the churn: {broker_cpu:.1f} s of {churn_seconds:.0f} s, "
                  f"{broker_cpu * 1e6 / max(1, totals[ACCEPTED] + totals[REFUSED]):.0f} µs a "
                  f"churned connection (all its work included); load average "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
            self.verify(broker, before, totals, results, hammer_stats, hups, killed, warmup,
                        churn_seconds)
        finally:
            steady.close()

    @staticmethod
    def churn_totals(churners):
        return [sum(stats[i] for _, stats, _ in churners) for i in range(STAT_FIELDS)]

    def verify(self, broker, before, totals, results, hammer_stats, hups, killed, warmup,
               churn_seconds):
        args = self.args
        http_port = broker.http_port
        churned = totals[ACCEPTED] + totals[REFUSED]
        print(f"churn: {churned} connections in {churn_seconds:.0f} s "
              f"({churned / churn_seconds:.0f}/s): {totals[ACCEPTED]} accepted "
              f"({totals[ENDED_DISCONNECT]} ended with DISCONNECT, {totals[ENDED_DROP]} dropped), "
              f"{totals[REFUSED]} refused, {totals[ERRORS]} errors", flush=True)
        print(f"API: {hammer_stats[H_OK]} requests answered, {hammer_stats[H_FAILED]} failed, "
              f"{hammer_stats[H_UNAVAILABLE]} unanswered (companion restarting); {hups} SIGHUPs; "
              + (f"companion killed at {killed[0]:.0f} s" if killed else "companion not killed"),
              flush=True)
        print("checks, churn stopped:", flush=True)
        self.check(totals[ERRORS] == 0, f"no churner saw anything unexpected "
                   f"({totals[ERRORS]} did" + (": " + "; ".join(
                       e for r in results for e in r["errors"][:5]) if totals[ERRORS] else "")
                   + ")")
        self.check(hammer_stats[H_FAILED] == 0,
                   f"no API request failed ({hammer_stats[H_FAILED]} did)")
        self.check(killed is not None, "the companion was killed once and replaced")
        expected = {f"steady-{i:06d}": sorted([f"events/steady/{i}", f"queues/steady.{i}"])
                    for i in range(args.steady)}
        sessions = sorted(s for r in results for s in r["sessions"])

        def settled():
            try:
                listed = kubemq_list(http_port)
                gauge = metrics(http_port).get("kubemq_mqtt_connections")
            except (OSError, RuntimeError, ValueError):
                return False
            return len(listed) == args.steady and gauge == args.steady

        try:
            self.harness.wait_for(settled, timeout=60, interval=0.5, what="the list to settle")
        except AssertionError as e:
            print(f"  {e}")
        listed = kubemq_list(http_port)
        ids = [c["client_id"] for c in listed]
        got = {c["client_id"]: sorted(s["filter"] for s in c["subscriptions"]) for c in listed}
        self.check(len(ids) == len(set(ids)), f"no client listed twice ({len(ids) - len(set(ids))}"
                   " were)")
        missing = sorted(set(expected) - set(got))[:5]
        extra = sorted(set(got) - set(expected))[:5]
        other = [k for k in got if k in expected and got[k] != expected[k]][:5]
        self.check(got == expected, f"the KubeMQ list is exactly the {args.steady} steady clients "
                   f"with their 2 subscriptions ({len(listed)} listed; missing {missing}, extra "
                   f"{extra}, other subscriptions {other})")
        after = metrics(http_port)
        self.check(after.get("kubemq_mqtt_connections") == args.steady,
                   f"kubemq_mqtt_connections = {after.get('kubemq_mqtt_connections')}, "
                   f"expected {args.steady}")

        def offline():
            return list_connections(http_port, "state = MQTT_CONNECTION_STATE_OFFLINE")
        try:
            self.harness.wait_for(lambda: len(offline()) == len(sessions), timeout=30,
                                  interval=0.5, what="the offline sessions to settle")
        except AssertionError as e:
            print(f"  {e}")
        listed_offline = offline()
        offline_ids = sorted(c["clientId"] for c in listed_offline)
        self.check(offline_ids == sessions,
                   f"the offline sessions listed are exactly the {len(sessions)} pool ids whose "
                   f"last connection was persistent ({len(offline_ids)} listed; missing "
                   f"{sorted(set(sessions) - set(offline_ids))[:5]}, extra "
                   f"{sorted(set(offline_ids) - set(sessions))[:5]})")
        wrong = [c["clientId"] for c in listed_offline
                 if [s["filter"] for s in c.get("subscriptions", [])] !=
                 [f"events/churn/{c['clientId']}"]]
        self.check(not wrong, f"each offline session has its one subscription ({len(wrong)} "
                   f"have not: {wrong[:5]})")
        connected, disconnected = sys_clients(broker.port)
        self.check(connected == args.steady + 1 and disconnected == len(sessions),
                   f"the broker itself counts {connected} connected (expected {args.steady} "
                   f"and the $SYS reader) and {disconnected} offline (expected "
                   f"{len(sessions)})")
        subscriptions = sum(v for k, v in after.items()
                            if k.startswith("kubemq_mqtt_subscriptions"))
        self.check(subscriptions == 2 * args.steady + len(sessions),
                   f"kubemq_mqtt_subscriptions = {subscriptions:.0f}, expected "
                   f"{2 * args.steady + len(sessions)}")

        def delta(name):
            return after.get(name, 0) - before.get(name, 0)
        disconnects = sum(delta(k) for k in set(after) | set(before)
                          if k.startswith("kubemq_mqtt_disconnects_total"))
        moved = {
            "connects": (delta("kubemq_mqtt_connects_total"), totals[ACCEPTED]),
            "refused connects": (delta("kubemq_mqtt_connects_refused_total"), totals[REFUSED]),
            "disconnects, all reasons": (disconnects, totals[ACCEPTED]),
        }
        # Brokers that hide the client's DISCONNECT from a plugin count every close as one
        # reason (integration/harness.py, KNOWS_CLOSE_REASONS).
        if self.harness.KNOWS_CLOSE_REASONS:
            moved["client_disconnect"] = (
                delta('kubemq_mqtt_disconnects_total{reason="client_disconnect"}'),
                totals[ENDED_DISCONNECT])
            moved["connection_lost"] = (
                delta('kubemq_mqtt_disconnects_total{reason="connection_lost"}'),
                totals[ENDED_DROP])
        for name, (got_delta, did) in moved.items():
            self.check(got_delta == did, f"{name}: the counter moved by {got_delta:.0f}, the "
                       f"churners did {did}")

        print(f"ending the {len(sessions)} offline sessions:", flush=True)
        end_sessions(broker.port, sessions)
        try:
            self.harness.wait_for(lambda: not offline(), timeout=30, interval=0.5,
                                  what="no offline session listed")
        except AssertionError as e:
            print(f"  {e}")
        left = offline()
        self.check(not left, f"no offline session is listed ({len(left)} are)")
        connected, disconnected = sys_clients(broker.port)
        self.check(connected == args.steady + 1 and disconnected == 0,
                   f"the broker counts {connected} connected (expected {args.steady} and the "
                   f"$SYS reader) and {disconnected} offline sessions (expected 0)")
        try:
            self.harness.wait_for(settled, timeout=30, interval=0.5, what="the list to settle")
        except AssertionError as e:
            print(f"  {e}")
        final = kubemq_list(http_port)
        self.check(sorted(c["client_id"] for c in final) == sorted(expected),
                   f"the KubeMQ list is still exactly the {args.steady} steady clients "
                   f"({len(final)} listed)")
        gauge = metrics(http_port).get("kubemq_mqtt_connections")
        self.check(gauge == args.steady, f"kubemq_mqtt_connections = {gauge}, expected "
                   f"{args.steady}")
        self.rss_checks(warmup, killed)

    def rss_checks(self, warmup, killed):
        limit = self.args.rss_growth_mib * 1024
        samples = [s for s in self.samples if s[1] is not None]
        base = next((s for s in samples if s[0] >= warmup), None)
        if base is None or len(samples) < 2:
            self.check(False, f"resident memory: too few samples ({len(samples)})")
            return
        last = samples[-1]
        print(f"resident memory (MiB) from {base[0]:.0f} s to {last[0]:.0f} s:", flush=True)
        growth = last[1] - base[1]
        self.check(growth < limit, f"broker {base[1] / 1024:.1f} -> {last[1] / 1024:.1f} "
                   f"(max {max(s[1] for s in samples) / 1024:.1f}), growth "
                   f"{growth / 1024:+.1f} < {self.args.rss_growth_mib}")
        first_companion = [s for s in samples if s[3] == base[3] and s[2] is not None]
        before_kill = first_companion[-1]
        growth = before_kill[2] - base[2]
        self.check(growth < limit, f"companion {base[3]} {base[2] / 1024:.1f} -> "
                   f"{before_kill[2] / 1024:.1f} at {before_kill[0]:.0f} s, before its kill, "
                   f"growth {growth / 1024:+.1f} < {self.args.rss_growth_mib}")
        if last[3] != base[3] and last[2] is not None:
            growth = last[2] - base[2]
            self.check(growth < limit, f"its successor {last[3]} at the end {last[2] / 1024:.1f}, "
                       f"growth over the original's {growth / 1024:+.1f} < "
                       f"{self.args.rss_growth_mib}")


def plain_churn(args, harness):
    """`--plain`: the churn alone against plain Mosquitto (same configuration, no plugin),
    printing the broker's resident memory every 10 s and checking its growth as the soak does:
    what the broker does by itself under this churn."""
    seconds = args.minutes * 60
    warmup = min(60.0, seconds / 3)
    broker = harness.Broker(
        plugin=False, persistence=True, allow_anonymous=False,
        extra="password_file {dir}/passwd\nsys_interval 1\nmax_queued_messages 100",
        files={"passwd": harness.passwd_users({USER: PASSWORD})},
        log_types=("error", "warning"))
    broker.start()
    context = multiprocessing.get_context("spawn")
    churners = []
    try:
        for i in range(args.churn_procs):
            stats = context.Array("q", STAT_FIELDS, lock=False)
            parent, child = context.Pipe(duplex=False)
            process = context.Process(target=churn_process, args=(
                broker.port, i, seconds, args.churn_rate / args.churn_procs, args.in_flight,
                args.session_pool // args.churn_procs, stats, child, args.seed + i, 0.25, 0.5,
                (4, 5), args.resubscribe))
            process.start()
            child.close()
            churners.append((process, stats, parent))
        started = time.monotonic()
        samples = []
        while any(p.is_alive() for p, _, _ in churners):
            if time.monotonic() - started > seconds + 60:
                raise RuntimeError("the churners did not finish within 60 s of the end")
            time.sleep(SAMPLE_EVERY)
            churned = sum(s[ACCEPTED] + s[REFUSED] for _, s, _ in churners)
            samples.append((time.monotonic() - started, rss_kib(broker.process.pid)))
            print(f"{samples[-1][0]:7.0f}s churned {churned:9d} broker "
                  f"{samples[-1][1] / 1024:6.1f} MiB", flush=True)
        errors = sum(s[ERRORS] for _, s, _ in churners)
        for process, _, pipe in churners:
            if pipe.poll(30):
                pipe.recv()
            process.join(timeout=30)
    finally:
        for process, _, _ in churners:
            if process.is_alive():
                process.kill()
                process.join(timeout=10)
        broker.stop()
        broker.cleanup_dir()
    base = next((s for s in samples if s[0] >= warmup), samples[0])
    growth = samples[-1][1] - base[1]
    print(f"plain broker {base[1] / 1024:.1f} -> {samples[-1][1] / 1024:.1f} MiB from "
          f"{base[0]:.0f} s to {samples[-1][0]:.0f} s, growth {growth / 1024:+.1f}; "
          f"{errors} churner errors")
    return errors == 0 and growth < args.rss_growth_mib * 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build_dir")
    parser.add_argument("--minutes", type=float, required=True)
    brokers.add_argument(parser)
    parser.add_argument("--steady", type=int, default=1000)
    parser.add_argument("--churn-rate", type=float, default=0,
                        help="churn connections a second in all, 0 for as fast as they go")
    parser.add_argument("--churn-procs", type=int, default=2)
    parser.add_argument("--in-flight", type=int, default=64,
                        help="churn connections in flight per process")
    parser.add_argument("--session-pool", type=int, default=2000,
                        help="client ids of the accepted churners, in all")
    parser.add_argument("--hup-every", type=float, default=3.0)
    parser.add_argument("--rss-growth-mib", type=float, default=8.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--plain", action="store_true",
                        help="only the churn, against plain Mosquitto: its own memory")
    parser.add_argument("--resubscribe", action="store_true",
                        help="persistent churners subscribe again on a resumed session (plain "
                        "Mosquitto 2.0.11 grows then)")
    parser.add_argument("--keep", action="store_true", help="keep the broker folder on failure")
    args = parser.parse_args()
    if args.minutes <= 0 or args.steady < 1 or args.churn_procs < 1 or args.hup_every <= 0:
        sys.exit("--minutes, --steady, --churn-procs and --hup-every must be positive")
    build = os.path.abspath(args.build_dir)
    os.environ["MQC_BROKER"] = args.broker
    os.environ["MQC_BUILD_DIR"] = build
    os.environ["MQC_PLUGIN"] = os.path.join(build, "mosquitto_connections.so")
    os.environ["MQC_COMPANION"] = os.path.join(build, "mosquitto_connections_companion")
    for built in (os.environ["MQC_PLUGIN"], os.environ["MQC_COMPANION"]):
        if not os.path.exists(built):
            sys.exit(f"{built} is missing: build {build} first")
    import harness  # after MQC_BROKER: it picks the broker at import
    limit = mqtt_load.raise_file_limit()
    if args.steady + args.churn_procs * args.in_flight + 1000 > limit:
        sys.exit(f"--steady {args.steady} needs more open files than the limit of {limit}")
    print(f"soak: {args.minutes:g} min on broker {harness.BROKER_NAME} "
          f"{'.'.join(map(str, harness.BROKER_VERSION))}, "
          + ("plain (no plugin), churn only, " if args.plain else f"{args.steady} steady "
             "clients, ") + "churn "
          + ("re-subscribing on resume, " if args.resubscribe else "") +
          f"{'unlimited' if not args.churn_rate else f'{args.churn_rate:g}/s'} from "
          f"{args.churn_procs} processes, "
          + ("" if args.plain else f"SIGHUP every {args.hup_every:g} s, ") +
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    if args.plain:
        ok = plain_churn(args, harness)
        print("\nplain churn " + ("flat" if ok else "FAILED: growth or churner errors"))
        sys.exit(0 if ok else 1)
    soak = Soak(args, harness)
    try:
        ok = soak.run()
    except (RuntimeError, AssertionError, OSError, ValueError) as e:
        soak.failures.append(f"the soak stopped: {type(e).__name__}: {e}")
        ok = False
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    if not ok:
        print("\nSOAK FAILED:\n- " + "\n- ".join(soak.failures), flush=True)
        sys.exit(1)
    print("\nsoak passed", flush=True)


if __name__ == "__main__":
    main()
