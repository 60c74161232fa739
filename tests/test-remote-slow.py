#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A remote member whose server answers writes after 10 s (nbdkit's delay
filter), with member-timeout=2: a write that needs it succeeds without
it (degraded) within 4 s and reads back; writes and reads that avoid it
stay under a second.  A server that answers the handshake and the reads
but not the writes tests the timeout of requests alone (the stopped
server of test-remote-hang.py tests reconnection too).
"""

import faults
import remote_hang as rh
import workload as wl

K = 1024

with faults.Test(filters=["error", "delay"], timeout=50) as hz:
    rng = hz.rng
    # Every write (and zero) to member 1 takes 10 s.  Reads are not
    # delayed, so the plugin opens the array normally (it may read its
    # members at start-up).  The members start zeroed, so the shadow is
    # all zeroes and every row's parity is good.
    ms = [hz.member(16 * 16 * K, "remote"),
          hz.member(16 * 16 * K, "remote", delay_write="10"),
          hz.member(16 * 16 * K, "remote")]
    arr = hz.array(ms, level=5, chunk=16 * K, params=rh.PARAMS)
    shadow = bytearray(arr.size)
    faults.log("RAID-5, member 1 answers writes after 10 s (delay filter)")
    on_k = rh.chunks_on(arr, 1, True)
    # Rows where member 1 holds neither the chunk written nor parity.
    free = [arr.chunk_offset(s, i) for s in range(arr.rows)
            for i in range(arr.dd)
            if 1 not in arr.row_members(s)
            and arr.where(arr.chunk_offset(s, i))[2] != 1]
    for j in (0, 1):
        data = rng.randbytes(4096)
        _, err, dt = wl.timed(arr.h.pwrite, data, on_k[j])
        faults.log("    write %d to the slow member: %s after %.2f s"
                   % (j + 1, err or "ok", dt))
        assert dt < rh.HI, "a write to the slow member took %.1f s" % dt
        assert err is None, "degraded write failed: %s" % err
        shadow[on_k[j]:on_k[j] + 4096] = data
        rh.read_ok(arr, on_k[j], shadow, "read back of a degraded write")
        data = rng.randbytes(4096)
        _, err, dt = wl.timed(arr.h.pwrite, data, free[j] + 4096)
        assert err is None and dt < 1.0, \
            "a write avoiding the slow member: %s after %.2f s" % (err, dt)
        shadow[free[j] + 4096:free[j] + 8192] = data
        rh.read_ok(arr, free[j] + 4096, shadow, "read of another member")
