# SPDX-License-Identifier: BSD-3-Clause
"""Runs the real Mosquitto broker with the built plugin, for the integration tests.

Which broker: MQC_BROKER names one of the builds in MQC_BUILD_DIR/brokers/brokers.json (made by
scripts/prepare-brokers.py; integration/brokers.py reads it), `system` (Debian 12's
/usr/sbin/mosquitto) by default. BROKER_NAME, BROKER_VERSION (a tuple), PLUGIN_DIR (the folder of
that broker's own plugins, see broker_plugin()), MOSQUITTO_PASSWD and MOSQUITTO_CTRL (tools that
make files that broker reads; run them with broker_tool()) say which it is. Which suites cannot
apply to which broker is said once, in integration/broker_matrix.py.

Every broker gets a fresh folder (mode 0755, since the broker drops to user `mosquitto` when
started as root) holding a copy of the plugin and the companion, a generated mosquitto.conf, and
its log. Ports are free loopback ports; everything talks to 127.0.0.1 only. Processes are
stopped by their own PIDs, and every wait is bounded.
"""

import fcntl
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

import paho.mqtt.client as mqtt

import broker_matrix
import brokers

PLUGIN = os.environ.get("MQC_PLUGIN", "")
COMPANION = os.environ.get("MQC_COMPANION", "")
SANITIZE = os.environ.get("MQC_SANITIZE", "")  # the plugin's
# The companion's sanitizers (a TSan build runs a TSan companion behind a plain plugin).
COMPANION_SANITIZE = os.environ.get("MQC_COMPANION_SANITIZE", "")


def use_build(build_dir):
    """Runs the plugin and companion of build_dir (the benchmarks' way; tests use MQC_PLUGIN)."""
    global PLUGIN, COMPANION
    PLUGIN = os.path.join(build_dir, "mosquitto_connections.so")
    COMPANION = os.path.join(build_dir, "mosquitto_connections_companion")


BROKER = brokers.load(os.environ.get("MQC_BROKER") or brokers.SYSTEM,
                      os.environ.get("MQC_BUILD_DIR", ""))
BROKER_NAME = BROKER.name
BROKER_VERSION = BROKER.version_tuple
MOSQUITTO = BROKER.mosquitto
PLUGIN_DIR = BROKER.plugin_dir
MOSQUITTO_PASSWD = BROKER.passwd
MOSQUITTO_CTRL = BROKER.ctrl


# Whether the API tells a client's own DISCONNECT (CLIENT_DISCONNECT) from a dropped socket
# (CONNECTION_LOST) on this broker: 2.1 passes the reason, and 2.0 only through its internal
# mosquitto__get_state, which builds from 2.0.19 on hide (README, "Supported brokers").
KNOWS_CLOSE_REASONS = BROKER_VERSION >= (2, 1, 0) or BROKER.exports("mosquitto__get_state")


def close_reason(reason):
    """CLIENT_DISCONNECT or CONNECTION_LOST as the API shows it on this broker."""
    return reason if KNOWS_CLOSE_REASONS else "CLOSE_REASON_UNSPECIFIED"


def hides_acl_answers(broker):
    """Whether the plugin in this running broker cannot learn what an ACL plugin after it
    answers (a 2.0 build hiding mosquitto_acl_check, with such a plugin; the start line says so,
    README's broker table): what that plugin refuses is then counted all the same."""
    log = broker.log()
    return ("does not export mosquitto_acl_check" in log or
            "cannot read the broker's ACL_CHECK callbacks" in log)


def broker_plugin(file_name):
    """The path of one of the broker's own plugins ("mosquitto_dynamic_security.so")."""
    return BROKER.plugin(file_name)


def broker_tool(command, **kwargs):
    """subprocess.run of one of the broker's tools (MOSQUITTO_PASSWD, MOSQUITTO_CTRL), with the
    library path that broker's build needs."""
    kwargs.setdefault("timeout", 30)
    return subprocess.run(command, env=BROKER.environment(), **kwargs)


