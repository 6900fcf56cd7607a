# SPDX-License-Identifier: BSD-3-Clause
"""Auth neutrality: loading the plugin changes no CONNACK, SUBACK, PUBACK or delivery.

The plugin registers BASIC_AUTH and ACL_CHECK only to watch, yet a callback that always defers
would itself change the broker's answers (docs/broker-versions.md, "Mosquitto 2.0": auth neutrality). So every
set-up below runs the same scenario twice, once on plain Mosquitto and once with the plugin,
records every outcome into plain data and compares the two: any difference shows in the diff.

The scenario, for MQTT 3.1.1 and MQTT 5 clients alike:
  1. CONNECT with no username, a valid username/password (two users), a wrong password, a
     username without password, an unknown user and (MQTT 5) an authentication method;
     record each CONNACK code.
  2. Every client that got CONNACK 0 subscribes (QoS 1, one SUBSCRIBE per filter) to filters
     that the ACL set-ups allow or deny; record the granted QoS / reason codes.
  3. Every connected client publishes one QoS 1 message to each of several topics; record the
     PUBACK reason code (MQTT 5 only: 3.1.1 has none) and, per subscriber, exactly which
     (topic, payload) it received, as a sorted list so that duplicates count too.
With the plugin, GET /api/mqtt/connections must list exactly the clients that got CONNACK 0.
"""

import concurrent.futures
import json
import os
import re
import shutil
import tempfile
import time
import unittest

import broker_matrix
import harness

from harness import (MOSQUITTO_CTRL, MOSQUITTO_PASSWD, Broker, Client, broker_plugin,
                     broker_tool, hides_acl_answers)
from test_list_connections import by_client

DYNSEC_PLUGIN = broker_plugin("mosquitto_dynamic_security.so")
# Test plugins beside ours (tests/plugins/): a version 5 plugin that registers BASIC_AUTH, ACL_CHECK
# or both ("pluginuser"/"pluginpass" accepted, "blocked" refused; topics under ok/ allowed, under
# deny/ denied; the rest deferred), and one of the older interface (mosquitto_auth_*: "v4user"/
# "v4pass", "v4blocked"; v4ok/, v4deny/).
NEUTRALITY_PLUGIN = os.environ.get("MQC_NEUTRALITY_PLUGIN", "")
V4_AUTH_PLUGIN = os.environ.get("MQC_V4_AUTH_PLUGIN", "")

# Who connects, per protocol version: (kind, username, password, MQTT 5 authentication
# method). The client id is "<kind>-v<version>", the same in both runs, so that records compare
# key by key. "extauth" starts MQTT 5 enhanced authentication (EXT_AUTH_START, which the plugin
# also watches); MQTT 3.1.1 has no such thing, so it is left out there.
CLIENT_KINDS = [
    ("anon", None, None, None),
    ("user", "user", "pass", None),
    ("other", "other", "pass2", None),
    ("badpw", "user", "wrong", None),
    ("nopw", "user", None, None),
    ("unknown", "nobody", "pass", None),
    ("extauth", None, None, "SCRAM-SHA-1"),
]
VERSIONS = (4, 5)


def client_count(kinds):
    return sum(1 for v in VERSIONS for kind in kinds if v == 5 or not kind[3])


# The users, filters and topics the test plugins decide (only the set-ups with them run these).
PLUGIN_KINDS = [
    ("pluginuser", "pluginuser", "pluginpass", None),
    ("pluginbadpw", "pluginuser", "wrong", None),
    ("blocked", "blocked", "x", None),
    ("v4user", "v4user", "v4pass", None),
    ("v4blocked", "v4blocked", "x", None),
]
PLUGIN_FILTERS = ["ok/#", "deny/#", "v4ok/#", "v4deny/#"]
PLUGIN_TOPICS = ["ok/x", "deny/x", "v4ok/x", "v4deny/x"]

# Subscribed filters and published topics; "{me}" is the client's own id (for %c patterns).
FILTERS = ["#", "public/#", "anon/#", "user/#", "other/#", "drop/#", "open/#",
           "clients/{me}/#", "clients/+/state", "home/+/mail", "$SYS/broker/nothing"]
