# SPDX-License-Identifier: BSD-3-Clause
"""What test-remote-slow.py and -hang.py share: a member that does
not answer in time, member-timeout=2: a request that needs it is served
without it within 4 s, never left hanging; requests that avoid it stay
fast.
"""

import faults
import workload as wl

K = 1024
TIMEOUT = 2
HI = TIMEOUT + 2.0
PARAMS = ["member-timeout=%d" % TIMEOUT]


def chunks_on(arr, k, want):
    """Array offsets of data chunks on member k (want=True) or not."""
    return [arr.chunk_offset(s, i) for s in range(arr.rows)
            for i in range(arr.dd)
            if (arr.where(arr.chunk_offset(s, i))[2] == k) == want]


def read_hung(arr, k, off, shadow, what):
    """A read of the hung member's chunk: the right data, from parity,
    within HI seconds."""
    got, err, dt = wl.timed(arr.h.pread, 4096, off)
    faults.log("    %s: %s after %.2f s" % (what, err or "data", dt))
    assert dt < HI, "%s: took %.1f s (member-timeout=%d)" % (what, dt, TIMEOUT)
    assert err is None and got == shadow[off:off + 4096], \
        "%s: wrong data" % what
    return dt


def read_ok(arr, off, shadow, what, limit=1.0):
    got, err, dt = wl.timed(arr.h.pread, 4096, off)
    assert err is None, "%s: %s" % (what, err)
    assert got == shadow[off:off + 4096], "%s: wrong data" % what
    assert dt < limit, "%s: took %.1f s" % (what, dt)
