#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A remote member that stops answering (SIGSTOP: the kernel still
accepts connections, nothing answers), with member-timeout=2: a read of
its chunks returns the right data, from parity, within 4 s instead of
hanging, and so do the next ones, which must reconnect to the stopped
server; reads of other members' chunks stay fast and right.  After
SIGCONT, I/O resumes within the reconnect backoff (allowed 8 s) and the
array reads back as written.
"""

import faults
import remote_hang as rh
import workload as wl

K = 1024

with faults.Test(filters=["error"], timeout=50) as hz:
    arr = hz.array(["remote", "remote", "local", "remote"],
                   member_size=16 * 16 * K, level=5, chunk=16 * K,
                   params=rh.PARAMS)
    k = 1
    shadow = wl.fill(arr.h, hz.rng, step=4 * arr.row)
    on_k, off_k = rh.chunks_on(arr, k, True), rh.chunks_on(arr, k, False)
    faults.log("RAID-5, member %d stopped (SIGSTOP)" % k)
    arr.members[k].stop()
    rh.read_hung(arr, k, on_k[0], shadow, "first read of the stopped member")
    rh.read_ok(arr, off_k[0], shadow, "read of another member")
    # The next reads need a new connection to the stopped server.
    for j in (1, 2, 3):
        rh.read_hung(arr, k, on_k[j], shadow,
                     "read %d of the stopped member" % (j + 1))
        rh.read_ok(arr, off_k[j], shadow, "read of another member")
    arr.members[k].cont()
    _, tries, secs = wl.retry(lambda: arr.h.pread(4096, on_k[0]), 8.0)
    faults.log("  SIGCONT: first good read after %d tries, %.2f s"
               % (tries, secs))
    got, _, _ = wl.retry(lambda: arr.h.pread(arr.size, 0), 8.0)
    assert got == shadow, "array differs after SIGCONT"
