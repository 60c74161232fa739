#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A remote member whose reads return EIO (nbdkit's error filter): every
4K read of every data chunk returns the right data, the failing member's
chunks from parity, and so does one read over the whole array; no
request takes over 5 s, no member file changes, and once the fault is
off the array reads back as written, and again after a restart.  RAID-5 and RAID-6, remote and
local members mixed (tests/lib/remote_eio.py).
"""

import faults
import remote_eio

with faults.Test(filters=["error"], timeout=100) as hz:
    for arr, k, rng, shadow in remote_eio.arrays(hz):
        m = arr.members[k]
        snap = [x.read() for x in arr.members]
        m.fail_reads(True)
        counts = {"ok": 0, "reconstructed": 0}
        for s, i, off in remote_eio.chunks(arr, rng):
            got, err = remote_eio.timed(arr.h.pread, 4096, off)
            on_k = arr.where(off)[2] == k
            assert err is None, "row %d chunk %d (member %d): read " \
                "failed: %s" % (s, i, arr.where(off)[2], err)
            assert got == shadow[off:off + 4096], \
                "row %d chunk %d (member %d): wrong data" % (
                    s, i, arr.where(off)[2])
            counts["reconstructed" if on_k else "ok"] += 1
        # One read over the whole array touches the failing member.
        got, err = remote_eio.timed(arr.h.pread, arr.size, 0)
        assert err is None and got == shadow, "whole-array read (degraded)"
        m.fail_reads(False)
        faults.log("  reads with member %d failing: %s" % (k, counts))
        assert [x.read() for x in arr.members] == snap, \
            "reads changed a member file"
        assert arr.h.pread(arr.size, 0) == shadow, \
            "array differs after the fault"
        # A fresh array process starts with every member in sync.
        arr.stop()
        arr.start()
        assert arr.h.pread(arr.size, 0) == shadow, \
            "array differs after a restart"
