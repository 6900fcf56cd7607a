# SPDX-License-Identifier: BSD-3-Clause
"""Suites that must run alone, alone across ctest runs of several build trees at once.

ctest's RUN_SERIAL keeps a suite alone within one ctest run; scripts/test.sh runs the ASan and
TSan integration suites side by side, two ctest runs, and a suite whose assertions are about
time under load (integration/CMakeLists.txt: MQC_RUN_ALONE=1) must not run beside either.
The locks live in the folder of the harness's port locks (the system's temporary folder).
"""

import contextlib
import fcntl
import os
import tempfile

# Every suite holds the lock "run-alone" while it runs: shared, or exclusive for a suite that
# runs alone. On its way in every suite passes through "run-alone-turn", which a suite that
# runs alone holds while it waits: the suites after it wait too, so it is not starved by a
# stream of suites that each hold the shared lock a little while.


def open_lock(name):
    folder = os.path.join(tempfile.gettempdir(), "mqc-it-ports")
    os.makedirs(folder, exist_ok=True)
    with contextlib.suppress(PermissionError):
        os.chmod(folder, 0o1777)
    fd = os.open(os.path.join(folder, name), os.O_RDWR | os.O_CREAT, 0o666)
    with contextlib.suppress(PermissionError):
        os.fchmod(fd, 0o666)
    return fd


@contextlib.contextmanager
def alone_among_builds(alone):
    """Held for the whole suite: exclusive when `alone`, shared otherwise. The kernel drops both
    locks when the process ends, however it ends; ctest's per-test timeout bounds the wait."""
    turn, run = open_lock("run-alone-turn"), open_lock("run-alone")
    try:
        fcntl.flock(turn, fcntl.LOCK_EX)
        fcntl.flock(run, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        fcntl.flock(turn, fcntl.LOCK_UN)
        yield
    finally:
        os.close(run)
        os.close(turn)
