# SPDX-License-Identifier: BSD-3-Clause
"""GetActivity and the console's charts of the last hour, against the real broker: real clients
connect, are refused, publish (once on a topic the acl_file refuses) and leave, and one client id
flaps; the samples count exactly that, and the console draws the charts, checked in the pixels
of a Chromium screenshot (not only in the DOM)."""

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
# The console's series colours (console.js SERIES_COLOURS), the first three.
BLUE, ORANGE, RED = (0x0B, 0x63, 0xC5), (0xE8, 0x71, 0x0A), (0xB4, 0x23, 0x18)
# Anonymous clients may use act/ only: a PUBLISH elsewhere is an ACL denial (docs/api.md,
# "Denials"), where the broker shows them.
ACL_FILE = "topic readwrite act/#\n"
FLAPS = 3  # connects of act-flapper: the console's flapping threshold


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
                            options={"activity_interval": "1"},
                            extra="acl_file {dir}/acl", files={"acl": ACL_FILE})
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
        publishers[0].publish("outside/x", b"no", qos=1).wait_for_publish()  # refused by the ACL
        for _ in range(FLAPS):
            Client(cls.broker, "act-flapper").disconnect()
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
            done = (total(samples, "connects") >= 4 + FLAPS and
                    total(samples, "messagesDelivered") >= 30 and
                    samples[-1].get("openConnections") == 1)
            return answer if done else None
        answer = wait_for(counted, timeout=15, what="the traffic in the samples")
        samples = answer["samples"]
        self.assertEqual(answer["intervalSeconds"], 1)
        # The first sample's baseline was read before any client: everything is counted once.
        # the watcher, three publishers and the flapper's connects
        self.assertEqual(total(samples, "connects"), 4 + FLAPS)
        self.assertEqual(total(samples, "connectsRefused"), 1)
        self.assertEqual(total(samples, "messagesReceived"), 30)
        self.assertEqual(total(samples, "messagesDelivered"), 30)
        closed = sum(sample.get("disconnects", {}).get("CLIENT_DISCONNECT", 0) +
                     sample.get("disconnects", {}).get("CLOSE_REASON_UNSPECIFIED", 0)
                     for sample in samples)
        self.assertEqual(closed, 3 + FLAPS)
        # The refused PUBLISH, where the broker shows ACL denials (2.1 with an acl_file does
        # not: its start line says so, and the samples then carry none).
        if answer.get("aclDenialsShown"):
            self.assertEqual(total(samples, "publishesRefused"), 1)
        else:
            self.assertIn("ACL denials are not shown", self.broker.log())
            self.assertEqual(total(samples, "publishesRefused"), 0)
        # act-flapper is one flapping client id from its third connect, for a minute.
        self.assertEqual(max(sample.get("flappingClients", 0) for sample in samples), 1)
        self.assertEqual(samples[-1].get("flappingClients"), 1)
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
            browser.wait("document.querySelectorAll('#charts polyline').length >= 7 && "
                         "!document.getElementById('activity').hidden", what="the charts")
            box = json.loads(browser.evaluate(
                "JSON.stringify((r => [r.x, r.y, r.width, r.height])("
                "document.getElementById('charts').getBoundingClientRect()))"))
            legend = browser.evaluate("document.getElementById('chart-messages')"
                                      ".querySelector('.legend').textContent")
            data = browser.call("Page.captureScreenshot", {"format": "png", "clip": {
                "x": box[0], "y": box[1], "width": box[2], "height": box[3], "scale": 1}})
            # The new series, each in its own chart's drawing (the legend's swatches left out).
            charts = {name: self.chart_pixels(browser, name, f"console-activity-{name}.png")
                      for name in ("chart-refusals", "chart-flapping")}
            shown = activity(self.broker).get("aclDenialsShown", False)
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
        # Flapping clients: its line (the first colour) rises into the chart's upper half, where
        # only a count above 0 is drawn (a flat 0 lies on the axis at the bottom).
        rows = charts["chart-flapping"]
        upper = sum(1 for row in rows[:len(rows) // 2] for pixel in row if near(pixel, BLUE))
        self.assertGreater(upper, 5, "no flapping client drawn in the flapping chart")
        # PUBLISHes refused (the third colour) where the broker shows ACL denials; none drawn
        # where it hides them.
        red = sum(1 for row in charts["chart-refusals"] for pixel in row if near(pixel, RED))
        if shown:
            self.assertGreater(red, 20, "no line of the refused PUBLISHes")
        else:
            self.assertEqual(red, 0, "refused PUBLISHes drawn where the broker hides them")

    @staticmethod
    def chart_pixels(browser, figure_id, file_name):
        """The pixel rows of one chart's drawing (its svg), from a screenshot of it alone."""
        box = json.loads(browser.evaluate(
            "JSON.stringify((r => [r.x, r.y, r.width, r.height])(document.getElementById("
            f"'{figure_id}').querySelector('svg').getBoundingClientRect()))"))
        data = browser.call("Page.captureScreenshot", {"format": "png", "clip": {
            "x": box[0], "y": box[1], "width": box[2], "height": box[3], "scale": 1}})
        path = os.path.join(os.environ.get("MQC_BUILD_DIR", "/tmp"), "integration", file_name)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data["data"]))
        return read_png(path)[2]


if __name__ == "__main__":
    unittest.main()
