#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A read-error correction is made durable at once, so that a member's
server that restarts after it does not cost the member.

A remote member whose server restarts with writes it acknowledged and
no flush covered is failed (they may be lost with the server's cache),
and the writes that correct unreadable pages were such writes: no flush
followed them unless a client sent one.  The randomized test's soak
found it (seed 498986918): a member failed after its server restarted,
with every client write flushed and the array idle.  Now the plugin
flushes the pages it rewrote before it reads them back.

An md RAID-5 of 4 (create=true, resynced, filled and flushed: the
shadow), member 2 served by the bad-sector plugin; 8 ranges of 4 KiB go
bad on member 2 and the whole array is read (8 corrections); no flush;
member 2's server restarts (a crash, as far as the plugin can tell); the
whole array is read again: every byte the shadow's, member 2 in sync.
"""

import random

import faults
import workload as wl

K, M = 1024, 1024 * 1024
MSIZE, CHUNK, BLOCK = 16 * M, 64 * K, 4 * K
BAD = 2
RANGES = 8

with faults.Test(plugins=["badsector"], filters=["error"]) as t:
    kinds = ["local", "local", "badsector", "local"]
    arr = t.array(kinds, member_size=MSIZE, level=5, chunk=CHUNK,
                  data_offset=None, control=True, params=["create=true"])
    arr.ctl.wait_idle(120)
    shadow = wl.fill(arr.h, random.Random(7))
    arr.h.flush()
    m = arr.members[BAD]
    rows = [s for s in range(arr.rows) if BAD in arr.layout_of(s)[2]]
    for k in range(RANGES):
        s = rows[k * len(rows) // RANGES]
        m.add_bad_range(arr.data_offset + s * arr.chunk + k * BLOCK, BLOCK)
    wl.compare_all(arr, shadow, "the reads that correct")
    st = arr.ctl.status()["members"][BAD]
    assert st["state"] == "in_sync" and st["corrected_reads"] == RANGES, \
        "after the reads: %s, %d corrected" % (st["state"],
                                               st["corrected_reads"])
    m.restart()
    wl.compare_all(arr, shadow, "after member %d's server restarted" % BAD)
    st = arr.ctl.status()["members"][BAD]
    assert st["state"] == "in_sync", \
        "member %d is %s after its server restarted: %s" % (
            BAD, st["state"], st["failure"])
    faults.log("%d pages corrected, member %d's server restarted without a "
               "client flush: the member stays in sync" % (RANGES, BAD))
