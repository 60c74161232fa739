#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Arrays without a write-intent bitmap on disk re-add a member that comes
back while nbdkit runs, from the record of missed rows kept in memory:
only the rows written since the array was last healthy are resynced.

For each of a RAID-6 md array made with bitmap=none and a raw RAID-6
(metadata=none), both with member 1 served over NBD behind the error
filter (tests/lib/readd.py), once the record is clear (status missed_rows):
member 1 fails by EIO under a full-row write, more rows are written while
it is out; status says it is owed exactly those rows (worked out here
from the geometry); its server's writes work again and `re-add 1` takes
it back, resyncing exactly those rows' bytes, not the member's size.
Every byte is the shadow, scrub 0 mismatches, raidcheck.py right.
Then a raw RAID-5 whose member 2 is a local file failed by the operator:
`re-add 2` takes the same file back the same way.
Last, a raw RAID-6 whose member 1 is replaced by an empty remote disk
that fails during its (throttled) rebuild, past row R as status showed
it: its re-add must rebuild every row from where that rebuild had got
to (the record knows only what was written while it was out), owed says
so before the re-add (at least every row from R on, less than the whole
member) and the re-add writes exactly what was owed.
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

    c = readd.Case(t, raw=True, params=["rebuild-rate=512K"],
                   **dict(readd.CASES["r6"], bchunk=None))
    r1 = readd.REMOTE
    new = t.member(c.members[r1].size, "remote")
    c.ctl.ok("fail %d" % r1)
    c.ctl.ok("replace %d %s" % (r1, new.disk))
    c.members[r1], c.paths[r1] = new, new.path
    readd.wait_until(
        lambda: c.ctl.status()["members"][r1]["recovery_offset"] >=
        8 * c.chunk, 30, "the rebuild of the new disk gets past row 8")
    R = c.ctl.status()["members"][r1]["recovery_offset"] // c.chunk
    new.fail_writes(True)
    c.write([("write", 0, 4096)])
    readd.wait_until(lambda: c.ctl.states()[r1] == "failed", 10,
                     "the new disk fails during its rebuild")
    c.write(c.scattered_ops({c.rows - 3}))
    c.arr.h.flush()
    new.fail_writes(False)
    owed = c.ctl.status()["members"][r1]["owed"]
    assert (c.rows - R) * c.chunk <= owed < c.rows * c.chunk, \
        "owed %d bytes: the rebuild had got past row %d of %d" % (
            owed, R, c.rows)
    c.ctl.ok("re-add %d" % r1)
    mm = c.ctl.wait_idle(90)["members"][r1]
    assert mm["state"] == "in_sync" and mm["resynced"] == owed, \
        "resynced %d bytes, %d were owed: %s" % (mm["resynced"], owed, mm)
    faults.log("  raw, failed while rebuilding past row %d of %d: re-added, "
               "%d bytes" % (R, c.rows, mm["resynced"]))
    c.check_end("raw, failed while rebuilding")
