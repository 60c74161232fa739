#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""What a repairing scrub rewrote is flushed when it finishes, so that a
member's server that restarts after it does not cost the member.

A remote member whose server restarts with writes it acknowledged and
no flush covered is failed (they may be lost with the server's cache);
the pages a scrub repair rewrites were such writes when nothing else
flushed them.  An md RAID-5 of 4 (create=true, resynced, filled and
flushed: the shadow), member 3 remote; stopped, 4 parity pages held by
member 3 corrupted in its file; started again, scrub repair rewrites
them (mismatch_cnt 4); then member 3's server restarts (a crash, as far
as the plugin can tell): every byte reads as the shadow, member 3 is in
sync, and a scrub check finds nothing.
"""

import random

import faults
import workload as wl

K, M = 1024, 1024 * 1024
REMOTE = 3

with faults.Test(filters=["error"]) as t:
    arr = t.array(["local", "local", "local", "remote"], member_size=8 * M,
                  level=5, chunk=64 * K, data_offset=None, control=True,
                  params=["create=true"])
    arr.ctl.wait_idle(120)
    shadow = wl.fill(arr.h, random.Random(3))
    arr.h.flush()
    arr.stop()
    m = arr.members[REMOTE]
    rows = [s for s in range(arr.rows) if arr.layout_of(s)[0] == REMOTE][:4]
    for s in rows:
        m.corrupt(arr.data_offset + s * arr.chunk, 4096)
    arr.params = [p for p in arr.params if p != "create=true"]
    arr.start()
    arr.ctl.ok("scrub repair")
    sc = arr.ctl.wait_idle(60)["scrub"]
    assert sc["finished"] and sc["mismatch_cnt"] == len(rows), \
        "scrub repair: %s" % sc
    m.restart()
    wl.compare_all(arr, shadow, "after member %d's server restarted" % REMOTE)
    st = arr.ctl.status()["members"][REMOTE]
    assert st["state"] == "in_sync", \
        "member %d is %s after its server restarted: %s" % (
            REMOTE, st["state"], st["failure"])
    arr.ctl.ok("scrub check")
    sc = arr.ctl.wait_idle(60)["scrub"]
    assert sc["finished"] and sc["mismatch_cnt"] == 0, "scrub check: %s" % sc
    faults.log("scrub repair rewrote %d pages of member %d; its server "
               "restarted: in sync, nothing to repair" % (len(rows), REMOTE))
