#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""re-add refuses a disk that is not the failed member's, and writes
nothing.

RAID-6 md array with a bitmap (tests/lib/readd.py); member 1, served over
NBD, is failed with fail 1 and the array is written while it is out.
Its server then comes back on the same socket serving (a) a copy of
member 2's disk (this array's set UUID, another device UUID), (b) an
empty disk: each re-add 1 is refused as a different disk, naming
replace, and leaves every member file and the status as they were.
replace 1 with the same URI then rebuilds the empty disk whole (it
resyncs every row, not the dirty ones), and the array reads back as the
shadow with no parity mismatch.
"""

import shutil

import faults
import readd
import workload as wl

with faults.Test(filters=["error"], plugins=["memory"], timeout=120) as t:
    c = readd.Case(t, **readd.CASES["r6"])
    ctl, r1, m = c.ctl, readd.REMOTE, c.members[readd.REMOTE]
    c.ctl.ok("fail %d" % r1)
    c.write(c.scattered_ops({2, 9, 33, c.rows - 2}))
    c.arr.h.flush()

    m.kill()
    shutil.copyfile(c.paths[2], c.paths[r1])
    m.start()
    c.refused("re-add %d" % r1, "different disk", "another member",
              "replace %d" % r1)

    m.restart(plugin="memory")
    c.refused("re-add %d" % r1, "different disk", "no md superblock",
              "replace %d" % r1)

    ctl.ok("replace %d %s" % (r1, m.uri))
    st = ctl.wait_idle(60)
    mm = st["members"][r1]
    assert mm["state"] == "in_sync" and not mm["readd"] and \
        mm["resynced"] == c.rows * c.chunk, mm
    wl.compare_all(c.arr, c.shadow, "after the replace")
    ctl.ok("scrub check")
    sc = ctl.finished_scrub()["scrub"]
    assert sc["mismatch_cnt"] == 0, sc
