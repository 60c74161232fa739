#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A re-add that nbdkit's stop interrupts goes on, as a re-add, when it
starts again.

RAID-6 md array with a bitmap (tests/lib/readd.py), the re-add throttled by
rebuild-rate.  Member 1 (NBD) fails under writes, twenty rows are written
while it is out; re-add 1, and nbdkit is stopped (SIGTERM) while it
runs: member 1's superblock says it is recovering from the bitmap
(feature bits 0x2 and 0x80) at its recorded recovery offset, and the
bits are still set.  Started again on the same members, the array
resumes the re-add by itself: member 1 rebuilding as a re-add, then in
sync, having written only the dirty rows from its recovery offset on
(not the rest of the member).  Data, scrub and raidcheck.py right.
"""

import faults
import mdsb
import readd

with faults.Test(filters=["error"], timeout=150) as t:
    c = readd.Case(t, params=["rebuild-rate=512K"], **readd.CASES["r6"])
    r1 = readd.REMOTE
    dirty = c.dirty_rows(c.fail_under_writes(set(range(10, 30))))

    c.ctl.ok("re-add %d" % r1)
    readd.wait_until(lambda: c.ctl.status()["members"][r1]["resynced"] > 0,
                     20, "the re-add writes its first rows")
    c.restart()

    sb = mdsb.read(c.paths[r1])
    assert sb["feature_map"] & 0x82 == 0x82 and mdsb.role(sb) == r1, \
        "superblock after the stop: feature_map %#x, role %s" % (
            sb["feature_map"], mdsb.role(sb))
    from_row = sb["recovery_offset"] * 512 // c.chunk
    owed = len([s for s in dirty if s >= from_row]) * c.chunk
    assert c.disk_bits(0), "the bits were cleared while a member was re-added"
    mm = c.ctl.status()["members"][r1]
    assert mm["state"] == "rebuilding" and mm["readd"], mm

    mm = c.ctl.wait_idle(60)["members"][r1]
    assert mm["state"] == "in_sync" and mm["readd"] and \
        mm["resynced"] == owed, "%s, expected %d bytes resynced from row %d" \
        % (mm, owed, from_row)
    faults.log("  resumed from row %d: %d bytes resynced" % (from_row, owed))
    c.check_end("after the resumed re-add")
