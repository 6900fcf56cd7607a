# SPDX-License-Identifier: BSD-3-Clause
"""Debian's headless Chromium, for the tests of the web console (test_console.py).

Two ways to use it:
- `dump_dom(url)`: `chromium --headless --dump-dom` with a virtual time budget, so that the
  page's scripts run, fetch and render before the DOM is printed; optionally a screenshot.
- `Chromium`: a browser driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`:
  JSON messages ending in a NUL byte on file descriptors 3 and 4, no network port, no package
  beyond the browser), for what needs a user: typing, clicking, waiting for the next refresh.
Each browser gets its own profile folder, removed afterwards, and is stopped by its own PID.
Every wait is bounded.
"""

import html.parser
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-extensions", "--disable-background-networking", "--disable-sync",
         "--metrics-recording-only", "--no-default-browser-check"]


def dump_dom(url, budget_ms=8000, screenshot=None, window_size="1400,900", timeout=90,
             extra_flags=()):
    """The DOM of `url` after `budget_ms` of virtual time, as HTML text. `extra_flags` go to
    Chromium as they are (such as --host-resolver-rules)."""
    profile = tempfile.mkdtemp(prefix="mqc-chromium-")
    command = [CHROMIUM] + FLAGS + list(extra_flags) + [f"--user-data-dir={profile}",
                                                        f"--virtual-time-budget={budget_ms}"]
    if screenshot:
        command += [f"--screenshot={screenshot}", f"--window-size={window_size}"]
    else:
        command.append("--dump-dom")
    try:
        result = subprocess.run(command + [url], capture_output=True, timeout=timeout)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    if result.returncode != 0:
        raise AssertionError(f"chromium failed ({result.returncode}):\n"
                             f"{result.stderr.decode(errors='replace')[-3000:]}")
    return result.stdout.decode("utf-8", "replace")


class Element:
    def __init__(self, tag, attrs, parent):
        self.tag = tag
        self.attrs = dict(attrs)
        self.parent = parent
        self.children = []
        self.text_parts = []

    def text(self):
        return "".join(self.text_parts + [c.text() for c in self.children]).strip()

    def find_all(self, tag=None, **attrs):
        found = []
        for child in self.children:
            if (tag is None or child.tag == tag) and all(
                    child.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items()):
                found.append(child)
            found.extend(child.find_all(tag, **attrs))
        return found

    def by_id(self, element_id):
        matches = self.find_all(id=element_id)
        return matches[0] if matches else None

    def rows(self):
        """The text of each cell of each body row of a table: [[cell, ...], ...]."""
        rows = []
        for body in self.find_all("tbody"):
            for row in body.find_all("tr"):
                rows.append([cell.text() for cell in row.find_all("td")])
        return rows


class _TreeBuilder(html.parser.HTMLParser):
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
            "track", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {}, None)
        self.current = self.root

    def handle_starttag(self, tag, attrs):
        element = Element(tag, attrs, self.current)
        self.current.children.append(element)
        if tag not in self.VOID:
            self.current = element

    def handle_endtag(self, tag):
        node = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data):
        self.current.text_parts.append(data)


def parse_html(text):
    builder = _TreeBuilder()
    builder.feed(text)
    builder.close()
    return builder.root


class Chromium:
    """A headless browser driven over the DevTools protocol, with one page."""

    def __init__(self, timeout=30):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="mqc-chromium-")
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()

        def child_descriptors():  # the protocol's fixed descriptors: 3 in, 4 out
            read_copy, write_copy = os.dup(to_browser_read), os.dup(from_browser_write)
            os.dup2(read_copy, 3)
            os.dup2(write_copy, 4)

        self.process = subprocess.Popen(
            [CHROMIUM] + FLAGS + [f"--user-data-dir={self.profile}", "--remote-debugging-pipe",
                                  "--window-size=1400,900", "about:blank"],
            preexec_fn=child_descriptors, close_fds=False, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next_id = 0
        self.session = None
        try:
            target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            self.session = self.call("Target.attachToTarget",
                                     {"targetId": target, "flatten": True})["sessionId"]
        except BaseException:
            self.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    # -- the protocol -----------------------------------------------------------------------
    def _receive(self, deadline):
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError("chromium did not answer in time")
            readable, _, _ = select.select([self._from_browser], [], [], remaining)
            if readable:
                chunk = os.read(self._from_browser, 1 << 16)
                if not chunk:
                    raise AssertionError("chromium closed its DevTools pipe")
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, session=True):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._receive(deadline)
            if answer.get("id") == self._next_id:  # events in between are not needed
                if "error" in answer:
                    raise AssertionError(f"{method}: {answer['error']}")
                return answer["result"]

    # -- the page ---------------------------------------------------------------------------
    def open(self, url):
        self.call("Page.navigate", {"url": url})

    def evaluate(self, expression):
        """The value of a JavaScript expression in the page (promises are awaited)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait(self, expression, timeout=20.0, what=None):
        """Polls a JavaScript expression until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.evaluate(expression)
            except AssertionError:  # the page is still loading
                value = None
            if value:
                return value
            if time.monotonic() >= deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for "
                                     f"{what or expression}")
            time.sleep(0.1)

    def screenshot(self, path):
        import base64
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
