#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""replace N PATH with a disk that another array holds is refused with a
reply that says the disk is in use, and changes nothing; once the other
array has stopped, the same replacement is accepted.

An md RAID-5 of four local files runs with member 1 failed (fail 1); a
second array (raw, metadata=none) runs on three blank files.  `replace 1
X` with X one of the second array's files must be refused saying X is
in use by another array or process, X and the first array's members
keep their bytes, and member 1 stays failed.  (X carries no superblock
or format: the refusal is the claim's, not the foreign-disk check's.)
After the second array stops, `replace 1 X` rebuilds onto X and the
first array reads its data.
"""

import claim
import faults

with faults.Test(timeout=120) as t:
    first = claim.First(t)
    ctl = first.arr.ctl
    ctl.ok("fail 1")
    first.settle()
    other = t.array(["local"] * 3, member_size=claim.MEMBER_SIZE, level=5,
                    chunk=65536)
    x = other.members[0].path
    x_sum = faults.md5(x)

    reply = ctl.error("replace 1 %s" % x)
    assert claim.EXPECT in reply and x in reply, reply
    faults.log("ok: replace refused: %s" % reply)
    assert faults.md5(x) == x_sum, "the other array's disk was written"
    assert faults.md5s(first.paths) == first.sums, \
        "a member of the first array was written"
    assert ctl.states()[1] == "failed", ctl.states()

    other.stop()
    ctl.ok("replace 1 %s" % x)
    ctl.wait_idle(60)
    assert ctl.states() == ["in_sync"] * 4, ctl.states()
    assert first.arr.h.pread(first.arr.size, 0) == first.shadow, \
        "the data after the replacement"
