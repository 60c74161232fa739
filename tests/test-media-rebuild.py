#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A rebuild gets past sectors it cannot reconstruct: it records them in
md's bad-block logs and finishes, and the array loses those sectors only
(md's behaviour: the classic latent sector error on a survivor during a
RAID-5 rebuild costs the rows it hits, not the array).

RAID-5 of 4 (md, create=true, resynced, filled: the shadow), member 2
served by the bad-sector plugin: remote (NBD), and again local (its disk
mounted by nbdfuse, read by the plugin itself with O_DIRECT).  Member 0 fails and is replaced; before
the rebuild, four 4 KiB ranges of member 2 go bad (reads and writes),
in rows where member 2 holds data.  Then:
  - the rebuild finishes: every member in sync;
  - every 4 KiB block of the array reads as the shadow, but those the
    ranges cost: member 0's and member 2's pages there (at most 2 per
    range), which fail with EIO, never wrong bytes;
  - the status lists exactly those bytes as lost, and both members'
    logs hold the ranges;
  - after a restart the logs are read back: the same blocks fail, the
    same ranges are lost, everything else reads as the shadow;
  - a write over one of two lost data blocks of a page-row fails (the
    parity cannot be known); a write over both succeeds, clears them
    from both logs (readable again, as written) and lost shrinks by them.
"""

import os
import random

import faults
import workload as wl

K, M = 1024, 1024 * 1024
MSIZE, CHUNK, BLOCK = 16 * M, 64 * K, 4 * K
BAD = 2


def unreadable_blocks(arr, shadow):
    """The array offsets of the 4 KiB blocks whose read fails; asserts
    that every other block reads as the shadow."""
    failed = []
    for off in range(0, arr.size, BLOCK):
        got, err = wl.try_io(arr.h.pread, BLOCK, off)
        if err:
            failed.append(off)
        else:
            assert got == shadow[off:off + BLOCK], \
                "the block at %d reads back wrong" % off
    return failed


def lost_blocks(st):
    return sorted(r["offset"] + k for r in st["lost"]
                  for k in range(0, r["length"], BLOCK))


def case(hz, kind):
    what = "%s member %d" % ("local" if "local" in kind else "remote", BAD)
    kinds = ["local", "local", kind, "local"]
    # The rebuild must read the survivors: a stripe cache that still held
    # the fill's rows (64M would hold them all) could hide the bad
    # sectors, and so could the page cache, which the local form is
    # kept out of with O_DIRECT, as md reads its disks.
    arr = hz.array(kinds, member_size=MSIZE, level=5, chunk=CHUNK,
                   data_offset=None, control=True,
                   params=["create=true", "cache=1M"] +
                   (["direct=true"] if "local" in kind else []))
    arr.ctl.wait_idle(120)
    shadow = bytearray(wl.fill(arr.h, random.Random(5)))
    m = arr.members[BAD]
    spare = os.path.join(hz.dir, "spare")
    faults.noise_file(spare, MSIZE)
    arr.ctl.ok("fail 0")
    rows = [s for s in range(arr.rows) if BAD in arr.layout_of(s)[2]]
    rows = [rows[i * len(rows) // 4] for i in range(4)]
    for s in rows:
        m.add_bad_range(arr.data_offset + s * arr.chunk + 2 * BLOCK, BLOCK,
                        "both")
    arr.ctl.ok("replace 0 " + spare)
    st = arr.ctl.wait_idle(300)
    states = [x["state"] for x in st["members"]]
    assert states == ["in_sync"] * 4, "after the rebuild: %s" % states

    failed = unreadable_blocks(arr, shadow)
    assert 0 < len(failed) <= 2 * len(rows), \
        "%d blocks unreadable for %d bad ranges" % (len(failed), len(rows))
    assert lost_blocks(st) == failed, "lost %s, unreadable %s" % (
        st["lost"], failed)
    for i in (0, BAD):
        bb = st["members"][i]["bad_blocks"]
        assert bb["sectors"] >= len(rows) * BLOCK // 512 * (i == BAD), \
            "member %d's log: %s" % (i, bb)
    faults.log("%s: rebuilt past %d bad ranges: %d blocks lost (%s)"
               % (what, len(rows), len(failed), ", ".join(map(str, failed))))

    # A restart (the replacement in role 0) reads the logs back.
    arr.stop()
    arr.members[0] = faults.FileMember(spare)
    arr.params = [p for p in arr.params if p != "create=true"]
    arr.start()
    st = arr.ctl.status()
    again = unreadable_blocks(arr, shadow)
    assert again == failed, "after a restart, unreadable: %s, before: %s" % (
        again, failed)
    assert lost_blocks(st) == failed, "after a restart, lost %s" % st["lost"]

    # Writes over lost blocks.  Two lost data blocks of one page-row
    # (member 0's and member 2's) leave its parity unknown until both are
    # written: a write of one alone fails with EIO and changes nothing; a
    # write that covers both succeeds, both read back, neither is lost.
    rowbytes = CHUNK * 3
    group = [o for o in failed if o // rowbytes == failed[0] // rowbytes]
    rest = [o for o in failed if o not in group]
    if len(group) == 2:
        _, err = wl.try_io(arr.h.pwrite, bytes(BLOCK), group[0])
        assert err, "a write of one of two lost blocks of a page-row succeeded"
        assert lost_blocks(arr.ctl.status()) == failed
        assert unreadable_blocks(arr, shadow) == failed
    off, end = group[0], group[-1] + BLOCK
    data = random.Random(6).randbytes(end - off)
    arr.h.pwrite(data, off)
    arr.h.flush()
    shadow[off:end] = data
    st = arr.ctl.status()
    assert lost_blocks(st) == rest, "after a write over %d..%d, lost %s" % (
        off, end, st["lost"])
    assert unreadable_blocks(arr, shadow) == rest
    arr.stop()
    faults.log("%s: the logs held across a restart; a write over %d lost "
               "block(s) made them readable" % (what, len(group)))


with faults.Test(plugins=["badsector", "badsector-local"],
                 filters=["error"]) as hz:
    for kind in ("badsector", "badsector-local"):
        case(hz, kind)
