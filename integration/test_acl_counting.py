# SPDX-License-Identifier: BSD-3-Clause
"""Deliveries and subscriptions counted as the broker really decides them, whatever decides the
ACL: an acl_file, dynamic security, or any plugin loaded after this one.

The broker asks the ACL_CHECK callbacks in order, and this plugin's runs before the acl_file
check and before plugins loaded after it. Each test compares what the plugin reports (metric
deltas, each connection's deliverCount / deliverBytes, the subscriptions listed) with what the
clients really received or were granted.
"""

import json
import os
import random
import shutil
import tempfile
import time
import unittest

from harness import Broker, Client, hides_acl_answers, wait_for
from test_auth_neutrality import DYNSEC_DENY_ROLES, DYNSEC_LINES, make_dynsec_file, poll
from test_list_connections import by_client
from test_metrics import Metrics, delta, v5_properties, wait_metrics

PATTERNS = ("events", "store", "queues")
SETTLE_TIMEOUT = 5.0  # counters and listings reach the companion a little after the broker


def pattern_of(topic):
    """The KubeMQ pattern of the topics used here (default pattern: events)."""
    first = topic.split("/", 1)[0]
    return first if first in PATTERNS else "events"


def deliveries_by_pattern(before, after):
    """Delivery counter deltas per pattern, every status summed."""
    return {p: sum(delta(before, after, f"deliver_{p}", s) for s in ("success", "error",
                                                                      "dropped"))
            for p in PATTERNS}


def received_by_pattern(clients):
    counts = {p: 0 for p in PATTERNS}
    for client in clients:
        for topic, _ in client.messages:
            counts[pattern_of(topic)] += 1
    return counts


def reported_statistics(broker, clients):
    """{client id: (deliverCount, deliverBytes)} as ListConnections reports them."""
    result = {}
    for client in clients:
        connection = by_client(broker, client.client._client_id.decode())
        stats = connection["totalRequestStatistics"] if connection else {}
        result[client.client._client_id.decode()] = (int(stats.get("deliverCount", -1)),
                                                     int(stats.get("deliverBytes", -1)))
    return result


def received_statistics(clients):
    return {c.client._client_id.decode(): (len(c.messages), sum(len(p) for _, p in c.messages))
            for c in clients}


def wait_quiet(clients, quiet=0.3, limit=3.0):
    """Returns once no client received anything for `quiet` seconds (or after `limit`)."""
    total = lambda: sum(len(c.messages) for c in clients)
    last, since, deadline = total(), time.monotonic(), time.monotonic() + limit
    while time.monotonic() < deadline and time.monotonic() - since < quiet:
        time.sleep(0.05)
        if total() != last:
            last, since = total(), time.monotonic()


# The scenario of the report this test came from: topic read rules with a deny line, the two
# patterns, three subscribers on events/#, store/# and queues/#, and a writer publishing 12.
ISSUE_ACL = """\
user writer
topic write #

user alice
topic read events/#
topic deny events/secret
topic deny events/e4

user bob
topic read events/#
topic deny events/secret

user carol
topic read nothing/#

pattern read store/%u/#
pattern read queues/%c/#
"""
ISSUE_TOPICS = ["events/e1", "events/e2", "events/e3", "events/e4", "events/secret",
                "store/bob/1", "store/bob/2", "store/alice/1", "store/dave/1",
                "queues/sub-bob/job", "queues/sub-carol/job", "queues/nobody/job"]


