# SPDX-License-Identifier: BSD-3-Clause
"""Behind a load balancer: Mosquitto 2.1's `enable_proxy_protocol 1|2` listeners with Debian's
HAProxy in front (`send-proxy` for PROXY v1, `send-proxy-v2` for v2, and v2 with TLS ended at
HAProxy), real paho clients from their own source addresses.

The broker takes a proxied client's address and port from the PROXY header; the socket's peer
is HAProxy. What is checked against what the clients and the kernel really are: the KubeMQ
list's `remote_addr` and the rich API's `source` are the client's own ip:port (the port the
client's socket has, and the one the broker itself logs), `proxy` is HAProxy's end of the socket
the broker holds, and `networkInfo` says it describes that socket (`proxySocket`). A client
from HAProxy's own address (127.0.0.1) gets its own port too, never HAProxy's.

HAProxy listens on 127.0.0.1 free ports only, with a configuration generated in the test's
folder, started and stopped by its PID (`haproxy -db`: in the foreground, no daemon)."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import jsonschema
import paho.mqtt.client as mqtt

from harness import Broker, free_port, stop_process, wait_for
from test_list_connections import make_test_pki

PATH = "/mqtt.connections.v1.ConnectionsService/ListConnections"
HEADERS = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
DOCUMENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "api", "openapi.json")
# The address the "remote" clients connect from: loopback, but not HAProxy's 127.0.0.1.
CLIENT_ADDRESS = "127.0.0.7"


def listening(port):
    """Whether a TCP socket listens on 127.0.0.1:`port` (/proc/net/tcp, state 0A): HAProxy's
    readiness without a connection through it."""
    wanted = f"0100007F:{port:04X}"
    with open("/proc/net/tcp") as f:
        return any(line.split()[1] == wanted and line.split()[3] == "0A"
                   for line in f.readlines()[1:])


def established_peers(port):
    """The ports of the loopback sockets connected to 127.0.0.1:`port` (the far ends of the
    broker's sockets on that listener), from /proc/net/tcp."""
    peers = set()
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            local, remote, state = fields[1], fields[2], fields[3]
            if state == "01" and remote == f"0100007F:{port:04X}":
                peers.add(int(local.split(":")[1], 16))
    return peers


class HaProxy:
    """HAProxy in TCP mode on a free loopback port, forwarding to 127.0.0.1:`backend_port` with
    `server_options` (send-proxy, send-proxy-v2, ...); `bind_options` end its bind line (ssl
    crt ...). Its configuration and log are in `folder`."""

    def __init__(self, folder, name, backend_port, server_options, bind_options=""):
        self.folder = folder
        self.name = name
        self.backend_port = backend_port
        self.server_options = server_options
        self.bind_options = bind_options
        self.port = None
        self.process = None

    def start(self):
        self.port = free_port()
        config = os.path.join(self.folder, f"haproxy-{self.name}.cfg")
        with open(config, "w") as f:
            f.write("global\n"
                    "  maxconn 100\n"
                    "defaults\n"
                    "  mode tcp\n"
                    "  timeout connect 5s\n"
                    "  timeout client 120s\n"
                    "  timeout server 120s\n"
                    f"frontend {self.name}_in\n"
                    f"  bind 127.0.0.1:{self.port} {self.bind_options}\n"
                    f"  default_backend {self.name}_out\n"
                    f"backend {self.name}_out\n"
                    f"  server broker 127.0.0.1:{self.backend_port} {self.server_options}\n")
        self.log_path = os.path.join(self.folder, f"haproxy-{self.name}.log")
        self.log_file = open(self.log_path, "wb")
        self.process = subprocess.Popen([HAPROXY, "-db", "-f", config], stdout=self.log_file,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            ready = wait_for(lambda: listening(self.port) or self.process.poll() is not None,
                             timeout=20, what=f"HAProxy {self.name} listening")
            if self.process.poll() is not None:
                raise AssertionError(f"HAProxy {self.name} exited at start:\n{self.log()}")
            return ready
        except BaseException:
            self.stop()
            raise

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            stop_process(self.process)
        if self.process is not None:
            self.log_file.close()

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")


def check_against_document(test, connection):
    """`connection` (one of ListConnections' JSON) is what api/openapi.json says a Connection
    is (test_openapi checks every answer on a broker without PROXY listeners)."""
    with open(DOCUMENT) as f:
        document = json.load(f)
    validator = jsonschema.Draft202012Validator(
        document["components"]["schemas"]["Connection"],
        resolver=jsonschema.RefResolver.from_schema(document))
    errors = [error.message for error in validator.iter_errors(connection)]
    test.assertEqual(errors, [], connection)


def connect_through(port, client_id, source_address, tls=None):
    """A paho MQTT 3.1.1 client connected to 127.0.0.1:`port` from `source_address`, its
    CONNACK received; `tls` (ca, cert, key) sets TLS up."""
    client = mqtt.Client(client_id=client_id, protocol=mqtt.MQTTv311)
    outcome = {}
    client.on_connect = lambda c, userdata, flags, rc: outcome.setdefault("rc", rc)
    if tls is not None:
        ca, cert, key = tls
        client.tls_set(ca_certs=ca, certfile=cert, keyfile=key)
    client.connect("127.0.0.1", port, keepalive=60, bind_address=source_address)
    client.loop_start()
    wait_for(lambda: "rc" in outcome, what=f"CONNACK of {client_id}")
    if outcome["rc"] != 0:
        client.loop_stop()
        raise AssertionError(f"{client_id}: CONNACK {outcome['rc']}")
    return client


def close(client):
    client.disconnect()
    client.loop_stop()


class ProxyProtocolTest(unittest.TestCase):
    """One broker with a plain listener, a PROXY v1 and a PROXY v2 listener (only HAProxy
    reaches those two), and an HAProxy in front of each."""

    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="mqc-it-haproxy-")
        cls.v1_port = free_port()
        cls.v2_port = free_port()
        cls.broker = Broker(listener_extra=(
            f"listener {cls.v1_port} 127.0.0.1\nenable_proxy_protocol 1\n"
            f"listener {cls.v2_port} 127.0.0.1\nenable_proxy_protocol 2"))
        cls.broker.start()
        cls.proxies = {}
        try:
            for name, port, option in (("v1", cls.v1_port, "send-proxy"),
                                       ("v2", cls.v2_port, "send-proxy-v2")):
                proxy = HaProxy(cls.folder, name, port, option)
                proxy.start()
                cls.proxies[name] = proxy
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for proxy in cls.proxies.values():
            proxy.stop()
        cls.broker.stop()
        cls.broker.cleanup_dir()
        shutil.rmtree(cls.folder, ignore_errors=True)

    def rich(self, client_id, with_network=False):
        """The open connection of `client_id` in ListConnections, once listed (and, with
        `with_network`, once it shows networkInfo: a dump serves for up to a second)."""
        def listed():
            status, _, body = self.broker.http(
                PATH, method="POST", headers=HEADERS,
                body=json.dumps({"filter": f'client_id = "{client_id}" AND '
                                           'state = MQTT_CONNECTION_STATE_OPEN'}).encode())
            self.assertEqual(status, 200, body)
            found = json.loads(body)["connections"]
            if len(found) != 1 or (with_network and "networkInfo" not in found[0]):
                return None
            return found[0]
        return wait_for(listed, timeout=15, what=f"{client_id} listed")

    def kubemq(self, client_id):
        return wait_for(lambda: self.broker.connection(client_id), what=f"{client_id} in the list")

    def broker_logged_port(self, client_id):
        """The port the broker itself logs for the client ("New client connected from ip:port
        as id")."""
        pattern = re.compile(rf"New client connected from ([0-9.]+):(\d+) as {client_id} ")
        match = wait_for(lambda: pattern.search(self.broker.log()),
                         what=f"the broker's line for {client_id}")
        return match.group(1), int(match.group(2))

    def check_proxied(self, name, listener_port, client_id, source_address):
        client = connect_through(self.proxies[name].port, client_id, source_address)
        try:
            own_port = client.socket().getsockname()[1]
            self.assertEqual(self.broker_logged_port(client_id), (source_address, own_port))
            self.assertEqual(self.kubemq(client_id)["remote_addr"],
                             f"{source_address}:{own_port}")
            c = self.rich(client_id, with_network=True)
            self.assertEqual(c["source"], {"ipAddress": source_address, "port": own_port})
            self.assertEqual(c["listenerName"], f"mqtt:{listener_port}")
            # HAProxy's end of the broker's socket: one connection through it, so one socket
            # to the listener.
            self.assertEqual(c["proxy"]["ipAddress"], "127.0.0.1")
            self.assertEqual({c["proxy"]["port"]}, established_peers(listener_port))
            self.assertNotEqual(c["proxy"]["port"], own_port)
            self.assertIs(c["networkInfo"]["proxySocket"], True)
            # The figures are still the kernel's for that socket.
            self.assertGreaterEqual(c["networkInfo"]["rttMicros"], 0)
            self.assertEqual(c["tlsInfo"], {"enabled": False})
            check_against_document(self, c)
        finally:
            close(client)

    def test_proxy_v1_shows_the_clients_own_address_and_port(self):
        self.check_proxied("v1", self.v1_port, "behind-v1", CLIENT_ADDRESS)

    def test_proxy_v2_shows_the_clients_own_address_and_port(self):
        self.check_proxied("v2", self.v2_port, "behind-v2", CLIENT_ADDRESS)

    # A client on HAProxy's own host address: the socket's peer address is the client's too,
    # and the socket's port (HAProxy's) must still not be taken for the client's.
    def test_a_client_from_the_balancers_address_gets_its_own_port(self):
        self.check_proxied("v1", self.v1_port, "same-host-v1", "127.0.0.1")
        self.check_proxied("v2", self.v2_port, "same-host-v2", "127.0.0.1")

    def test_a_direct_client_beside_them_is_no_proxied_one(self):
        client = connect_through(self.broker.port, "direct", CLIENT_ADDRESS)
        try:
            own_port = client.socket().getsockname()[1]
            self.assertEqual(self.kubemq("direct")["remote_addr"], f"{CLIENT_ADDRESS}:{own_port}")
            c = self.rich("direct", with_network=True)
            self.assertEqual(c["source"], {"ipAddress": CLIENT_ADDRESS, "port": own_port})
            self.assertNotIn("proxy", c)
            self.assertNotIn("proxySocket", c["networkInfo"])
            check_against_document(self, c)
        finally:
            close(client)


class ProxyWithoutLayoutTest(unittest.TestCase):
    """Where no client layout is verified (plugin_opt_client_layout off, what a build the
    layout table does not know shows), the client's port behind a balancer is unknown: left out,
    never the balancer's, even for a client on the balancer's own address; `proxy` and the
    balancer's socket are still known."""

    def test_the_port_is_left_out_rather_than_the_balancers(self):
        folder = tempfile.mkdtemp(prefix="mqc-it-haproxy-nolayout-")
        listener_port = free_port()
        broker = Broker(options={"client_layout": "off"}, listener_extra=(
            f"listener {listener_port} 127.0.0.1\nenable_proxy_protocol 2"))
        proxy = HaProxy(folder, "nolayout", listener_port, "send-proxy-v2")
        try:
            broker.start()
            proxy.start()
            client = connect_through(proxy.port, "no-layout", "127.0.0.1")
            try:
                self.assertEqual(wait_for(lambda: broker.connection("no-layout"),
                                          what="no-layout listed")["remote_addr"], "127.0.0.1")
                status, _, body = broker.http(
                    PATH, method="POST", headers=HEADERS,
                    body=json.dumps({"filter": 'client_id = "no-layout"'}).encode())
                self.assertEqual(status, 200, body)
                c = json.loads(body)["connections"][0]
                self.assertEqual(c["source"], {"ipAddress": "127.0.0.1"})
                self.assertEqual({c["proxy"]["port"]}, established_peers(listener_port))
                check_against_document(self, c)
            finally:
                close(client)
        finally:
            proxy.stop()
            broker.stop()
            broker.cleanup_dir()
            shutil.rmtree(folder, ignore_errors=True)


class ProxyTlsTest(unittest.TestCase):
    """TLS ended at HAProxy, with client certificates: HAProxy verifies them and passes the
    facts in PROXY v2 TLVs (`send-proxy-v2-ssl-cn`); the listener takes only such clients
    (`proxy_protocol_v2_require_tls true`, `require_certificate true`) and names each by the
    certificate's CN (`use_identity_as_username true`)."""

    def test_tls_ended_at_the_balancer(self):
        folder = tempfile.mkdtemp(prefix="mqc-it-haproxy-tls-")
        proxy = None
        broker = None
        try:
            pki = make_test_pki(folder)
            with open(os.path.join(folder, "server.pem"), "w") as f:
                f.write(pki["server.crt"] + pki["server.key"])
            listener_port = free_port()
            broker = Broker(listener_extra=(
                f"listener {listener_port} 127.0.0.1\nenable_proxy_protocol 2\n"
                "proxy_protocol_v2_require_tls true\nrequire_certificate true\n"
                "use_identity_as_username true"))
            broker.start()
            proxy = HaProxy(folder, "tls", listener_port, "send-proxy-v2-ssl-cn",
                            f"ssl crt {folder}/server.pem ca-file {folder}/ca.crt "
                            "verify required")
            proxy.start()
            client = connect_through(proxy.port, "tls-behind", CLIENT_ADDRESS, tls=(
                os.path.join(folder, "ca.crt"), os.path.join(folder, "client.crt"),
                os.path.join(folder, "client.key")))
            try:
                own_port = client.socket().getsockname()[1]
                listed = wait_for(lambda: broker.connection("tls-behind"),
                                  what="tls-behind in the list")
                self.assertEqual(listed["remote_addr"], f"{CLIENT_ADDRESS}:{own_port}")
                status, _, body = broker.http(
                    PATH, method="POST", headers=HEADERS,
                    body=json.dumps({"filter": 'client_id = "tls-behind"'}).encode())
                self.assertEqual(status, 200, body)
                c = json.loads(body)["connections"][0]
                self.assertEqual(c["source"], {"ipAddress": CLIENT_ADDRESS, "port": own_port})
                self.assertEqual(c["username"], "tls-client")  # the certificate's CN
                self.assertEqual(c["tlsInfo"], {"enabled": True})
                self.assertEqual(c["authenticationInfo"]["mechanism"],
                                 "AUTHENTICATION_MECHANISM_MTLS")
                self.assertEqual(c["authenticationInfo"]["userPrincipal"], "tls-client")
                self.assertEqual(c["proxy"]["ipAddress"], "127.0.0.1")
                check_against_document(self, c)
            finally:
                close(client)
        finally:
            if proxy is not None:
                proxy.stop()
            if broker is not None:
                broker.stop()
                broker.cleanup_dir()
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
