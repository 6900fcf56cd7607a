# SPDX-License-Identifier: BSD-3-Clause
"""MQTT 5 session expiry on the real broker, once the client layout is verified.

Neither version calls plugins when it frees a session at its disconnect (interval 0) or expires
one later (src/context.c: context__disconnect, src/session_expiry.c: session_expiry__check), and
no accessor gives the interval. The plugin reads it at the connection's end (2.1 also tells 0
apart by DISCONNECT against CLIENT_OFFLINE): a session with interval 0 is neither listed nor
counted after its disconnect; a finite one is listed with the broker's expiry time and leaves the
list and kubemq_mqtt_subscriptions in the second after it, when the broker drops it; a DISCONNECT
packet's Session Expiry Interval is the one followed.

Where no layout is verified (UnknownLayoutExpiryTest: plugin_opt_client_layout off, what a build
of unknown layout shows), 2.1 still follows a session's end: the broker expires it without a
plugin event (src/session_expiry.c: session_expiry__check, v2.1.2 and master), and the plugin
asks the broker at TICK whether it still holds the session's client (mosquitto_client)."""

import calendar
import math
import re
import time
import unittest

from harness import Client, SharedBrokerTestCase, wait_for

OFFLINE = "MQTT_CONNECTION_STATE_OFFLINE"


