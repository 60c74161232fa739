#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A member's unreadable sectors cost the sectors, not the member (md's
read-error correction), through a real NBD member server whose listed
ranges fail reads until written (tests/lib/nbdkit-badsector-plugin.c).

An md array (create=true, resynced, filled: the shadow) of RAID-6 of 6
and of RAID-5 of 4, member 2 with bad sectors, remote (NBD) and, again,
local (the same server's disk mounted by nbdfuse: the plugin reads the
file itself and gets EIO from the kernel); the others local files.  12 ranges of 4 KiB, in rows spread over the array, go bad on
member 2; the whole array is read in 1 MiB requests:
  - every read returns the shadow's bytes;
  - member 2 stays in sync;
  - every bad sector was written again (the server's healed list: 96
    sectors), and the status counts 12 corrected pages;
  - a scrub check then finds 0 mismatches and nothing unreadable, and
    raidcheck.py, reading the members' bytes, finds every row's parity
    right.
Then one range on member 2 that cannot be mended (reads fail, writes
fail too): the read is still right, and the range goes into member 2's
md bad-block log (v1.2: mdadm's place) and member 2 stays in sync; where
the members have no log (v1.0 as this plugin makes it), member 2 fails,
as md fails a member it cannot record a bad block on.
"""

import random

import faults
import workload as wl

K, M = 1024, 1024 * 1024
MSIZE, CHUNK, BLOCK = 16 * M, 64 * K, 4 * K
BAD = 2
RANGES = 12


def array(hz, level, kind, version="1.2"):
    kinds = ["local"] * (6 if level == 6 else 4)
    kinds[BAD] = kind
    # The local form reads with O_DIRECT, as md reads its disks: through
    # the page cache, the writes of the fill would hide the bad sectors.
    arr = hz.array(kinds, member_size=MSIZE, level=level, chunk=CHUNK,
                   data_offset=None, control=True,
                   params=["create=true", "metadata-version=" + version] +
                   (["direct=true"] if "local" in kind else []))
    arr.ctl.wait_idle(120)
    return arr, wl.fill(arr.h, random.Random(level))


def read_all(arr, shadow, what):
    for off in range(0, arr.size, M):
        n = min(M, arr.size - off)
        got, err = wl.try_io(arr.h.pread, n, off)
        assert err is None, "%s: the read at %d failed: %s" % (what, off, err)
        assert got == shadow[off:off + n], \
            "%s: the read at %d differs from the shadow" % (what, off)


def case(hz, level, kind):
    what = "RAID-%d, %s member %d" % (level, "local" if "local" in kind
                                      else "remote", BAD)
    arr, shadow = array(hz, level, kind)
    m = arr.members[BAD]
    rows = [s for s in range(arr.rows) if BAD in arr.layout_of(s)[2]]
    rows = [rows[i * len(rows) // RANGES] for i in range(RANGES)]
    for k, s in enumerate(rows):
        m.add_bad_range(arr.data_offset + s * arr.chunk + (k % 16) * BLOCK,
                        BLOCK)
    read_all(arr, shadow, what)
    st = arr.ctl.status()
    state = st["members"][BAD]["state"]
    assert state == "in_sync", "%s: member %d is %s" % (what, BAD, state)
    healed = sum(n for _, n in m.healed_ranges()) // 512
    assert healed == RANGES * BLOCK // 512, \
        "%s: %d of %d bad sectors written again" % (what, healed,
                                                    RANGES * BLOCK // 512)
    corrected = st["members"][BAD]["corrected_reads"]
    assert corrected == RANGES, \
        "%s: %d corrected pages counted, not %d" % (what, corrected, RANGES)
    arr.ctl.ok("scrub check")
    sc = arr.ctl.wait_idle(120)["scrub"]
    assert sc["finished"] and sc["mismatch_cnt"] == 0 and \
        sc["unreadable_bytes"] == 0, "%s: the scrub after: %s" % (what, sc)
    arr.stop()
    faults.check_members(arr, [x.path for x in arr.members], shadow, what)

    # Not mendable (its writes fail too): recorded in the member's
    # bad-block log, which md keeps, and the member stays; on an array
    # whose members have no log (v1.0, as this plugin makes it) the
    # member fails, as md fails it.  The data is right either way.
    for version, logged in (("1.2", True), ("1.0", False)):
        how = "%s, unmendable, v%s" % (what, version)
        arr, shadow = array(hz, level, kind, version)
        m = arr.members[BAD]
        s = next(s for s in range(arr.rows) if BAD in arr.layout_of(s)[2])
        m.add_bad_range(arr.data_offset + s * arr.chunk, BLOCK, "both")
        read_all(arr, shadow, how)
        st = arr.ctl.status()["members"][BAD]
        if logged:
            assert st["state"] == "in_sync" and st["bad_blocks"] == \
                {"ranges": 1, "sectors": BLOCK // 512}, \
                "%s: member %d: %s, log %s" % (how, BAD, st["state"],
                                              st["bad_blocks"])
        else:
            assert st["state"] == "failed" and st["bad_blocks"] is None, \
                "%s: member %d: %s, log %s" % (how, BAD, st["state"],
                                              st["bad_blocks"])
        arr.stop()
    faults.log("%s: %d ranges corrected, member %d in sync; an unmendable "
               "one recorded in its log (v1.2), or failing it where it has "
               "none (v1.0)" % (what, RANGES, BAD))


with faults.Test(plugins=["badsector", "badsector-local"],
                 filters=["error"]) as hz:
    for kind in ("badsector", "badsector-local"):
        for level in (6, 5):
            case(hz, level, kind)
