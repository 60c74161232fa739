#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Hot spares: a second failure while the first spare is being rebuilt.

RAID-6 with two spares: member 1 fails by EIO under client writes and
spare 0 takes its role; while it is rebuilt (rebuild-rate keeps it
slow), member 3 is failed too: spare 1 takes role 3, and the rebuild
goes on to it once role 1 is done, as md's recovery does both.  Every
byte is the shadow at the end, scrub 0 mismatches, raidcheck.py right.

RAID-5 with one spare: member 1 fails and the spare takes its role;
while it is rebuilt, member 2 is failed too (fail 2 force): more than
RAID-5 tolerates above the spare's recovery offset.  The result must be
clear, not a hang nor made-up data: a read of the last row fails, the
rows the spare holds already still read right, status says member 2
failed and the rebuild stopped, and no spare is left to take role 2.
"""

import time

import nbd

import faults
import spares
import workload as wl

with faults.Test(filters=["error"], timeout=200) as t:
    # RAID-6, two spares, two failures.
    c = spares.Case(t, level=6, n=5, nspares=2, params=["rebuild-rate=2M"])
    with wl.Load(c.arr, c.shadow, 4, t.seed, "RAID-6: two failures") as load:
        time.sleep(0.2)
        c.members[spares.REMOTE].fail_writes(True)
        spares.wait_until(lambda: c.ctl.status()["members"][1].get(
            "from_spare"), 20, "spare 0 takes role 1")
        time.sleep(0.3)
        st = c.ctl.status()
        assert st["members"][1]["state"] == "rebuilding", st["members"][1]
        c.ctl.ok("fail 3 force")
        spares.wait_until(lambda: c.ctl.status()["members"][3].get(
            "from_spare"), 20, "spare 1 takes role 3 during the rebuild")
        st = c.ctl.status()
        assert st["spares"] == [], st["spares"]
        n = load.total()
    c.ctl.wait_idle(120)
    c.takeover(1, 5, "RAID-6: role 1 in sync")
    c.takeover(3, 5, "RAID-6: role 3 in sync")
    faults.log("  RAID-6: %d client requests during two takeovers" % n)
    c.check_end("RAID-6: after two takeovers")

    # RAID-5, one spare, a failure beyond what it tolerates.
    c = spares.Case(t, level=5, n=4, nspares=1, params=["rebuild-rate=1M"])
    c.members[spares.REMOTE].fail_writes(True)
    c.arr.h.pwrite(bytes(4096), 0)
    c.shadow[0:4096] = bytes(4096)
    spares.wait_until(lambda: c.ctl.status()["members"][1].get(
        "from_spare"), 20, "RAID-5: the spare takes role 1")
    time.sleep(0.5)
    c.ctl.ok("fail 2 force")
    st = c.ctl.status()
    rec = st["members"][1]["recovery_offset"]
    assert st["members"][2]["state"] == "failed" and \
        st["members"][1]["state"] == "rebuilding" and \
        rec < c.arr.rows * c.arr.chunk, st["members"]
    time.sleep(0.5)
    st = c.ctl.status()
    assert not st["rebuild"]["running"], st["rebuild"]
    last = (c.arr.rows - 1) * c.arr.row
    try:
        c.arr.h.pread(4096, last)
        raise AssertionError("RAID-5: a row above the spare's recovery "
                             "offset read with two members out")
    except nbd.Error as e:
        faults.log("  RAID-5: the last row: %s" % e)
    good = st["members"][1]["recovery_offset"] // c.arr.chunk * c.arr.row
    if good:
        assert c.arr.h.pread(min(good, 65536), 0) == \
            bytes(c.shadow[:min(good, 65536)]), "RAID-5: rows already rebuilt"
