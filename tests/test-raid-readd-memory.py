#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Arrays without a write-intent bitmap on disk re-add a member that comes
back while nbdkit runs, from the record of missed rows kept in memory:
only the rows written since the array was last healthy are resynced.

For each of a RAID-6 md array made with bitmap=none and a raw RAID-6
(metadata=none), both with member 1 served over NBD behind the error
filter (tests/readd.py), once the record is clear (status missed_rows):
member 1 fails by EIO under a full-row write, more rows are written while
it is out; status says it is owed exactly those rows (worked out here
from the geometry); its server's writes work again and `re-add 1` takes
it back, resyncing exactly those rows' bytes, not the member's size.
Every byte is the shadow, scrub 0 mismatches, raidcheck.py right.
Then a raw RAID-5 whose member 2 is a local file failed by the operator:
`re-add 2` takes the same file back the same way.
"""

import faults
import readd


def outage(c, i, rows, fail):
    """Member i out (fail() makes it fail) while `rows` are written;
    re-added; checked.  fail is called with the first row's write."""
    c.wait_bits_clear("before the outage")
    written = fail(min(rows)) | c.write(c.scattered_ops(rows - {min(rows)}))
    c.arr.h.flush()
    assert c.ctl.states()[i] == "failed", c.ctl.status()["members"][i]
    missed = c.dirty_rows(written)
    mm = c.ctl.status()["members"][i]
    assert mm["owed"] == len(missed) * c.chunk, \
        "owed %d bytes, %d rows were written: %s" % (mm["owed"],
                                                    len(missed), mm)
    return missed


def readd_and_check(c, i, missed, what):
    c.ctl.ok("re-add %d" % i)
    mm = c.ctl.wait_idle(60)["members"][i]
    assert mm["state"] == "in_sync" and mm["readd"] and \
        mm["resynced"] == len(missed) * c.chunk, \
        "%s: resynced %d bytes, %d rows were written while it was out: %s" \
        % (what, mm["resynced"], len(missed), mm)
    faults.log("  %s: re-added, %d of %d bytes resynced"
               % (what, mm["resynced"], c.rows * c.chunk))
    c.check_end(what)


with faults.Test(filters=["error"], timeout=240) as t:
    for what, raw in (("md, bitmap=none", False), ("raw", True)):
        c = readd.Case(t, raw=raw, **dict(readd.CASES["r6"], bchunk=None))
        m = c.members[readd.REMOTE]

        def fail_remote(row):
            m.fail_writes(True)
            return c.write([("write", row * c.arr.row, c.arr.row)])

        missed = outage(c, readd.REMOTE, {4, 9, 17, 33, 60}, fail_remote)
        m.fail_writes(False)
        readd_and_check(c, readd.REMOTE, missed, what)

    c = readd.Case(t, raw=True, remote=False,
                   **dict(readd.CASES["r5"], bchunk=None))

    def fail_local(row):
        c.ctl.ok("fail 2")
        return c.write([("write", row * c.arr.row + 100, 5000)])

    missed = outage(c, 2, {3, 8, 21, 50}, fail_local)
    readd_and_check(c, 2, missed, "raw, a local file")
