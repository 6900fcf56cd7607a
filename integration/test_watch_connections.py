# SPDX-License-Identifier: BSD-3-Clause
"""WatchConnections, the live stream of changes, against the real broker: Connect-ES's
server-streaming call in both codecs (binary and JSON: the current state, then OPENED,
SUBSCRIBED, CLOSED with its reason, in order; a resumption from the last sequence seen gets
what it missed without a fresh state), and a plain HTTP/1.1 client reading the streaming
envelope itself: the stream limit (resource_exhausted), a reader too slow cut off with
resource_exhausted, a storm of connect+close seen whole and in order by three streams, a parked
stream outliving the HTTP idle timeout, a CONNECT on an idle broker seen promptly, and the end
of the stream (unavailable) when the companion stops, after which a resumption gets a fresh
state.

Node.js and the npm registry are required for the Connect-ES part, as in test_connect_clients."""

import http.client
import json
import os
import queue
import signal
import socket
import subprocess
import threading
import time
import unittest

from harness import (Broker, Client, SharedBrokerTestCase, close_reason, free_port, raw_connect,
                     wait_for)
from test_connect_clients import DESCRIPTOR_SET, NODE_DIR, install_connect_es

PATH = "/mqtt.connections.v1.ConnectionsService/WatchConnections"
STORM = 1000  # connect+close pairs in the storm; bench/watch_storm.py runs 10,000


def read_envelope(response):
    """(flags, message as a dict) of the next Connect envelope of a streamed JSON answer."""
    def exact(size):
        data = b""
        while len(data) < size:
            piece = response.read(size - len(data))
            if not piece:
                raise AssertionError(f"stream ended inside an envelope ({len(data)}/{size})")
            data += piece
        return data
    head = exact(5)
    return head[0], json.loads(exact(int.from_bytes(head[1:], "big")))


class Stream:
    """One WatchConnections call in the JSON codec over plain HTTP/1.1 (http.client undoes the
    chunked encoding; the Connect envelopes are read here)."""

    def __init__(self, broker, filter_text="", resume_after=0, receive_buffer=None, timeout=30):
        self.connection = http.client.HTTPConnection("127.0.0.1", broker.http_port,
                                                     timeout=timeout)
        if receive_buffer is not None:  # a small window: the server's writes block sooner
            self.connection.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.connection.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
            self.connection.sock.settimeout(timeout)
            self.connection.sock.connect(("127.0.0.1", broker.http_port))
        body = json.dumps({"filter": filter_text, "resumeAfter": str(resume_after)}).encode()
        self.connection.request("POST", PATH, body=b"\0" + len(body).to_bytes(4, "big") + body,
                                headers={"Content-Type": "application/connect+json",
                                         "Connect-Protocol-Version": "1"})
        self.response = self.connection.getresponse()
        self.end = None  # the end-of-stream message once read
        self.pushed = []  # messages read ahead, handed out first by next()

    def next(self):
        """The next message as a dict, or None after the end-of-stream message (self.end)."""
        if self.pushed:
            return self.pushed.pop(0)
        flags, payload = read_envelope(self.response)
        if flags & 0x02:
            self.end = payload
            return None
        assert flags == 0, flags
        return payload

    def until_synced(self):
        """The messages of the current state, RESET to SYNCED."""
        state = []
        for _ in range(100000):
            message = self.next()
            assert message is not None, self.end
            state.append(message)
            if message["kind"] == "CONNECTION_CHANGE_KIND_SYNCED":
                return state
        raise AssertionError("no SYNCED")

    def close(self):
        self.connection.close()


def changes_of(messages, kinds=("OPENED", "CLOSED", "SUBSCRIBED", "UNSUBSCRIBED")):
    wanted = {f"CONNECTION_CHANGE_KIND_{k}" for k in kinds}
    return [(m["kind"].rsplit("_", 1)[-1], m["connection"]["clientId"])
            for m in messages if m["kind"] in wanted]


