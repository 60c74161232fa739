#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A rebuild that punches rows every other member holds as holes, onto a
target that cannot take the punch there (its medium), records the
sectors in the target's bad-block log and goes on, as md's recovery
records a write error and goes on: the target is not failed for it.

RAID-5 of 4 (md, create=true, data offset 64K: room for a log, no
bitmap), chunk 16K; rows 10 and 11 trimmed (holes on every member, so
the rebuild punches them); member 3 fails and is replaced by a disk
(served by the bad-sector plugin) whose 4 KiB in row 10 refuse writes.
The rebuild finishes with member 3 in sync, its log lists exactly those
8 sectors, nothing is lost, and the array reads as the shadow.
"""

import random

import faults
import workload as wl

K, M = 1024, 1024 * 1024
CHUNK, DOFF = 16 * K, 64 * K
MSIZE = DOFF + M

with faults.Test(plugins=["badsector"], filters=["error"]) as hz:
    arr = hz.array(["local"] * 4, member_size=MSIZE, level=5, chunk=CHUNK,
                   data_offset=DOFF, control=True,
                   params=["create=true", "bitmap=none"])
    arr.ctl.wait_idle(60)
    shadow = bytearray(wl.fill(arr.h, random.Random(1)))
    arr.h.trim(2 * arr.row, 10 * arr.row)
    shadow[10 * arr.row:12 * arr.row] = bytes(2 * arr.row)
    arr.h.flush()
    new = hz.member(MSIZE, "badsector")
    faults.noise_file(new.path, MSIZE)
    new.add_bad_range(DOFF + 10 * CHUNK + 4 * K, 4 * K, "write")
    arr.ctl.ok("fail 3")
    arr.ctl.ok("replace 3 " + new.disk)
    st = arr.ctl.wait_idle(60)
    m3 = st["members"][3]
    assert m3["state"] == "in_sync", \
        "the rebuild target: %s (%s)" % (m3["state"], m3.get("reason"))
    assert m3["bad_blocks"]["sectors"] == 8, "its log: %s" % m3["bad_blocks"]
    assert st["lost_bytes"] == 0, "lost: %s" % st["lost"]
    wl.compare_all(arr, shadow, "after the rebuild")
    arr.stop()
    faults.log("the punch refused on the target: 8 sectors recorded, the "
               "rebuild finished, member 3 in sync")
