#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The recovery offset of a rebuild covers only rows that are written.

Two threads rebuild a member, a window of rows each (jobs.c): the one
with the higher window can be done first, and must then wait for the
lower one before it moves the recovery offset past its rows.  A raw
RAID-6 of six local members, full of random data, member 1 failed and
replaced by a file of noise; while it is rebuilt, status is asked as fast
as it answers, and every time the replacement's bytes below the recovery
offset it reports must already be member 1's (nothing writes the array
meanwhile, so they are exactly the failed file's).  Rows above the offset
may hold anything.  At the end the whole file is member 1's.
"""

import os

import faults

K, M = 1024, 1024 * 1024
chunk, msize = 64 * K, 24 * M

with faults.Test(timeout=120) as hz:
    if not os.path.isfile(faults.CTL_TOOL):
        raise faults.Skip("%s is missing" % faults.CTL_TOOL)
    members = [hz.member(msize, "local") for _ in range(6)]
    arr = hz.array(members, level=6, chunk=chunk, control=True)
    size = arr.h.get_size()
    for off in range(0, size, 4 * M):
        arr.h.pwrite(hz.rng.randbytes(4 * M), off)
    arr.h.flush()
    with open(members[1].path, "rb") as f:
        old = f.read()

    arr.ctl.ok("fail 1")
    spare = os.path.join(hz.dir, "spare")
    faults.noise_file(spare, msize)
    arr.ctl.ok("replace 1 " + spare)
    polls = checked = 0
    while True:
        st = arr.ctl.status()
        m = st["members"][1]
        polls += 1
        if m["state"] != "rebuilding":
            break
        off = m["recovery_offset"]
        with open(spare, "rb") as f:
            got = f.read(off)
        if got != old[:off]:
            bad = next(i for i in range(off) if got[i] != old[i])
            raise AssertionError(
                "recovery_offset %d, but the replacement's byte %d (row %d) "
                "is not member 1's yet" % (off, bad, bad // chunk))
        checked += off > 0
    assert m["state"] == "in_sync", m
    with open(spare, "rb") as f:
        assert f.read() == old, "the rebuilt member is not member 1's bytes"
    faults.log("  %d polls, %d with rows already rebuilt, all written"
               % (polls, checked))
