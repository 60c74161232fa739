#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The agent's stop leaves the array clean, and a second head started by
the agent on the same remote members assembles it from the superblocks
with nothing to resync: an array moved from one node to another.

Head A (the agent, TCP on 127.0.0.1) starts; monitor says running (0).
A client writes without a flush, so that the superblocks say active, and
stays connected and idle, as a VM's disk does.  stop: nbdkit waits for
that client to go, so stop sends SIGKILL after stop_timeout (2 s); the
md superblocks were clean before that (every member: resync_offset all
ones, the same event count) and monitor says not running (7).  Head B,
another instance with its own port, control socket and pid file, starts
on the same members: no resync, every member in sync, and the array
holds what A acknowledged, byte for byte.  B's stop leaves it clean.
"""

import faults
import mdsb
import ocf


def superblocks(members, want, what):
    sbs = [mdsb.read(m.path) for m in members]
    got = [sb["resync_offset"] for sb in sbs]
    assert all(r == want for r in got) and \
        len({sb["events"] for sb in sbs}) == 1 and \
        all(mdsb.check(sb) == [] for sb in sbs), \
        "%s: resync_offset %s (want %d), events %s, md's checks %s" % (
            what, got, want, [sb["events"] for sb in sbs],
            [mdsb.check(sb) for sb in sbs])


def same(h, shadow, what):
    for off in range(0, len(shadow), ocf.M):
        got = h.pread(min(ocf.M, len(shadow) - off), off)
        assert got == shadow[off:off + len(got)], \
            "%s: the array differs from the shadow in [%d, %d)" % (
                what, off, off + len(got))


with faults.Test(timeout=120) as t:
    ocf.requires()
    members, shadow = ocf.md_array(t)
    a = ocf.Head(t, "raid-a", members, stop_timeout="2")
    a.must("start")
    a.must("monitor", interval=10)
    client = a.connect()
    data = t.rng.randbytes(300 * ocf.K)
    off = t.rng.randrange(len(shadow) - len(data))
    client.pwrite(data, off)
    shadow[off:off + len(data)] = data
    superblocks(members, 0, "written, not flushed")

    a.must("stop")
    superblocks(members, mdsb.CLEAN, "A stopped with a client connected")
    assert not a.running(), "A's nbdkit outlived stop"
    assert "SIGKILL" in open(a.halog).read(), \
        "stop did not need SIGKILL: did the idle client go?\n" + a.log()
    a.must("monitor", ocf.NOT_RUNNING, interval=10)
    faults.log("  A stopped: clean, SIGKILL after stop_timeout")

    b = ocf.Head(t, "raid-b", members)
    b.must("start")
    b.must("monitor", interval=10)
    st = b.ctl.status()
    assert not st["scrub"]["running"] and not st["scrub"]["resync"] and \
        not st["degraded"] and \
        [m["state"] for m in st["members"]] == ["in_sync"] * len(members), \
        "B after a clean stop of A: %s" % st
    same(b.connect(), shadow, "B")
    b.must("stop")
    superblocks(members, mdsb.CLEAN, "B stopped")
