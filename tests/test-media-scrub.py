#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A scrub reports what the members' media cannot give, mends what it can,
and goes on past what it cannot (md's check and repair).

RAID-5 of 4 (md, create=true, resynced, filled: the shadow), members 1
and 2 served by the bad-sector plugin (tests/lib/nbdkit-badsector-plugin.c).
  - Unreadable sectors (three 4 KiB ranges on member 2, reads fail until
    written): a scrub check counts them as unreadable, rewrites them from
    the others (md corrects a read error in check mode too), member 2
    stays in sync with 3 corrected reads, 0 mismatches; a second check
    finds nothing unreadable.
  - A page in member 2's bad-block log (a write there failed, the log
    recorded it; the sectors then take writes again): check reports it
    and leaves the log as it is; repair rewrites it and the log is empty;
    the next check finds nothing.
  - One page unreadable on members 1 and 2 at once: a RAID-5 cannot
    reconstruct it.  The check finishes (it used to stop at that row),
    reports both pages lost, records them in the logs; the status lists
    the array bytes lost, reads there fail with EIO, and every other
    block reads as the shadow.
"""

import random

import faults
import workload as wl

K, M = 1024, 1024 * 1024
MSIZE, CHUNK, BLOCK = 16 * M, 64 * K, 4 * K


def scrub(arr, mode, what):
    arr.ctl.ok("scrub " + mode)
    sc = arr.ctl.wait_idle(120)["scrub"]
    assert sc["finished"] and sc["mismatch_cnt"] == 0, \
        "%s: scrub %s: %s" % (what, mode, sc)
    return sc


def log_sectors(arr, m):
    return arr.ctl.status()["members"][m]["bad_blocks"]["sectors"]


def check_reads(arr, shadow, lost=()):
    """Every 4 KiB block reads as the shadow, but those in lost, whose
    reads fail."""
    for off in range(0, arr.size, BLOCK):
        got, err = wl.try_io(arr.h.pread, BLOCK, off)
        if off in lost:
            assert err, "the lost block at %d was read" % off
        else:
            assert err is None and got == shadow[off:off + BLOCK], \
                "the block at %d: %s" % (off, err or "wrong bytes")


def page_of(arr, s, k):
    """Member offset of page k of row s."""
    return arr.data_offset + s * arr.chunk + k * BLOCK


with faults.Test(plugins=["badsector"], filters=["error"]) as hz:
    arr = hz.array(["local", "badsector", "badsector", "local"],
                   member_size=MSIZE, level=5, chunk=CHUNK, data_offset=None,
                   control=True, params=["create=true"])
    arr.ctl.wait_idle(120)
    shadow = bytearray(wl.fill(arr.h, random.Random(7)))
    m1, m2 = arr.members[1], arr.members[2]
    rows = [s for s in range(arr.rows) if 2 in arr.layout_of(s)[2]]

    # Unreadable sectors: counted, rewritten, gone.
    for k, s in enumerate(rows[:3]):
        m2.add_bad_range(page_of(arr, s, k), BLOCK, "read")
    sc = scrub(arr, "check", "read errors")
    assert sc["unreadable_bytes"] == 3 * BLOCK and sc["lost_bytes"] == 0, \
        "read errors: the check reported %s" % sc
    healed = sum(n for _, n in m2.healed_ranges())
    assert healed == 3 * BLOCK, "%d of %d bytes rewritten" % (healed, 3 * BLOCK)
    st = arr.ctl.status()["members"][2]
    assert st["state"] == "in_sync" and st["corrected_reads"] == 3, \
        "member 2 after the check: %s" % st
    sc = scrub(arr, "check", "after read errors")
    assert sc["unreadable_bytes"] == 0, "mended, still unreadable: %s" % sc
    faults.log("check: 3 unreadable pages rewritten, member 2 in sync")

    # A listed page: check reports it, repair mends it.
    s = rows[10]
    m2.add_bad_range(page_of(arr, s, 4), BLOCK, "write")
    off = s * arr.row + arr.layout_of(s)[2].index(2) * CHUNK + 4 * BLOCK
    data = random.Random(8).randbytes(BLOCK)
    arr.h.pwrite(data, off)
    arr.h.flush()
    shadow[off:off + BLOCK] = data
    assert log_sectors(arr, 2) == BLOCK // 512, \
        "the failed write was not recorded: %s" % arr.ctl.status()["members"][2]
    m2.clear_bad_ranges()
    sc = scrub(arr, "check", "listed")
    assert sc["unreadable_bytes"] == BLOCK and sc["lost_bytes"] == 0, \
        "listed: the check reported %s" % sc
    assert log_sectors(arr, 2) == BLOCK // 512, "a check changed the log"
    sc = scrub(arr, "repair", "listed")
    assert sc["unreadable_bytes"] == BLOCK, "listed: the repair: %s" % sc
    assert log_sectors(arr, 2) == 0, "the repair left the log: %s" % (
        arr.ctl.status()["members"][2])
    sc = scrub(arr, "check", "after the repair")
    assert sc["unreadable_bytes"] == 0, "after the repair: %s" % sc
    check_reads(arr, shadow)
    faults.log("a listed page: check reported it, repair emptied the log")

    # One page on two members of a RAID-5: lost, recorded, the scrub
    # finishes.
    s = next(s for s in rows[20:] if 1 in arr.layout_of(s)[2])
    for m in (m1, m2):
        m.add_bad_range(page_of(arr, s, 6), BLOCK, "read")
    sc = scrub(arr, "check", "lost")
    assert sc["unreadable_bytes"] == 2 * BLOCK and \
        sc["lost_bytes"] == 2 * BLOCK, "lost: the check reported %s" % sc
    st = arr.ctl.status()
    data = arr.layout_of(s)[2]
    lost = sorted(s * arr.row + data.index(m) * CHUNK + 6 * BLOCK
                  for m in (1, 2))
    got = sorted(r["offset"] + k for r in st["lost"]
                 for k in range(0, r["length"], BLOCK))
    assert got == lost, "lost %s, expected blocks %s" % (st["lost"], lost)
    assert [st["members"][m]["bad_blocks"]["sectors"] for m in (1, 2)] == \
        [BLOCK // 512] * 2, "the logs: %s" % st["members"]
    check_reads(arr, shadow, lost)
    arr.stop()
    faults.log("a page two members lost: reported, recorded (%s), the scrub "
               "finished" % ", ".join(map(str, lost)))
