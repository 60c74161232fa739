#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""readd=auto takes back only what the operator did not fail, only the
same disk, and not a member that failed again during its re-add.

RAID-6 md array with a bitmap (tests/lib/readd.py), readd=auto, the re-add
throttled by rebuild-rate.  Member 1 is served over NBD.
(a) `fail 1` by the operator: it stays failed (the status says the
operator failed it); `re-add 1` takes it back.
(b) Member 1 fails by EIO with rows written while it is out; its server
answers again and the watcher re-adds it; once the re-add runs its
writes fail again: it is failed, and it stays failed after its server
answers again (the log says why); the operator's `re-add 1` ends in sync.
(c) Member 1's server is replaced by an empty memory disk on the same
socket: the watcher's tries are refused as a different disk, which stays
all zeroes (nothing written to it), and member 1 stays failed until the
operator's `replace 1`, a full rebuild.  Every byte is the shadow and
scrub finds no mismatch.
"""

import time

import nbd

import faults
import readd
import workload as wl

with faults.Test(filters=["error"], timeout=180) as t:
    c = readd.Case(t, params=["readd=auto", "rebuild-rate=256K"],
                   **readd.CASES["r6"])
    ctl, r1, m = c.ctl, readd.REMOTE, c.members[readd.REMOTE]

    # (a)
    ctl.ok("fail %d" % r1)
    time.sleep(3)
    mm = ctl.status()["members"][r1]
    assert mm["state"] == "failed" and "operator" in \
        mm["failure"]["reason"], "(a) %s" % mm
    ctl.ok("re-add %d" % r1)
    assert ctl.wait_idle(60)["members"][r1]["state"] == "in_sync"
    c.wait_bits_clear("(a)")

    # (b)
    c.fail_under_writes(set(range(4, 60, 2)))
    # The watcher's tries while member 1's writes still failed were
    # refused ("does not take writes"), each doubling its back-off: on a
    # slow run (valgrind) the next try may be half a minute away.
    readd.wait_until(lambda: ctl.states()[r1] == "rebuilding", 90,
                     "(b) readd=auto takes member 1 back")
    m.fail_writes(True)
    readd.wait_until(lambda: ctl.states()[r1] == "failed", 30,
                     "(b) member 1 fails again during its re-add")
    m.fail_writes(False)
    time.sleep(4)
    assert ctl.states()[r1] == "failed", "(b) re-added again: %s" % (
        ctl.status()["members"][r1])
    c.arr.expect_log("failed again during its re-add", "(b)")
    ctl.ok("re-add %d" % r1)
    assert ctl.wait_idle(90)["members"][r1]["state"] == "in_sync"
    wl.compare_all(c.arr, c.shadow, "(b) after the operator's re-add")

    # (c)
    m.restart(plugin="memory")
    c.write([("write", 5 * c.arr.row, 4096)])
    readd.wait_until(lambda: ctl.states()[r1] == "failed", 20,
                     "(c) member 1 fails when its server is replaced")
    time.sleep(4)
    assert ctl.states()[r1] == "failed", "(c) another disk was re-added"
    c.arr.expect_log("different disk", "(c)")
    h = nbd.NBD()
    h.connect_uri(m.uri)
    assert h.pread(2 * readd.M, 0) == bytes(2 * readd.M), \
        "(c) the refused disk was written"
    h.shutdown()
    ctl.ok("replace %d %s" % (r1, m.disk))
    mm = ctl.wait_idle(120)["members"][r1]
    assert mm["state"] == "in_sync" and not mm["readd"] and \
        mm["resynced"] == c.rows * c.chunk, "(c) %s" % mm
    wl.compare_all(c.arr, c.shadow, "(c) after the replace")
    ctl.ok("scrub check")
    sc = ctl.finished_scrub()["scrub"]
    assert sc["mismatch_cnt"] == 0, "(c) scrub: %s" % sc
