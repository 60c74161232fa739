#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The accepted path of the control socket: fail, then a replacement
rebuilt at 2M/s (rebuild-rate), watched through status (the member
rebuilding, its recovery_offset growing steadily and within the member,
the rebuild's done and total), then in sync with the data intact; a
second rebuild followed to its end by nbdkit-raid-ctl wait; scrub check
(no mismatch), nbdkit-raid-ctl scrub stop; the control socket gone with
nbdkit; raidcheck.py finds parity and data right on every member file;
and the array started again on the replacements serves the data.
"""

import os
import time

import faults
import fail_control
import workload as wl

with faults.Test() as hz:
    arr, paths, shadow = fail_control.array(hz)
    ctl, chunk, msize = arr.ctl, fail_control.chunk, fail_control.msize
    sock = arr.ctlpath
    rows = msize // chunk
    ctl.ok("fail 1")
    wl.random_ops(arr, hz.rng, shadow, 40, "degraded")
    arr.h.flush()

    # The accepted replacement, throttled to 2M/s: about half a second.
    spare = fail_control.spare(hz, "spare")
    faults.noise_file(spare, msize)
    ctl.ok("replace 1 " + spare)
    seen = []

    def watch(st):
        m = st["members"][1]
        seen.append((m["state"], m["recovery_offset"],
                     st["rebuild"]["running"], st["rebuild"]["done"],
                     st["rebuild"]["total"]))
    st = ctl.wait_idle(30, poll=0.02, during=watch)
    rebuilding = [x for x in seen if x[0] == "rebuilding"]
    assert rebuilding, "member 1 was never seen rebuilding: %s" % seen[:5]
    offs = [x[1] for x in rebuilding]
    assert offs == sorted(offs) and offs[-1] > offs[0], \
        "recovery_offset did not grow steadily: %s" % offs
    assert all(0 <= o <= rows * chunk for o in offs), offs
    assert all(x[2] and x[4] == rows * chunk and x[3] <= x[4]
               for x in rebuilding), "rebuild progress: %s" % rebuilding[:5]
    m1 = st["members"][1]
    assert {k: m1[k] for k in ("index", "name", "state", "failure", "owed",
                               "readd", "resynced")} == \
        {"index": 1, "name": spare, "state": "in_sync", "failure": None,
         "owed": 0, "readd": False, "resynced": rows * chunk}, m1
    assert not st["degraded"] and st["failed"] == 0, st
    faults.log("  rebuild: %d polls saw member 1 rebuilding, "
               "recovery_offset %d..%d" % (len(rebuilding), offs[0],
                                           offs[-1]))
    wl.compare_all(arr, shadow, "after the rebuild")

    # The client's wait follows a second rebuild to its end.
    ctl.ok("fail 3")
    spare2 = fail_control.spare(hz, "spare2")
    faults.noise_file(spare2, msize)
    ctl.ok("replace 3 " + spare2)
    t0 = time.monotonic()
    rc, out, err = faults.ctl_tool(sock, "wait")
    assert rc == 0, "nbdkit-raid-ctl wait: exit %d, %r %r" % (rc, out, err)
    st = ctl.status()
    assert not st["rebuild"]["running"] and \
        st["members"][3]["state"] == "in_sync", st
    faults.log("  nbdkit-raid-ctl wait: %.1f s, %d progress lines"
               % (time.monotonic() - t0, len(out.splitlines())))
    paths[1], paths[3] = spare, spare2

    ctl.ok("scrub check")
    st = ctl.wait_idle(30)
    assert st["scrub"]["finished"] and st["scrub"]["mismatch_cnt"] == 0 and \
        st["scrub"]["bad_data"] == [] and st["scrub"]["repair"] is False, \
        "scrub after the rebuilds: %s" % st["scrub"]
    rc, out, err = faults.ctl_tool(sock, "scrub", "stop")
    assert rc == 0 and out.strip() == "ok", (rc, out, err)

    wl.compare_all(arr, shadow, "at the end")
    arr.stop()
    assert not os.path.exists(sock), "the control socket outlives nbdkit"
    faults.check_members(arr, paths, shadow, "at the end")
    faults.log("  parity and data right on every member file")

    arr.members[1], arr.members[3] = faults.FileMember(spare), \
        faults.FileMember(spare2)
    arr.start()
    wl.compare_all(arr, shadow, "restarted on the replacements")
