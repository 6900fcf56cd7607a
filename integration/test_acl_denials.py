# SPDX-License-Identifier: BSD-3-Clause
"""ACL denials per connection and in total, against the real broker (docs/api.md, "Denials").

A client publishes on a topic an acl_file refuses, and a client subscribes to and publishes on
topics an ACL-only plugin loaded after this one refuses (the neutrality test plugin: deny/
refused, ok/ allowed). What the rich API shows (deniedPublishCount, deniedSubscribeCount,
lastDeniedTopic, lastDeniedTime), what a filter and an order find, and the totals of /metrics
(mosquitto_connections_acl_denials_total{access}) must be what the broker refused: the client's
own PUBACK/SUBACK reason codes say so (MQTT 5).

Where the broker hides denials from the plugin (2.1 with another ACL source; 2.0 with an ACL
plugin it cannot ask), the start line says so, and the four fields and the family are left out:
never a 0 that only looks like a count.
"""

import re
import time
import unittest

from harness import BROKER_VERSION, Broker, Client, hides_acl_answers
from test_auth_neutrality import poll, record_pubacks, test_plugin_lines
from test_list_connections import by_client, connections, list_connections
from test_metrics import Metrics

SETTLE_TIMEOUT = 5.0
HIDDEN_LINE = "ACL denials are not shown"
FAMILY = "mosquitto_connections_acl_denials_total"
# Anonymous clients (lines before any `user`): open/ in both directions, nothing else.
ACL_FILE = "topic readwrite open/#\n"


