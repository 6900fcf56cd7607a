# SPDX-License-Identifier: BSD-3-Clause
"""Cheap MQTT load for the benchmarks: many idle connections on raw sockets, and a ping client.

Thousands of paho clients would need a thread each; these are bare MQTT 3.1.1 packets on
non-blocking sockets driven by one selector. Every loop is bounded in count and time.
"""

import resource
import selectors
import socket
import statistics
import time


def raise_file_limit():
    """Raises this process's soft RLIMIT_NOFILE to its hard limit; the brokers and tools it
    starts inherit it. Returns the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def remaining_length(n):
    out = bytearray()
    while True:
        digit = n % 128
        n //= 128
        out.append(digit | 0x80 if n else digit)
        if not n:
            return bytes(out)


def utf8(text):
    data = text.encode()
    return len(data).to_bytes(2, "big") + data


def connect_packet(client_id, keepalive=0, username=None, password=None, version=4,
                   clean=True, session_expiry=0):
    """CONNECT of MQTT 3.1.1 (`version` 4) or 5; for 5, `session_expiry` seconds (a property
    sent only when not 0)."""
    flags = (0x02 if clean else 0) | (0x80 if username is not None else 0) | (
        0x40 if password is not None else 0)
    body = b"\x00\x04MQTT" + bytes([version, flags]) + keepalive.to_bytes(2, "big")
    if version == 5:
        properties = b"\x11" + session_expiry.to_bytes(4, "big") if session_expiry else b""
        body += remaining_length(len(properties)) + properties
    body += utf8(client_id)
    if username is not None:
        body += utf8(username)
    if password is not None:
        body += utf8(password)
    return b"\x10" + remaining_length(len(body)) + body


def read_exactly(sock, n, closed):
    """The next `n` bytes of `sock`; RuntimeError(closed) if the broker closes it first."""
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise RuntimeError(closed)
        data += chunk
    return bytes(data)


def subscribe_packet(packet_id, filters, qos=0, version=4):
    body = packet_id.to_bytes(2, "big") + (b"\x00" if version == 5 else b"") + b"".join(
        utf8(f) + bytes([qos]) for f in filters)
    return b"\x82" + remaining_length(len(body)) + body


def publish_packet(topic, payload):
    body = utf8(topic) + payload
    return b"\x30" + remaining_length(len(body)) + body


class IdleClients:
    """`count` MQTT connections, each with the subscriptions `filters(i)` names, kept open and
    silent (keepalive 0, so the broker never drops them). CONNECT and SUBSCRIBE go out in one
    write; a client is ready when its CONNACK and SUBACK (all granted) have arrived."""

    def __init__(self, port, count, prefix="idle", filters=None, in_flight=64, timeout=300,
                 username=None, password=None):
        self.port = port
        self.username = username
        self.password = password
        self.count = count
        self.prefix = prefix
        self.filters = filters or (lambda i: [f"events/{prefix}/{i}", f"queues/{prefix}.{i}"])
        self.in_flight = in_flight
        self.timeout = timeout
        self.sockets = []

    def client_id(self, i):
        return f"{self.prefix}-{i:06d}"

    def open(self):
        selector = selectors.DefaultSelector()
        deadline = time.monotonic() + self.timeout
        next_index = 0
        pending = {}  # socket -> [index, bytes to send, bytes received]
        ready = 0
        try:
            while ready < self.count:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{ready} of {self.count} connections ready after "
                                       f"{self.timeout} s")
                # A few connects in flight at once: the broker's listen backlog is small, and
                # an overflowing backlog costs a one-second SYN retransmit.
                while next_index < self.count and len(pending) < self.in_flight:
                    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    sock.setblocking(False)
                    sock.connect_ex(("127.0.0.1", self.port))
                    filters = self.filters(next_index)
                    packet = (connect_packet(self.client_id(next_index),
                                             username=self.username, password=self.password) +
                              subscribe_packet(1, filters))
                    expected = 4 + 4 + len(filters)  # CONNACK, then SUBACK
                    pending[sock] = [next_index, packet, bytearray(), expected]
                    selector.register(sock, selectors.EVENT_WRITE)
                    next_index += 1
                for key, events in selector.select(timeout=1.0):
                    sock = key.fileobj
                    state = pending[sock]
                    if events & selectors.EVENT_WRITE:
                        sent = sock.send(state[1])
                        state[1] = state[1][sent:]
                        if not state[1]:
                            selector.modify(sock, selectors.EVENT_READ)
                        continue
                    data = sock.recv(64)
                    if not data:
                        raise RuntimeError(f"broker closed connection {state[0]} at CONNECT")
                    state[2] += data
                    if len(state[2]) >= state[3]:
                        reply = bytes(state[2])
                        if reply[:4] != b"\x20\x02\x00\x00" or reply[4] != 0x90 or any(
                                code >= 0x80 for code in reply[8:]):
                            raise RuntimeError(f"connection {state[0]} refused: {reply!r}")
                        selector.unregister(sock)
                        del pending[sock]
                        self.sockets.append(sock)
                        ready += 1
        except BaseException:
            for sock in pending:
                sock.close()
            self.close()
            raise
        finally:
            selector.close()
        return self

    def close(self):
        for sock in self.sockets:
            sock.close()
        self.sockets = []

    def __enter__(self):
        return self.open()

    def __exit__(self, *exc):
        self.close()
        return False


class PingClient:
    """One client subscribed to its own topic, publishing QoS 0 to it and timing how long the
    broker takes to route each message back: the broker thread's responsiveness."""

    def __init__(self, port, client_id="bench-ping", topic="events/bench/ping"):
        self.topic = topic
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.sendall(connect_packet(client_id) + subscribe_packet(1, [topic]))
        read_exactly(self.sock, 4 + 5, "broker closed the ping connection")  # CONNACK, SUBACK
        self.packet = publish_packet(topic, b"p" * 16)

    def ping(self):
        """Seconds for one PUBLISH to come back."""
        started = time.perf_counter()
        self.sock.sendall(self.packet)
        read_exactly(self.sock, len(self.packet), "broker closed the ping connection")
        return time.perf_counter() - started

    def run(self, seconds, interval=0.002, max_pings=100000):
        """Round trips over `seconds`, one every `interval`: (p50, p99, max) in ms, count."""
        times = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and len(times) < max_pings:
            times.append(self.ping())
            time.sleep(interval)
        return summary_ms(times), len(times)

    def close(self):
        self.sock.close()


