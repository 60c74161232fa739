#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A member that fails again during its re-add stays failed, and can be
re-added once more.

RAID-6 md array with a bitmap (tests/lib/readd.py), the re-add throttled by
rebuild-rate.  Member 1 (NBD, error filter) fails under writes, twenty
rows are written while it is out; re-add 1: its superblock at once says
it is recovering from the bitmap (feature bits 0x2 and 0x80, as md
writes them).  Once the re-add has written some rows its writes fail
again: it is failed, not in sync, the re-add is over, and the array
reads back as the shadow.  Its server then answers again; a second
re-add 1 writes every row the bits mark (none of them were cleared) and
the array ends in sync: data, scrub and raidcheck.py right.
"""

import faults
import mdsb
import readd
import workload as wl

with faults.Test(filters=["error"], timeout=150) as t:
    c = readd.Case(t, params=["rebuild-rate=512K"], **readd.CASES["r6"])
    ctl, r1, m = c.ctl, readd.REMOTE, c.members[readd.REMOTE]
    written = c.fail_under_writes(set(range(10, 30)))
    owed = len(c.dirty_rows(written)) * c.chunk

    ctl.ok("re-add %d" % r1)
    sb = mdsb.read(c.paths[r1])
    assert sb["feature_map"] & 0x82 == 0x82 and mdsb.role(sb) == r1, \
        "superblock during the re-add: feature_map %#x, role %s" % (
            sb["feature_map"], mdsb.role(sb))
    readd.wait_until(lambda: ctl.status()["members"][r1]["resynced"] > 0, 20,
                     "the re-add writes its first rows")
    m.fail_writes(True)
    st = ctl.wait_idle(60)
    mm = st["members"][r1]
    assert mm["state"] == "failed" and mm["failure"] and \
        0 < mm["resynced"] < owed and mm["owed"] == owed, mm
    faults.log("  failed again after %d of %d bytes: %s"
               % (mm["resynced"], owed, mm["failure"]["reason"]))
    wl.compare_all(c.arr, c.shadow, "failed again during the re-add")

    m.fail_writes(False)
    ctl.ok("re-add %d" % r1)
    mm = ctl.wait_idle(60)["members"][r1]
    assert mm["state"] == "in_sync" and mm["resynced"] == owed, mm
    c.check_end("after the second re-add")
