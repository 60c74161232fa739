#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""re-add N resyncs only what the write-intent bitmap marks.

RAID-6 and RAID-5 (tests/lib/readd.py), md with a bitmap, member 1 served by
its own nbdkit behind the error filter.  Its writes fail (EIO) under a
full-row write: it fails, and status says why and when; more writes go to
scattered rows while it is out, and status says it is owed exactly the
rows under the bits they set (the bits on disk, read by mdsb.py, agree).
Its server answers again; re-add 1: the member is rebuilding as a re-add,
then in sync, having written exactly those rows (resynced = owed, far
less than its size).  Its superblock keeps its dev_number and device
UUID, is in its role, no longer recovering, at the array's events.  Every
byte of the array is the shadow, scrub check finds no mismatch, and
raidcheck.py finds every row right on every member file.
"""

import time

import faults
import mdsb
import readd

with faults.Test(filters=["error"], timeout=150) as t:
    for name, shape in readd.CASES.items():
        what = "%s: " % name
        c = readd.Case(t, **shape)
        ctl, r1 = c.ctl, readd.REMOTE
        sb0 = mdsb.read(c.paths[r1])
        t0 = time.time()
        out_rows = {3, 4, 17, 30, c.rows - 1}
        written = c.fail_under_writes(out_rows)
        owed_rows = c.dirty_rows(written)

        m = ctl.status()["members"][r1]
        assert m["state"] == "failed" and m["failure"] and \
            "Input/output error" in m["failure"]["reason"] and \
            t0 - 2 <= m["failure"]["time"] <= time.time() + 2, what + str(m)
        assert m["owed"] == len(owed_rows) * c.chunk, \
            "%sowed %d bytes, expected %d rows x %d" % (what, m["owed"],
                                                       len(owed_rows), c.chunk)
        bits = c.disk_bits(0)
        on_disk = {s for s in range(c.rows) if s * c.chunk // c.bchunk in bits}
        assert c.dirty_rows(on_disk) == owed_rows, \
            "%sbits on disk %s, rows written %s" % (what, sorted(bits),
                                                   sorted(written))
        faults.log("  %sfailed (%s), owed %d rows of %d"
                   % (what, m["failure"]["reason"], len(owed_rows), c.rows))

        ctl.ok("re-add %d" % r1)
        seen = []
        st = ctl.wait_idle(60, during=lambda st: seen.append(
            (st["members"][r1]["state"], st["members"][r1]["readd"])))
        m = st["members"][r1]
        assert m["state"] == "in_sync" and m["readd"] and m["owed"] == 0, \
            what + str(m)
        assert all(x == ("rebuilding", True) for x in seen
                   if x[0] != "in_sync"), what + str(seen)
        assert m["resynced"] == len(owed_rows) * c.chunk < c.rows * c.chunk, \
            "%sresynced %d bytes, owed %d, member data %d" % (
                what, m["resynced"], len(owed_rows) * c.chunk,
                c.rows * c.chunk)
        assert not st["degraded"] and st["failed"] == 0, what + str(st)
        faults.log("  %sre-added: %d bytes resynced of %d" % (
            what, m["resynced"], c.rows * c.chunk))

        c.check_end(what + "after the re-add")
        sbs = readd.superblocks(c.paths)
        sb = sbs[r1]
        assert (sb["dev_number"], sb["device_uuid"]) == \
            (sb0["dev_number"], sb0["device_uuid"]), \
            what + "slot or UUID changed"
        assert mdsb.role(sb) == r1 and not sb["feature_map"] & 2, \
            "%srole %s, feature_map %#x" % (what, mdsb.role(sb),
                                            sb["feature_map"])
        assert len({s["events"] for s in sbs}) == 1 and \
            all(mdsb.role(s) == i for i, s in enumerate(sbs)), \
            what + str([(s["events"], mdsb.role(s)) for s in sbs])
