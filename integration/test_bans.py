# SPDX-License-Identifier: BSD-3-Clause
"""Bans against the real broker: POST/DELETE /api/mqtt/bans and the ban RPCs refuse CONNECTs by
client id, username or address prefix (MQTT 3.1.1: CONNACK 5, not authorised; MQTT 5: 0x8A Banned
on 2.1, 0x87 Not authorized on 2.0, which has no plugin answer for 0x8A), kick a matching open
client (KICKED), end by themselves, survive a broker restart with persistence, and refuse bad
input with a 400 naming the field; a read token lists but cannot change them.
"""

import json
import os
import subprocess
import tempfile
import unittest

from harness import BROKER_VERSION, Client, SharedBrokerTestCase, disconnect_all, wait_for

READ_TOKEN = "bans-read-token-1"
ADMIN_TOKEN = "bans-admin-token-1"
RPC = "/mqtt.connections.v1.ConnectionsService/"
# What a banned MQTT 5 CONNECT gets (README, "Supported brokers"; plugin/broker_events.cc).
MQTT5_BANNED = 0x8A if BROKER_VERSION >= (2, 1, 0) else 0x87
MQTT311_NOT_AUTHORISED = 5
CLI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli",
                   "mosquitto-connections")


def bearer(token):
    return {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
            "Connect-Protocol-Version": "1"}


