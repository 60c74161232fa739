#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""readd=auto: a remote member whose server is killed under an 8-client
write load and comes back a few seconds later is re-added without the
operator, from the write-intent bitmap.

RAID-6 md array with a bitmap (tests/lib/readd.py), readd=auto.  Eight
clients write, zero, flush and read rows 8 to 40 (workload.Load: every
acknowledged write must read back).  Member 1's server is killed
(SIGKILL: its connections drop): member 1 fails, the clients go on
degraded; the load stops, and the bits set on a surviving member's disk
(mdsb.py) say which rows it missed.  Its server is started again on the
same file: within a few back-off periods member 1 is re-added by itself,
and the bytes it resyncs are exactly those rows' (not the member's
size).  Every byte is the shadow, scrub 0 mismatches, raidcheck.py right.
"""

import time

import faults
import readd
import workload as wl

with faults.Test(filters=["error"], timeout=150) as t:
    c = readd.Case(t, params=["readd=auto"], **readd.CASES["r6"])
    ctl, r1, m = c.ctl, readd.REMOTE, c.members[readd.REMOTE]
    region = (8 * c.arr.row, 40 * c.arr.row)
    with wl.Load(c.arr, c.shadow, 8, t.seed, "outage under load",
                 region=region) as load:
        time.sleep(0.5)
        m.kill()
        readd.wait_until(lambda: ctl.states()[r1] == "failed", 20,
                         "member 1 fails when its server is killed")
        time.sleep(2)
        n = load.total()
    c.arr.h.flush()
    missed = c.rows_of_bits(c.disk_bits(0))
    assert missed and max(missed) < 41 and min(missed) >= 7, \
        "rows under set bits after an outage within rows 8..40: %s" % (
            sorted(missed))
    assert ctl.states()[r1] == "failed", "re-added while its server was down"

    m.start()
    readd.wait_until(lambda: ctl.states()[r1] != "failed", 20,
                     "readd=auto takes member 1 back")
    mm = ctl.wait_idle(60)["members"][r1]
    assert mm["state"] == "in_sync" and mm["readd"] and \
        mm["resynced"] == len(missed) * c.chunk, \
        "resynced %d bytes, %d rows were dirty: %s" % (
            mm["resynced"], len(missed), mm)
    c.arr.expect_log("answers again and is the same disk", "readd=auto")
    faults.log("  %d client requests; re-added by itself, %d of %d bytes"
               % (n, mm["resynced"], c.rows * c.chunk))
    c.check_end("after the automatic re-add")
