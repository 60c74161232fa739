#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""create=true writes a valid write-intent bitmap on every member (md's
internal bitmap, md-bitmap.c's format): feature bit, bitmap_offset 8,
magic, version 4, UUID = set UUID, chunksize, daemon_sleep, sync_size =
the superblock's size, events equal to the superblock's (or one more),
cluster name and padding zero, the area before the data, and byte-
identical areas.  After the initial resync and a few idle periods every
bit is clear, on disk and in the status JSON (bitmap.dirty 0, bits and
chunk right): lazy clearing.  RAID-6 and RAID-5 (tests/lib/md_bitmap.py).
"""

import faults
import md_bitmap as mb

with faults.Test(timeout=120) as t:
    mb.run_cases(t, lambda case: case.create())
