#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A remote member whose writes return EIO (nbdkit's error filter): 4K
writes (some FUA), zeroes and trims into every row (on even rows, only
those that avoid the failing member) all succeed, degraded where they
need the member, none taking over 5 s; every row reads back as the
shadow says, and once the fault is off the whole array reads back as
written.  RAID-5 and RAID-6, remote and local members mixed
(tests/lib/remote_eio.py).
"""

import faults
import remote_eio

with faults.Test(filters=["error"], timeout=100) as hz:
    nbd = faults.nbd
    for arr, k, rng, shadow in remote_eio.arrays(hz):
        m = arr.members[k]
        m.fail_writes(True)
        counts = {"ok": 0, "degraded": 0}
        for s, i, off in remote_eio.chunks(arr, rng):
            j = arr.where(off)[2]
            touches_k = k == j or k in arr.row_members(s)
            if touches_k and s % 2 == 0:
                continue        # even rows: only requests that avoid k
            op = rng.choice(("write", "write", "zero", "trim"))
            data = rng.randbytes(4096) if op == "write" else bytes(4096)
            if op == "write":
                _, err = remote_eio.timed(
                    arr.h.pwrite, data, off,
                    nbd.CMD_FLAG_FUA if rng.random() < 0.2 else 0)
            elif op == "zero":
                _, err = remote_eio.timed(arr.h.zero, 4096, off)
            else:
                _, err = remote_eio.timed(arr.h.trim, 4096, off)
            assert err is None, \
                "row %d chunk %d: a %s with member %d failing " \
                "failed: %s" % (s, i, op, k, err)
            shadow[off:off + 4096] = data
            counts["degraded" if touches_k else "ok"] += 1
        arr.h.flush()
        faults.log("  writes with member %d failing: %s" % (k, counts))
        for s in range(arr.rows):
            got = arr.h.pread(arr.row, s * arr.row)
            assert got == shadow[s * arr.row:(s + 1) * arr.row], \
                "row %d differs from the shadow" % s
        m.fail_writes(False)
        arr.h.flush()
        assert arr.h.pread(arr.size, 0) == shadow, "array differs at the end"
