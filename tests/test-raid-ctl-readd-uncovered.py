#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""re-add refuses what the write-intent bitmap cannot vouch for, and
writes nothing; the operator is told to replace the member (a full
rebuild), which is not done behind their back.

(a) A RAID-6 md array made with bitmap=none: member 1 failed, written
while out, re-add 1 refused for want of a bitmap.
(b) With a bitmap: member 2's disk is copied (a snapshot); member 2 is
failed and re-added (accepted), the array is written and its bits
cleared; member 2 fails again and its disk is put back from the
snapshot, the same disk as far as its UUIDs go but older than the
bitmap's last clearing: re-add 2 refused, saying so.  Every member file
and the status stay as they were.
(c) A raw array (metadata=none): nothing records what a failed member
missed, so re-add 1 is refused.
"""


import faults
import readd

with faults.Test(filters=["error"], timeout=120) as t:
    shape = dict(readd.CASES["r6"], bchunk=None)
    c = readd.Case(t, **shape)
    c.ctl.ok("fail 1")
    c.write(c.scattered_ops({5, 6, 40}))
    c.arr.h.flush()
    c.refused("re-add 1", "no write-intent bitmap", "replace 1")
    c.arr.stop()

    c = readd.Case(t, **readd.CASES["r6"])
    c.older_than_last_clearing(2)
    c.refused("re-add 2", "cannot prove", "last clearing", "replace 2")
    c.arr.stop()

    ms = [t.member(2 * readd.M, "remote" if i == 1 else "local")
          for i in range(4)]
    raw = t.array(ms, level=5, chunk=64 * readd.K, control=True)
    raw.ctl.ok("fail 1")
    raw.h.pwrite(b"x" * 4096, 0)
    raw.h.flush()
    readd.refused(raw.ctl, [m.path for m in ms], "re-add 1", "raw array",
                  "replace 1")
