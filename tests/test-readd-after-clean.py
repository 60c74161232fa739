#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A member that fails right after the array went clean again is
re-added: what records the rows it missed was cleared while the array was
active, at the active event count, and marking it clean takes md's count
back down by one (as md does), so the member's superblock says the count
below the clearing's.  md lowers events_cleared with it ("rocking back");
so must the plugin, or the member could never be re-added.

For a RAID-6 md array with a write-intent bitmap and one with
bitmap=none (the record in memory): a write without a flush, the marks
cleared while it is active, a flush (clean: events back down), member 2
failed, a write while it is out; `re-add 2` must be accepted and resync
exactly the rows under the marks; every byte the shadow, scrub 0
mismatches, raidcheck.py right.
"""

import faults
import mdsb
import readd

with faults.Test(filters=["error"], timeout=120) as t:
    for shape in (readd.CASES["r6"], dict(readd.CASES["r6"], bchunk=None)):
        what = "bitmap=none" if shape["bchunk"] is None else "bitmap"
        c = readd.Case(t, **shape)
        c.write([("write", 5 * c.arr.row, 4096)])
        c.wait_bits_clear("after a write without a flush (%s)" % what)
        ev = mdsb.read(c.paths[0])["events"]
        c.arr.h.flush()
        readd.wait_until(lambda: mdsb.read(c.paths[0])["events"] < ev, 10,
                         "%s: the flush marks it clean, events back down"
                         % what)
        clean = mdsb.read(c.paths[0])["events"]
        c.ctl.ok("fail 2")
        rows = c.write([("write", 9 * c.arr.row + 4096, 8192)])
        c.arr.h.flush()
        c.ctl.ok("re-add 2")
        mm = c.ctl.wait_idle(60)["members"][2]
        missed = c.dirty_rows(rows)
        assert mm["state"] == "in_sync" and \
            mm["resynced"] == len(missed) * c.chunk, \
            "%s: resynced %d bytes, rows %s missed: %s" % (
                what, mm["resynced"], sorted(missed), mm)
        faults.log("  %s: events %d -> %d at the flush; re-added, %d bytes"
                   % (what, ev, clean, mm["resynced"]))
        c.check_end(what)
