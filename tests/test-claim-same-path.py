#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A second array started on the member files of a running one, by the
same paths, is refused at once, naming the member and saying it is in
use, and writes nothing.

md claims its disks exclusively; the plugin used to start a second
array on the same files, and the two write-through caches then wrote
parity from stale pages.  An md RAID-5 of four local files runs, written
and clean (tests/lib/claim.py); `nbdkit raid` on the same four paths
must fail to start, every member file keeps its bytes, and the first
array still reads its data and takes writes.
"""

import claim
import faults

with faults.Test(timeout=120) as t:
    first = claim.First(t)
    first.refused(first.paths, "the same paths")
