#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A RAID-6 rebuild under load goes on from P+Q when a second member
fails halfway through it: member 1 is failed, replaced and rebuilt at
rebuild-rate=1M while four clients write and read (tests/lib/fail_rebuild.py);
halfway a second member (a real server behind nbdkit's error filter)
starts failing every request.  The rebuild must finish, member 1 in
sync and member 4 failed (named in the log); then member 4 is replaced
and rebuilt too, taking at least 1.6 s for its 2 MiB.  No client request
fails, every read matches the shadow, scrubs under the writes and at
the end find nothing, and raidcheck.py finds the shadow on the members.

RAID_TEST_SEED=N replays the choice of writes (not their interleaving).
"""

import time

import faults
import fail_rebuild as fr
import workload as wl

K = 1024

with faults.Test(filters=["error"]) as hz:
    t0 = time.monotonic()
    what = "RAID-6 left-symmetric, 6 members, chunk 16K"
    arr = hz.array(["remote", "local", "remote", "local", "remote", "local"],
                   member_size=fr.msize, level=6, chunk=16 * K,
                   layout="left-symmetric", control=True,
                   params=["rebuild-rate=1M", "member-timeout=5"])
    ctl = arr.ctl
    shadow = wl.fill(arr.h, hz.rng)
    paths = [m.path for m in arr.members]
    with wl.Load(arr, shadow, 4, hz.seed, what) as load:
        time.sleep(0.3)
        ctl.ok("fail 1")
        time.sleep(0.3)
        paths[1] = fr.replacement(hz, "new6-1")
        ctl.ok("replace 1 " + paths[1])
        w = fr.Watch(ctl, what)
        at_fail = []

        def second_failure():
            at_fail.append(load.total())
            arr.members[4].fail_writes(True)
            arr.members[4].fail_reads(True)
        st = w.run(60, half=fr.msize // 2, action=second_failure)
        assert at_fail, "%s: the rebuild never reached half way" % what
        assert 1 in w.rebuilding_seen, "%s: member 1 never seen rebuilding" \
            % what
        assert [m["state"] for m in st["members"]] == \
            ["in_sync"] * 4 + ["failed", "in_sync"], \
            "%s: after the first rebuild: %s" % (what, st["members"])
        arr.expect_log("member %s failed" % arr.members[4].disk, what)
        paths[4] = fr.replacement(hz, "new6-4")
        ctl.ok("replace 4 " + paths[4])
        tr = time.monotonic()
        st = w.run(60)
        tr = time.monotonic() - tr
        # rebuild-rate=1M: 2 MiB take 2 s; allow for coarse sleeps.
        assert tr >= 1.6, "%s: rebuilt 2 MiB in %.2f s despite " \
            "rebuild-rate=1M" % (what, tr)
        assert 4 in w.rebuilding_seen, "%s: member 4 never seen rebuilding" \
            % what
        assert not st["degraded"] and \
            all(m["state"] == "in_sync" for m in st["members"]), \
            "%s: after both rebuilds: %s" % (what, st)
        fr.scrubs_under_load(ctl, what)
    faults.log("  %s: %d client requests during %.1f s of rebuilds (%s), "
               "%d status polls; member 4 rebuilt in %.1f s at "
               "rebuild-rate=1M" % (what, load.total(),
                                    time.monotonic() - t0, load.counts(),
                                    w.polls, tr))
    fr.check_at_end(arr, paths, shadow, what)
