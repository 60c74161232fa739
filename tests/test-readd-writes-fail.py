#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A failed member whose server answers reads but still fails writes has
not come back: a re-add is refused ("it does not take writes") and the
member stays failed, instead of being re-added only to fail again at its
first write (which, with readd=auto, would leave it failed for good).

RAID-6 md array with a bitmap (tests/lib/readd.py), readd=auto.  Member 1's
writes fail (the error filter): a full-row write fails it, more rows are
written while it is out.  Its writes keep failing for a few seconds while
its reads work:
  - the operator's `re-add 1` is refused, naming the reason; member 1 is
    still failed;
  - the watcher's tries are refused too (the debug log says why), and
    member 1 is never "rebuilding" meanwhile.
Then its writes work again: the watcher re-adds it within its back-off,
it ends in sync having resynced the missed rows' bytes; every byte is
the shadow, scrub 0 mismatches, raidcheck.py right.
"""

import time

import faults
import readd

with faults.Test(filters=["error"], timeout=150) as t:
    c = readd.Case(t, params=["readd=auto"], **readd.CASES["r6"])
    ctl, r1, m = c.ctl, readd.REMOTE, c.members[readd.REMOTE]

    m.fail_writes(True)
    first = c.write([("write", 4 * c.arr.row, c.arr.row)])
    assert ctl.states()[r1] == "failed", ctl.status()["members"][r1]
    rows = first | c.write(c.scattered_ops({9, 17, 33}))
    c.arr.h.flush()

    c.refused("re-add %d" % r1, "does not take writes")
    end = time.monotonic() + 4
    while time.monotonic() < end:
        assert ctl.states()[r1] == "failed", \
            "re-added while its writes fail: %s" % ctl.status()["members"][r1]
        time.sleep(0.05)
    c.arr.expect_log("does not take writes", "the watcher's refusals")

    m.fail_writes(False)
    readd.wait_until(lambda: ctl.states()[r1] != "failed", 20,
                     "readd=auto takes member 1 back once it takes writes")
    mm = ctl.wait_idle(60)["members"][r1]
    missed = c.dirty_rows(rows)
    assert mm["state"] == "in_sync" and mm["readd"] and \
        mm["resynced"] == len(missed) * c.chunk, \
        "resynced %d bytes, %d rows were dirty: %s" % (
            mm["resynced"], len(missed), mm)
    c.check_end("after the re-add")
