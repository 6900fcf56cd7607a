# SPDX-License-Identifier: BSD-3-Clause
"""The web console (GET /, console/) in Debian's headless Chromium, against the real broker with
real paho clients: the rendered DOM shows the real connections, the search and the sorting are
the server's (ListConnections filter and orderBy), the detail panel shows every field, recently
closed connections show their reason, the figures come from /metrics, and a refresh keeps the
selection and the scroll position. A screenshot is saved under the build tree.
With token files on, the page asks for a token and, with an admin token, offers Disconnect."""

import json
import os
import tempfile
import time
import unittest
import urllib.parse

from browser import Chromium, dump_dom, parse_html
from harness import Broker, Client, close_reason, verify_client_layout, wait_for

LIST = "/mqtt.connections.v1.ConnectionsService/ListConnections"
CONNECT_HEADERS = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
FILLERS = 25  # enough rows for the live table to scroll in a 1400x900 window


def artifact_path(name):
    """Where a test's screenshot goes: the build tree, or a temporary folder when the test is
    run by hand without MQC_BUILD_DIR."""
    folder = os.path.join(os.environ["MQC_BUILD_DIR"], "integration") if os.environ.get(
        "MQC_BUILD_DIR") else tempfile.mkdtemp(prefix="mqc-console-")
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, name)


def list_rich(broker, message, headers=None):
    status, _, body = broker.http(LIST, "POST", json.dumps(message).encode(),
                                  dict(CONNECT_HEADERS, **(headers or {})))
    return status, json.loads(body)


def page(broker, fragment=""):
    return f"http://127.0.0.1:{broker.http_port}/" + (
        "#" + urllib.parse.urlencode(fragment) if fragment else "")


class ConsoleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.broker = Broker(passwords={"alice": "secret"}, options={"node_id": "7"})
        cls.broker.start()
        cls.clients = []
        cls.client_ids = []
        try:
            cls.alice = cls.connect("console-alice", version=5, username="alice",
                                    password="secret")
            cls.alice.subscribe("events/site1/#", 1)
            cls.alice.subscribe("$share/workers/queues/jobs/email", 1)
            for _ in range(3):
                cls.alice.publish("events/site1/temp", b"21.5", qos=1)
            cls.bob = cls.connect("console-bob")
            cls.bob.subscribe("commands/doors/open", 0)
            for n in range(FILLERS):
                cls.connect(f"console-fill-{n:02}")
            gone = Client(cls.broker, "console-gone")
            gone.disconnect()
            # The client layout verified, so that the message counts are known (docs/api.md,
            # "Queued and in-flight messages").
            verify_client_layout(cls.broker, "console-layout")
            cls.open_ids = set(cls.client_ids)
            wait_for(lambda: cls.listed_open() == cls.open_ids and cls.listed_closed(),
                     what="every client listed open, console-gone closed")
            # Every open client's counts copied by the broker's sweep (within its round).
            wait_for(lambda: all("messagesPending" in c for c in list_rich(
                cls.broker, {"filter": "state = MQTT_CONNECTION_STATE_OPEN"})[1]["connections"]),
                timeout=10, what="every open client's message counts")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def connect(cls, client_id, **kwargs):
        client = Client(cls.broker, client_id, **kwargs)
        cls.clients.append(client)
        cls.client_ids.append(client_id)
        return client

    @classmethod
    def listed_open(cls):
        _, answer = list_rich(cls.broker, {"filter": "state = MQTT_CONNECTION_STATE_OPEN"})
        return {c["clientId"] for c in answer.get("connections", [])}

    @classmethod
    def listed_closed(cls):
        _, answer = list_rich(cls.broker, {"filter": 'client_id = "console-gone" AND '
                                                     "state = MQTT_CONNECTION_STATE_CLOSED"})
        return answer.get("connections", [])

    @classmethod
    def tearDownClass(cls):
        for client in cls.clients:
            try:
                client.disconnect()
            except Exception:
                pass
        cls.broker.stop()
        cls.broker.cleanup_dir()

    def render(self, fragment="", **kwargs):
        return parse_html(dump_dom(page(self.broker, fragment), **kwargs))

    @staticmethod
    def open_rows(dom):
        return dom.by_id("connections").rows()

    # -- the page itself ------------------------------------------------------------------
    def test_page_is_served_with_security_headers_and_no_inline_code(self):
        for path, media_type in (("/", "text/html; charset=utf-8"),
                                 ("/console.js", "text/javascript; charset=utf-8"),
                                 ("/console.css", "text/css; charset=utf-8")):
            status, headers, body = self.broker.http(path)
            headers = {k.lower(): v for k, v in headers.items()}
            self.assertEqual(status, 200, path)
            self.assertEqual(headers["content-type"], media_type)
            self.assertTrue(headers["content-security-policy"].startswith("default-src 'self'"))
            self.assertEqual(headers["x-content-type-options"], "nosniff")
        status, _, text = self.broker.http("/")
        dom = parse_html(text)
        scripts = dom.find_all("script")
        self.assertTrue(scripts)
        for script in scripts:
            self.assertTrue(script.attrs.get("src"), "inline script")
            self.assertNotIn("://", script.attrs["src"])
        self.assertEqual(dom.find_all("style"), [], "inline style sheet")
        for link in dom.find_all("link"):
            self.assertNotIn("://", link.attrs.get("href", ""))
        for element in dom.find_all():
            self.assertFalse([a for a in element.attrs if a.startswith("on") or a == "style"],
                             f"inline handler or style on <{element.tag}>")

    # -- what the page renders --------------------------------------------------------------
    def test_table_shows_the_real_clients_closed_ones_and_the_figures(self):
        dom = self.render()
        rows = {r[0]: r for r in self.open_rows(dom)}
        self.assertEqual(set(rows), self.open_ids)
        alice = rows["console-alice"]
        self.assertEqual(alice[1:4], ["alice", f"127.0.0.1:{self.alice.local_port}", "5.0"])
        self.assertEqual(alice[6], "2")  # subscriptions
        bob = rows["console-bob"]
        self.assertEqual(bob[1:4], ["-", f"127.0.0.1:{self.bob.local_port}", "3.1.1"])
        self.assertEqual(bob[6], "1")
        # Pending: what the broker holds for each (0 for these clients, which read everything).
        self.assertEqual(alice[9], "0")
        self.assertEqual(bob[9], "0")
        # Default order: client id ascending, as the server sorted it.
        self.assertEqual([r[0] for r in self.open_rows(dom)], sorted(self.open_ids))
        closed = [r for r in dom.by_id("closed").rows() if r[0] == "console-gone"]
        self.assertEqual(len(closed), 1, dom.by_id("closed").rows())
        # The console drops the enum's prefix from an unspecified reason.
        self.assertEqual(closed[0][5],
                         close_reason("CLIENT_DISCONNECT").replace("CLOSE_REASON_", ""))
        # The three kubemq_mqtt_* figures, from /metrics.
        self.assertEqual(dom.by_id("figure-connections").text(), str(len(self.open_ids)))
        self.assertGreaterEqual(int(dom.by_id("figure-operations").text()), 3)
        self.assertIn("success", dom.by_id("figure-operations-note").text())
        self.assertIn("timed RPC operations", dom.by_id("figure-latency-note").text())
        self.assertTrue(dom.by_id("error").attrs.get("hidden") is not None)

    def test_search_is_the_servers_filter(self):
        # A word is a client id prefix.
        dom = self.render({"q": "console-b"})
        self.assertEqual([r[0] for r in self.open_rows(dom)], ["console-bob"])
        # Text with an operator is a filter, as the server reads it.
        dom = self.render({"q": 'username = "alice" AND protocol_version = 5'})
        self.assertEqual([r[0] for r in self.open_rows(dom)], ["console-alice"])
        dom = self.render({"q": 'subscriptions.pattern = "commands"'})
        self.assertEqual([r[0] for r in self.open_rows(dom)], ["console-bob"])
        # A filter the server refuses shows the server's own message, whose position is one in
        # the text typed (the page puts the search's clauses first).
        bad = "client_id = \"a\" AND nonsense = 1"
        status, answer = list_rich(self.broker, {
            "filter": bad + " AND state = MQTT_CONNECTION_STATE_OPEN"})
        self.assertIn(f"position {bad.index('nonsense') + 1}", answer["message"])  # 1-based
        self.assertEqual(status, 400)
        dom = self.render({"q": bad})
        error = dom.by_id("error")
        self.assertIsNone(error.attrs.get("hidden"))
        self.assertEqual(error.text(), f"{answer['code']}: {answer['message']}")
        # OR, NOT and IN: the state clause still holds for the whole search (the closed
        # console-gone is not among the open rows), and an IN list is a filter, not a prefix.
        dom = self.render({"q": 'client_id = "console-gone" OR NOT client_id != "console-alice"'})
        self.assertEqual([r[0] for r in self.open_rows(dom)], ["console-alice"])
        self.assertIn("console-gone", [r[0] for r in dom.by_id("closed").rows()])
        dom = self.render({"q": 'client_id IN ("console-bob", "console-alice")'})
        self.assertEqual([r[0] for r in self.open_rows(dom)], ["console-alice", "console-bob"])
        # An error after an OR is the one of the text typed, placed in it.
        bad = 'client_id = "a" OR nonsense = 1'
        dom = self.render({"q": bad})
        self.assertEqual(dom.by_id("error").text(),
                         f"invalid_argument: Unknown field 'nonsense' at position "
                         f"{bad.index('nonsense') + 1}")
        bad = 'client_id = "a" OR'
        dom = self.render({"q": bad})
        self.assertEqual(dom.by_id("error").text(),
                         "invalid_argument: Expected a field name after OR, got end of filter at "
                         f"position {len(bad) + 1}")

    def test_sorting_is_the_servers_order_by(self):
        dom = self.render({"sort": "client_id", "desc": "1"})
        self.assertEqual([r[0] for r in self.open_rows(dom)], sorted(self.open_ids, reverse=True))
        header = [th for th in dom.by_id("connections").find_all("th")
                  if th.attrs.get("data-field") == "client_id"][0]
        self.assertEqual(header.attrs.get("class"), "sorted-desc")
        # By open time, descending: the order the server gives, whatever it is.
        dom = self.render({"sort": "open_time", "desc": "1"})
        _, answer = list_rich(self.broker, {"filter": "state = MQTT_CONNECTION_STATE_OPEN",
                                            "orderBy": "open_time desc"})
        self.assertEqual([r[0] for r in self.open_rows(dom)],
                         [c["clientId"] for c in answer["connections"]])
        # By the messages the broker holds: its header sorts on messages_pending.
        dom = self.render({"sort": "messages_pending", "desc": "1"})
        header = [th for th in dom.by_id("connections").find_all("th")
                  if th.attrs.get("data-field") == "messages_pending"][0]
        self.assertEqual(header.attrs.get("class"), "sorted-desc")
        _, answer = list_rich(self.broker, {"filter": "state = MQTT_CONNECTION_STATE_OPEN",
                                            "orderBy": "messages_pending desc"})
        self.assertEqual([r[0] for r in self.open_rows(dom)],
                         [c["clientId"] for c in answer["connections"]])

    def test_detail_panel_shows_every_field(self):
        fragment = {"client": "console-alice"}
        dom = self.render(fragment)
        detail = dom.by_id("detail")
        self.assertEqual(detail.attrs.get("data-client-id"), "console-alice")
        _, answer = list_rich(self.broker, {"filter": 'client_id = "console-alice"'})
        connection = answer["connections"][0]
        self.assertEqual(detail.attrs.get("data-uid"), connection["uid"])
        text = detail.text()
        for value in (connection["uid"], connection["openTime"], connection["listenerName"],
                      "PASSWORD", "SUCCESS", "OPEN"):
            self.assertIn(value, text)
        self.assertEqual(dom.by_id("subscriptions").rows(), [
            ["events/site1/#", "1", "events", "site1.>", "-", "accepted"],
            ["$share/workers/queues/jobs/email", "1", "queues", "jobs.email", "workers",
             "accepted"]])
        # What KubeMQ would refuse says why (bob's commands/ subscription: publish only).
        bob = self.render({"client": "console-bob"})
        self.assertEqual(bob.by_id("subscriptions").rows(), [
            ["commands/doors/open", "0", "commands", "doors.open", "-",
             "refused: KubeMQ's commands pattern is publish only"]])
        traffic = {r[0]: r[1:] for r in dom.by_id("traffic").rows()}
        self.assertEqual(traffic["publishes"][0], "3")
        self.assertEqual(traffic["publish bytes"][0], "12")
        self.assertEqual(traffic["requests"][0], "5")  # 3 publishes + 2 subscribes
        # The messages the broker holds, each '-' where the broker does not tell it (2.0.11 and
        # 2.0.12 count queued and in flight together).
        held = {r[0]: r[1:] for r in dom.by_id("messages").rows()}
        self.assertEqual(held["to the client"], [
            str(connection.get(f, "-"))
            for f in ("messagesQueued", "messagesInFlight", "messagesPending")])
        self.assertEqual(held["from the client"], [
            str(connection.get(f, "-"))
            for f in ("incomingMessagesQueued", "incomingMessagesInFlight",
                      "incomingMessagesPending")])
        self.assertEqual(held["to the client"][2], "0")
        # What an ACL source refused: nothing here (no ACL source), counted and shown as such.
        self.assertEqual(connection.get("deniedPublishCount"), "0")
        self.assertEqual(dom.by_id("denials").rows(), [["0", "0", "-", "-"]])
        # The messages the broker dropped, '-' where the broker hides them (2.1).
        drops = {r[0]: r[1:] for r in dom.by_id("drops").rows()}
        self.assertEqual(drops["to the client"], [
            str(connection.get(f, "-")) for f in ("messagesDropped", "messagesDroppedQueueFull")])
        labels = [dt.text() for dt in detail.find_all("dt")]
        self.assertIn("peer certificate subject", labels)
        # Every value the API gives is shown: each leaf of the connection's JSON is the text of
        # a field or a cell of the panel (enums without their prefix, the address joined).
        # Left out: values that move between the API's answer and the page's (idle time, the
        # previous minute's figures, the kernel's socket figures), and the subscriptions,
        # compared whole above.
        shown = {e.text() for e in detail.find_all("dd") + detail.find_all("td")}
        moving = ("idleDuration", "recentRequestStatistics", "networkInfo", "subscriptions")
        expected = {"source": [f"{connection['source']['ipAddress']}:"
                               f"{connection['source']['port']}"],
                    "protocolVersion": ["5.0"],
                    # The layout is verified here: not a bridge, shown as the console words it.
                    "bridgeRole": ["none"]}
        self.assertEqual(connection.get("bridgeRole"), "BRIDGE_ROLE_NONE")

        def leaves(value, path):
            if isinstance(value, dict):
                for key, item in value.items():
                    yield from leaves(item, path + [key])
            else:
                yield path, value

        for path, value in leaves(connection, []):
            if path[0] in moving:
                continue
            texts = expected.get(path[0]) or [
                json.dumps(value) if isinstance(value, bool) else
                str(value).replace("AUTHENTICATION_MECHANISM_", "")
                .replace("AUTHENTICATION_STATE_", "")]
            for text in texts:
                self.assertIn(text, shown, ".".join(path))
        # networkInfo (the kernel's TCP_INFO) has its section when the API gives it. Not the
        # other way round: the companion's socket figures are up to a second old, so a
        # connection too new for them in the answer above may have them in the page's own,
        # later one.
        if "networkInfo" in connection:
            for label in ("round-trip time", "retransmits", "send queue bytes",
                          "since last receive"):
                self.assertIn(label, labels)
        # The selected row is marked in the table.
        selected = [row for row in dom.by_id("connections").find_all("tr")
                    if row.attrs.get("class") == "selected"]
        self.assertEqual([row.attrs.get("data-client-id") for row in selected], ["console-alice"])
        # A screenshot of this view, under the build tree (docs/console.png is one).
        path = artifact_path("console.png")
        dump_dom(page(self.broker, fragment), screenshot=path)
        with open(path, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_unknown_client_in_the_detail_panel(self):
        dom = self.render({"client": "console-nobody"})
        self.assertIn('No connection with client id "console-nobody"', dom.by_id("detail").text())

    # -- interaction, in a driven browser -----------------------------------------------------
    def test_typing_a_search_and_a_refresh_that_keeps_selection_and_scroll(self):
        with Chromium() as browser:
            browser.open(page(self.broker))
            browser.wait(f"document.querySelectorAll('#connections tbody tr').length == "
                         f"{len(self.open_ids)}", what="every row")
            target = "console-fill-20"
            browser.evaluate(f"document.querySelector('#connections tr[data-client-id=\"{target}\"]')"
                             ".click()")
            browser.wait(f"document.getElementById('detail').dataset.clientId == '{target}'",
                         what="the detail panel of the clicked row")
            scroll = browser.evaluate("(() => { const s = document.getElementById('table-scroll');"
                                      " s.scrollTop = 240; return s.scrollTop; })()")
            self.assertGreater(scroll, 0, "the table does not scroll")
            # A new client: the next refresh adds its row in place.
            late = Client(self.broker, "console-late")
            try:
                browser.wait("!!document.querySelector('#connections tr[data-client-id="
                             "\"console-late\"]')", what="the refresh showing console-late")
                self.assertEqual(browser.evaluate(
                    "document.getElementById('table-scroll').scrollTop"), scroll)
                self.assertEqual(browser.evaluate(
                    "Array.from(document.querySelectorAll('#connections tr.selected'))"
                    ".map(r => r.dataset.clientId)"), [target])
                self.assertEqual(browser.evaluate(
                    "document.getElementById('detail').dataset.clientId"), target)
                self.assertIn(urllib.parse.quote(target), browser.evaluate("location.hash"))
            finally:
                late.disconnect()
            # Typing into the search box asks the server again.
            browser.evaluate("(() => { const s = document.getElementById('search');"
                             " s.value = 'console-al';"
                             " s.dispatchEvent(new Event('input')); })()")
            rows = browser.wait("(() => { const r = Array.from(document.querySelectorAll("
                                "'#connections tbody tr')).map(r => r.dataset.clientId);"
                                " return r.length == 1 ? r : null; })()",
                                what="the search narrowing the table")
            self.assertEqual(rows, ["console-alice"])
            self.assertIn("q=console-al", browser.evaluate("location.hash"))
            # Clicking a column header sorts on the server: descending on the second click.
            browser.evaluate("document.getElementById('search').value = '';"
                             "document.getElementById('search').dispatchEvent(new Event('input'))")
            browser.wait(f"document.querySelectorAll('#connections tbody tr').length == "
                         f"{len(self.open_ids)}", what="every row again")
            for _ in range(2):
                browser.evaluate("document.querySelector('th[data-field=\"client_id\"]').click()")
            order = browser.wait(
                "(() => { const r = Array.from(document.querySelectorAll("
                "'#connections tbody tr')).map(r => r.dataset.clientId);"
                " return r[0] == 'console-fill-24' ? r : null; })()", what="descending order")
            self.assertEqual(order, sorted(self.open_ids, reverse=True))

    def test_a_new_client_appears_without_a_reload_and_a_hidden_tab_stops(self):
        with Chromium() as browser:
            browser.open(page(self.broker))
            browser.wait("!document.getElementById('live').hidden", what="the stream's SYNCED")
            # With the stream the periodic refresh is 15 s: a row within 3 s came from it.
            started = time.monotonic()
            instant = Client(self.broker, "console-instant")
            try:
                browser.wait("!!document.querySelector('#connections tr[data-client-id="
                             "\"console-instant\"]')", timeout=3,
                             what="console-instant's row, from the stream")
                self.assertLess(time.monotonic() - started, 3)
            finally:
                instant.disconnect()
            browser.wait("!document.querySelector('#connections tr[data-client-id="
                         "\"console-instant\"]')", timeout=3, what="its row gone on CLOSED")
            # A hidden tab: no stream, no timer; nothing changes until it is shown again.
            browser.evaluate("Object.defineProperty(document, 'hidden', {value: true, "
                             "configurable: true});"
                             "document.dispatchEvent(new Event('visibilitychange'))")
            browser.wait("watch === null && document.getElementById('live').hidden",
                         what="the stream closed in a hidden tab")
            hidden = Client(self.broker, "console-hidden")
            try:
                time.sleep(4)  # past the 3 s polling too
                self.assertFalse(browser.evaluate(
                    "!!document.querySelector('#connections tr[data-client-id="
                    "\"console-hidden\"]')"))
                browser.evaluate("Object.defineProperty(document, 'hidden', {value: false, "
                                 "configurable: true});"
                                 "document.dispatchEvent(new Event('visibilitychange'))")
                browser.wait("!!document.querySelector('#connections tr[data-client-id="
                             "\"console-hidden\"]')", timeout=5, what="the row once shown")
            finally:
                hidden.disconnect()


READ_TOKEN = "console-read-token-1"
ADMIN_TOKEN = "console-admin-token-1"


class ConsoleTokenTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.broker = Broker(
            files={"tokens": f"# readers\n{READ_TOKEN}\n", "admin": f"{ADMIN_TOKEN}\n"},
            plugin_after="plugin_opt_http_token_file {dir}/tokens\n"
                         "plugin_opt_http_admin_token_file {dir}/admin")
        cls.broker.start()

    @classmethod
    def tearDownClass(cls):
        cls.broker.stop()
        cls.broker.cleanup_dir()

    def test_page_asks_for_a_token(self):
        dom = parse_html(dump_dom(page(self.broker)))
        self.assertIsNone(dom.by_id("token-form").attrs.get("hidden"))
        self.assertEqual(dom.by_id("connections").rows(), [])

    def enter_token(self, browser, token):
        browser.wait("!document.getElementById('token-form').hidden", what="the token prompt")
        browser.evaluate(f"document.getElementById('token-input').value = {json.dumps(token)};"
                         "document.getElementById('token-form').requestSubmit()")

    def test_a_late_refusal_does_not_forget_a_token_entered_since(self):
        # A request sent without a token (or with an older one) is answered 401 after the user
        # has entered a token: the answer is about the old token and must not drop the new one.
        with Chromium() as browser:
            browser.open(page(self.broker))
            browser.wait("!document.getElementById('token-form').hidden", what="the token prompt")
            kept = browser.evaluate(
                "(async () => {"
                "  const late = request('/api/mqtt/connections').catch(() => {});"
                f"  sessionStorage.setItem(TOKEN_KEY, {json.dumps(ADMIN_TOKEN)});"
                "  await late;"
                "  return sessionStorage.getItem(TOKEN_KEY);"
                "})()")
            self.assertEqual(kept, ADMIN_TOKEN)

    def test_token_is_kept_for_the_tab_and_only_an_admin_token_disconnects(self):
        target = Client(self.broker, "console-target")
        try:
            with Chromium() as browser:
                browser.open(page(self.broker, {"client": "console-target"}))
                self.enter_token(browser, READ_TOKEN)
                browser.wait("document.getElementById('detail').dataset.clientId == "
                             "'console-target'", what="the detail panel with a read token")
                self.assertEqual(browser.evaluate(
                    "sessionStorage.getItem('mosquitto-connections.token')"), READ_TOKEN)
                self.assertEqual(browser.evaluate("localStorage.length"), 0)
                self.assertEqual(browser.evaluate("document.cookie"), "")
                # A read token: Disconnect answers 403, and the button goes away.
                browser.wait("!!document.getElementById('disconnect')", what="the button")
                for _ in range(2):
                    browser.evaluate("document.getElementById('disconnect').click()")
                browser.wait("!document.getElementById('disconnect') && document.getElementById("
                             "'action-message').textContent.includes('not an admin token')",
                             what="the 403 hiding the button")
                _, answer = list_rich(self.broker, {"filter": 'client_id = "console-target"'},
                                      {"Authorization": f"Bearer {READ_TOKEN}"})
                self.assertEqual([c["state"] for c in answer["connections"]],
                                 ["MQTT_CONNECTION_STATE_OPEN"])
                # Forget it; the admin token disconnects.
                browser.evaluate("document.getElementById('forget-token').click()")
                self.enter_token(browser, ADMIN_TOKEN)
                browser.wait("!!document.getElementById('disconnect')", what="the admin's button")
                for _ in range(2):
                    browser.evaluate("document.getElementById('disconnect').click()")
                # (paho may connect again afterwards: only the closed connection is asked for)
                closed = {"filter": 'client_id = "console-target" AND '
                                    "state = MQTT_CONNECTION_STATE_CLOSED"}
                wait_for(lambda: [c.get("closeReason") for c in list_rich(
                    self.broker, closed, {"Authorization": f"Bearer {ADMIN_TOKEN}"})[1][
                    "connections"]] == ["KICKED"], what="console-target closed with KICKED")
                browser.wait("document.getElementById('action-message').textContent == "
                             "'Disconnected console-target.'", what="the page saying so")
        finally:
            target.client.loop_stop()

    def test_bans_are_listed_and_an_admin_token_adds_and_removes_them(self):
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"}
        status, _, body = self.broker.http("/api/mqtt/bans", "POST", json.dumps(
            {"as": "username", "who": "console-mallory", "reason": "spam"}).encode(), headers)
        self.assertEqual(status, 200, body)
        try:
            with Chromium() as browser:
                browser.open(page(self.broker))
                self.enter_token(browser, READ_TOKEN)
                rows = ("Array.from(document.querySelectorAll('#bans tbody tr'))"
                        ".map(r => Array.from(r.cells).slice(0, 5).map(c => c.textContent)"
                        ".join('|'))")
                browser.wait(f"{rows}.includes('username|console-mallory|no end|admin token "
                             "file line 1|spam')", what="the ban listed")
                # A read token cannot ban: the server's 403 message is shown.
                browser.evaluate("document.getElementById('ban-who').value = 'console-x';"
                                 "document.getElementById('ban-form').requestSubmit()")
                browser.wait("document.getElementById('ban-message').textContent.includes("
                             "'permission_denied')", what="the read token's 403")
                browser.evaluate("document.getElementById('forget-token').click()")
                self.enter_token(browser, ADMIN_TOKEN)
                browser.evaluate("document.getElementById('ban-as').value = 'peerhost_net';"
                                 "document.getElementById('ban-who').value = '10.1.2.3/8';"
                                 "document.getElementById('ban-duration').value = '600';"
                                 "document.getElementById('ban-form').requestSubmit()")
                browser.wait("document.getElementById('ban-message').textContent == "
                             "'Banned peerhost_net 10.0.0.0/8; 0 open client(s) disconnected.'",
                             what="the admin's ban")
                browser.wait(f"{rows}.some(r => r.startsWith('peerhost_net|10.0.0.0/8|20'))",
                             what="the new ban listed with its end")
                browser.evaluate("Array.from(document.querySelectorAll('#bans tbody tr'))"
                                 ".find(r => r.cells[1].textContent == 'console-mallory')"
                                 ".querySelector('button').click()")
                browser.wait(f"!{rows}.some(r => r.includes('console-mallory'))",
                             what="the ban removed")
            status, _, body = self.broker.http("/api/mqtt/bans", headers=headers)
            self.assertEqual([b["who"] for b in json.loads(body)["data"]["bans"]],
                             ["10.0.0.0/8"])
        finally:
            for as_, who in (("username", "console-mallory"), ("peerhost_net", "10.0.0.0/8")):
                self.broker.http(f"/api/mqtt/bans/{as_}/{who}", "DELETE", headers=headers)


if __name__ == "__main__":
    unittest.main()