TOPICS = ["public/news", "anon/chat", "user/data", "other/data", "drop/box", "open/x",
          "clients/{me}/state", "home/user/mail", "home/other/mail"]

# The ACL file of set-ups 5 and 6. Lines before the first `user` line apply to anonymous
# clients; `pattern` lines apply to everyone (%c = client id, %u = username).
ACL_FILE = """\
topic read public/#
topic readwrite anon/#

user user
topic readwrite user/#
topic read public/#
topic write drop/#

user other
topic read user/#
topic readwrite other/#
topic write public/#

pattern readwrite clients/%c/#
pattern read home/%u/#
"""

# Roles of the dynamic-security set-up: "user" has userrole (it may subscribe to anything but
# is not to receive other/#), "other" has otherrole, anonymous clients are in group "anon" with
# anonrole. Everything else falls to the default access (no publishing, no subscribing).
DYNSEC_ROLES = [
    {"rolename": "userrole", "acls": [
        {"acltype": "subscribePattern", "topic": "user/#", "allow": True},
        {"acltype": "publishClientSend", "topic": "user/#", "allow": True},
        {"acltype": "subscribeLiteral", "topic": "public/#", "allow": True},
        {"acltype": "publishClientSend", "topic": "drop/#", "allow": True},
        {"acltype": "subscribePattern", "topic": "clients/%c/#", "allow": True},
        {"acltype": "publishClientSend", "topic": "clients/%c/#", "allow": True},
        {"acltype": "subscribePattern", "topic": "#", "allow": True},
        {"acltype": "publishClientReceive", "topic": "other/#", "allow": False},
    ]},
    {"rolename": "anonrole", "acls": [
        {"acltype": "subscribeLiteral", "topic": "public/#", "allow": True},
        {"acltype": "subscribePattern", "topic": "anon/#", "allow": True},
        {"acltype": "publishClientSend", "topic": "anon/#", "allow": True},
        {"acltype": "publishClientSend", "topic": "public/#", "allow": True},
    ]},
    {"rolename": "otherrole", "acls": [
        {"acltype": "subscribeLiteral", "topic": "other/#", "allow": True},
        {"acltype": "publishClientSend", "topic": "other/#", "allow": True},
        {"acltype": "publishClientSend", "topic": "home/#", "allow": True},
    ]},
]

# The ACL file of the deny set-ups: read, write, readwrite, deny and pattern rules, where a
# deny line takes away part of what another line gives.
ACL_FILE_DENY = """\
topic read public/#
topic deny anon/chat
topic readwrite anon/#

user user
topic deny user/data
topic readwrite user/#
topic read #
topic write drop/#
topic deny other/#

user other
topic deny home/#
topic readwrite other/#
topic write public/#
topic write clients/#

pattern deny clients/%c/state
pattern readwrite clients/%c/#
pattern read home/%u/#
pattern write home/+/mail
"""

# Dynamic-security roles that refuse by explicit deny lines, not only by default: "user" may
# subscribe to anything but drop/# and user/#, and is not to receive other/# or public/#;
# "other" may subscribe to anything (but not unsubscribe from other/keep/#) and receive only
# other/# and home/#; anonymous clients may
# subscribe to public/# and anon/# but not to anon/private/#, and receive nothing on anon/chat.
DYNSEC_DENY_ROLES = [
    {"rolename": "userrole", "acls": [
        {"acltype": "subscribePattern", "topic": "drop/#", "priority": 5, "allow": False},
        {"acltype": "subscribePattern", "topic": "user/#", "priority": 5, "allow": False},
        {"acltype": "subscribePattern", "topic": "#", "allow": True},
        {"acltype": "publishClientReceive", "topic": "other/#", "priority": 5, "allow": False},
        {"acltype": "publishClientReceive", "topic": "public/#", "priority": 5, "allow": False},
        {"acltype": "publishClientSend", "topic": "#", "allow": True},
    ]},
    {"rolename": "otherrole", "acls": [
        {"acltype": "subscribePattern", "topic": "#", "allow": True},
        {"acltype": "unsubscribePattern", "topic": "other/keep/#", "priority": 5,
         "allow": False},
        {"acltype": "publishClientReceive", "topic": "other/#", "priority": 5, "allow": True},
        {"acltype": "publishClientReceive", "topic": "home/#", "priority": 5, "allow": True},
        {"acltype": "publishClientReceive", "topic": "#", "allow": False},
        {"acltype": "publishClientSend", "topic": "#", "allow": True},
    ]},
    {"rolename": "anonrole", "acls": [
        {"acltype": "subscribePattern", "topic": "anon/private/#", "priority": 5,
         "allow": False},
        {"acltype": "subscribePattern", "topic": "public/#", "allow": True},
        {"acltype": "subscribePattern", "topic": "anon/#", "allow": True},
        {"acltype": "publishClientReceive", "topic": "anon/chat", "priority": 5,
         "allow": False},
        {"acltype": "publishClientSend", "topic": "#", "allow": True},
    ]},
]

