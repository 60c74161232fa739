#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A second array given hard links to the member files of a running one
is refused, naming the member, and writes nothing: one inode, one
claim, whatever directory entry opens it.

An md RAID-5 of four local files runs, written and clean
(tests/lib/claim.py); `nbdkit raid` on a hard link to each must fail to
start, every member file keeps its bytes, and the first array still
reads its data and takes writes.
"""

import os

import claim
import faults

with faults.Test(timeout=120) as t:
    first = claim.First(t)
    first.refused(claim.other_names(t, first.paths, os.link, "hard"),
                  "hard links to the members")
