#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Hot spares across restarts: a spare given with spare= is found again
by its superblock among the disks given (as mdadm --assemble finds an
array's spares), and given again with spare= it keeps its dev_number
and device UUID; after either restart it still takes a failed role.

RAID-5 md array (create=true) with one spare.  Restart 1: the spare is
given as one more disk=: status lists it as a spare, the members as
before.  Restart 2: the spare given with spare=: the same, and its
superblock's dev_number and device UUID are the ones it had (mdsb.py).
Then member 2 is failed: the spare takes role 2, and the array is
right (shadow, scrub, raidcheck.py).
"""

import faults
import mdsb
import spares

with faults.Test(timeout=150) as t:
    c = spares.Case(t, level=5, n=4, nspares=1)
    sp = c.spares[0]
    sb0 = mdsb.read(sp.path)
    assert mdsb.role(sb0) is None and \
        sb0["dev_roles"][sb0["dev_number"]] == 0xffff, sb0["dev_roles"][:6]
    c.arr.stop(grace=30)
    files = [faults.FileMember(p) for p in c.paths]

    for how in ("found among disk=", "spare="):
        disks = files + [faults.FileMember(sp.path)] if how != "spare=" \
            else files
        params = ["spare=" + sp.path] if how == "spare=" else []
        c.arr = t.array(disks, level=None, chunk=None, layout=None,
                        data_offset=None, control=True, nbdkit_args=["-v"],
                        params=params)
        c.ctl = c.arr.ctl
        st = c.ctl.status()
        assert [(s["name"], s["state"]) for s in st["spares"]] == \
            [(sp.path, "spare")], "%s: %s" % (how, st["spares"])
        assert [m["name"] for m in st["members"]] == c.paths and \
            all(m["state"] == "in_sync" for m in st["members"]), \
            "%s: %s" % (how, st["members"])
        sb = mdsb.read(sp.path)
        assert (sb["dev_number"], sb["device_uuid"]) == \
            (sb0["dev_number"], sb0["device_uuid"]), \
            "%s: the spare's dev_number or device UUID changed" % how
        if how != "spare=":
            c.arr.stop(grace=30)

    c.arr.n = 4
    c.ctl.ok("fail 2")
    c.takeover(2, 60, "the spare takes role 2 after the restarts")
    c.check_end("after restarts and the takeover")