CONNECTIONS_TIMEOUT = 5.0  # the listing is updated by the companion, a little later
SETTLE_QUIET = 0.5         # deliveries are done when nothing new arrived for this long...
SETTLE_MAX = 3.0           # ...or after this long at most


def poll(read, done, timeout, interval=0.05):
    """Calls `read` until `done(value)` or `timeout` seconds; returns the last value (so that a
    failure can show it in a diff rather than as a bare timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value) or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def record_pubacks(client):
    """Records the PUBACK reason code per message id of an MQTT 5 paho client.

    paho 1.6.1 parses the code and drops it (on_publish gets the mid only), so the packet
    handler is wrapped; the code is the byte after the mid, 0 (success) when left out.
    """
    codes = {}
    original = client._handle_pubackcomp

    def handle(cmd):
        packet = client._in_packet["packet"]
        if cmd == "PUBACK" and len(packet) >= 2:
            mid = int.from_bytes(packet[:2], "big")
            codes[mid] = packet[2] if len(packet) > 2 else 0
        return original(cmd)

    client._handle_pubackcomp = handle
    return codes


def connect_with_auth_method(client, method, timeout=10):
    """An MQTT 5 CONNECT with an Authentication Method property (the harness's connect has no
    way to add it). paho cannot continue an AUTH exchange, but none is expected: with no
    extended-authentication plugin the broker answers "bad authentication method" at once."""
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties
    properties = Properties(PacketTypes.CONNECT)
    properties.AuthenticationMethod = method
    client.client.connect("127.0.0.1", client.broker.port, keepalive=60, clean_start=True,
                          properties=properties)
    client.client.loop_start()
    poll(lambda: client.connack, lambda code: code is not None, timeout)
    return client.connack


def make_password_file(workdir):
    """A password_file made by Mosquitto's own tool, for users "user" and "other"."""
    path = os.path.join(workdir, "passwd")
    broker_tool([MOSQUITTO_PASSWD, "-b", "-c", path, "user", "pass"], check=True,
                capture_output=True)
    broker_tool([MOSQUITTO_PASSWD, "-b", path, "other", "pass2"], check=True,
                capture_output=True)
    with open(path) as f:
        return f.read()


def make_dynsec_file(workdir, roles=None):
    """A dynamic-security config with `roles` (DYNSEC_ROLES by default). `mosquitto_ctrl dynsec
    init` hashes the passwords (it is the only offline tool that does); its admin role is then
    replaced by ours."""
    clients = []
    for username, password in (("user", "pass"), ("other", "pass2")):
        path = os.path.join(workdir, f"dynsec-{username}.json")
        broker_tool([MOSQUITTO_CTRL, "dynsec", "init", path, username, password],
                    check=True, capture_output=True)
        with open(path) as f:
            client = json.load(f)["clients"][0]
        client["roles"] = [{"rolename": f"{username}role"}]
        client.pop("textName", None)
        clients.append(client)
    return json.dumps({
        "clients": clients,
        "groups": [{"groupname": "anon", "roles": [{"rolename": "anonrole"}], "clients": []}],
        "roles": roles or DYNSEC_ROLES,
        "anonymousGroup": "anon",
        "defaultACLAccess": {"publishClientSend": False, "publishClientReceive": True,
                             "subscribe": False, "unsubscribe": True},
    }, indent=2)