class ConnectEsWatchTest(unittest.TestCase):
    READ_TOKEN = "watch-read-token-1"

    @classmethod
    def setUpClass(cls):
        if not DESCRIPTOR_SET or not NODE_DIR:
            raise AssertionError("run through ctest: MQC_PROTO_DESCRIPTOR_SET and "
                                 "MQC_CONNECT_ES_DIR name the build's descriptor set and folder")
        install_connect_es()
        cls.broker = Broker(log_types=("error", "warning", "notice"),
                            files={"tokens": f"{cls.READ_TOKEN}\n"},
                            plugin_after="plugin_opt_http_token_file {dir}/tokens")
        cls.broker.start()

    @classmethod
    def tearDownClass(cls):
        cls.broker.stop()
        cls.broker.cleanup_dir()

    def listed(self, client_id):
        status, _, body = self.broker.http(
            f"/api/mqtt/connections?client_id={client_id}",
            headers={"Authorization": f"Bearer {self.READ_TOKEN}"})
        assert status == 200, (status, body)
        return json.loads(body)["data"]["connections"]

    def watch(self, codec, filter_text, resume_after=0):
        """A running watch.mjs and a queue of the JSON lines it prints."""
        process = subprocess.Popen(
            ["node", "watch.mjs", DESCRIPTOR_SET, f"http://127.0.0.1:{self.broker.http_port}",
             codec, self.READ_TOKEN, filter_text, str(resume_after)],
            cwd=NODE_DIR, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = queue.Queue()

        def pump():
            for line in process.stdout:
                lines.put(json.loads(line))
        threading.Thread(target=pump, daemon=True).start()
        self.addCleanup(lambda: (process.kill(), process.wait(10)))
        return lines

    @staticmethod
    def take(lines, count, timeout=60):
        taken = []
        deadline = time.monotonic() + timeout
        while len(taken) < count:
            taken.append(lines.get(timeout=max(0.1, deadline - time.monotonic())))
        return taken

    def check_codec(self, codec):
        prefix = f"wes-{codec}"
        sock, rc = raw_connect(self.broker, f"{prefix}-pre", keepalive=120)
        self.addCleanup(sock.close)
        self.assertEqual(rc, 0)
        wait_for(lambda: self.listed(f"{prefix}-pre"), what=f"{prefix}-pre listed")
        lines = self.watch(codec, f'client_id = "{prefix}-*"')
        [content_type, reset, current, synced] = self.take(lines, 4)
        expected_type = "application/connect+proto" if codec == "binary" else \
            "application/connect+json"
        self.assertEqual(content_type["contentType"], expected_type)
        self.assertEqual(reset["kind"], "CONNECTION_CHANGE_KIND_RESET")
        self.assertEqual((current["kind"], current["clientId"]),
                         ("CONNECTION_CHANGE_KIND_CURRENT", f"{prefix}-pre"))
        self.assertEqual(synced["kind"], "CONNECTION_CHANGE_KIND_SYNCED")
        self.assertEqual(reset["sequence"], synced["sequence"])

        client = Client(self.broker, f"{prefix}-a", version=5)
        client.subscribe("watch/#", 1)
        client.disconnect()
        changes = self.take(lines, 3)
        self.assertEqual([(c["kind"], c["clientId"]) for c in changes],
                         [("CONNECTION_CHANGE_KIND_OPENED", f"{prefix}-a"),
                          ("CONNECTION_CHANGE_KIND_SUBSCRIBED", f"{prefix}-a"),
                          ("CONNECTION_CHANGE_KIND_CLOSED", f"{prefix}-a")])
        self.assertEqual(changes[1]["subscription"], "watch/#")
        self.assertEqual(changes[2]["closeReason"], close_reason("CLIENT_DISCONNECT"))
        sequences = [int(c["sequence"]) for c in changes]
        self.assertEqual(sequences, sorted(set(sequences)))
        self.assertGreater(sequences[0], int(synced["sequence"]))

        # Resuming from SYNCED's sequence: exactly the changes since, no fresh state.
        resumed = self.watch(codec, f'client_id = "{prefix}-*"', synced["sequence"])
        again = self.take(resumed, 4)[1:]
        self.assertEqual([(c["kind"], c["sequence"]) for c in again],
                         [(c["kind"], c["sequence"]) for c in changes])

    def test_binary_codec(self):  # Connect-ES's default
        self.check_codec("binary")

    def test_json_codec(self):
        self.check_codec("json")


class WatchLimitsTest(SharedBrokerTestCase):
    MAX_STREAMS = 4

    @classmethod
    def make_broker(cls):
        return Broker(log_types=("error", "warning", "notice"),
                      options={"http_port": str(free_port()),
                               "http_max_streams": str(cls.MAX_STREAMS),
                               "http_stream_buffer": "64"})

    def setUp(self):
        super().setUp()
        # A companion that died shows in the broker's log: name it in the failure.
        self.addCleanup(lambda: self.assertNotIn("companion exited", self.broker.log().replace(
            "companion exited with status 0", "")[-20000:], self.broker.log()[-3000:]))

    def stream(self, *args, **kwargs):
        """A stream that got a slot: the streams of the tests before may still hold theirs
        for a second (the server notices a hang-up at its next tick)."""
        def attempt():
            stream = Stream(self.broker, *args, **kwargs)
            first = stream.next()
            if first is None and stream.end["error"]["code"] == "resource_exhausted":
                stream.close()
                return None
            stream.pushed.append(first)
            return stream
        stream = wait_for(attempt, timeout=10, what="a free stream slot")
        self.addCleanup(stream.close)
        return stream

    def storm(self, prefix, count, padding=0):
        """`count` connect+close pairs, one after the other; `padding` bytes lengthen each
        client id."""
        for i in range(count):
            sock, rc = raw_connect(self.broker, f"{prefix}-{i}-" + "x" * padding, keepalive=60)
            assert rc == 0
            sock.sendall(b"\xe0\x00")  # DISCONNECT
            sock.close()

    def test_every_stream_sees_every_change_in_order_or_is_cut_off(self):
        streams = [self.stream() for _ in range(3)]
        starts = [int(s.until_synced()[-1]["sequence"]) for s in streams]
        results = [None] * 3

        def read(index):
            stream, seen = streams[index], []
            while len(changes_of(seen)) < 2 * STORM:
                message = stream.next()
                if message is None:
                    break
                if message["connection"]["clientId"].startswith("storm-"):
                    seen.append(message)
            results[index] = seen
        readers = [threading.Thread(target=read, args=(i,)) for i in range(3)]
        for reader in readers:
            reader.start()
        self.storm("storm", STORM)
        for reader in readers:
            reader.join(120)
        for index, (stream, seen) in enumerate(zip(streams, results)):
            self.assertIsNotNone(seen, "a reader did not finish")
            sequences = [int(m["sequence"]) for m in seen]
            self.assertEqual(sequences, sorted(set(sequences)))
            self.assertTrue(all(s > starts[index] for s in sequences))
            if stream.end is not None:  # cut off: with the error, never silently
                self.assertEqual(stream.end["error"]["code"], "resource_exhausted", stream.end)
                continue
            pairs = changes_of(seen)
            self.assertEqual(len(pairs), 2 * STORM)
            for i in range(STORM):  # each client opened, then closed, in storm order
                # storm() names them "storm-<i>-" (its padding follows the dash).
                self.assertEqual(pairs[2 * i:2 * i + 2],
                                 [("OPENED", f"storm-{i}-"), ("CLOSED", f"storm-{i}-")])

    # The reader reads nothing during the storm. Its changes, with 16 KiB client ids, come to
    # about 20 MB: more than the kernel's socket buffers absorb (on loopback the sender's grows
    # to tcp_wmem's 4 MiB), so the server's writes block however fast or slow the companion is,
    # and the stream falls more than 64 changes behind.
    def test_a_reader_too_slow_is_cut_off_with_resource_exhausted(self):
        stream = self.stream(filter_text='client_id = "slow-*"', receive_buffer=4096)
        stream.until_synced()
        self.storm("slow", 600, padding=16384)  # 1200 changes; the stream may fall 64 behind
        messages = []
        for _ in range(2000):
            message = stream.next()
            if message is None:
                break
            messages.append(message)
        self.assertIsNotNone(stream.end)
        self.assertEqual(stream.end["error"]["code"], "resource_exhausted", stream.end)
        self.assertIn("reads too slowly", stream.end["error"]["message"])
        self.assertLess(len(messages), 1200)
        sequences = [int(m["sequence"]) for m in messages]
        self.assertEqual(sequences, sorted(set(sequences)))

    def test_streams_are_limited(self):
        streams = [self.stream(filter_text='client_id = "none"') for _ in range(self.MAX_STREAMS)]
        for stream in streams:
            stream.until_synced()
        refused = Stream(self.broker)
        self.addCleanup(refused.close)
        self.assertEqual(refused.response.status, 200)
        self.assertIsNone(refused.next())
        self.assertEqual(refused.end["error"]["code"], "resource_exhausted")
        self.assertIn("plugin_opt_http_max_streams", refused.end["error"]["message"])
        streams[0].close()  # its slot is free once the server sees the hang-up (a tick)
        self.assertEqual(self.stream().next()["kind"], "CONNECTION_CHANGE_KIND_RESET")

    def test_a_connect_reaches_an_idle_companion_promptly(self):
        """The companion sleeps until the broker wakes it at the TICK that wrote the event
        (docs/benchmarks.md, "An idle companion"), every TICK, not only those with the periodic
        work: after a quiet spell a CONNECT shows in the stream within a few milliseconds (the
        median was ~1 ms on 2.0 and 2.1 under load). A wake left to the next TICK with the
        periodic work took ~100 ms (the broker's next idle loop turn), a companion waiting for
        its clock up to a second. The median of 15 keeps a loaded machine's outliers out."""
        stream = self.stream()
        stream.until_synced()
        took = []
        for i in range(15):
            time.sleep(0.3 + 0.05 * (i % 5))  # the companion back asleep, the broker idle
            client_id = f"prompt-{i}"
            start = time.monotonic()
            sock, rc = raw_connect(self.broker, client_id, keepalive=60)
            self.assertEqual(rc, 0)
            for _ in range(1000):
                message = stream.next()
                self.assertIsNotNone(message, stream.end)
                if (message["kind"], message["connection"]["clientId"]) == (
                        "CONNECTION_CHANGE_KIND_OPENED", client_id):
                    break
            took.append(time.monotonic() - start)
            sock.sendall(b"\xe0\x00")  # DISCONNECT
            sock.close()
        took.sort()
        self.assertLess(took[len(took) // 2], 0.05, [round(t, 3) for t in took])

    def test_a_parked_stream_outlives_the_idle_timeout(self):
        stream = self.stream(filter_text='client_id = "late"')
        stream.until_synced()
        time.sleep(11)  # the HTTP server's idle timeout is 10 s
        client = Client(self.broker, "late")
        message = stream.next()
        client.disconnect()
        self.assertEqual((message["kind"], message["connection"]["clientId"]),
                         ("CONNECTION_CHANGE_KIND_OPENED", "late"))

    def test_z_companion_stop_ends_the_stream_and_a_resumption_starts_afresh(self):
        stream = self.stream()
        last = stream.until_synced()[-1]["sequence"]
        old = self.broker.companion_pid
        os.kill(old, signal.SIGTERM)
        try:
            while stream.next() is not None:
                pass
        except Exception as error:
            raise AssertionError(f"{error}\n{self.broker.log()[-3000:]}") from None
        self.assertEqual(stream.end["error"]["code"], "unavailable", stream.end)
        # The plugin starts another companion on the same port: its numbers are all newer.
        wait_for(lambda: [p for p in self.broker.companion_pids() if p != old], timeout=30,
                 what="another companion")

        def resumed():
            try:
                return Stream(self.broker, resume_after=last, timeout=10)
            except OSError:
                return None
        again = wait_for(resumed, timeout=30, what="the restarted companion's stream")
        self.addCleanup(again.close)
        first = again.next()
        self.assertEqual(first["kind"], "CONNECTION_CHANGE_KIND_RESET")
        self.assertGreater(int(first["sequence"]), int(last))


if __name__ == "__main__":
    unittest.main()
