#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A long randomized run of everything at once, from one fresh seed:
client I/O, member failures (fail N, EIO, killed servers), member
servers restarted, replacements, rebuilds, scrubs and nbdkit restarts,
on a raw RAID-6, a raw RAID-5 and an md RAID-6, checked against a shadow
and raidcheck.py.  See tests/lib/raidfail_random.py for what it does and
the op mixes.

The seed and the mix are printed; RAID_TEST_SEED=N (with RAID_TEST_MIX=
as printed) replays the same choices (the background rebuild's timing
is not replayed).  RAID_TEST_SECONDS=N sets the time per array (default
18); RAID_TEST_ARRAYS="r6 r5 r6md" picks arrays.  The seeds that ever
failed run in test-fail-random-regress.py; make soak
(RAID_TEST_SOAK_MINUTES=N here) runs fresh seeds until one fails.
"""

import os

import faults
import raidfail_random

soak = os.environ.get("RAID_TEST_SOAK_MINUTES")
with faults.Test(filters=["error"], plugins=["badsector"],
                 seed=not soak) as t:
    if soak:
        raidfail_random.soak(t, float(soak))
    else:
        raidfail_random.one(t)
