#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A rebuild punches the rows every other member holds as holes instead
of reconstructing and writing them: a mostly empty array rebuilds in a
fraction of the time, and its new member stays sparse.

A raw RAID-6 of six sparse 32M member files (tmpfs or whatever $TMPDIR
is), chunk 64K, written in three places only (a few rows each, one of
them a partial row).  Member 1 fails and is replaced by a file full of
noise: after the rebuild the new file must hold the shadow's rows
(raidcheck.py), read back through NBD byte for byte, scrub 0 mismatches,
and have less than one chunk more than the written rows' chunks
allocated (st_blocks; the filesystem's own blocks): every other row was
punched, noise gone.  Skips if the member files' filesystem
does not report holes (SEEK_DATA on a fresh sparse file).
"""

import os

import faults
import workload as wl

K, M = 1024, 1024 * 1024
SIZE = 32 * M

with faults.Test(timeout=120) as t:
    t.requires_holes()

    ms = [t.member(SIZE, "local") for _ in range(6)]
    arr = t.array(ms, level=6, chunk=64 * K, control=True)
    shadow = bytearray(arr.size)
    row = arr.row
    writes = [(3 * row, 2 * row), (200 * row + 5000, 70000),
              (arr.rows * row - row, row)]
    for off, n in writes:
        data = os.urandom(n)
        arr.h.pwrite(data, off)
        shadow[off:off + n] = data
    arr.h.flush()
    rows = {s for off, n in writes
            for s in range(off // row, (off + n - 1) // row + 1)}

    arr.ctl.ok("fail 1")
    new = t.member(SIZE, "local")
    faults.noise_file(new.path, SIZE)
    arr.ctl.ok("replace 1 %s" % new.disk)
    mm = arr.ctl.wait_idle(60)["members"][1]
    assert mm["state"] == "in_sync", mm
    allocated = os.stat(new.path).st_blocks * 512
    faults.log("  %d rows of %d written; the new member has %d KiB "
               "allocated of %d KiB" % (len(rows), arr.rows,
                                        allocated // K, SIZE // K))
    # One row of holes written would add a whole chunk; the filesystem's
    # own blocks (an extent tree block on ext4) are less than one.
    assert allocated < (len(rows) + 1) * arr.chunk, \
        "the new member has %d bytes allocated, the %d written rows' " \
        "chunks are %d: rows of holes were written, not punched" % (
            allocated, len(rows), len(rows) * arr.chunk)
    wl.compare_all(arr, bytes(shadow), "after the rebuild")
    arr.ctl.ok("scrub check")
    sc = arr.ctl.finished_scrub()["scrub"]
    assert sc["mismatch_cnt"] == 0, sc
    arr.stop()
    paths = [m.path for m in ms]
    paths[1] = new.path
    faults.check_members(arr, paths, bytes(shadow), "after the rebuild")
