#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A second array given the backing file of a loop device that a
running array holds as a member is refused, naming the file, and writes
nothing: an array that opens a loop device claims its backing file too.

An md RAID-5 runs on a loop device over one file (losetup) and three
other files, written and clean (tests/lib/claim.py); `nbdkit raid` on
the loop device's backing file and the other three must fail to start
at the backing file, every member file keeps its bytes, and the first
array still reads its data and takes writes.  Skips (77) without root
or losetup.
"""

import os

import claim
import faults

with faults.Test(timeout=120) as t:
    files = [os.path.join(t.dir, "f%d" % i) for i in range(4)]
    for f in files:
        with open(f, "wb") as fh:
            fh.truncate(claim.MEMBER_SIZE)
    with claim.loop_device(t, files[0]) as dev:
        first = claim.First(t, [dev] + files[1:])
        first.paths = files     # the bytes behind the loop device too
        first.settle()
        first.refused(files, "the backing file of a member loop device")
        first.arr.stop()
