#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A write during which a member fails is acknowledged only once the
superblocks say that member is faulty, so a crash right after the reply
loses nothing.

md arrays (RAID-5 of 4 members, RAID-6 of 5; remote members, so that
member 1's writes can fail with EIO), filled with random data (the
shadow).  Member 1's writes fail; a write to a data chunk it holds
succeeds degraded; member 1 fails on the data write when the array was
already active, and on the superblock update that marks it active when
it was clean.  Before anything else happens, the other members'
superblocks (read by tests/lib/mdsb.py, not by the plugin) must record
member 1 as faulty, at an event count past member 1's own.  Then
SIGKILL, member 1 answers again, and the array restarts: without
force=true it is refused (dirty and degraded, as md refuses it), with
force=true member 1 comes back from the bitmap; every byte is the
shadow, the acknowledged write included, and a scrub finds no mismatch.

The old code recorded the failure at the next write or flush only: the
restart assembled member 1 as in sync, and the resync of the dirty rows
rebuilt parity from member 1's old data, so the acknowledged write read
back as what was there before it.  The first fix still missed a member
that failed on the bitmap's event count, written in the same update
before the superblocks (after a crash and its resync, the update that
marks the array active moves that count): the update took it for
recorded.  The randomized test's "crashes" mix found that (seed 1).
"""

import faults
import mdsb
import workload as wl

K, M = 1024, 1024 * 1024
FAULTY = 0xfffe                 # md's dev_roles entry for a faulty member


def where_on(arr, member, row):
    """Offset of the data chunk of row `row` that `member` holds."""
    for i in range(arr.dd):
        off = arr.chunk_offset(row, i)
        if arr.where(off)[2] == member:
            return off
    raise AssertionError("member %d holds parity in row %d" % (member, row))


def one(t, level, n, active, crashed):
    """active: the array was written since its last flush, so member 1
    fails on the data write; else on the superblock update that marks the
    array active first.  crashed: the array was killed and resynced once
    before, so that the update marking it active also moves the bitmap's
    event count, and member 1 fails on that write."""
    what = "RAID-%d, %s%s" % (level, "active" if active else "clean",
                              ", after a crash" if crashed else "")
    tag = "r%d%s%s" % (level, "a" if active else "c", "k" if crashed else "")
    ms = [faults.Member(t, "%s-m%d" % (tag, i), 8 * M) for i in range(n)]
    arr = faults.Array(t, ms, level=level, chunk=64 * K, data_offset=None,
                       params=["create=true"], control=True, name=tag)
    arr.ctl.wait_idle(60)                       # the first resync
    shadow = wl.fill(arr.h, t.rng)
    arr.h.flush()
    if crashed:
        arr.h.pwrite(shadow[0:4096], 0)
        arr.kill()
        arr.params = []
        arr.start()
        arr.ctl.wait_idle(60)                   # its resync
    if active:
        arr.h.pwrite(shadow[0:4096], 0)

    off = where_on(arr, 1, 7)
    data = t.rng.randbytes(arr.chunk)
    ms[1].fail_writes(True)
    arr.h.pwrite(data, off)                     # acknowledged, degraded
    shadow[off:off + len(data)] = data
    assert arr.ctl.states()[1] == "failed", "%s: %s" % (what, arr.ctl.states())

    # What a crash now would find on the members.
    own = mdsb.read(ms[1].path)
    for i in (0, 2):
        sb = mdsb.read(ms[i].path)
        assert sb["events"] > own["events"] and \
            sb["dev_roles"][own["dev_number"]] == FAULTY, \
            "%s: member %d's superblock does not record member 1 faulty " \
            "(events %d, member 1's %d; its role entry %#x)" % (
                what, i, sb["events"], own["events"],
                sb["dev_roles"][own["dev_number"]])
    arr.kill()
    ms[1].fail_writes(False)

    arr.params = []
    try:
        arr.start()
        raise AssertionError("%s: a dirty degraded array started without "
                             "force=true" % what)
    except RuntimeError:
        arr.expect_log("cannot start a degraded array", what)
    arr.params = ["force=true"]
    arr.start()
    st = arr.ctl.wait_idle(60)
    assert [m["state"] for m in st["members"]] == ["in_sync"] * n, \
        "%s: %s" % (what, st["members"])
    wl.compare_all(arr, shadow, what + ": after the crash")
    arr.ctl.ok("scrub check")
    sc = arr.ctl.finished_scrub()["scrub"]
    assert sc["mismatch_cnt"] == 0, "%s: scrub %s" % (what, sc)
    arr.stop()
    faults.log("%s: the write during member 1's failure survived SIGKILL"
               % what)


with faults.Test(filters=["error"], timeout=180) as t:
    for level, n in ((5, 4), (6, 5)):
        for active in (False, True):
            for crashed in (False, True):
                one(t, level, n, active, crashed)
