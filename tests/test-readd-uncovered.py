#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""re-add refuses what nothing can vouch for, and writes nothing; the
operator is told to replace the member (a full rebuild), which is not
done behind their back.

(a) A RAID-6 md array made with bitmap=none: member 1 fails and is
written around; nbdkit is stopped and started again.  The record of
missed rows was in memory and is gone: member 1, out of date at
start-up, is not re-added, and `re-add 1` is refused, saying why.
(b) With a bitmap: member 2's disk is copied (a snapshot); member 2 is
failed and re-added (accepted), the array is written and its bits
cleared; member 2 fails again and its disk is put back from the
snapshot, the same disk as far as its UUIDs go but older than the
bitmap's last clearing: re-add 2 refused, saying so.
(c) A raw array: member 1's server is restarted while member 1 is out
(the same file behind it, but nothing proves it: the connection made at
open is gone, the server process another): refused.  Member 2, a local
file, is failed and its file replaced by a copy (another inode): refused.
Every member file and the status stay as they were.
"""

import os
import shutil

import faults
import readd

with faults.Test(filters=["error"], timeout=120) as t:
    shape = dict(readd.CASES["r6"], bchunk=None)
    c = readd.Case(t, **shape)
    c.ctl.ok("fail 1")
    c.write(c.scattered_ops({5, 6, 40}))
    c.arr.h.flush()
    c.restart()
    assert c.ctl.states()[1] == "failed", c.ctl.status()["members"][1]
    c.arr.expect_log("record of missed rows", "(a) at start-up")
    c.refused("re-add 1", "record of missed rows", "replace 1")
    c.arr.stop()

    c = readd.Case(t, **readd.CASES["r6"])
    c.older_than_last_clearing(2)
    c.refused("re-add 2", "cannot prove", "last clearing", "replace 2")
    c.arr.stop()

    c = readd.Case(t, raw=True, **shape)
    m = c.members[readd.REMOTE]
    m.fail_writes(True)
    c.write([("write", 3 * c.arr.row, c.arr.row)])
    m.fail_writes(False)
    m.restart()
    c.refused("re-add 1", "nothing proves", "replace 1")
    c.ctl.ok("fail 2")
    c.write([("write", 7 * c.arr.row, 4096)])
    shutil.copyfile(c.paths[2], c.paths[2] + ".copy")
    os.replace(c.paths[2] + ".copy", c.paths[2])
    c.refused("re-add 2", "nothing proves", "replace 2")