class AclFileCountingTest(unittest.TestCase):
    maxDiff = None

    def test_deliveries_an_acl_file_refuses_are_not_counted(self):
        with Broker(extra="acl_file {dir}/acl", files={"acl": ISSUE_ACL}) as broker:
            subscribers = [Client(broker, f"sub-{name}", version=4, username=name)
                           for name in ("alice", "bob", "carol")]
            for sub in subscribers:
                for topic in ("events/#", "store/#", "queues/#"):
                    self.assertEqual(sub.subscribe(topic, 1), [1])
            writer = Client(broker, "writer", version=4, username="writer")
            before = Metrics(broker)
            for topic in ISSUE_TOPICS:
                writer.publish(topic, topic.encode(), qos=1)
            wait_for(lambda: [len(s.messages) for s in subscribers] == [4, 7, 1],
                     what="4, 7 and 1 deliveries")
            wait_quiet(subscribers)
            self.assertEqual([len(s.messages) for s in subscribers], [4, 7, 1])
            expected = {"events": 7, "store": 3, "queues": 2}
            after = poll(lambda: Metrics(broker),
                         lambda m: deliveries_by_pattern(before, m) == expected, SETTLE_TIMEOUT)
            self.assertEqual(deliveries_by_pattern(before, after), expected)
            for p in PATTERNS:
                self.assertEqual(delta(before, after, f"deliver_{p}", "success"), expected[p])
            self.assertEqual(delta(before, after, "publish_events", "success"), 5)
            reported = poll(lambda: reported_statistics(broker, subscribers),
                            lambda r: r == received_statistics(subscribers), SETTLE_TIMEOUT)
            self.assertEqual(reported, received_statistics(subscribers))
            for c in subscribers + [writer]:
                c.disconnect()
        broker.cleanup_dir()

    def test_a_response_the_acl_file_keeps_from_its_requester_is_not_a_delivery(self):
        acl = ("user requester\ntopic write commands/#\ntopic read replies/ok/#\n\n"
               "user responder\ntopic read commands/#\ntopic write replies/#\n")
        with Broker(extra="acl_file {dir}/acl", files={"acl": acl},
                    options={"rpc_timeout": "30"}) as broker:
            responder = Client(broker, "responder", version=5, username="responder")

            def answer(client, userdata, message):
                client.publish(message.properties.ResponseTopic, b"done", qos=1,
                               properties=v5_properties(
                                   correlation=message.properties.CorrelationData))
            responder.client.on_message = answer
            responder.subscribe("commands/svc/#", 1)
            requester = Client(broker, "requester", version=5, username="requester")
            requester.subscribe("replies/#", 1)
            before = Metrics(broker)
            requester.publish("commands/svc/a", b"go", qos=1,
                              properties=v5_properties("replies/ok/1", b"c1"))
            wait_for(lambda: len(requester.messages) == 1, what="the allowed response")
            # The second response reaches the broker, which keeps it from the requester.
            requester.publish("commands/svc/b", b"go", qos=1,
                              properties=v5_properties("replies/no/2", b"c2"))
            after = wait_metrics(broker, lambda m: delta(before, m, "rpc_response", "dropped"),
                                 what="the undelivered response")
            self.assertEqual(requester.messages, [("replies/ok/1", b"done")])
            self.assertEqual(delta(before, after, "rpc_command", "success"), 2)
            self.assertEqual(delta(before, after, "rpc_response", "success"), 1)
            self.assertEqual(delta(before, after, "rpc_response", "dropped"), 1)
            self.assertEqual(reported_statistics(broker, [requester]), {"requester": (1, 4)})
            for c in (responder, requester):
                c.disconnect()
        broker.cleanup_dir()

    def test_random_acl_files_count_what_the_clients_receive(self):
        """Differential: random acl_file rules, users, subscriptions and topics; the plugin's
        counts must equal what the clients received, whatever the rules say."""
        seed = int(os.environ.get("MQC_ACL_SEED", random.randrange(1 << 30)))
        for round_ in range(4):
            with self.subTest(seed=seed, round=round_):
                self.run_random_case(random.Random(seed * 10 + round_),
                                     f"MQC_ACL_SEED={seed} round {round_}")

    def run_random_case(self, rng, name):
        users = ["u0", "u1", "u2"]
        words = ["x", "y"] + users + [f"c-{u}" for u in users]
        topics = sorted({f"{rng.choice(PATTERNS + ('misc',))}/{rng.choice(words)}/"
                         f"{rng.choice(['1', '2'])}" for _ in range(14)})

        def random_filter():
            levels = rng.choice(topics).split("/")
            cut = rng.randrange(1, 4)  # the first level stays: no rule reaches done/
            if cut == 3:
                return "/".join(levels)
            if rng.random() < 0.5:
                return "/".join(levels[:cut] + ["#"])
            levels[cut] = "+"
            return "/".join(levels)

        def random_pattern():
            root = rng.choice(PATTERNS + ("misc",))
            return f"{root}/{rng.choice(['%u', '%c'])}/{rng.choice(['#', '1', '+'])}"

        access = ["read", "read", "readwrite", "write", "deny"]
        lines = [f"topic {rng.choice(access)} {random_filter()}" for _ in range(rng.randrange(3))]
        for user in users:
            lines.append(f"\nuser {user}")
            lines += [f"topic {rng.choice(access)} {random_filter()}"
                      for _ in range(rng.randrange(1, 5))]
        lines += ["\nuser writer", "topic write #", ""]
        lines += [f"pattern {rng.choice(access)} {random_pattern()}"
                  for _ in range(rng.randrange(4))]
        lines.append("pattern read done/%c")  # the end marker, readable by every subscriber
        acl = "\n".join(lines) + "\n"
        filters = {}
        broker = Broker(extra="acl_file {dir}/acl", files={"acl": acl})
        broker.start()
        try:
            subscribers = [Client(broker, f"c-{u}", version=rng.choice((4, 5)), username=u)
                           for u in users]
            subscribers.append(Client(broker, "c-anon", version=4))
            for sub in subscribers:
                sub_id = sub.client._client_id.decode()
                # One filter for MQTT 3.1.1: the broker sends such a client one copy of a
                # message its overlapping subscriptions match, and the plugin counts one per
                # subscription (README, "What cannot be known"), which is not the ACL's doing.
                count = rng.randrange(1, 4) if sub.version == 5 else 1
                filters[sub_id] = sorted({random_filter() for _ in range(count)})
                for f in filters[sub_id] + [f"done/{sub_id}"]:
                    self.assertEqual(sub.subscribe(f, 1), [1], name)
            writer = Client(broker, "writer", version=4, username="writer")
            before = Metrics(broker)
            for topic in topics:
                writer.publish(topic, f"{topic} {rng.randrange(1000)}".encode(), qos=1)
            # Messages reach a subscription in order: its own end marker comes last.
            for sub in subscribers:
                marker = f"done/{sub.client._client_id.decode()}"
                writer.publish(marker, b"end", qos=1)
            for sub in subscribers:
                marker = f"done/{sub.client._client_id.decode()}"
                wait_for(lambda: any(t == marker for t, _ in sub.messages),
                         what=f"end marker of {marker} ({name})")
            wait_quiet(subscribers)
            expected = received_by_pattern(subscribers)
            after = poll(lambda: Metrics(broker),
                         lambda m: deliveries_by_pattern(before, m) == expected,
                         SETTLE_TIMEOUT)
            context = f"{name}\nacl_file:\n{acl}\nfilters: {filters}\ntopics: {topics}"
            self.assertEqual(deliveries_by_pattern(before, after), expected, context)
            reported = poll(lambda: reported_statistics(broker, subscribers),
                            lambda r: r == received_statistics(subscribers),
                            SETTLE_TIMEOUT)
            self.assertEqual(reported, received_statistics(subscribers), context)
            for c in subscribers + [writer]:
                c.disconnect()
        finally:
            broker.stop()
            broker.cleanup_dir()


