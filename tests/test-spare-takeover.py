#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Hot spares: when a member fails by EIO under client writes, a spare
given with spare= takes its role and is rebuilt at once, without the
operator; for RAID-5 and RAID-6.

md array made with create=true (tests/lib/spares.py), one spare.  Eight
clients write, zero, flush and read (workload.Load: every acknowledged
write must read back); member 1's server fails every write: member 1
fails, and the spare takes role 1 while the clients go on.  Status says
so (the member from_spare, the spares list empty), the superblocks say
so (the spare's own dev_number now holds role 1: mdsb.py), and at the
end every byte is the shadow, scrub finds 0 mismatches and raidcheck.py
finds every row right on the member files, the spare's among them.
"""

import time

import faults
import mdsb
import spares
import workload as wl

CASES = [dict(level=5, n=4), dict(level=6, n=5)]

with faults.Test(filters=["error"], timeout=150) as t:
    for case in CASES:
        what = "RAID-%d" % case["level"]
        c = spares.Case(t, nspares=1, params=["rebuild-rate=8M"], **case)
        st = c.ctl.status()
        assert [s["state"] for s in st["spares"]] == ["spare"], st["spares"]
        spare_dev = mdsb.read(c.spares[0].path)["dev_number"]
        with wl.Load(c.arr, c.shadow, 8, t.seed, what + ": failure under "
                     "load") as load:
            time.sleep(0.3)
            c.members[spares.REMOTE].fail_writes(True)
            spares.wait_until(
                lambda: c.ctl.status()["members"][spares.REMOTE].get(
                    "from_spare"), 20, what + ": the spare takes role 1")
            st = c.ctl.status()
            assert st["spares"] == [] and \
                st["members"][spares.REMOTE]["state"] == "rebuilding", st
            time.sleep(0.5)
            n = load.total()
        c.takeover(spares.REMOTE, 60, what + ": the spare is rebuilt")
        c.arr.h.flush()
        c.arr.expect_log("hot spare %s takes its role" % c.spares[0].disk,
                         what)
        sb = mdsb.read(c.spares[0].path)
        assert sb["dev_number"] == spare_dev and \
            sb["dev_roles"][spare_dev] == spares.REMOTE, \
            "%s: the spare keeps dev_number %d and holds role 1: %s" % (
                what, spare_dev, sb["dev_roles"][:8])
        faults.log("  %s: %d client requests while the spare took over"
                   % (what, n))
        c.check_end(what + ": after the takeover")