def summary_ms(times):
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.median(ordered) * 1e3, p99 * 1e3, ordered[-1] * 1e3


def publish_flood(port, client_id, topic, count, qos, payload_size=64, window=100,
                  timeout=600):
    """Publishes `count` messages of `payload_size` bytes as fast as the broker takes them:
    QoS 0 in batches, QoS 1 with up to `window` unacknowledged (mosquitto_pub -l at QoS 1
    disconnects at the end of its input with messages still queued, and loses them)."""
    deadline = time.monotonic() + timeout
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(connect_packet(client_id))
    read_exactly(sock, 4, "broker closed the publisher's connection at CONNECT")
    topic_bytes = utf8(topic)
    payload = b"x" * payload_size
    if qos == 0:
        packet = publish_packet(topic, payload)
        batch = 256
        sent = 0
        while sent < count:
            n = min(batch, count - sent)
            sock.sendall(packet * n)
            sent += n
            if time.monotonic() > deadline:
                raise RuntimeError(f"{sent} of {count} published in {timeout} s")
    else:
        header = b"\x32" + remaining_length(len(topic_bytes) + 2 + payload_size)
        sent = acked = 0
        pending = b""
        while acked < count:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{acked} of {count} acknowledged in {timeout} s")
            burst = []
            while sent < count and sent - acked < window:
                packet_id = sent % 65535 + 1
                burst.append(header + topic_bytes + packet_id.to_bytes(2, "big") + payload)
                sent += 1
            if burst:
                sock.sendall(b"".join(burst))
            data = sock.recv(65536)
            if not data:
                raise RuntimeError("broker closed the publisher's connection")
            pending += data
            acks = len(pending) // 4  # PUBACKs: 0x40 0x02 id id
            acked += acks
            pending = pending[acks * 4:]
    sock.sendall(b"\xe0\x00")  # DISCONNECT
    sock.close()


if __name__ == "__main__":
    # python3 mqtt_load.py publish PORT CLIENT_ID TOPIC COUNT QOS: publish_flood as a process
    # of its own, so that it can be pinned to a CPU.
    import sys
    if len(sys.argv) != 7 or sys.argv[1] != "publish":
        sys.exit("usage: mqtt_load.py publish PORT CLIENT_ID TOPIC COUNT QOS")
    publish_flood(int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]),
                  int(sys.argv[6]))