def listed_filters(broker, client_id, expected):
    """The filters listed for `client_id` once they are `expected`, or as they are at the timeout.
    Waits for the whole list, not its length: a listing passes through other lists of the same
    length while the companion catches up with a client's last SUBSCRIBE and UNSUBSCRIBE."""
    listed = poll(lambda: broker.connection(client_id),
                  lambda c: c is not None and [s["filter"] for s in c["subscriptions"]] == expected,
                  SETTLE_TIMEOUT)
    return None if listed is None else [s["filter"] for s in listed["subscriptions"]]


class DynamicSecurityCountingTest(unittest.TestCase):
    """Dynamic security loaded after the plugin (as advised): its refusals are not counted, where
    the broker lets the plugin know them; elsewhere exactly what is counted then is pinned."""

    maxDiff = None

    @classmethod
    def setUpClass(cls):
        workdir = tempfile.mkdtemp(prefix="mqc-acl-")
        try:
            cls.dynsec = make_dynsec_file(workdir)
            cls.dynsec_deny = make_dynsec_file(workdir, DYNSEC_DENY_ROLES)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def test_a_subscription_dynamic_security_refuses_is_not_listed(self):
        with Broker(plugin_after=DYNSEC_LINES, files={"dynsec.json": self.dynsec}) as broker:
            # "other" may subscribe to other/# only (otherrole); the default refuses the rest.
            other = Client(broker, "dyn-other", version=5, username="other", password="pass2")
            self.assertEqual(other.subscribe("other/#", 1), [1])
            self.assertEqual(other.subscribe("user/#", 1), [0x87])
            other.subscribe("events/x", 0)
            other.unsubscribe("other/#")
            other.subscribe("other/#", 1)
            # Hidden answers: every SUBSCRIBE and UNSUBSCRIBE is taken as allowed.
            expected, requests = ((["user/#", "events/x", "other/#"], "5")
                                  if hides_acl_answers(broker) else (["other/#"], "3"))
            self.assertEqual(listed_filters(broker, "dyn-other", expected), expected)
            # requestCount: the publishes and the subscriptions the broker accepted.
            self.assertEqual(by_client(broker, "dyn-other")["totalRequestStatistics"]
                             ["requestCount"], requests)
            other.disconnect()
        broker.cleanup_dir()

    def test_an_unsubscribe_dynamic_security_refuses_keeps_the_subscription_listed(self):
        with Broker(plugin_after=DYNSEC_LINES,
                    files={"dynsec.json": self.dynsec_deny}) as broker:
            # otherrole (deny roles): no unsubscribing from other/keep/#.
            other = Client(broker, "dyn-other", version=5, username="other", password="pass2")
            self.assertEqual(other.subscribe("other/keep/#", 1), [1])
            self.assertEqual(other.subscribe("other/free/#", 1), [1])
            other.unsubscribe("other/keep/#")
            other.unsubscribe("other/free/#")
            expected = [] if hides_acl_answers(broker) else ["other/keep/#"]
            self.assertEqual(listed_filters(broker, "dyn-other", expected), expected)
            other.disconnect()
        broker.cleanup_dir()

    def test_deliveries_dynamic_security_refuses_are_not_counted(self):
        with Broker(plugin_after=DYNSEC_LINES, files={"dynsec.json": self.dynsec}) as broker:
            # "user" subscribes to everything but is not to receive other/# (userrole).
            user = Client(broker, "dyn-user", version=4, username="user", password="pass")
            self.assertEqual(user.subscribe("#", 1), [1])
            other = Client(broker, "dyn-other", version=4, username="other", password="pass2")
            before = Metrics(broker)
            for i in range(3):
                other.publish(f"other/{i}", b"12345", qos=1)
            user.publish("user/mine", b"123", qos=1)
            wait_for(lambda: len(user.messages) == 1, what="user's own message")
            wait_quiet([user])
            self.assertEqual(user.messages, [("user/mine", b"123")])
            # Hidden answers: the three messages dynamic security kept from "user" count too.
            count, size = (4, 3 * 5 + 3) if hides_acl_answers(broker) else (1, 3)
            after = poll(lambda: Metrics(broker),
                         lambda m: deliveries_by_pattern(before, m)["events"] == count,
                         SETTLE_TIMEOUT)
            self.assertEqual(deliveries_by_pattern(before, after),
                             {"events": count, "store": 0, "queues": 0})
            self.assertEqual(delta(before, after, "publish_events", "success"), 4)
            reported = poll(lambda: reported_statistics(broker, [user]),
                            lambda r: r == {"dyn-user": (count, size)}, SETTLE_TIMEOUT)
            self.assertEqual(reported, {"dyn-user": (count, size)})
            user.disconnect()
            other.disconnect()
        broker.cleanup_dir()


if __name__ == "__main__":
    unittest.main()
