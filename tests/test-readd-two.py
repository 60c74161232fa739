#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Two members out at once on RAID-6, both re-added.

RAID-6 md array with a bitmap (tests/lib/readd.py).  Member 1 (NBD, error
filter) fails by EIO under writes and member 3 (a file) is failed with
fail 3; scattered rows are written while both are out.  re-add 1, and
re-add 3 while the first re-add runs (it waits its turn in the same
job): each ends in sync having written exactly the rows under the bits
(each row is rebuilt from the members that hold it: while both are out,
the two unknowns of a RAID-6 row), and the data, scrub and raidcheck.py
are right.
"""

import faults
import readd

with faults.Test(filters=["error"], timeout=150) as t:
    c = readd.Case(t, params=["rebuild-rate=1M"], **readd.CASES["r6"])
    ctl, r1 = c.ctl, readd.REMOTE
    written = c.fail_under_writes({4, 5})
    ctl.ok("fail 3")
    written |= c.write(c.scattered_ops({12, 13, 40, 41, 70}))
    c.arr.h.flush()
    owed = len(c.dirty_rows(written)) * c.chunk
    st = ctl.status()
    assert [m["owed"] for m in st["members"]] == [0, owed, 0, owed, 0], \
        "owed %s, expected %d for members 1 and 3" % (
            [m["owed"] for m in st["members"]], owed)

    ctl.ok("re-add %d" % r1)
    ctl.ok("re-add 3")
    st = ctl.wait_idle(60)
    for i in (r1, 3):
        m = st["members"][i]
        assert m["state"] == "in_sync" and m["readd"] and \
            m["resynced"] == owed, "member %d: %s, expected %d resynced" % (
                i, m, owed)
    faults.log("  members 1 and 3 re-added, %d bytes each" % owed)
    c.check_end("after both re-adds")
