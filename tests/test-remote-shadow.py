#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Remote members behave exactly like local ones.  Arrays that mix local
member files and members served over NBD (nbdkit's file plugin behind
the error filter, on Unix sockets; one server without multi-conn, so
the shared-connection path runs too) take random writes, zeroes, trims
and reads of every size and alignment against a shadow image, then a
burst of concurrent aio writes on two connections.  The array must equal
the shadow, and the independent checker (raidcheck.py) must find every
row's parity good on the member files and rebuild the shadow from them.

RAID_TEST_SEED=N replays a run; RAID_TEST_OPS=N changes the operations
per configuration (default 300).
"""

import os
import random

import faults
import workload as wl

K = 1024
nops = int(os.environ.get("RAID_TEST_OPS", "300"))

# level, members (r: remote, l: local, s: remote without multi-conn),
# layout, chunk, data offset
configs = [
    (5, "rlrl",   "left-symmetric",   16 * K, 0),
    (6, "rrlrlr", "left-asymmetric",  4 * K,  12 * K),
    (6, "rrrrr",  "right-symmetric",  64 * K, 0),
    (5, "srrl",   "parity-first",     4 * K,  0),
]

with faults.Test(filters=["error"], timeout=60) as hz:
    for n, (level, kinds, layout, chunk, doff) in enumerate(configs):
        rng = random.Random(hz.seed + n)
        msize = doff + 32 * chunk + 3000
        members = []
        for j, k in enumerate(kinds):
            kind = "local" if k == "l" else "remote"
            # The last member is bigger: the smallest sets the size,
            # whether it is local or remote.
            size = msize + (chunk + 100 if j == len(kinds) - 1 else 0)
            members.append(hz.member(size, kind, multi_conn=(k != "s")))
        arr = hz.array(members, level=level, chunk=chunk, layout=layout,
                       data_offset=doff)
        npar = 2 if level == 6 else 1
        want = (len(kinds) - npar) * ((msize - doff) // chunk) * chunk
        assert arr.size == want, "size %d, expected %d" % (arr.size, want)
        what = "config %d: RAID-%d %s, %s, chunk %d, data-offset %d" % (
            n, level, kinds, layout, chunk, doff)
        faults.log(what + " (r=remote l=local s=remote single-conn)")
        shadow = bytearray(arr.size)
        counts = wl.random_ops(arr, rng, shadow, nops, what)
        npieces = wl.burst(arr, rng, shadow)
        wl.random_ops(arr, rng, shadow, nops // 3, what + ", after a burst")
        wl.compare_all(arr, shadow, what + ": final compare")
        arr.h.flush()
        arr.stop()
        faults.check_members(arr, [m.path for m in members], shadow, what,
                             exact=True)
        faults.log("  %d ops (%s), %d concurrent pieces: array, parity and "
                   "rebuilt image good" % (nops + nops // 3, counts, npieces))
        for m in members:
            if m.proc:
                m.kill()
