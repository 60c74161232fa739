#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A corrupt bitmap superblock on every member (bad magic, version 99,
chunksize not a power of two or too small, a UUID not the set's,
daemon_sleep 0, clustered) stops nbdkit before it serves, with a message
about the bitmap naming a member, and no member file changes.
(tests/lib/md_bitmap.py)
"""

import faults
import md_bitmap as mb

K = 1024

with faults.Test(timeout=120) as t:
    r6 = mb.cases(t)[0]
    r6.create(fill=False)
    for what, field, value in (
            ("bad magic", "magic", faults.mdsb.BITMAP_MAGIC ^ 1),
            ("version 99", "version", 99),
            ("chunksize 192K, not a power of two", "chunksize", 3 * 64 * K),
            ("chunksize 256", "chunksize", 256),
            ("UUID not the set's", "uuid", b"\x11" * 16),
            ("daemon_sleep 0", "daemon_sleep", 0),
            ("clustered (nodes 2)", "nodes", 2)):
        xs = mb.copy_members(t, r6.paths, "x")
        for x in xs:
            faults.mdsb.change_bitmap(x, **{field: value})
        mb.refused(t, "(f) bitmap " + what, [], xs, name_member=True)
    mb.finish()
