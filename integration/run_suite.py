#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Runs one integration suite against the broker MQC_BROKER names, with the skips of
integration/broker_matrix.py applied (what `python3 -m unittest -v SUITE` would do, plus those).

Exits 77 when the matrix skips every test of the suite (ctest's SKIP_RETURN_CODE: "Not Run"),
1 on a failure, 0 otherwise.

A suite that must run alone (MQC_RUN_ALONE=1: integration/CMakeLists.txt) also runs alone
beside the suites of other build trees' ctest runs (scripts/test.sh runs the sanitizer variants
side by side), which ctest's RUN_SERIAL cannot see: run_alone.py.

Usage (from integration/): run_suite.py SUITE [SUITE ...]   (a suite, class or test name)
"""

import os
import sys
import unittest

import harness
from run_alone import alone_among_builds

SKIPPED_WHOLE = 77
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
