#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A stale member whose slot (dev_number) was given to another disk since
it left is not re-added at start-up: the slot is the other disk's now,
and two members with one dev_number would write superblocks that say
both hold one role, an array that no longer starts.  It is left out,
saying why; the slot's newer holder is re-added.

RAID-6 md array with a bitmap (tests/lib/readd.py).  Member 0 fails and the
array restarts without it (its slot is then written spare: free).
Member 4 fails and is replaced by a new disk, which takes the lowest free
slot, 0.  The new disk fails too, and nbdkit stops.  Started again on
every disk, the old member 0 and the new member 4 are both stale and
both carry dev_number 0: member 4 is re-added (its superblock is the
newer), member 0 stays failed and the log names its slot's new holder;
no two members' superblocks carry one dev_number, and the array starts
again.  'replace 0' then makes it whole: every byte the shadow, scrub 0
mismatches, raidcheck.py right.  (Found by the randomized test's re-adds
mix, seed 502: "members ... both claim role 4" at the next start.)
"""

import faults
import mdsb
import readd
import workload as wl

ROLE_SPARE = 0xffff


def restart(c, members):
    c.arr.stop(grace=30)
    c.arr.params = [p for p in c.arr.params
                    if not p.startswith(("create=", "bitmap"))]
    c.arr.members = members
    c.arr.start()
    c.ctl = c.arr.ctl


with faults.Test(filters=["error"], timeout=240) as t:
    c = readd.Case(t, **readd.CASES["r6"])
    old0 = c.members[0]
    c.ctl.ok("fail 0")
    c.write(c.scattered_ops({2, 9}))
    restart(c, [faults.MissingMember()] + c.members[1:])
    c.write(c.scattered_ops({11}))      # the next update frees the slot
    c.arr.h.flush()
    assert mdsb.read(c.paths[1])["dev_roles"][0] == ROLE_SPARE, \
        "member 0's slot is not free after a start without it: %s" \
        % mdsb.read(c.paths[1])["dev_roles"]

    c.ctl.ok("fail 4")
    new4 = t.member(readd.DATA + 2 * readd.M, "local")
    faults.noise_file(new4.path, readd.DATA + 2 * readd.M)
    c.ctl.ok("replace 4 %s" % new4.path)
    st = c.ctl.wait_idle(60)
    assert st["members"][4]["state"] == "in_sync", st["members"][4]
    assert mdsb.read(new4.path)["dev_number"] == 0, \
        "the replacement did not take the free slot 0: %s" % mdsb.read(new4.path)
    c.ctl.ok("fail 4")
    c.write(c.scattered_ops({5, 30}))
    c.arr.h.flush()

    # Both stale disks given, in their old places.
    restart(c, [old0] + c.members[1:4] + [new4])
    st = c.ctl.wait_idle(60)
    states = [m["state"] for m in st["members"]]
    assert states == ["failed", "in_sync", "in_sync", "in_sync", "in_sync"], \
        "after the start with both stale disks: %s" % st["members"]
    c.arr.expect_log("slot", "the stale member 0 left out")
    paths = [new4.path] + c.paths[1:4]
    numbers = [mdsb.read(p)["dev_number"] for p in paths]
    assert len(set(numbers)) == len(numbers), \
        "two members carry one dev_number: %s" % numbers
    faults.log("  member 0 left out, member 4 re-added; dev_numbers %s"
               % numbers)

    restart(c, [old0] + c.members[1:4] + [new4])
    st = c.ctl.status()
    assert st["members"][0]["state"] == "failed", st["members"]
    wl.compare_all(c.arr, c.shadow, "degraded, after another start")

    new0 = t.member(readd.DATA + 2 * readd.M, "local")
    faults.noise_file(new0.path, readd.DATA + 2 * readd.M)
    c.ctl.ok("replace 0 %s" % new0.path)
    st = c.ctl.wait_idle(60)
    assert all(m["state"] == "in_sync" for m in st["members"]), st["members"]
    c.paths = [new0.path] + c.paths[1:4] + [new4.path]
    c.check_end("member 0 replaced")
