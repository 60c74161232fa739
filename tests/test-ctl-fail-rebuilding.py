#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""`fail N` is refused while another member rebuilds if fewer members would
be in sync than the level needs, unless forced.  A member being rebuilt is
not in sync: on RAID-5, failing a second member during a rebuild took the
rows above the recovery offset beyond parity (EIO) and stopped the rebuild,
yet the old code accepted it.

RAID-5: member 1 rebuilds (throttled); `fail 2` is refused, the states
and the data are unchanged and the rebuild goes on; `fail 2 force` is
accepted.  RAID-6: member 0 rebuilds, member 1 may still fail (two
parities), member 2 may not, unless forced.
"""

import os
import random

import faults
import workload as wl

K, M = 1024, 1024 * 1024
chunk = 64 * K


def rebuilding(hz, level, n, name):
    members = [hz.member(4 * M, "local") for _ in range(n)]
    arr = hz.array(members, level=level, chunk=chunk, control=True,
                   params=["metadata=none", "rebuild-rate=256K"])
    ctl = arr.ctl
    shadow = wl.fill(arr.h, random.Random(level))
    spare = os.path.join(hz.dir, name + ".spare")
    faults.noise_file(spare, 4 * M)
    return arr, ctl, shadow, spare


def refused(ctl, line, arr, shadow, what):
    before = ctl.states()
    reply = ctl.error(line)
    assert "force" in reply, "%s: the refusal does not say how to force " \
        "it: %r" % (what, reply)
    st = ctl.status()
    assert [m["state"] for m in st["members"]] == before, \
        "%s: the refused %r changed the states: %s -> %s" % (
            what, line, before, [m["state"] for m in st["members"]])
    assert st["rebuild"]["running"], "%s: the rebuild stopped" % what
    wl.compare_all(arr, shadow, what)
    faults.log("  %s: %r -> %s" % (what, line, reply))


with faults.Test() as hz:
    arr, ctl, shadow, spare = rebuilding(hz, 5, 4, "r5")
    ctl.ok("fail 1")
    ctl.ok("replace 1 " + spare)
    refused(ctl, "fail 2", arr, shadow, "RAID-5, member 1 rebuilding")
    ctl.ok("fail 2 force")
    assert ctl.states()[2] == "failed", ctl.states()
    arr.stop()

    arr, ctl, shadow, spare = rebuilding(hz, 6, 5, "r6")
    ctl.ok("fail 0")
    ctl.ok("replace 0 " + spare)
    ctl.ok("fail 1")            # in sync: 2, 3, 4 = all but two
    refused(ctl, "fail 2", arr, shadow,
            "RAID-6, member 0 rebuilding, member 1 failed")
    ctl.ok("fail 2 force")
    assert ctl.states()[:3] == ["rebuilding", "failed", "failed"], \
        ctl.states()
    arr.stop()