def unix_seconds(rfc3339):
    """Whole seconds of an RFC 3339 UTC time ("2026-12-02T02:30:03Z", fraction ignored)."""
    match = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z", rfc3339)
    assert match, rfc3339
    return calendar.timegm(time.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S"))


class ExpiryTestCase(SharedBrokerTestCase):
    """What the suites below read: a client id's listed entries and the events gauge."""

    def entries(self, client_id):
        return self.broker.rich_connections(f'client_id = "{client_id}"')

    def offline(self, client_id):
        return [c for c in self.entries(client_id) if c["state"] == OFFLINE]

    def closed(self, client_id):
        return [c for c in self.entries(client_id) if c["state"] == "MQTT_CONNECTION_STATE_CLOSED"]

    def events_gauge(self):
        return self.broker.subscriptions_gauge("events")

    def subscribed_session(self, client_id, session_expiry):
        client = Client(self.broker, client_id, version=5, clean=False,
                        session_expiry=session_expiry)
        client.subscribe(f"events/expiry/{client_id}", qos=1)
        return client


class SessionExpiryTest(ExpiryTestCase):
    layout_prefix = "expiry-layout"  # clean sessions, so that nothing of them stays listed

    def test_a_session_with_interval_0_ends_with_its_connection(self):
        baseline = self.events_gauge()
        client = self.subscribed_session("expiry-zero", 0)
        wait_for(lambda: self.events_gauge() == baseline + 1, what="the subscription counted")
        client.disconnect()
        wait_for(lambda: self.closed("expiry-zero"), what="the connection closed")
        self.assertEqual(self.offline("expiry-zero"), [])
        self.assertEqual(self.events_gauge(), baseline)
        # The broker agrees: nothing to resume.
        again = self.subscribed_session("expiry-zero", 0)
        self.clients.append(again)
        self.assertFalse(again.session_present)

    def test_a_finite_interval_is_listed_with_its_time_until_the_broker_expires_it(self):
        baseline = self.events_gauge()
        client = self.subscribed_session("expiry-three", 3)
        before = time.time()
        client.disconnect()
        listed = wait_for(lambda: self.offline("expiry-three"), what="the offline session")
        seen = time.time()
        # The broker's session_expiry_time: its loop's whole second at the disconnect + 3.
        expiry = unix_seconds(listed[0]["sessionExpiryTime"])
        self.assertGreaterEqual(expiry, math.floor(before) + 3)
        self.assertLessEqual(expiry, math.floor(seen) + 3)
        self.assertEqual([s["filter"] for s in listed[0]["subscriptions"]],
                         ["events/expiry/expiry-three"])
        self.assertEqual(self.events_gauge(), baseline + 1)
        # Gone in the second after it, list and gauge alike, as the broker drops it.
        wait_for(lambda: not self.offline("expiry-three"), timeout=expiry + 4 - time.time(),
                 what="the expired session gone")
        self.assertGreaterEqual(time.time(), expiry + 1 - 0.2)
        self.assertEqual(self.events_gauge(), baseline)
        wait_for(lambda: "Expiring client expiry-three due to timeout." in self.broker.log(),
                 timeout=2, what="the broker's own expiry")

    def test_a_disconnect_that_changes_the_interval_is_followed(self):
        baseline = self.events_gauge()
        shortened = self.subscribed_session("expiry-shortened", 3600)
        ended = self.subscribed_session("expiry-ended", 3600)
        before = time.time()
        shortened.disconnect(session_expiry=1)
        ended.disconnect(session_expiry=0)
        listed = wait_for(lambda: self.offline("expiry-shortened"), what="the offline session")
        wait_for(lambda: self.closed("expiry-ended"), what="the other connection closed")
        self.assertEqual(self.offline("expiry-ended"), [])
        expiry = unix_seconds(listed[0]["sessionExpiryTime"])
        self.assertGreaterEqual(expiry, math.floor(before) + 1)
        self.assertLess(expiry, math.floor(before) + 60)  # not the hour it connected with
        wait_for(lambda: not self.offline("expiry-shortened"), timeout=expiry + 4 - time.time(),
                 what="the expired session gone")
        self.assertEqual(self.events_gauge(), baseline)


class UnknownLayoutExpiryTest(ExpiryTestCase):
    """2.1 with the client layout turned off (plugin_opt_client_layout off): the interval is not
    read, so an MQTT 5 session is listed with no time, and leaves the list within about a second
    of the broker expiring it, found through the broker's own client lookup."""

    broker_arguments = {"options": {"client_layout": "off"}}

    def test_the_layout_is_off_and_said_so(self):
        client = Client(self.broker, "expiry-off-first", version=5)
        self.clients.append(client)
        log = self.broker.log()
        self.assertIn("broker layout: unknown: plugin_opt_client_layout off; session expiry, "
                      "bridges and message queues are shown as unknown", log)
        self.assertNotIn("broker layout: verified", log)

    def test_a_session_leaves_the_list_when_the_broker_expires_it(self):
        baseline = self.events_gauge()
        client = self.subscribed_session("expiry-unknown", 3)
        client.disconnect()
        listed = wait_for(lambda: self.offline("expiry-unknown"), what="the offline session")
        self.assertNotIn("sessionExpiryTime", listed[0])  # the interval was not read
        self.assertEqual(self.events_gauge(), baseline + 1)
        expired = "Expiring client expiry-unknown due to timeout."
        wait_for(lambda: expired in self.broker.log(), timeout=10, what="the broker's own expiry")
        at = time.monotonic()
        wait_for(lambda: not self.offline("expiry-unknown"), timeout=3,
                 what="the expired session gone")
        self.assertLess(time.monotonic() - at, 3)
        self.assertEqual(self.events_gauge(), baseline)

    def test_a_session_the_broker_holds_stays_and_resumes_whole(self):
        client = self.subscribed_session("expiry-held", 60)
        client.disconnect()
        wait_for(lambda: self.offline("expiry-held"), what="the offline session")
        time.sleep(2.5)  # more than two rounds of the plugin's checks
        self.assertEqual(len(self.offline("expiry-held")), 1)
        again = Client(self.broker, "expiry-held", version=5, clean=False, session_expiry=60)
        self.clients.append(again)
        self.assertTrue(again.session_present)
        listed = wait_for(lambda: [c for c in self.entries("expiry-held")
                                   if c["state"] == "MQTT_CONNECTION_STATE_OPEN"],
                          what="the resumed connection")
        self.assertEqual([s["filter"] for s in listed[0]["subscriptions"]],
                         ["events/expiry/expiry-held"])
        time.sleep(1.5)  # the checks leave a resumed session to its connection
        self.assertEqual(self.offline("expiry-held"), [])
        self.assertEqual(len([c for c in self.entries("expiry-held")
                              if c["state"] == "MQTT_CONNECTION_STATE_OPEN"]), 1)
        again.disconnect(session_expiry=0)


if __name__ == "__main__":
    unittest.main()
