#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A member that failed during its full rebuild is re-added whole from
where that rebuild stopped: the bitmap only knows what was written while
it was out, not the rows it was never rebuilt to.

The old code re-added such a disk from the bitmap alone and called it in
sync, so the rows above its recovery offset kept whatever the new disk
held (zeroes here): reads returned them and parity disagreed.

RAID-6 and RAID-5 md arrays with a bitmap (tests/lib/readd.py).  Member 1
is failed and replaced by a new, empty remote disk; its rebuild is
throttled, and once it has recorded a recovery offset the new disk's writes fail.
Its superblock then says "recovering, up to row R" without the bitmap
bit (0x2, not 0x80).  Rows are written while it is out, below and above
R.  re-add 1 is accepted; its superblock during the re-add still says a
plain recovery (an md assembly must rebuild everything past its offset,
not trust the bitmap); it writes the dirty rows below R and every row
from R on, exactly that many bytes; the array ends in sync with every
byte the shadow, scrub 0 mismatches and raidcheck.py right.
"""

import faults
import mdsb
import readd

with faults.Test(filters=["error"], timeout=240) as t:
    for name in ("r6", "r5"):
        c = readd.Case(t, params=["rebuild-rate=512K"], **readd.CASES[name])
        ctl, r1 = c.ctl, readd.REMOTE
        new = t.member(c.members[r1].size, "remote")
        ctl.ok("fail %d" % r1)
        ctl.ok("replace %d %s" % (r1, new.disk))
        c.members[r1], c.paths[r1] = new, new.path
        readd.wait_until(lambda: mdsb.read(new.path)["recovery_offset"] > 0,
                         30, "the rebuild records a recovery offset")
        new.fail_writes(True)
        c.write([("write", 0, 4096)])       # finds the failure at once
        readd.wait_until(lambda: ctl.states()[r1] == "failed", 10,
                         "the new disk fails during its rebuild")
        sb = mdsb.read(new.path)
        assert sb["feature_map"] & 0x82 == 0x2, \
            "%s: superblock of the disk that failed while rebuilding: " \
            "feature_map %#x" % (name, sb["feature_map"])
        R = sb["recovery_offset"] * 512 // c.chunk   # sectors
        assert 0 < R < c.rows // 2, "%s: recovery row %d of %d" % (
            name, R, c.rows)
        written = c.write(c.scattered_ops({R // 2, R + 3, c.rows - 2}))
        written.add(0)
        c.arr.h.flush()
        new.fail_writes(False)

        owed_rows = {s for s in c.dirty_rows(written) if s < R} | \
            set(range(R, c.rows))
        ctl.ok("re-add %d" % r1)
        sb = mdsb.read(new.path)
        assert sb["feature_map"] & 0x82 == 0x2, \
            "%s: superblock during the re-add: feature_map %#x (0x80 would " \
            "let md trust the rows past the offset)" % (name, sb["feature_map"])
        mm = ctl.wait_idle(90)["members"][r1]
        assert mm["state"] == "in_sync", mm
        assert mm["resynced"] == len(owed_rows) * c.chunk, \
            "%s: resynced %d bytes, owed %d rows (%d below row %d)" % (
                name, mm["resynced"], len(owed_rows),
                len([s for s in owed_rows if s < R]), R)
        faults.log("  %s: recovery row %d of %d; re-add wrote %d bytes"
                   % (name, R, c.rows, mm["resynced"]))
        c.check_end(name + ": re-added after failing while rebuilding")
