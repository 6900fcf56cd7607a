# SPDX-License-Identifier: BSD-3-Clause
"""integration/run_alone.py: a suite that runs alone shares its time with no other suite of any
ctest run, and is not starved by suites that keep arriving.

Each "suite" here is a thread holding the locks (flock locks belong to an open file, so two
threads of one process exclude each other as two processes do), in a temporary folder of its
own (TMPDIR).
"""

import os
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import run_alone  # noqa: E402

HOLD = 0.3  # how long each suite holds its lock, in seconds


class RunAloneTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.saved = tempfile.tempdir
        tempfile.tempdir = self.folder.name
        self.spans = {}  # name -> (start, end) of holding the lock
        self.threads = []

    def tearDown(self):
        for thread in self.threads:
            thread.join(timeout=10)
        tempfile.tempdir = self.saved
        self.folder.cleanup()

    def suite(self, name, alone):
        def run():
            with run_alone.alone_among_builds(alone):
                start = time.monotonic()
                time.sleep(HOLD)
                self.spans[name] = (start, time.monotonic())
        thread = threading.Thread(target=run)
        thread.start()
        self.threads.append(thread)

    def overlap(self, a, b):
        (a_start, a_end), (b_start, b_end) = self.spans[a], self.spans[b]
        return a_start < b_end and b_start < a_end

    def wait_all(self):
        for thread in self.threads:
            thread.join(timeout=10)
            self.assertFalse(thread.is_alive(), "a suite never got its lock")

    def test_suites_that_need_not_run_alone_run_together(self):
        self.suite("a", alone=False)
        self.suite("b", alone=False)
        self.wait_all()
        self.assertTrue(self.overlap("a", "b"))

    def test_a_suite_that_runs_alone_waits_for_the_others_and_they_for_it(self):
        self.suite("before", alone=False)
        time.sleep(HOLD / 3)
        self.suite("alone", alone=True)
        time.sleep(HOLD / 3)
        # Arrives while "alone" waits: it must not slip in before it.
        self.suite("after", alone=False)
        self.wait_all()
        self.assertFalse(self.overlap("before", "alone"))
        self.assertFalse(self.overlap("alone", "after"))
        self.assertLess(self.spans["alone"][0], self.spans["after"][0])

    def test_two_suites_that_run_alone_take_turns(self):
        self.suite("one", alone=True)
        self.suite("two", alone=True)
        self.wait_all()
        self.assertFalse(self.overlap("one", "two"))


if __name__ == "__main__":
    unittest.main()
