#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A write acknowledged after one of its sectors went into a bad-block log
survives SIGKILL: the log is on disk before the reply (md waits for an
unacknowledged bad block to be written with the superblocks).

RAID-5 of 4 (md, create=true, resynced, filled: the shadow), member 2
served by the bad-sector plugin.  Six times: a 4 KiB range of member 2
in a row where it holds data stops taking writes; a client writes there
(member 2 keeps its old bytes; the write is acknowledged, the range
recorded in member 2's log); nbdkit is killed at once and started again
on the same members.  The array resyncs (unclean: a repairing scrub of
every row), and every block reads as the shadow: had the range not been
on disk in the log, member 2's old bytes would be read as data, and the
resync would make the parity agree with them.  At the end member 2's log
holds the six ranges, member 2 is in sync, nothing is lost, and a scrub
finds nothing wrong.
"""

import random

import faults
import workload as wl

K, M = 1024, 1024 * 1024
MSIZE, CHUNK, BLOCK = 16 * M, 64 * K, 4 * K
BAD, TIMES = 2, 6

with faults.Test(plugins=["badsector"], filters=["error"]) as hz:
    arr = hz.array(["local", "local", "badsector", "local"],
                   member_size=MSIZE, level=5, chunk=CHUNK, data_offset=None,
                   control=True, params=["create=true"])
    arr.ctl.wait_idle(120)
    rng = random.Random(11)
    shadow = bytearray(wl.fill(arr.h, rng))
    arr.h.flush()
    m = arr.members[BAD]
    rows = [s for s in range(arr.rows) if BAD in arr.layout_of(s)[2]]
    for k in range(TIMES):
        s = rows[(k + 1) * len(rows) // (TIMES + 1)]
        page = k % (CHUNK // BLOCK)
        m.add_bad_range(arr.data_offset + s * arr.chunk + page * BLOCK, BLOCK,
                        "write")
        off = s * arr.row + arr.layout_of(s)[2].index(BAD) * CHUNK \
            + page * BLOCK
        data = rng.randbytes(BLOCK)
        arr.h.pwrite(data, off)                 # acknowledged: no flush
        shadow[off:off + BLOCK] = data
        arr.kill()
        arr.params = [p for p in arr.params if p != "create=true"]
        arr.start()
        st = arr.ctl.wait_idle(120)
        assert st["members"][BAD]["state"] == "in_sync", \
            "kill %d: member %d is %s" % (k, BAD, st["members"][BAD]["state"])
        got = arr.h.pread(BLOCK, off)
        assert got == shadow[off:off + BLOCK], \
            "kill %d: the acknowledged write at %d (row %d) was lost" % (
                k, off, s)
    st = arr.ctl.status()
    assert st["members"][BAD]["bad_blocks"]["sectors"] == \
        TIMES * BLOCK // 512, "member %d's log: %s" % (
            BAD, st["members"][BAD]["bad_blocks"])
    assert st["lost_bytes"] == 0, "lost: %s" % st["lost"]
    wl.compare_all(arr, shadow, "after %d kills" % TIMES)
    arr.ctl.ok("scrub check")
    sc = arr.ctl.wait_idle(120)["scrub"]
    assert sc["finished"] and sc["mismatch_cnt"] == 0, "the scrub: %s" % sc
    arr.stop()
    faults.log("%d writes acknowledged with a sector recorded bad, each "
               "followed by SIGKILL: all read back" % TIMES)
