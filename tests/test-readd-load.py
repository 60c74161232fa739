#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""re-add under an 8-client load.

RAID-6 md array with a bitmap (tests/lib/readd.py).  Eight clients write,
zero, flush and read back their own pieces of the array the whole time
(workload.Load: every acknowledged write must read back).  Member 1 (NBD,
error filter) fails by EIO under the load; its server answers again; re-add
1 runs, its rows racing the clients' writes (rows it skips as clean may be
written meanwhile, rows it rebuilds are locked against them).  Once it is
in sync the load stops: every byte is the shadow, scrub check finds no
mismatch and raidcheck.py finds every row right on every member file.
"""

import time

import faults
import readd
import workload as wl

with faults.Test(filters=["error"], timeout=150) as t:
    c = readd.Case(t, params=["rebuild-rate=2M"], **readd.CASES["r6"])
    ctl, r1, m = c.ctl, readd.REMOTE, c.members[readd.REMOTE]
    with wl.Load(c.arr, c.shadow, 8, t.seed, "re-add under load") as load:
        time.sleep(0.5)
        m.fail_writes(True)
        readd.wait_until(lambda: ctl.states()[r1] == "failed", 20,
                         "member 1 fails under the load")
        time.sleep(1)
        m.fail_writes(False)
        ctl.ok("re-add %d" % r1)
        mm = ctl.wait_idle(60)["members"][r1]
        assert mm["state"] == "in_sync" and mm["readd"] and \
            0 < mm["resynced"] <= c.rows * c.chunk, mm
        n = load.total()
    faults.log("  %d client requests; re-add resynced %d of %d bytes"
               % (n, mm["resynced"], c.rows * c.chunk))
    c.check_end("after the re-add under load")
