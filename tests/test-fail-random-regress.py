#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The randomized test (tests/lib/raidfail_random.py) replaying every seed
that ever failed, as listed with its reason in tests/lib/random-seeds.regress
(each with its mix, and the arrays and op count where it failed).  A
seed that fails again prints its replay command.  A new seed that fails
belongs in that file, with the commit that fixed it.  RAID_TEST_REGRESS
names another file.
"""

import os

import faults
import raidfail_random

with faults.Test(filters=["error"], plugins=["badsector"], seed=False) as t:
    raidfail_random.regress(t, os.environ.get("RAID_TEST_REGRESS") or
                            os.path.join(faults.LIB_DIR,
                                         "random-seeds.regress"))