def run_scenario(broker, check_listing, check_counts, clean=True, plugins=False):
    """Runs the scenario on a started broker and returns its outcomes as plain data.

    `check_listing(expected_ids, when)` and, once every delivery arrived,
    `check_counts(outcome, versions)` are called while the clients that got CONNACK 0 are
    connected (`versions`: client id -> MQTT version). `clean` false: persistent sessions
    (clean session / clean start false) for the clients with a username, which the broker
    saves in its persistence file. Anonymous clients stay clean then: Mosquitto 2.0.11 saves a
    client without a username after one with a username with that earlier username's length
    (persist__client_save reuses its chunk), reading past that string's end (ASan reports it
    in the broker). `plugins`: the test plugins' users, filters and topics too.
    """
    kinds = CLIENT_KINDS + (PLUGIN_KINDS if plugins else [])
    filters = FILTERS + (PLUGIN_FILTERS if plugins else [])
    topics = TOPICS + (PLUGIN_TOPICS if plugins else [])
    outcome = {"connack": {}, "suback": {}, "puback": {}, "received": {}}
    connected = []
    try:
        # 1. CONNECT: refused clients are closed at once (paho would retry every second).
        for version in VERSIONS:
            for kind, username, password, auth_method in kinds:
                if auth_method and version != 5:
                    continue
                client_id = f"{kind}-v{version}"
                client = Client(broker, client_id, version=version, username=username,
                                password=password, connect=False,
                                clean=clean or username is None)
                # paho retries a refused CONNECT every second, and its thread sleeps out that
                # second before it can be stopped; no client here should ever reconnect.
                client.client._reconnect_on_failure = False
                if auth_method:
                    connect_with_auth_method(client, auth_method)
                else:
                    client.connect()
                outcome["connack"][client_id] = client.connack
                if client.connack == 0:
                    connected.append((client_id, client))
                else:
                    client.disconnect()
        ids = sorted(client_id for client_id, _ in connected)
        check_listing(ids, "after CONNECT")

        # 2. SUBSCRIBE, one filter per packet so that each code is known by filter.
        for me, client in connected:
            outcome["suback"][me] = {f: client.subscribe(f.format(me=me), qos=1) for f in filters}

        # 3. PUBLISH from everyone, QoS 1: the PUBACK comes after the broker queued the
        # deliveries, so the received sets are complete once the traffic goes quiet.
        pending = []
        for me, client in connected:
            codes = record_pubacks(client.client) if client.version == 5 else None
            for template in topics:
                info = client.client.publish(template.format(me=me), f"from {me}".encode(), 1)
                pending.append((client, me, template, info, codes))
        for client, me, template, info, codes in pending:
            info.wait_for_publish(timeout=10)
            if not info.is_published():
                outcome["puback"].setdefault(me, {})[template] = "no PUBACK"
            elif codes is not None:
                outcome["puback"].setdefault(me, {})[template] = codes.get(info.mid)
        total = lambda: sum(len(c.messages) for _, c in connected)
        last, quiet_since, deadline = total(), time.monotonic(), time.monotonic() + SETTLE_MAX
        while time.monotonic() < deadline and time.monotonic() - quiet_since < SETTLE_QUIET:
            time.sleep(0.05)
            if total() != last:
                last, quiet_since = total(), time.monotonic()
        for me, client in connected:
            outcome["received"][me] = sorted(f"{t} <- {p.decode()}" for t, p in client.messages)
        check_listing(ids, "after PUBLISH")
        check_counts(outcome, {me: client.version for me, client in connected})
    finally:
        for _, client in connected:
            client.disconnect()
    return outcome


# Set-ups: name -> Broker keyword arguments (besides plugin=). Password and dynsec files are
# filled in by setUpClass. "{dir}" is the broker's own folder.
PASSWORD_FILE = "password_file {dir}/passwd"
ACL_LINE = "acl_file {dir}/acl"
DYNSEC_LINES = f"plugin {DYNSEC_PLUGIN}\nplugin_opt_config_file {{dir}}/dynsec.json"