def unix_ns(rfc3339):
    match = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{9})Z", rfc3339)
    assert match, rfc3339
    seconds = time.mktime(time.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S")) - time.timezone
    return int(seconds) * 1_000_000_000 + int(match.group(2))


def denials_shown(broker):
    """Whether this broker shows ACL denials with its ACL sources, as its start line says."""
    return HIDDEN_LINE not in broker.log() and not hides_acl_answers(broker)


def totals(broker):
    """{access: count} of the family, or None where it is left out."""
    metrics = Metrics(broker)
    if FAMILY not in metrics.types:
        return None
    return {access: metrics.get(FAMILY, access=access) for access in ("publish", "subscribe")}


def denial_fields(connection):
    return {key: connection[key] for key in ("deniedPublishCount", "deniedSubscribeCount",
                                             "lastDeniedTopic", "lastDeniedTime")
            if key in connection}


class AclDenialsTest(unittest.TestCase):
    maxDiff = None

    def check_hidden(self, broker, client_id):
        """The broker hides denials: its start line says so, and nothing looks like a count."""
        self.assertIn(HIDDEN_LINE if BROKER_VERSION >= (2, 1, 0) else "mosquitto_acl_check",
                      broker.log())
        connection = poll(lambda: by_client(broker, client_id), lambda c: c is not None,
                          SETTLE_TIMEOUT)
        self.assertEqual(denial_fields(connection), {})
        self.assertIsNone(totals(broker))

    def subscribed_client(self, broker, client_id, suback_codes):
        """An MQTT 5 client subscribed at QoS 1 to each filter of `suback_codes`, the broker's
        SUBACK code checked for each."""
        client = Client(broker, client_id, version=5)
        for topic_filter, code in suback_codes.items():
            self.assertEqual(client.subscribe(topic_filter, 1), [code], topic_filter)
        return client

    def check_one_publish_denied(self, broker, client_id, client, topics, refused,
                                 subscribes_denied):
        """Publishes at QoS 1 on the two `topics`, of which the broker refuses `refused`. Once
        both PUBACKs came back, the client shows that denial and `subscribes_denied` refused
        SUBSCRIBEs, lastDeniedTime between the publishes and their PUBACKs, and so do the totals.
        False where the broker hides denials (checked to show nothing)."""
        pubacks = record_pubacks(client.client)
        start = time.time_ns()
        for topic in topics:
            client.publish(topic, b"x", qos=1).wait_for_publish()
        end = time.time_ns()
        self.assertEqual(sorted(poll(lambda: list(pubacks.values()),
                                     lambda codes: len(codes) == 2, SETTLE_TIMEOUT)),
                         [0, 0x87])
        if not denials_shown(broker):
            self.check_hidden(broker, client_id)
            return False
        connection = poll(lambda: by_client(broker, client_id),
                          lambda c: c and c.get("deniedPublishCount") == "1", SETTLE_TIMEOUT)
        fields = denial_fields(connection)
        self.assertLessEqual(start, unix_ns(fields.pop("lastDeniedTime")))
        self.assertLessEqual(unix_ns(connection["lastDeniedTime"]), end)
        self.assertEqual(fields, {"deniedPublishCount": "1",
                                  "deniedSubscribeCount": str(subscribes_denied),
                                  "lastDeniedTopic": refused})
        self.assertEqual(totals(broker), {"publish": 1, "subscribe": subscribes_denied})
        return True

    def test_a_publish_the_acl_file_refuses(self):
        with Broker(extra="acl_file {dir}/acl", files={"acl": ACL_FILE}) as broker:
            # 2.0 and 2.1's acl_file allow every SUBSCRIBE: its refusal comes at delivery.
            client = self.subscribed_client(broker, "refused-writer", {"secret/#": 1, "open/#": 1})
            if not self.check_one_publish_denied(broker, "refused-writer", client,
                                                 ["open/a", "secret/x"], "secret/x",
                                                 subscribes_denied=0):
                return
            # A filter and an order find it; a client that was refused nothing shows zeros.
            quiet = Client(broker, "quiet", version=4)
            poll(lambda: by_client(broker, "quiet"), lambda c: c is not None, SETTLE_TIMEOUT)
            found = [c["clientId"] for c in connections(broker, "denied_publish_count > 0")]
            self.assertEqual(found, ["refused-writer"])
            status, _, body = list_connections(
                broker, {"orderBy": "denied_publish_count desc",
                         "filter": "state = MQTT_CONNECTION_STATE_OPEN"})
            self.assertEqual(status, 200, body)
            self.assertEqual([c["clientId"] for c in body["connections"]],
                             ["refused-writer", "quiet"])
            self.assertEqual(denial_fields(by_client(broker, "quiet")),
                             {"deniedPublishCount": "0", "deniedSubscribeCount": "0"})
            # Closed, it keeps them; the total counts what closed connections were refused.
            client.disconnect()
            closed = poll(lambda: by_client(broker, "refused-writer",
                                            "MQTT_CONNECTION_STATE_CLOSED"),
                          lambda c: c is not None, SETTLE_TIMEOUT)
            self.assertEqual(closed["deniedPublishCount"], "1")
            self.assertEqual(closed["lastDeniedTopic"], "secret/x")
            quiet.disconnect()
            self.assertEqual(totals(broker), {"publish": 1, "subscribe": 0})
        broker.cleanup_dir()

    def test_a_subscribe_and_a_publish_an_acl_plugin_after_this_one_refuses(self):
        with Broker(plugin_after=test_plugin_lines("acl")) as broker:
            client = self.subscribed_client(broker, "refused-reader", {"ok/#": 1, "deny/#": 0x87})
            if not self.check_one_publish_denied(broker, "refused-reader", client,
                                                 ["deny/x", "ok/x"], "deny/x",
                                                 subscribes_denied=1):
                return
            client.disconnect()
        broker.cleanup_dir()

    def test_without_another_acl_source_nothing_is_refused_and_zeros_are_shown(self):
        with Broker() as broker:
            client = Client(broker, "free", version=4)
            self.assertEqual(client.subscribe("any/#", 1), [1])
            client.publish("any/x", b"x", qos=1).wait_for_publish()
            self.assertNotIn(HIDDEN_LINE, broker.log())
            connection = poll(lambda: by_client(broker, "free"), lambda c: c is not None,
                              SETTLE_TIMEOUT)
            self.assertEqual(denial_fields(connection),
                             {"deniedPublishCount": "0", "deniedSubscribeCount": "0"})
            self.assertEqual(totals(broker), {"publish": 0, "subscribe": 0})
            client.disconnect()
        broker.cleanup_dir()


if __name__ == "__main__":
    unittest.main()
