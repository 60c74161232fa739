#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A read-only array claims its disks exclusively, as md does: a second
array on them is refused, read-only or not, and writes nothing.

An md RAID-5 of four local files is made, written and stopped
(tests/lib/claim.py), then served with nbdkit -r.  `nbdkit -r raid` and
a read-write `nbdkit raid` on the same paths must each fail to start,
naming the first member and saying it is in use; the member files keep
their bytes and the read-only array still reads its data.
"""

import claim
import faults

with faults.Test(timeout=120) as t:
    first = claim.First(t)
    first.arr.stop()
    ro = t.array([faults.FileMember(p) for p in first.paths],
                 level=None, chunk=None, layout=None, data_offset=None,
                 nbdkit_args=["-r"])
    sums = faults.md5s(first.paths)
    for args, what in (["-r"], "a read-only second array"), \
                      ([], "a read-write second array"):
        line = t.refused_array(
            [faults.FileMember(p) for p in first.paths], claim.EXPECT, what,
            level=None, chunk=None, layout=None, data_offset=None,
            nbdkit_args=args)
        faults.log("ok: %s refused: %s" % (what, line))
        assert faults.md5s(first.paths) == sums, \
            "%s: a member was written" % what
    assert ro.h.pread(ro.size, 0) == first.shadow, \
        "the read-only array no longer reads its data"
