#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Claims end with the array that holds them: a second array refused on
the members of a running one starts once the first has stopped, and
reads the first's data.

An md RAID-5 of four local files runs, written and clean
(tests/lib/claim.py); `nbdkit raid` on the same paths is refused; the
first array is stopped (SIGTERM, as at a clean stop); the same command
then starts and reads back every byte the first array held.
"""

import claim
import faults

with faults.Test(timeout=120) as t:
    first = claim.First(t)
    first.refused(first.paths, "while the first array runs")
    first.arr.stop()
    second = t.array([faults.FileMember(p) for p in first.paths],
                     level=None, chunk=None, layout=None, data_offset=None)
    assert second.h.pread(second.size, 0) == first.shadow, \
        "the second array does not read the first array's data"
