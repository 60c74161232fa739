#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Degraded RAID-6 arrays serve every byte: every single member and every
pair of members of every md layout over 4..8 members is left out of a
filled array, which must read back byte-exact, take writes degraded, and
rebuild onto fresh members full of noise with every row's parity right
after (see tests/lib/fail_degraded.py).  RAID_TEST_SEED=N replays a run.
"""

import fail_degraded

K = 1024
# (config number: its rng's seed), level, members, layout, chunk, data offset
fail_degraded.run([
    (6, (6, 4, "left-asymmetric",  8 * K,  0)),
    (7, (6, 5, "right-asymmetric", 4 * K,  4 * K)),
    (8, (6, 6, "left-symmetric",   16 * K, 0)),
    (9, (6, 7, "right-symmetric",  8 * K,  0)),
    (10, (6, 8, "parity-first",    4 * K,  0)),
    (11, (6, 5, "parity-last",     8 * K,  12 * K)),
])
