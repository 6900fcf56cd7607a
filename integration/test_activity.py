# SPDX-License-Identifier: BSD-3-Clause
"""GetActivity and the console's charts of the last hour, against the real broker: real clients
connect, are refused, publish and leave; the samples count exactly that, and the console draws
the charts, checked in the pixels of a Chromium screenshot (not only in the DOM)."""

import base64
import json
import os
import time
import unittest

from browser import Chromium
from harness import Broker, Client, wait_for
from png import read_png

ACTIVITY = "/mqtt.connections.v1.ConnectionsService/GetActivity"
CONNECT_HEADERS = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
# The console's series colours (console.js SERIES_COLOURS), the first two.
BLUE, ORANGE = (0x0B, 0x63, 0xC5), (0xE8, 0x71, 0x0A)


def activity(broker):
    status, _, body = broker.http(ACTIVITY, "POST", b"{}", CONNECT_HEADERS)
    assert status == 200, body
    return json.loads(body)


def total(samples, field):
    return sum(sample.get(field, 0) for sample in samples)


def near(pixel, colour, tolerance=40):
    return all(abs(a - b) <= tolerance for a, b in zip(pixel, colour))


class ActivityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.broker = Broker(passwords={"alice": "secret"}, allow_anonymous=True,
                            options={"activity_interval": "1"})
        cls.broker.start()
        # A first sample, so that what follows is counted from a known baseline.
        wait_for(lambda: activity(cls.broker)["samples"], what="a first sample")
        cls.before = len(activity(cls.broker)["samples"])
        watcher = Client(cls.broker, "act-watcher")
        watcher.subscribe("act/#", 0)
        publishers = [Client(cls.broker, f"act-pub-{n}") for n in range(3)]
        for publisher in publishers:
            for _ in range(10):
                publisher.publish("act/x", b"m", qos=1)
        refused = Client(cls.broker, "act-refused", username="alice", password="wrong")
        assert refused.connack != 0
        refused.disconnect()
        wait_for(lambda: len(watcher.messages) == 30, what="30 messages delivered")
        for publisher in publishers:
            publisher.disconnect()
        cls.watcher = watcher

    @classmethod
    def tearDownClass(cls):
        cls.watcher.disconnect()
        cls.broker.stop()
        cls.broker.cleanup_dir()

    def test_the_samples_count_what_the_clients_did(self):
        def counted():
            answer = activity(self.broker)
            samples = answer["samples"]
            done = (total(samples, "connects") >= 4 and total(samples, "messagesDelivered") >= 30
                    and samples[-1].get("openConnections") == 1)
            return answer if done else None
        answer = wait_for(counted, timeout=15, what="the traffic in the samples")
        samples = answer["samples"]
        self.assertEqual(answer["intervalSeconds"], 1)
        # The first sample's baseline was read before any client: everything is counted once.
        self.assertEqual(total(samples, "connects"), 4)  # the watcher and three publishers
        self.assertEqual(total(samples, "connectsRefused"), 1)
        self.assertEqual(total(samples, "messagesReceived"), 30)
        self.assertEqual(total(samples, "messagesDelivered"), 30)
        closed = sum(sample.get("disconnects", {}).get("CLIENT_DISCONNECT", 0) +
                     sample.get("disconnects", {}).get("CLOSE_REASON_UNSPECIFIED", 0)
                     for sample in samples)
        self.assertEqual(closed, 3)
        times = [sample["time"] for sample in samples]
        self.assertEqual(times, sorted(times))
        self.assertTrue(all(sample["seconds"] >= 1 for sample in samples))

    def test_the_console_draws_the_charts(self):
        wait_for(lambda: len(activity(self.broker)["samples"]) >= 3, what="three samples")
        path = os.path.join(os.environ.get("MQC_BUILD_DIR", "/tmp"), "integration",
                            "console-activity.png")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with Chromium() as browser:
            browser.open(f"http://127.0.0.1:{self.broker.http_port}/")
            browser.wait("document.querySelectorAll('#charts polyline').length >= 6 && "
                         "!document.getElementById('activity').hidden", what="the charts")
            box = json.loads(browser.evaluate(
                "JSON.stringify((r => [r.x, r.y, r.width, r.height])("
                "document.getElementById('charts').getBoundingClientRect()))"))
            legend = browser.evaluate("document.getElementById('chart-messages')"
                                      ".querySelector('.legend').textContent")
            data = browser.call("Page.captureScreenshot", {"format": "png", "clip": {
                "x": box[0], "y": box[1], "width": box[2], "height": box[3], "scale": 1}})
        with open(path, "wb") as f:
            f.write(base64.b64decode(data["data"]))
        self.assertIn("received", legend)
        self.assertIn("delivered", legend)
        width, height, rows = read_png(path)
        self.assertGreater(width * height, 10000)
        # The lines are drawn: pixels of the first two series' colours.
        blue = sum(1 for row in rows for pixel in row if near(pixel, BLUE))
        orange = sum(1 for row in rows for pixel in row if near(pixel, ORANGE))
        self.assertGreater(blue, 50, "no line of the first series in the screenshot")
        self.assertGreater(orange, 20, "no line of the second series in the screenshot")


if __name__ == "__main__":
    unittest.main()
