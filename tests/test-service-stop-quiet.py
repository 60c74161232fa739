#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A stop that nothing went wrong in logs no line at error level, so that
monitoring that alerts on error lines stays quiet at every restart:
nbdkit's log of an md RAID-5 made with create=true, resynced, written,
then stopped with SIGTERM while a client stays connected and idle (the
array still settles clean before that client goes), has no line with
"error" in it; nor does what a SIGTERM during a rebuild, and during a
resync (after a kill), adds to the log.  The same with whichever nbdkit runs the tests
(NBDKIT=/usr/bin/nbdkit: Debian 12's 1.32).

What used to happen: the thread that settles the array on SIGTERM slept
in nbdkit_nanosleep, and nbdkit logged "error: aborting sleep because of
server shut down" when the stop ended that sleep, at every stop.
"""

import os
import signal
import time

import faults
import mdsb
import workload as wl

K, M = 1024, 1024 * 1024


def error_lines(text):
    return [x for x in text.splitlines() if "error" in x.lower()]


def sigterm(arr, idle=None):
    """SIGTERM; with an idle client connected, the members' superblocks
    must say clean before it goes.  Returns what the stop added to the
    log."""
    if arr.h:
        arr.h.shutdown()
        arr.h = None
    before = len(arr.log())
    proc = arr.proc
    proc.send_signal(signal.SIGTERM)
    if idle:
        end = time.monotonic() + 5
        while any(mdsb.read(m.path)["resync_offset"] != mdsb.CLEAN
                  for m in arr.members if m.path):
            assert time.monotonic() < end, \
                "not clean 5 s after SIGTERM with an idle client"
            time.sleep(0.05)
        idle.shutdown()
    status = arr.stop(grace=10)
    assert status == 0, "nbdkit exited %s on SIGTERM" % status
    return arr.log()[before:]


def restart(arr, rate):
    arr.params = ["rebuild-rate=" + rate]
    arr.start()


with faults.Test(timeout=120) as t:
    faults.log("nbdkit: %s" % (faults.NBDKIT or "the first on PATH"))
    msize = 4 * M
    ms = [t.member(msize, "local") for _ in range(4)]
    arr = t.array(ms, level=5, chunk=64 * K, data_offset=None, control=True,
                  params=["create=true", "rebuild-rate=100M"])
    arr.ctl.finished_scrub()
    wl.fill(arr.h, t.rng)
    idle = arr.connect()
    arr.h.pwrite(b"\x5a" * 8192, 4096)  # active again, not flushed
    sigterm(arr, idle)
    bad = error_lines(arr.log())
    assert not bad, "a clean start, writes and SIGTERM with an idle " \
        "client logged:\n%s" % "\n".join(bad)
    faults.log("  create, resync, writes, SIGTERM with an idle client: "
               "no error line")

    # A rebuild running when the stop comes (1M/s: 4 s).
    restart(arr, "1M")
    arr.ctl.ok("fail 2")
    spare = os.path.join(t.dir, "spare")
    faults.noise_file(spare, msize)
    arr.ctl.ok("replace 2 " + spare)
    assert arr.ctl.status()["rebuild"]["running"], "the rebuild is not running"
    bad = error_lines(sigterm(arr))
    assert not bad, "SIGTERM during a rebuild logged:\n%s" % "\n".join(bad)
    faults.log("  SIGTERM during a rebuild: no error line")

    # A resync running when the stop comes: a write not flushed when
    # nbdkit was killed left the array active.
    restart(arr, "100M")
    arr.ctl.wait_idle(30)
    arr.h.pwrite(b"\xa5" * 8192, 4096)
    arr.kill()
    restart(arr, "1M")
    assert arr.ctl.status()["scrub"]["running"], "the resync is not running"
    bad = error_lines(sigterm(arr))
    assert not bad, "SIGTERM during a resync logged:\n%s" % "\n".join(bad)
    faults.log("  SIGTERM during a resync: no error line")
