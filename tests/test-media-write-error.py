#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A write that fails on a member's medium costs the member the 4 KiB
pages that refuse it, not the request's range and not the member (md
records the pages of a stripe it could not write, and keeps the disk).

RAID-6 of 5 (md, create=true, filled: the shadow), member 2 served by
the bad-sector plugin, one 4 KiB range in the middle of one of its data
chunks refusing writes.  A client write of that whole chunk (64 KiB) is
acknowledged; member 2 stays in sync; its log lists exactly the 8
sectors that refused, not the chunk's 128; every block reads as the
shadow.  Once the sectors take writes again, a write over them clears
the log.
"""

import random

import faults
import workload as wl

K, M = 1024, 1024 * 1024
CHUNK, BLOCK, BAD = 64 * K, 4 * K, 2

with faults.Test(plugins=["badsector"], filters=["error"]) as hz:
    arr = hz.array(["local", "local", "badsector", "local", "local"],
                   member_size=16 * M, level=6, chunk=CHUNK, data_offset=None,
                   control=True, params=["create=true"])
    arr.ctl.wait_idle(120)
    rng = random.Random(9)
    shadow = bytearray(wl.fill(arr.h, rng))
    m = arr.members[BAD]
    s = next(s for s in range(5, arr.rows) if BAD in arr.layout_of(s)[2])
    m.add_bad_range(arr.data_offset + s * CHUNK + 7 * BLOCK, BLOCK, "write")
    off = s * arr.row + arr.layout_of(s)[2].index(BAD) * CHUNK
    data = rng.randbytes(CHUNK)
    arr.h.pwrite(data, off)
    shadow[off:off + CHUNK] = data
    st = arr.ctl.status()["members"][BAD]
    assert st["state"] == "in_sync", "member %d: %s" % (BAD, st)
    assert st["bad_blocks"]["sectors"] == BLOCK // 512, \
        "member %d's log after a chunk write with 4 KiB refused: %s" % (
            BAD, st["bad_blocks"])
    wl.compare_all(arr, shadow, "after the write")

    m.clear_bad_ranges()
    data = rng.randbytes(CHUNK)
    arr.h.pwrite(data, off)
    shadow[off:off + CHUNK] = data
    st = arr.ctl.status()["members"][BAD]
    assert st["bad_blocks"]["sectors"] == 0, "the log after a write that " \
        "succeeded: %s" % st["bad_blocks"]
    wl.compare_all(arr, shadow, "after the second write")
    arr.stop()
    faults.check_members(arr, [x.path for x in arr.members], shadow,
                         "the members")
    faults.log("a 64 KiB write with 4 KiB refused: 8 sectors recorded; "
               "written again, the log emptied")
