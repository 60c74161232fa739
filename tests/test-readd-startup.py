#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""At start-up, a member given on the command line whose superblock is
stale is re-added from the write-intent bitmap, as mdadm --re-add would
take it back, if the bitmap covers what it missed; otherwise it is left
out, failed, saying why, and nothing is written to it.

(a) RAID-6 md array with a bitmap (tests/lib/readd.py): member 1 fails under
writes, more rows are written while it is out, nbdkit stops cleanly and
is started again on all the members: member 1 is re-added by itself and
writes exactly the dirty rows' bytes; every byte the shadow, scrub 0
mismatches, raidcheck.py right.  (The old code left it out for good.)
(b) RAID-5: member 2 is put back from a snapshot older than the bitmap's
last clearing, then nbdkit restarts: member 2 stays failed, the log says
it cannot be re-added and why, its file is unchanged.
(c) RAID-6, nbdkit killed (SIGKILL) while member 1 is out, the array
idle (its superblocks marked clean, as md's safe mode does): started
again, member 1 is re-added from the bitmap and the array ends in sync
with the shadow.  (A kill during writes leaves it dirty and degraded,
which as md does not start without force=true: test-md-clean.sh.)
"""


import faults
import readd
import workload as wl

with faults.Test(filters=["error"], timeout=240) as t:
    # (a)
    c = readd.Case(t, **readd.CASES["r6"])
    written = c.fail_under_writes({3, 17, 40, 41})
    owed = len(c.dirty_rows(written)) * c.chunk
    c.restart()
    st = c.ctl.wait_idle(60)
    mm = st["members"][readd.REMOTE]
    assert mm["state"] == "in_sync" and mm["resynced"] == owed, \
        "(a) the stale member after the restart: %s (owed %d)" % (mm, owed)
    c.arr.expect_log("was out of date: re-adding it", "(a)")
    faults.log("  (a) re-added at start-up: %d bytes" % mm["resynced"])
    c.check_end("(a) re-added at start-up")

    # (b)
    c = readd.Case(t, **readd.CASES["r5"])
    c.older_than_last_clearing(2)
    c.write(c.scattered_ops({9, 30}))
    c.arr.h.flush()
    before = faults.md5s([c.paths[2]])
    c.restart()
    st = c.ctl.wait_idle(30)
    assert st["members"][2]["state"] == "failed", st["members"][2]
    c.arr.expect_log("cannot be re-added", "(b)")
    c.arr.expect_log("last clearing", "(b)")
    wl.compare_all(c.arr, c.shadow, "(b) degraded after the restart")
    assert c.arr.stop(grace=30) in (0, None)
    assert faults.md5s([c.paths[2]]) == before, \
        "(b) the member the bitmap cannot vouch for was written"

    # (c)
    c = readd.Case(t, **readd.CASES["r6"])
    written = c.fail_under_writes({5, 6, 33})
    owed = len(c.dirty_rows(written)) * c.chunk
    c.arr.kill()
    c.arr.params = [p for p in c.arr.params
                    if not p.startswith(("create=", "bitmap"))]
    c.arr.start()
    c.ctl = c.arr.ctl
    mm = c.ctl.wait_idle(60)["members"][readd.REMOTE]
    assert mm["state"] == "in_sync" and mm["resynced"] == owed, \
        "(c) after SIGKILL and a restart: %s (owed %d)" % (mm, owed)
    c.check_end("(c) re-added after SIGKILL")
