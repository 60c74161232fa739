#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A RAID-5 member that fails again while it is being rebuilt under load
is rebuilt from the start onto its next replacement: member 0 is failed,
replaced and rebuilt at rebuild-rate=2M while four clients write and
read (tests/lib/fail_rebuild.py); halfway it is failed again.  It must end
failed, and the next replacement's rebuild must start over (below the
offset where the first one was failed) and finish with every member in
sync.  No client request fails, every read matches the shadow, scrubs
under the writes and at the end find nothing, and raidcheck.py finds the
shadow on the members.

RAID_TEST_SEED=N replays the choice of writes (not their interleaving).
"""

import time

import faults
import fail_rebuild as fr
import workload as wl

K = 1024

with faults.Test() as hz:
    t1 = time.monotonic()
    what = "RAID-5 right-symmetric, 4 members, chunk 8K"
    members = [hz.member(fr.msize, "local") for _ in range(4)]
    arr = hz.array(members, level=5, chunk=8 * K, layout="right-symmetric",
                   control=True, params=["rebuild-rate=2M"])
    ctl = arr.ctl
    shadow = wl.fill(arr.h, hz.rng)
    paths = [m.path for m in members]
    with wl.Load(arr, shadow, 4, hz.seed + 1, what) as load:
        time.sleep(0.3)
        ctl.ok("fail 0")
        paths[0] = fr.replacement(hz, "new5-0a")
        ctl.ok("replace 0 " + paths[0])
        w = fr.Watch(ctl, what)
        again = []

        def fail_again():
            again.append(w.last.get(0))
            ctl.ok("fail 0")
        st = w.run(60, half=fr.msize // 2, action=fail_again)
        assert again, "%s: the rebuild never reached half way" % what
        assert st["members"][0]["state"] == "failed", \
            "%s: member 0 failed during its rebuild: %s" % (what,
                                                            st["members"])
        paths[0] = fr.replacement(hz, "new5-0b")
        ctl.ok("replace 0 " + paths[0])
        first = ctl.status()["members"][0]
        assert first["name"] == paths[0] and \
            first["state"] in ("rebuilding", "in_sync") and \
            (first["state"] == "in_sync" or
             first["recovery_offset"] < again[0]), \
            "%s: the second replacement did not start over: %s" % (what,
                                                                   first)
        st = w.run(60)
        assert not st["degraded"] and \
            all(m["state"] == "in_sync" for m in st["members"]), \
            "%s: after the second rebuild: %s" % (what, st)
        fr.scrubs_under_load(ctl, what)
    faults.log("  %s: %d client requests during %.1f s of rebuilds (%s)"
               % (what, load.total(), time.monotonic() - t1, load.counts()))
    fr.check_at_end(arr, paths, shadow, what)