class BansTest(SharedBrokerTestCase):
    broker_arguments = {"files": {"tokens": f"{READ_TOKEN}\n", "admin": f"{ADMIN_TOKEN}\n"},
                        "options": {"http_token_file": "{dir}/tokens",
                                    "http_admin_token_file": "{dir}/admin"},
                        "persistence": True}

    def tearDown(self):
        # Not the base's wait for an empty listing: the API needs a token here.
        disconnect_all(self.clients)
        for ban in self.bans():
            self.unban(ban["as"], ban["who"])

    # -- helpers --------------------------------------------------------------------------
    def request(self, path, method="GET", body=None, token=ADMIN_TOKEN):
        data = json.dumps(body).encode() if body is not None else None
        status, _, text = self.broker.http(path, method=method, body=data, headers=bearer(token))
        return status, json.loads(text)

    def ban(self, **fields):
        status, answer = self.request("/api/mqtt/bans", "POST", fields)
        self.assertEqual(status, 200, answer)
        return answer["data"]

    def unban(self, as_, who):
        status, answer = self.request(f"/api/mqtt/bans/{as_}/{who}", "DELETE")
        self.assertEqual(status, 200, answer)

    def bans(self, token=READ_TOKEN):
        status, answer = self.request("/api/mqtt/bans", token=token)
        self.assertEqual(status, 200, answer)
        return answer["data"]["bans"]

    def connack(self, client_id, version, **kwargs):
        c = Client(self.broker, client_id, version=version, connect=False, **kwargs)
        self.clients.append(c)
        code = c.connect()
        c.client.loop_stop()  # no reconnection
        return code

    def open_ids(self):
        status, answer = self.request("/api/mqtt/connections", token=READ_TOKEN)
        self.assertEqual(status, 200, answer)
        return [c["client_id"] for c in answer["data"]["connections"]]

    def closed_reason(self, client_id):
        status, _, body = self.broker.http(
            RPC + "ListConnections", "POST",
            json.dumps({"filter": f'client_id = "{client_id}" AND state = '
                                  'MQTT_CONNECTION_STATE_CLOSED'}).encode(),
            bearer(READ_TOKEN))
        self.assertEqual(status, 200, body)
        return [c.get("closeReason") for c in json.loads(body).get("connections", [])]

    # -- tests ----------------------------------------------------------------------------
    def test_client_id_ban_refuses_both_protocols_kicks_the_open_client_and_is_logged(self):
        victim = Client(self.broker, "ban-victim", version=4)
        self.clients.append(victim)
        wait_for(lambda: self.open_ids() == ["ban-victim"], what="ban-victim listed")
        refused_before = self.request("/api/mqtt/bans", token=READ_TOKEN)[1]["data"][
            "refused_total"]
        data = self.ban(**{"as": "clientid", "who": "ban-victim", "reason": "flooding"})
        self.assertEqual((data["as"], data["who"], data["reason"], data["until"], data["kicked"]),
                         ("clientid", "ban-victim", "flooding", None, 1))
        self.assertEqual(data["by"], "admin token file line 1")
        wait_for(lambda: self.closed_reason("ban-victim") and
                 self.closed_reason("ban-victim")[0] == "KICKED", what="ban-victim KICKED")
        victim.client.loop_stop()
        # paho reconnects a kicked client by itself; here new CONNECTs are refused instead.
        self.assertEqual(self.connack("ban-victim", 4), MQTT311_NOT_AUTHORISED)
        self.assertEqual(self.connack("ban-victim", 5), MQTT5_BANNED)
        self.assertEqual(self.connack("ban-bystander", 5), 0)
        listed = self.request("/api/mqtt/bans", token=READ_TOKEN)[1]["data"]
        self.assertEqual([b["who"] for b in listed["bans"]], ["ban-victim"])
        self.assertGreaterEqual(listed["refused_total"], refused_before + 2)
        self.assertNotIn("ban-victim", self.open_ids())
        self.unban("clientid", "ban-victim")
        self.assertEqual(self.connack("ban-victim", 4), 0)
        log = self.broker.log()
        self.assertRegex(log, r"banned clientid 'ban-victim' without end at the request of "
                              r"127\.0\.0\.1:\d+ \(admin token file line 1\), reason 'flooding'")
        self.assertRegex(log, r"unbanned clientid 'ban-victim' at the request of 127\.0\.0\.1:\d+")
        self.assertNotIn(ADMIN_TOKEN, log)

    def test_username_and_address_prefix(self):
        self.ban(**{"as": "username", "who": "mallory"})
        self.assertEqual(self.connack("ban-u1", 4, username="mallory", password="x"),
                         MQTT311_NOT_AUTHORISED)
        self.assertEqual(self.connack("ban-u2", 5, username="alice", password="x"), 0)
        self.unban("username", "mallory")
        # Every client here comes from 127.0.0.1.
        self.ban(**{"as": "peerhost_net", "who": "127.1.2.3/8"})
        self.assertEqual([b["who"] for b in self.bans()], ["127.0.0.0/8"])
        self.assertEqual(self.connack("ban-a1", 5), MQTT5_BANNED)
        self.unban("peerhost_net", "127.0.0.0/8")
        self.ban(**{"as": "peerhost_net", "who": "10.0.0.0/8"})
        self.assertEqual(self.connack("ban-a2", 5), 0)
        self.unban("peerhost_net", "10.0.0.0/8")

    def test_a_ban_ends_by_itself(self):
        data = self.ban(**{"as": "clientid", "who": "ban-short", "duration_s": 1})
        self.assertIsNotNone(data["until"])
        self.assertEqual(self.connack("ban-short", 4), MQTT311_NOT_AUTHORISED)
        wait_for(lambda: self.bans() == [], timeout=5, what="the ban to expire")
        self.assertEqual(self.connack("ban-short", 4), 0)
        wait_for(lambda: "ban on clientid 'ban-short' expired" in self.broker.log(),
                 what="the expiry logged")

    def test_bad_input_is_400_naming_the_field_and_a_read_token_cannot_change(self):
        for body, field in (({"who": "x"}, "as:"), ({"as": "ip", "who": "x"}, "as:"),
                            ({"as": "clientid"}, "who:"), ({"as": "clientid", "who": ""}, "who:"),
                            ({"as": "peerhost_net", "who": "10.0.0.0/33"}, "who:"),
                            ({"as": "peerhost", "who": "nowhere"}, "who:"),
                            ({"as": "clientid", "who": "x", "until": "soon"}, "until:"),
                            ({"as": "clientid", "who": "x", "until": "2001-01-01T00:00:00Z"},
                             "until:"),
                            ({"as": "clientid", "who": "x", "duration_s": -3}, "duration_s:"),
                            ({"as": "clientid", "who": "x", "duration_s": 5,
                              "until": "2100-01-01T00:00:00Z"}, "until, duration_s:")):
            with self.subTest(body=body):
                status, answer = self.request("/api/mqtt/bans", "POST", body)
                self.assertEqual(status, 400, answer)
                self.assertTrue(answer["error_string"].startswith(field), answer)
        status, answer = self.request("/api/mqtt/bans/peerhost/nowhere", "DELETE")
        self.assertEqual(status, 400, answer)
        status, answer = self.request("/api/mqtt/bans/clientid/never-banned", "DELETE")
        self.assertEqual(status, 404, answer)
        status, answer = self.request("/api/mqtt/bans", "POST", {"as": "clientid", "who": "r"},
                                      token=READ_TOKEN)
        self.assertEqual(status, 403, answer)
        self.ban(**{"as": "clientid", "who": "ban-kept"})
        status, answer = self.request("/api/mqtt/bans/clientid/ban-kept", "DELETE",
                                      token=READ_TOKEN)
        self.assertEqual(status, 403, answer)
        status, answer = self.request(RPC + "UnbanClient", "POST",
                                      {"as": "clientid", "who": "ban-kept"}, token=READ_TOKEN)
        self.assertEqual((status, answer["code"]), (403, "permission_denied"))
        self.assertEqual([b["who"] for b in self.bans()], ["ban-kept"])

    def test_connect_rpcs(self):
        status, answer = self.request(RPC + "BanClient", "POST",
                                      {"as": "username", "who": "rpc-user", "durationS": "60"})
        self.assertEqual(status, 200, answer)
        self.assertEqual((answer["ban"]["who"], answer["kicked"]), ("rpc-user", 0))
        status, answer = self.request(RPC + "ListBans", "POST", {}, token=READ_TOKEN)
        self.assertEqual(status, 200, answer)
        self.assertEqual([b["who"] for b in answer["bans"]], ["rpc-user"])
        status, answer = self.request(RPC + "BanClient", "POST", {"as": "nobody", "who": "x"})
        self.assertEqual((status, answer["code"]), (400, "invalid_argument"))
        self.assertTrue(answer["message"].startswith("as:"), answer)
        status, answer = self.request(RPC + "UnbanClient", "POST",
                                      {"as": "username", "who": "rpc-user"})
        self.assertEqual((status, answer["removed"]), (200, True))

    def test_bans_survive_a_restart(self):
        self.ban(**{"as": "clientid", "who": "ban-persist", "reason": "kept"})
        path = os.path.join(self.broker.persistence_dir, "mosquitto-connections-bans.json")
        with open(path) as f:
            self.assertEqual(json.load(f)["bans"][0]["who"], "ban-persist")
        self.broker.restart()
        # In force from the broker's first client on: the companion hands the list over before
        # the plugin reports it serving.
        self.assertEqual(self.connack("ban-persist", 5), MQTT5_BANNED)
        self.assertEqual([(b["who"], b["reason"]) for b in self.bans()], [("ban-persist", "kept")])
        self.assertRegex(self.broker.log(), r"1 ban in force")

    def test_cli_bans_ban_and_unban(self):
        folder = tempfile.mkdtemp(prefix="mqc-bans-cli-")
        tokens = {}
        for name, token in (("read", READ_TOKEN), ("admin", ADMIN_TOKEN)):
            tokens[name] = os.path.join(folder, name)
            with open(tokens[name], "w") as f:
                f.write(token + "\n")
        url = f"http://127.0.0.1:{self.broker.http_port}"

        def cli(*args, token="admin"):
            return subprocess.run([CLI, *args, "--url", url, "--token-file", tokens[token]],
                                  capture_output=True, text=True, timeout=60)
        try:
            done = cli("ban", "peerhost_net", "10.9.0.0/16", "--duration", "2h", "--reason", "cli")
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertRegex(done.stdout, r'banned peerhost_net "10\.9\.0\.0/16" until \S+Z; '
                                          r"0 open clients disconnected")
            refused = cli("ban", "clientid", "x", token="read")
            self.assertEqual(refused.returncode, 1)
            self.assertIn("HTTP 403", refused.stderr)
            bad = cli("ban", "peerhost_net", "10.9.0.0/40")
            self.assertEqual(bad.returncode, 1)
            self.assertIn("HTTP 400: who: '10.9.0.0/40' is not an address prefix", bad.stderr)
            listed = cli("bans", token="read")
            self.assertEqual(listed.returncode, 0, listed.stderr)
            self.assertRegex(listed.stdout, r"peerhost_net\s+10\.9\.0\.0/16\s+\S+Z\s+admin token "
                                            r"file line 1\s+cli")
            self.assertEqual(json.loads(cli("bans", "-o", "json", token="read").stdout)[0]["who"],
                             "10.9.0.0/16")
            gone = cli("unban", "peerhost_net", "10.9.0.0/16")
            self.assertEqual(gone.returncode, 0, gone.stderr)
            self.assertIn('unbanned peerhost_net "10.9.0.0/16"', gone.stdout)
            self.assertEqual(cli("unban", "peerhost_net", "10.9.0.0/16").returncode, 1)
        finally:
            for path in tokens.values():
                os.unlink(path)
            os.rmdir(folder)


if __name__ == "__main__":
    unittest.main()