SETUPS = {
    "open_anonymous_true": dict(allow_anonymous=True),
    "open_anonymous_false": dict(allow_anonymous=False),
    "open_anonymous_unset": dict(allow_anonymous=None),
    "password_anonymous_true": dict(allow_anonymous=True, extra=PASSWORD_FILE,
                                    files={"passwd": "PASSWD"}),
    "password_anonymous_false": dict(allow_anonymous=False, extra=PASSWORD_FILE,
                                     files={"passwd": "PASSWD"}),
    "password_acl_anonymous_true": dict(allow_anonymous=True,
                                        extra=PASSWORD_FILE + "\n" + ACL_LINE,
                                        files={"passwd": "PASSWD", "acl": ACL_FILE}),
    "password_acl_anonymous_false": dict(allow_anonymous=False,
                                         extra=PASSWORD_FILE + "\n" + ACL_LINE,
                                         files={"passwd": "PASSWD", "acl": ACL_FILE}),
    "acl_only_anonymous_true": dict(allow_anonymous=True, extra=ACL_LINE,
                                    files={"acl": ACL_FILE}),
    "password_acl_deny_rules": dict(allow_anonymous=True,
                                    extra=PASSWORD_FILE + "\n" + ACL_LINE,
                                    files={"passwd": "PASSWD", "acl": ACL_FILE_DENY}),
    "acl_only_deny_rules": dict(allow_anonymous=True, extra=ACL_LINE,
                                files={"acl": ACL_FILE_DENY}),
    # Debian's default: persistence on. The plugin then reads mosquitto.db at start.
    "password_acl_persistence": dict(allow_anonymous=True,
                                     extra=PASSWORD_FILE + "\n" + ACL_LINE, persistence=True,
                                     files={"passwd": "PASSWD", "acl": ACL_FILE}),
    # The password_file line in a file of include_dir, which the plugin must follow too.
    "password_in_include_dir": dict(allow_anonymous=True, extra="include_dir {dir}/conf.d",
                                    files={"passwd": "PASSWD",
                                           "conf.d/auth.conf": PASSWORD_FILE + "\n"}),
    "dynsec_anonymous_true": dict(allow_anonymous=True, plugin_after=DYNSEC_LINES,
                                  files={"dynsec.json": "DYNSEC"}),
    "dynsec_anonymous_false": dict(allow_anonymous=False, plugin_after=DYNSEC_LINES,
                                   files={"dynsec.json": "DYNSEC"}),
    "dynsec_deny_roles": dict(allow_anonymous=True, plugin_after=DYNSEC_LINES,
                              files={"dynsec.json": "DYNSEC_DENY"}),
    # Loaded before ours, against the plugin's advice (it logs a warning): still no change,
    # and the plugin must still find its own file and companion.
    "dynsec_before_plugin": dict(allow_anonymous=True, extra=DYNSEC_LINES,
                                 files={"dynsec.json": "DYNSEC"}),
    # 2.1's own ways to load a password or ACL check (integration/broker_matrix.py keeps them
    # from 2.0): a global_plugin, and plugin_load with plugin_use on the listener.
    "global_password_plugin": dict(
        allow_anonymous=False, files={"passwd": "PASSWD"},
        extra=f"global_plugin {broker_plugin('mosquitto_password_file.so')}\n"
              "plugin_opt_password_file {dir}/passwd"),
    "plugin_load_acl_file": dict(
        allow_anonymous=True, files={"acl": ACL_FILE_DENY},
        extra=f"plugin_load aclcheck {broker_plugin('mosquitto_acl_file.so')}\n"
              "plugin_opt_acl_file {dir}/acl",
        listener_extra="plugin_use aclcheck"),
}

# Another plugin after ours that registers only one of the two events, both, or answers through
# the older interface: 2.0 refuses what every callback defers and allows what no callback is
# asked, so the plugin must read which callbacks are there (src/broker/callback_chain.h).
def test_plugin_lines(events):
    return f"plugin {NEUTRALITY_PLUGIN}\nplugin_opt_events {events}"


