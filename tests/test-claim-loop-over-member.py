#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A second array given a loop device whose backing file is a member
file of a running array is refused, naming the loop device, and writes
nothing: the loop device's backing file is claimed with it.

An md RAID-5 of four local files runs, written and clean
(tests/lib/claim.py); `nbdkit raid` on a loop device over the first
member file (losetup) and the other three files must fail to start at
the loop device, every member file keeps its bytes, and the first array
still reads its data and takes writes.  Skips (77) without root or
losetup.
"""

import claim
import faults

with faults.Test(timeout=120) as t:
    first = claim.First(t)
    with claim.loop_device(t, first.paths[0]) as dev:
        first.refused([dev] + first.paths[1:],
                      "a loop device over a member file")
