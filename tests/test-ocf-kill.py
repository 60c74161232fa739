#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""After kill -9 of the head's nbdkit the agent's monitor reports it
failed, and a second head started by the agent on the same remote
members assembles the array and resyncs the rows the write-intent bitmap
marks: the failover after a crash.

Head A (the agent) starts; a client writes in a few places without a
flush (every write acknowledged); kill -9 of A's nbdkit.  The members'
superblocks say active and their bitmaps have bits set.  A's monitor
says failed (1), as a recurring monitor and as a probe.  Head B, another
instance on the same members, starts (0) and resyncs: a finished resync
of some rows but not all (the bitmap's, at one bit per 64 KiB of each
member); every byte A acknowledged reads back from B; a scrub check
then finds 0 mismatches.  A's stop tidies the dead head (0) and its
monitor then says not running (7); B's stop leaves the array clean.
"""

import faults
import mdsb
import ocf

with faults.Test(timeout=120) as t:
    ocf.requires()
    members, shadow = ocf.md_array(t, params=["bitmap-chunk=64K"])
    a = ocf.Head(t, "raid-a", members)
    a.must("start")
    client = a.connect()
    for _ in range(3):
        data = t.rng.randbytes(t.rng.randrange(1, 200 * ocf.K))
        off = t.rng.randrange(len(shadow) - len(data))
        client.pwrite(data, off)
        shadow[off:off + len(data)] = data
    a.kill()
    sbs = [mdsb.read(m.path) for m in members]
    bits = [len(mdsb.read_bitmap(m.path)["bits"]) for m in members]
    assert all(sb["resync_offset"] == 0 for sb in sbs) and all(bits), \
        "after kill -9: resync_offset %s, bitmap bits set %s" % (
            [sb["resync_offset"] for sb in sbs], bits)
    out = a.must("monitor", ocf.ERR_GENERIC, interval=10)
    assert "killed or crashed" in out, out
    a.must("monitor", ocf.ERR_GENERIC, interval=0)

    b = ocf.Head(t, "raid-b", members)
    b.must("start")
    b.must("monitor", interval=10)
    sc = b.ctl.finished_scrub(60)["scrub"]
    full = sbs[0]["size"] * 512
    assert sc["resync"] and sc["done"] == sc["total"] and \
        0 < sc["total"] < full, \
        "B's start-up resync: %s (a full resync is %d bytes)" % (sc, full)
    faults.log("  B resynced %d of %d bytes (%s bits set per member)"
               % (sc["total"], full, bits))
    h = b.connect()
    for off in range(0, len(shadow), ocf.M):
        got = h.pread(min(ocf.M, len(shadow) - off), off)
        assert got == shadow[off:off + len(got)], \
            "B: an acknowledged write is lost in [%d, %d)" % (off,
                                                             off + len(got))
    b.ctl.ok("scrub check")
    sc = b.ctl.wait_idle(60)["scrub"]
    assert sc["finished"] and not sc["resync"] and sc["mismatch_cnt"] == 0, sc

    a.must("stop")
    a.must("monitor", ocf.NOT_RUNNING, interval=10)
    h.shutdown()
    b.must("stop")
    sbs = [mdsb.read(m.path) for m in members]
    assert all(sb["resync_offset"] == mdsb.CLEAN for sb in sbs), \
        [sb["resync_offset"] for sb in sbs]