V4_PLUGIN_LINE = f"plugin {V4_AUTH_PLUGIN}"
SETUPS.update({
    "auth_only_plugin": dict(allow_anonymous=True, test_plugins=True,
                             plugin_after=test_plugin_lines("auth")),
    "acl_only_plugin": dict(allow_anonymous=True, test_plugins=True,
                            plugin_after=test_plugin_lines("acl")),
    "acl_only_plugin_anonymous_false": dict(allow_anonymous=False, test_plugins=True,
                                            plugin_after=test_plugin_lines("acl")),
    "auth_and_acl_plugin": dict(allow_anonymous=True, test_plugins=True,
                                plugin_after=test_plugin_lines("both")),
    "auth_only_plugin_with_acl_file": dict(allow_anonymous=True, test_plugins=True,
                                           plugin_after=test_plugin_lines("auth"),
                                           extra=ACL_LINE, files={"acl": ACL_FILE}),
    "acl_only_plugin_with_password_file": dict(allow_anonymous=True, test_plugins=True,
                                               plugin_after=test_plugin_lines("acl"),
                                               extra=PASSWORD_FILE, files={"passwd": "PASSWD"}),
    "v4_plugin": dict(allow_anonymous=True, test_plugins=True, plugin_after=V4_PLUGIN_LINE),
    "v4_and_acl_only_plugin": dict(allow_anonymous=True, test_plugins=True,
                                   plugin_after=test_plugin_lines("acl") + "\n" +
                                   V4_PLUGIN_LINE),
})

# Set-ups run with persistent sessions, then once more after a restart of the broker (which
# restores them from its persistence file, and the plugin reads that file at start).
RESTART_BETWEEN_RUNS = {"password_acl_persistence"}

# Set-ups where the plugin is documented to miss some connections: a plugin loaded before it
# that answers BASIC_AUTH itself keeps the broker from calling ours (Mosquitto 2.0 has no other
# CONNECT event), so only "nothing refused is listed" holds there.
LISTING_MAY_MISS = {"dynsec_before_plugin"}


# Setups run side by side, each as its two brokers (with and without the plugin): the suite
# waits mostly on sockets and clocks, so four at once take about a quarter of the time of one
# after the other (docs/building.md, "How long the test command takes").
SETUPS_AT_ONCE = 4


def scenario(name):
    """Names the setup of SETUPS a test checks, so that setUpClass can start it early."""
    def mark(test):
        test.setup = name
        return test
    return mark


class AuthNeutralityTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        assert NEUTRALITY_PLUGIN and V4_AUTH_PLUGIN, \
            "MQC_NEUTRALITY_PLUGIN and MQC_V4_AUTH_PLUGIN must name the built test plugins"
        workdir = tempfile.mkdtemp(prefix="mqc-auth-")
        try:
            cls.generated = {"PASSWD": make_password_file(workdir),
                             "DYNSEC": make_dynsec_file(workdir),
                             "DYNSEC_DENY": make_dynsec_file(workdir, DYNSEC_DENY_ROLES)}
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        # Every setup the broker matrix keeps on this broker starts now, in test order; each
        # test waits for its own. (A run of one test still runs them all.)
        cls.pool = concurrent.futures.ThreadPoolExecutor(max_workers=2 * SETUPS_AT_ONCE)
        cls.runs = {}
        for attr in sorted(dir(cls)):
            test_id = f"{cls.__module__}.{cls.__qualname__}.{attr}"
            if attr.startswith("test_") and \
                    broker_matrix.skip_reason(test_id, harness.BROKER) is None:
                name = getattr(cls, attr).setup
                cls.runs[name] = (cls.pool.submit(cls.run_setup, name, False),
                                  cls.pool.submit(cls.run_setup, name, True))

    @classmethod
    def tearDownClass(cls):
        cls.pool.shutdown(wait=True, cancel_futures=True)

    @classmethod
    def run_setup(cls, name, plugin):
        kwargs = dict(SETUPS[name])
        plugins = kwargs.pop("test_plugins", False)
        kwargs["files"] = {file: cls.generated.get(content, content)
                           for file, content in kwargs.get("files", {}).items()}
        broker = Broker(plugin=plugin, **kwargs)
        listing_problems = []

        def check_listing(expected, when):
            if not plugin:
                return
            if name in LISTING_MAY_MISS:
                # Short wait, then only "nothing that was refused or is unknown is listed".
                listed = poll(lambda: sorted(c["client_id"] for c in broker.connections()),
                              lambda ids: ids == expected, 1.0)
                if not set(listed) <= set(expected):
                    listing_problems.append((when, {"expected at most": expected,
                                                    "listed": listed}))
                return
            listed = poll(lambda: sorted(c["client_id"] for c in broker.connections()),
                          lambda ids: ids == expected, CONNECTIONS_TIMEOUT)
            if listed != expected:
                listing_problems.append((when, {"expected": expected, "listed": listed}))

        def check_counts(outcome, versions):
            """The subscriptions listed are those granted, in packet order; an MQTT 5 client's
            deliverCount is what it received. (An MQTT 3.1.1 client gets one copy of a message
            its overlapping subscriptions match, counted per subscription: README.)"""
            if not plugin or name in LISTING_MAY_MISS:
                return
            if hides_acl_answers(broker):
                # What the plugin counts there is pinned by test_acl_counting's
                # DynamicSecurityCountingTest; the outcomes and the listing stay checked here.
                return
            expected = {}
            for me, codes in outcome["suback"].items():
                granted = [f.format(me=me) for f, code in codes.items() if code[0] < 0x80]
                if name in RESTART_BETWEEN_RUNS:
                    # A resumed session lists what the broker restored first, in the order of
                    # its mosquitto.db, so only the set is the client's.
                    granted.sort()
                received = len(outcome["received"][me]) if versions[me] == 5 else None
                expected[me] = (granted, received)

            def reported():
                result = {}
                for me, (_, received) in expected.items():
                    listed = broker.connection(me)
                    rich = by_client(broker, me)
                    count = None
                    if received is not None:
                        count = rich and int(rich["totalRequestStatistics"]["deliverCount"])
                    filters = [s["filter"] for s in listed["subscriptions"]] if listed else None
                    if filters is not None and name in RESTART_BETWEEN_RUNS:
                        filters.sort()
                    result[me] = (filters, count)
                return result
            counts = poll(reported, lambda r: r == expected, CONNECTIONS_TIMEOUT)
            if counts != expected:
                listing_problems.append(("subscriptions and deliveries",
                                         {"expected": expected, "reported": counts}))

        try:
            broker.start()
            if name in RESTART_BETWEEN_RUNS:
                first = run_scenario(broker, check_listing, check_counts, clean=False,
                                     plugins=plugins)
                broker.restart()
                outcome = {"before restart": first,
                           "after restart": run_scenario(broker, check_listing, check_counts,
                                                         plugins=plugins,
                                                         clean=False)}
                if plugin and not re.search(r"mosquitto_connections: [1-9]\d* persistent "
                                            r"sessions with", broker.log()):
                    listing_problems.append(("log", "no session read from mosquitto.db"))
            else:
                outcome = run_scenario(broker, check_listing, check_counts, plugins=plugins)
            if plugin and name in LISTING_MAY_MISS and \
                    "load this plugin before the other plugins" not in broker.log():
                listing_problems.append(("log", "no warning about the plugin load order"))
        except BaseException:
            print(f"\n--- broker log ({name}, plugin={plugin}) ---\n{broker.log()[-4000:]}")
            raise
        finally:
            broker.stop()
            broker.cleanup_dir()
        return outcome, listing_problems

    def check(self):
        name = getattr(type(self), self._testMethodName).setup
        plugins = SETUPS[name].get("test_plugins", False)
        plain, plugged = self.runs[name]
        without, _ = plain.result()
        with_plugin, listing_problems = plugged.result()
        # Guard against a vacuous pass: the scenario must have done something.
        for run in ([without["before restart"], without["after restart"]]
                    if name in RESTART_BETWEEN_RUNS else [without]):
            self.assertEqual(len(run["connack"]),
                             client_count(CLIENT_KINDS + (PLUGIN_KINDS if plugins else [])))
        self.assertEqual(with_plugin, without, f"{name}: outcomes differ with the plugin "
                         "(first = with plugin, second = plain Mosquitto)")
        self.assertEqual(listing_problems, [], f"{name}: /api/mqtt/connections")

    # 1-3: no authentication source at all.
    @scenario("open_anonymous_true")
    def test_no_auth_allow_anonymous_true(self):
        self.check()

    @scenario("open_anonymous_false")
    def test_no_auth_allow_anonymous_false(self):
        self.check()

    @scenario("open_anonymous_unset")
    def test_no_auth_no_allow_anonymous_line(self):
        # Mosquitto 2.0 with a listener and no allow_anonymous line refuses anonymous clients.
        self.check()

    # 4: password_file.
    @scenario("password_anonymous_true")
    def test_password_file_allow_anonymous_true(self):
        self.check()

    @scenario("password_anonymous_false")
    def test_password_file_allow_anonymous_false(self):
        self.check()

    # 5: password_file + acl_file.
    @scenario("password_acl_anonymous_true")
    def test_password_and_acl_file_allow_anonymous_true(self):
        self.check()

    @scenario("password_acl_anonymous_false")
    def test_password_and_acl_file_allow_anonymous_false(self):
        self.check()

    # 6: acl_file only.
    @scenario("acl_only_anonymous_true")
    def test_acl_file_only(self):
        self.check()

    # 7: the dynamic-security plugin, loaded after ours.
    @scenario("dynsec_anonymous_true")
    def test_dynamic_security_allow_anonymous_true(self):
        self.check()

    @scenario("dynsec_anonymous_false")
    def test_dynamic_security_allow_anonymous_false(self):
        self.check()

    # 8: deny and pattern rules in an acl_file, and dynamic-security roles that deny
    # subscriptions and deliveries: what the plugin counts and lists must follow them too.
    @scenario("password_acl_deny_rules")
    def test_password_and_acl_file_with_deny_rules(self):
        self.check()

    @scenario("acl_only_deny_rules")
    def test_acl_file_with_deny_rules_only(self):
        self.check()

    @scenario("dynsec_deny_roles")
    def test_dynamic_security_roles_that_deny(self):
        self.check()

    # 9: persistence on, the broker restarted between two runs of the scenario.
    @scenario("password_acl_persistence")
    def test_password_and_acl_file_with_persistence(self):
        self.check()

    # Beyond the brief's list: sources the plugin could overlook.
    @scenario("password_in_include_dir")
    def test_password_file_in_include_dir(self):
        self.check()

    @scenario("dynsec_before_plugin")
    def test_dynamic_security_loaded_before_the_plugin(self):
        self.check()

    # 10: another plugin after ours that registers only BASIC_AUTH, only ACL_CHECK, or both, with
    # and without the broker's own files; and a plugin of the older interface.
    @scenario("auth_only_plugin")
    def test_plugin_that_only_authenticates(self):
        self.check()

    @scenario("acl_only_plugin")
    def test_plugin_that_only_checks_acls(self):
        self.check()

    @scenario("acl_only_plugin_anonymous_false")
    def test_plugin_that_only_checks_acls_allow_anonymous_false(self):
        self.check()

    @scenario("auth_and_acl_plugin")
    def test_plugin_that_authenticates_and_checks_acls(self):
        self.check()

    @scenario("auth_only_plugin_with_acl_file")
    def test_plugin_that_only_authenticates_with_an_acl_file(self):
        self.check()

    @scenario("acl_only_plugin_with_password_file")
    def test_plugin_that_only_checks_acls_with_a_password_file(self):
        self.check()

    @scenario("v4_plugin")
    def test_plugin_of_the_older_interface(self):
        self.check()

    @scenario("v4_and_acl_only_plugin")
    def test_plugin_of_the_older_interface_and_an_acl_only_plugin(self):
        self.check()

    # 2.1: a password or ACL plugin loaded with global_plugin or plugin_load is never bypassed.
    @scenario("global_password_plugin")
    def test_password_plugin_loaded_with_global_plugin(self):
        self.check()

    @scenario("plugin_load_acl_file")
    def test_acl_plugin_loaded_with_plugin_load_and_plugin_use(self):
        self.check()


if __name__ == "__main__":
    unittest.main()
