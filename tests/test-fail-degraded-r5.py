#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Degraded RAID-5 arrays serve every byte: every single member of every
md layout over 3..6 members is left out of a filled array, which must
read back byte-exact, take writes degraded, and rebuild onto a fresh
member full of noise with every row's parity right after (see
tests/lib/fail_degraded.py).  RAID_TEST_SEED=N replays a run.
"""

import fail_degraded

K = 1024
# (config number: its rng's seed), level, members, layout, chunk, data offset
fail_degraded.run([
    (0, (5, 3, "left-asymmetric",  4 * K,  0)),
    (1, (5, 4, "right-asymmetric", 16 * K, 8 * K)),
    (2, (5, 5, "left-symmetric",   8 * K,  0)),
    (3, (5, 6, "right-symmetric",  4 * K,  0)),
    (4, (5, 4, "parity-first",     8 * K,  0)),
    (5, (5, 5, "parity-last",      16 * K, 0)),
])
