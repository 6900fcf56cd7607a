#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Runs one integration suite against the broker MQC_BROKER names, with the skips of
integration/broker_matrix.py applied (what `python3 -m unittest -v SUITE` would do, plus those).

Exits 77 when the matrix skips every test of the suite (ctest's SKIP_RETURN_CODE: "Not Run"),
1 on a failure, 0 otherwise.

A suite that must run alone (MQC_RUN_ALONE=1: integration/CMakeLists.txt) also runs alone
beside the suites of other build trees' ctest runs (scripts/test.sh runs the sanitizer variants
side by side), which ctest's RUN_SERIAL cannot see: see `alone_among_builds`.

Usage (from integration/): run_suite.py SUITE [SUITE ...]   (a suite, class or test name)
"""

import contextlib
import fcntl
import os
import sys
import tempfile
import unittest

import harness

SKIPPED_WHOLE = 77
# Every suite holds the shared lock of RUN_LOCK while it runs; a suite that runs alone holds it
# exclusively. A suite that wants to run alone first takes TURN_LOCK, which every suite passes
# through on its way in: the suites that come after it wait, so it is not starved by a stream
# of suites that each hold the shared lock a little while.
LOCK_DIR = os.path.join(tempfile.gettempdir(), "mqc-it-ports")
RUN_LOCK = os.path.join(LOCK_DIR, "run-alone")
TURN_LOCK = os.path.join(LOCK_DIR, "run-alone-turn")


def open_lock(path):
    os.makedirs(LOCK_DIR, exist_ok=True)
    with contextlib.suppress(PermissionError):
        os.chmod(LOCK_DIR, 0o1777)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    with contextlib.suppress(PermissionError):
        os.fchmod(fd, 0o666)
    return fd


@contextlib.contextmanager
def alone_among_builds(alone):
    """Held for the whole suite: exclusive when `alone`, shared otherwise. The kernel drops both
    locks when the process ends, however it ends; ctest's per-test timeout bounds the wait."""
    turn, run = open_lock(TURN_LOCK), open_lock(RUN_LOCK)
    try:
        fcntl.flock(turn, fcntl.LOCK_EX)
        fcntl.flock(run, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        fcntl.flock(turn, fcntl.LOCK_UN)
        yield
    finally:
        os.close(run)
        os.close(turn)


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    suite = unittest.defaultTestLoader.loadTestsFromNames(sys.argv[1:])
    skipped, total = harness.apply_broker_matrix(suite)
    print(f"broker {harness.BROKER_NAME}: Mosquitto {harness.BROKER.version} "
          f"({harness.BROKER.build}) {harness.MOSQUITTO}", flush=True)
    with alone_among_builds(os.environ.get("MQC_RUN_ALONE") == "1"):
        result = unittest.TextTestRunner(verbosity=2).run(suite)
    if not result.wasSuccessful():
        return 1
    return SKIPPED_WHOLE if total and skipped == total else 0


if __name__ == "__main__":
    sys.exit(main())