def _tests(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _tests(item)
        else:
            yield item


def apply_broker_matrix(suite):
    """Marks every test of `suite` that integration/broker_matrix.py rules out for BROKER as
    skipped, with its reason: a whole class (so that its setUpClass starts no broker) or one
    test. Returns (skipped, total)."""
    skipped = total = 0
    for test in _tests(suite):
        total += 1
        reason = broker_matrix.skip_reason(test.id(), BROKER)
        if reason is None:
            continue
        skipped += 1
        cls = type(test)
        class_reason = broker_matrix.skip_reason(f"{cls.__module__}.{cls.__qualname__}", BROKER)
        if class_reason is not None:
            cls.__unittest_skip__ = True
            cls.__unittest_skip_why__ = class_reason
        else:
            method = getattr(test, test._testMethodName)
            setattr(test, test._testMethodName, unittest.skip(reason)(method))
    return skipped, total


def ephemeral_range():
    """The kernel's range for port 0 binds (where the companion's HTTP port comes from)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(v) for v in f.read().split())
            return low, high
    except (OSError, ValueError):
        return 32768, 60999


# Ports this process holds (port -> the open lock file), for its whole life: ctest runs several
# suites at once (scripts/test.sh), each its own process, and a port one of them checked free
# must not be handed to another before its broker binds it. Every process running this harness
# (other build trees' too) takes a lock file for each port it picks; the kernel drops the locks
# when the process ends, however it ends.
PORT_LOCK_DIR = os.path.join(tempfile.gettempdir(), "mqc-it-ports")
_held_ports = {}


def _reserve_port(port):
    """Takes `port`'s lock file unless another process (or this one) holds it."""
    if port in _held_ports:
        return False
    os.makedirs(PORT_LOCK_DIR, exist_ok=True)
    try:
        os.chmod(PORT_LOCK_DIR, 0o1777)
    except OSError:
        pass  # another user's folder: usable all the same
    fd = os.open(os.path.join(PORT_LOCK_DIR, str(port)), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    _held_ports[port] = fd
    return True


def _bindable(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port():
    """A loopback TCP port that was free a moment ago and that no other process running this
    harness can pick while this one lives (its lock file, above), outside the kernel's ephemeral
    range: a companion binding port 0 between this check and the broker's bind can then never
    take it (that race once stopped a broker at start with "Address already in use")."""
    low, high = ephemeral_range()
    candidates = [p for p in range(10000, 30000) if not low <= p <= high]
    for _ in range(200):
        port = random.choice(candidates)
        if not _reserve_port(port):
            continue
        if _bindable(port):
            return port
        os.close(_held_ports.pop(port))  # in use by a process outside the harness
    for _ in range(20):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if _reserve_port(port):
            return port
    raise AssertionError("no free loopback port could be reserved")


def stop_process(process, sig=signal.SIGTERM, timeout=15):
    """Sends `sig` to a process we started and waits `timeout` s for it to exit; then kills
    it."""
    process.send_signal(sig)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


PROMETHEUS_SAMPLE = re.compile(r"^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)$")


def parse_scrape(text):
    """({(name, raw label text): value}, {family: type}) of a Prometheus text exposition; the
    label text is kept as served (quoted and escaped), which is also PromQL's series syntax."""
    samples, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, family, kind = line.split(" ", 3)
            types[family] = kind
        if not line or line.startswith("#"):
            continue
        match = PROMETHEUS_SAMPLE.match(line)
        assert match, f"not a sample line: {line!r}"
        samples[(match.group(1), match.group(2) or "")] = float(match.group(3))
    return samples, types


def wait_for(predicate, timeout=10.0, interval=0.02, what="condition"):
    """Polls `predicate` until it returns a true value; fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def broker_environment(build=None):
    """The broker's environment: its build's library path (`build`, BROKER by default) and,
    since an ASan-built plugin inside the plain broker needs it, the ASan runtime preloaded."""
    env = (build or BROKER).environment()
    if "address" in SANITIZE:
        compiler = os.environ.get("MQC_CXX", "gcc")
        runtime = subprocess.run([compiler, "-print-file-name=libasan.so"], check=True,
                                 capture_output=True, text=True).stdout.strip()
        env["LD_PRELOAD"] = runtime
        # The broker itself is not instrumented: its own allocations are not ours to judge.
        env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=0"
    return env


class Broker:
    """A Mosquitto broker on a free loopback port, with or without the plugin.

    `options` are plugin_opt_ values ({dir} in a value is the broker's folder); `extra` is more
    mosquitto.conf text, placed first; `listener_extra` follows the listener line (its
    per-listener settings); `files` maps file names to contents written into the broker's
    folder first ({dir} in the texts is its path).
    `passwords` ({user: password}) gives the broker a password_file of those users, made at
    start (passwd_users) and named right after `extra`.
    `persistence` turns the broker's persistence on, with its file in {dir}/data/ (writable by
    the broker's user); `restart()` then stops it (it saves the file) and starts it again on
    the same configuration and port.
    `build` is the broker build to run (a brokers.BrokerBuild; BROKER, MQC_BROKER's, by default):
    the benchmarks run several in one process.
    """

    def __init__(self, plugin=True, options=None, extra="", files=None,
                 allow_anonymous=True, plugin_after="", expect_start=True, listener_extra="",
                 log_types=("all",), command_prefix=(), persistence=False, build=None,
                 passwords=None):
        self.build = build or BROKER
        self.plugin = plugin
        self.options = {"http_port": "0"}
        self.options.update(options or {})
        self.extra = extra
        self.files = files or {}
        self.passwords = passwords
        self.allow_anonymous = allow_anonymous
        self.plugin_after = plugin_after
        self.expect_start = expect_start
        self.listener_extra = listener_extra
        self.log_types = log_types
        self.command_prefix = list(command_prefix)  # e.g. valgrind, for the benchmarks
        self.persistence = persistence
        self.launches = 0
        self.dir = None
        self.process = None
        self.port = None
        self.http_port = None
        self.companion_pid = None

    # -- life cycle -------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def config_text(self):
        # `extra` first: options such as per_listener_settings must precede the others.
        lines = [self.extra.replace("{dir}", self.dir)]
        if self.passwords:
            lines.append(f"password_file {self.dir}/passwd")
        lines += [f"listener {self.port} 127.0.0.1",
                  self.listener_extra.replace("{dir}", self.dir)]
        if self.allow_anonymous is not None:
            lines.append(f"allow_anonymous {'true' if self.allow_anonymous else 'false'}")
        if self.plugin:
            lines.append(f"plugin {self.dir}/mosquitto_connections.so")
            for key, value in self.options.items():
                lines.append(f"plugin_opt_{key} {value}".replace("{dir}", self.dir))
        if self.plugin_after:
            lines.append(self.plugin_after.replace("{dir}", self.dir))
        lines.append("log_dest stderr")
        if self.persistence:
            lines += ["persistence true", f"persistence_location {self.persistence_dir}"]
        else:
            lines.append("persistence false")
        lines += [f"log_type {t}" for t in self.log_types]
        return "\n".join(lines) + "\n"

    def start(self):
        assert PLUGIN and COMPANION, "MQC_PLUGIN and MQC_COMPANION must name the built files"
        self.dir = tempfile.mkdtemp(prefix="mqc-it-")
        os.chmod(self.dir, 0o755)
        shutil.copy(PLUGIN, os.path.join(self.dir, "mosquitto_connections.so"))
        shutil.copy(COMPANION, os.path.join(self.dir, "mosquitto_connections_companion"))
        files = dict(self.files)
        if self.passwords:
            files["passwd"] = passwd_users(self.passwords)
        for name, content in files.items():
            path = os.path.join(self.dir, name)
            # A name such as "conf.d/auth.conf" gets its folder (readable by the broker's user).
            folder = os.path.dirname(path)
            if not os.path.isdir(folder):
                os.makedirs(folder)
                os.chmod(folder, 0o755)
            with open(path, "w") as f:
                f.write(content.replace("{dir}", self.dir))
            os.chmod(path, 0o644)
        self.persistence_dir = os.path.join(self.dir, "data")  # may hold `files` already
        os.makedirs(self.persistence_dir, exist_ok=True)
        os.chmod(self.persistence_dir, 0o777)  # the broker saves there as user mosquitto
        self.config = os.path.join(self.dir, "mosquitto.conf")
        # A process outside this harness (another program on the machine) can still bind the
        # port between free_port()'s check and the broker's bind: the broker then exits at once
        # with "Address already in use" and that port bound by someone else. Only then is the
        # start tried again, on another port (at most twice more); any other failure to start,
        # and a port clash the test set up itself (expect_start=False), fails as before.
        for attempt in range(3):
            self.port = free_port()
            with open(self.config, "w") as f:
                f.write(self.config_text())
            os.chmod(self.config, 0o644)
            try:
                self._launch()
                return
            except AssertionError:
                if attempt == 2 or not self._port_taken_at_start():
                    raise

    def _port_taken_at_start(self):
        """Whether the broker just died because another process holds its MQTT port."""
        return (self.process is not None and self.process.poll() is not None
                and "Address already in use" in self.log() and not _bindable(self.port))

    @property
    def persistence_file(self):
        return os.path.join(self.persistence_dir, "mosquitto.db")

    def restart(self, between=None):
        """SIGTERM (the broker saves its persistence file), then the same config and port;
        `between()` runs while the broker is stopped (to alter its persistence file)."""
        self.stop()
        if between is not None:
            between()
        self._launch()

    def _launch(self):
        self.launches += 1
        name = "broker.log" if self.launches == 1 else f"broker-{self.launches}.log"
        self.log_path = os.path.join(self.dir, name)
        self.log_file = open(self.log_path, "wb")
        command = self.command_prefix + [self.build.mosquitto, "-c", self.config]
        self.process = subprocess.Popen(command, stdout=self.log_file,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        env=broker_environment(self.build))
        if not self.expect_start:
            return
        try:
            self._wait_started()
        except BaseException:
            self.stop()  # a broker that did not come up is not left running
            raise

    def _wait_started(self):
        if self.plugin:
            match = wait_for(lambda: self._started() or self._died(), timeout=60,
                             what="the plugin's 'serving on' log line")
            if match == "died":
                raise AssertionError("broker exited at start:\n" + self.log())
            self.http_port = int(match.group(2))
            self.companion_pid = int(match.group(3))
        ready = wait_for(lambda: self._mqtt_ready() or self._died(), timeout=30,
                         what="the MQTT listener")
        if ready == "died":
            raise AssertionError("broker exited at start:\n" + self.log())

    def _started(self):
        return re.search(r"serving on https?://(\S+):(\d+) \(companion pid (\d+)\)", self.log())

    def _died(self):
        return "died" if self.process.poll() is not None else None

    def _mqtt_ready(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return True
        except OSError:
            return False

    def wait_exit(self, timeout=20):
        """For brokers expected to refuse to start: their exit code."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.process.poll()

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            stop_process(self.process)
        if self.process is not None:
            self.log_file.close()
        self.check_crashes()

    def wait_subscribed(self, client_ids, topic, timeout=60.0):
        """Waits until the broker has logged each client's subscription to `topic`: it writes
        that line (log_type subscribe) once the subscription is in place, so this needs no
        plugin and works on a plain broker too."""
        lines = [re.compile(rf" {re.escape(client_id)} \d {re.escape(topic)}$", re.MULTILINE)
                 for client_id in client_ids]
        wait_for(lambda: all(line.search(self.log()) for line in lines),
                 timeout=timeout, what=f"subscriptions to {topic} in the broker's log")

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    # A sanitizer's report, or a companion that crashed: the plugin restarts a crashed companion
    # and logs why, which a test that only reads the API after the restart would not notice.
    CRASH_MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer",
                     "WARNING: ThreadSanitizer", "terminate called",
                     "companion killed by signal 6 ", "companion killed by signal 7 ",
                     "companion killed by signal 8 ", "companion killed by signal 11 ")

    def check_crashes(self):
        text = self.log()
        for marker in self.CRASH_MARKERS:
            if marker in text:
                raise AssertionError(f"{marker!r} in the broker log:\n{text[-6000:]}")

    def cleanup_dir(self):
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def companion_pids(self):
        """PIDs of companions whose parent is this broker."""
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmdline = f.read()
            except OSError:
                continue
            if int(fields[1]) == self.process.pid and b"companion" in cmdline:
                pids.append(int(entry))
        return pids

    def thread_count(self):
        with open(f"/proc/{self.process.pid}/status") as f:
            return int(re.search(r"^Threads:\s+(\d+)", f.read(), re.M).group(1))

    # -- HTTP ---------------------------------------------------------------------------
    def http(self, path, method="GET", body=None, headers=None, timeout=5):
        """(status, headers, body text) of a request to the plugin's HTTP server."""
        request = urllib.request.Request(f"http://127.0.0.1:{self.http_port}{path}",
                                         method=method, data=body, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, dict(response.headers), response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read().decode()

    def rich_connections(self, filter_text="", order_by=""):
        """The rich API's connections (ListConnections, Connect JSON) that `filter_text` selects,
        in the order `order_by` gives: open, offline and recently closed alike unless it says
        otherwise."""
        request = {"filter": filter_text}
        if order_by:
            request["orderBy"] = order_by
        status, _, body = self.http(
            "/mqtt.connections.v1.ConnectionsService/ListConnections", method="POST",
            body=json.dumps(request).encode(),
            headers={"Content-Type": "application/json", "Connect-Protocol-Version": "1"})
        assert status == 200, body
        return json.loads(body).get("connections", [])

    def subscriptions_gauge(self, pattern):
        """kubemq_mqtt_subscriptions{pattern} of /metrics (0 when the family has no such sample)."""
        _, _, text = self.http("/metrics")
        values = re.findall(rf'^kubemq_mqtt_subscriptions\{{pattern="{pattern}"\}} (\S+)$', text,
                            re.M)
        return float(values[0]) if values else 0.0

    def connections(self, query=""):
        status, _, body = self.http("/api/mqtt/connections" + query)
        assert status == 200, (status, body)
        document = json.loads(body)
        assert document["error"] is False and document["error_string"] == ""
        assert document["data"]["total"] == len(document["data"]["connections"])
        return document["data"]["connections"]

    def connections_when_up(self, query=""):
        """connections(), or None while nothing listens on the HTTP port (a restart)."""
        try:
            return self.connections(query)
        except OSError:
            return None

    def connection(self, client_id):
        for c in self.connections():
            if c["client_id"] == client_id:
                return c
        return None

    def wait_connections(self, predicate, timeout=10, what="connections"):
        return wait_for(lambda: predicate(self.connections()), timeout=timeout, what=what)


def start_fleet(builds, files=None, options=None, extra_peers=(), log_types=("all",)):
    """A fleet (docs/fleet.md): one broker with the plugin per build of `builds`, on API ports
    fixed in advance, broker i with node id i + 1 and every other one (and `extra_peers`) in
    plugin_opt_fleet_peers. `files` and `options` go to each. If one fails to start, those
    started are stopped."""
    ports = [free_port() for _ in builds]
    fleet = []
    for index, build in enumerate(builds):
        peers = [f"http://127.0.0.1:{port}" for i, port in enumerate(ports) if i != index]
        broker_options = dict(options or {})
        broker_options.update({"http_port": str(ports[index]), "node_id": str(index + 1),
                               "fleet_peers": ", ".join(peers + list(extra_peers))})
        fleet.append(Broker(build=build, files=files, options=broker_options,
                            log_types=log_types))
    try:
        for broker in fleet:
            broker.start()
    except BaseException:
        stop_fleet(fleet)
        raise
    return fleet


def stop_fleet(fleet):
    for broker in fleet:
        broker.stop()
        broker.cleanup_dir()


class Client:
    """A paho MQTT client (3.1.1 or 5) connected to a broker, with its outcome recorded.

    An MQTT 5 client with clean start false asks for a Session Expiry Interval of
    `session_expiry` seconds (one hour unless told; 0 sends none, which means 0)."""

    def __init__(self, broker, client_id, version=4, clean=True, username=None, password=None,
                 keepalive=60, connect=True, session_expiry=3600):
        self.protocol = mqtt.MQTTv5 if version == 5 else mqtt.MQTTv311
        kwargs = {"client_id": client_id, "protocol": self.protocol}
        if version != 5:
            kwargs["clean_session"] = clean
        self.client = mqtt.Client(**kwargs)
        self.clean = clean
        self.session_expiry = session_expiry
        self.version = version
        self.broker = broker
        self.keepalive = keepalive
        self.connack = None
        self.session_present = None
        self.messages = []
        self.subacks = {}
        self.client.on_connect = self._on_connect
        self.client.on_message = self._on_message
        self.client.on_subscribe = self._on_subscribe
        if username is not None:
            self.client.username_pw_set(username, password)
        if connect:
            self.connect()

    def _on_connect(self, client, userdata, flags, rc, properties=None):
        self.session_present = bool(flags.get("session present"))
        self.connack = rc if isinstance(rc, int) else rc.value

    def _on_message(self, client, userdata, message):
        self.messages.append((message.topic, message.payload))

    def _on_subscribe(self, client, userdata, mid, granted, properties=None):
        self.subacks[mid] = [g if isinstance(g, int) else g.value for g in granted]

    def connect(self, timeout=10):
        kwargs = {}
        if self.version == 5:
            from paho.mqtt.properties import Properties
            from paho.mqtt.packettypes import PacketTypes
            kwargs["clean_start"] = self.clean
            if not self.clean and self.session_expiry:
                props = Properties(PacketTypes.CONNECT)
                props.SessionExpiryInterval = self.session_expiry
                kwargs["properties"] = props
        self.client.connect("127.0.0.1", self.broker.port, keepalive=self.keepalive, **kwargs)
        self.client.loop_start()
        wait_for(lambda: self.connack is not None, timeout=timeout, what="CONNACK")
        return self.connack

    @property
    def local_port(self):
        return self.client.socket().getsockname()[1]

    def subscribe(self, topic, qos=0, timeout=10):
        result, mid = self.client.subscribe(topic, qos)
        assert result == mqtt.MQTT_ERR_SUCCESS
        return wait_for(lambda: self.subacks.get(mid), timeout=timeout, what="SUBACK")

    def unsubscribe(self, topic, timeout=10):
        done = []
        self.client.on_unsubscribe = lambda *args: done.append(True)
        self.client.unsubscribe(topic)
        wait_for(lambda: done, timeout=timeout, what="UNSUBACK")

    def publish(self, topic, payload=b"x", qos=0, properties=None):
        info = self.client.publish(topic, payload, qos, properties=properties)
        if qos > 0:
            info.wait_for_publish(timeout=10)
        return info

    def disconnect(self, session_expiry=None):
        """A DISCONNECT packet; MQTT 5: with a Session Expiry Interval when one is given."""
        properties = None
        if session_expiry is not None:
            from paho.mqtt.properties import Properties
            from paho.mqtt.packettypes import PacketTypes
            properties = Properties(PacketTypes.DISCONNECT)
            properties.SessionExpiryInterval = session_expiry
        self.client.disconnect(properties=properties)
        self.client.loop_stop()

    def drop(self):
        """Closes the socket without DISCONNECT, as a crashed client would."""
        self.client.loop_stop()
        self.client.socket().close()


def mqtt_varint(n):
    """MQTT's variable byte integer (remaining lengths, property lengths)."""
    out = bytearray()
    while True:
        byte, n = n % 128, n // 128
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def mqtt_string(data):
    """MQTT's length-prefixed UTF-8 string or binary data (str or bytes)."""
    if isinstance(data, str):
        data = data.encode()
    return len(data).to_bytes(2, "big") + data


def read_mqtt_packet(sock):
    """(first byte, body) of the next packet on a plain socket; reads are bounded by the socket's
    timeout, and a closed connection raises ConnectionError."""
    def exactly(n):
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            data += chunk
        return data
    first = exactly(1)[0]
    length, shift = 0, 0
    while True:
        byte = exactly(1)[0]
        length |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    return first, exactly(length)


def raw_connect(broker, client_id, keepalive):
    """A bare MQTT 3.1.1 CONNECT on a plain socket, so that the client can then go silent."""
    sock = socket.create_connection(("127.0.0.1", broker.port), timeout=5)
    body = b"\x00\x04MQTT\x04\x02" + keepalive.to_bytes(2, "big") + mqtt_string(client_id)
    sock.sendall(b"\x10" + mqtt_varint(len(body)) + body)
    connack = sock.recv(4)
    assert connack[:2] == b"\x20\x02", connack
    return sock, connack[3]


def stalled_subscriber(broker, client_id, topic):
    """A QoS 1 subscription to `topic` on a raw socket that is never read from again (its
    messages pile up in the broker's queue for it); returns the socket."""
    sock, _ = raw_connect(broker, client_id, keepalive=0)
    body = (1).to_bytes(2, "big") + mqtt_string(topic) + b"\x01"
    sock.sendall(b"\x82" + mqtt_varint(len(body)) + body)
    first, suback = read_mqtt_packet(sock)
    assert first == 0x90 and suback[-1] == 1, f"SUBACK {first:#x} {suback!r}: QoS 1 expected"
    return sock

def make_certificate_files(folder, name, names="IP:127.0.0.1"):
    """A self-signed certificate for 127.0.0.1 (its own CA; subjectAltName `names`) and its key,
    made with openssl as docs/operations.md makes them: (certificate path, key path)."""
    cert, key = os.path.join(folder, name + ".crt"), os.path.join(folder, name + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", f"subjectAltName={names}"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def make_certificate(folder, name="cert"):
    """make_certificate_files' certificate and key as PEM texts."""
    cert, key = make_certificate_files(folder, name)
    with open(cert) as c, open(key) as k:
        return c.read(), k.read()


def passwd_users(users):
    """A password_file made by Mosquitto's own tool, for every (user, password) of `users`."""
    folder = tempfile.mkdtemp()
    try:
        path = os.path.join(folder, "passwd")
        for n, (user, password) in enumerate(users.items()):
            broker_tool([MOSQUITTO_PASSWD, "-b"] + (["-c"] if n == 0 else []) +
                        [path, user, password], check=True, capture_output=True)
        with open(path) as f:
            return f.read()
    finally:
        shutil.rmtree(folder)


def passwd_file(user, password):
    """A password_file with one user."""
    return passwd_users({user: password})


def disconnect_all(clients):
    """Disconnects every client, ignoring those a test already dropped or had taken over."""
    for c in clients:
        try:
            c.disconnect()
        except Exception:  # already gone
            pass


def verify_client_layout(broker, prefix):
    """Has the broker verify its client layout (src/broker/broker_layout.h; what
    test_broker_layout.py tests; the first CONNECT is enough, the rest checks it again): three
    clean-session clients named `prefix`-0..2, of both protocol versions, change their
    subscriptions, then disconnect. Returns once the broker logged the layout as verified and none of them is listed
    any more."""
    # All three stay connected until the end: a client that left could hand its memory, and so
    # its address, to the next, which the verifier would then count as the same client.
    clients = [Client(broker, f"{prefix}-{n}", version=4 + n % 2, keepalive=60 - 15 * n)
               for n in range(3)]
    for client in clients:
        for topic in ("layout/1", "layout/2", "layout/3"):
            client.subscribe(topic)
        client.unsubscribe("layout/1")
    wait_for(lambda: "broker layout: verified" in broker.log(), timeout=10,
             what="the client layout verified")
    disconnect_all(clients)
    ids = {f"{prefix}-{n}" for n in range(3)}
    wait_for(lambda: not ids & {c["client_id"] for c in broker.connections()},
             what="the layout's clients gone")


class SharedBrokerTestCase(unittest.TestCase):
    """One broker for all tests of a class; each test's clients are disconnected after it, and
    the next test starts with no connection listed.
    `layout_prefix` set: the broker has its client layout verified once started
    (verify_client_layout, with that prefix), for tests that read message counts."""

    broker_arguments = {}
    layout_prefix = None

    @classmethod
    def make_broker(cls):
        """The class's broker, not started yet."""
        return Broker(**cls.broker_arguments)

    @classmethod
    def setUpClass(cls):
        cls.broker = cls.make_broker()
        cls.broker.start()
        if cls.layout_prefix is not None:
            try:
                verify_client_layout(cls.broker, cls.layout_prefix)
            except BaseException:  # tearDownClass is not called when setUpClass fails
                cls.broker.stop()
                cls.broker.cleanup_dir()
                raise

    @classmethod
    def tearDownClass(cls):
        cls.broker.stop()
        cls.broker.cleanup_dir()

    def setUp(self):
        self.clients = []

    def tearDown(self):
        disconnect_all(self.clients)
        wait_for(lambda: self.listed() == [], what="no connections left")

    def listed(self):
        """The open connections the KubeMQ endpoint lists now."""
        return self.broker.connections()

    def client(self, *args, **kwargs):
        c = Client(self.broker, *args, **kwargs)
        self.clients.append(c)
        return c

    def list(self, filter_text="", order_by=""):
        """The rich API's connections (Broker.rich_connections)."""
        return self.broker.rich_connections(filter_text, order_by)

    def closed(self, client_id):
        """The rich API's entry of `client_id`'s connection once it is listed as closed."""
        return wait_for(lambda: self.list(f'client_id = "{client_id}" AND '
                                          'state = MQTT_CONNECTION_STATE_CLOSED'),
                        what=f"{client_id} closed")[0]

    def publish_to_a_reader(self, prefix, topic, count, timeout, step=10):
        """`count` QoS 1 messages on `topic` from <prefix>-publisher, waited for at
        <prefix>-reader, a subscriber that reads them all. They go `step` at a time, each step
        once the reader has the last: the broker's queue limits (the suites' max_queued_messages)
        hold for the reader too, and a reader that fell behind on a loaded machine had messages
        dropped."""
        reader = self.client(f"{prefix}-reader")
        reader.subscribe(topic, qos=1)
        publisher = self.client(f"{prefix}-publisher")
        deadline = time.monotonic() + timeout
        for first in range(0, count, step):
            for n in range(first, min(first + step, count)):
                publisher.publish(topic, b"m%d" % n, qos=1)
            wait_for(lambda: len(reader.messages) >= min(first + step, count),
                     timeout=max(0.1, deadline - time.monotonic()),
                     what="every message at the reading subscriber")


class BrokerPerTestCase(unittest.TestCase):
    """A broker of its own for each test (Broker(**broker_arguments)), stopped after it; the
    clients a test puts in self.clients are disconnected first."""

    broker_arguments = {}

    def setUp(self):
        self.broker = Broker(**self.broker_arguments)
        self.broker.start()
        self.clients = []

    def tearDown(self):
        disconnect_all(self.clients)
        self.broker.stop()
        self.broker.cleanup_dir()
