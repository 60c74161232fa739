# SPDX-License-Identifier: BSD-3-Clause
"""What test-remote-eio-*.py share: arrays with a remote member
whose reads or writes return EIO (nbdkit's error filter, switched on and
off by a trigger file), filled with random data.  No request may take
longer than SLOW seconds.
"""

import random

import faults
import workload as wl

K = 1024
SLOW = 5.0
# level, member kinds (r: remote, l: local), layout, failing member
CONFIGS = [(5, "rrrl", "left-symmetric", 1),
           (6, "rlrrr", "left-asymmetric", 2)]


def timed(fn, *args):
    r, err, dt = wl.timed(fn, *args)
    assert dt < SLOW, "a request took %.1f s" % dt
    return r, err


def chunks(arr, rng):
    """(row, data chunk, array offset of a random 4K in it) for every data
    chunk of the array, row by row."""
    for s in range(arr.rows):
        for i in range(arr.dd):
            yield s, i, arr.chunk_offset(s, i) + \
                rng.randrange(0, arr.chunk - 4096, 512)


def arrays(hz):
    """(array, failing member, rng, shadow) for each configuration."""
    for n, (level, kinds, layout, k) in enumerate(CONFIGS):
        rng = random.Random(hz.seed + n)
        arr = hz.array(["remote" if c == "r" else "local" for c in kinds],
                       member_size=32 * 16 * K, level=level, chunk=16 * K,
                       layout=layout, params=["member-timeout=2"])
        faults.log("RAID-%d %s (r=remote, l=local), %s, member %d fails"
                   % (level, kinds, layout, k))
        shadow = wl.fill(arr.h, rng, step=4 * arr.row)
        assert arr.bad_rows() == [], "parity bad right after the fill"
        yield arr, k, rng, shadow
        arr.stop()
