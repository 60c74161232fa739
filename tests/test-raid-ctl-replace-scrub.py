#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""`replace` while a scrub or resync runs is refused before it changes
anything (issue 11, item 13).  The old code installed the new member,
wrote its superblock, then found the scrub running: it answered an error
and left the member "rebuilding" with no job to rebuild it.

(a) A raw array scrubs (member 2's reads take a second each); member 2's
    server is stopped (SIGSTOP), so that the scrub's row waits on it and
    the scrub cannot notice the failure that follows, however slowly this
    test runs; member 2 fails; `replace 2 SPARE` is refused: the member
    table (status) is as before and nothing was written to SPARE (md5).
    Once the server goes on and the scrub has stopped (it cannot go on
    degraded), the same replace is accepted and the rebuild brings back
    the data (raidcheck.py on the member files).
(b) The same during the first resync of a create=true md array, capped by
    rebuild-rate.

(Before the SIGSTOP the window was the rest of the row in flight: a
loaded machine sent the replace after the scrub had stopped, and the
replace was rightly accepted.)
"""

import hashlib
import os
import random

import faults
import workload as wl

K, M = 1024, 1024 * 1024
chunk = 64 * K


def md5(path):
    with open(path, "rb") as f:
        return hashlib.md5(f.read()).hexdigest()


def refused_replace(ctl, slow, spare, what):
    """slow: member 2's server, stopped here and let go on at the end."""
    slow.stop()
    sc = ctl.status()["scrub"]
    assert sc["running"], "%s: no scrub is running: %s" % (what, sc)
    ctl.ok("fail 2")
    st = ctl.status()
    before = st["members"]
    faults.log("  %s: after fail 2: scrub %s" % (what, st["scrub"]))
    sum_before = md5(spare)
    reply = ctl.error("replace 2 " + spare)
    after = ctl.status()
    assert after["members"] == before, \
        "%s: the refused replace changed the members: %s -> %s" % (
            what, before, after["members"])
    assert md5(spare) == sum_before, \
        "%s: the refused replace wrote to %s" % (what, spare)
    assert "scrub" in reply, "%s: refused with %r" % (what, reply)
    faults.log("  %s: replace 2 -> %s" % (what, reply))
    slow.cont()


with faults.Test() as hz:
    # (a)
    members = [hz.member(2 * M, "remote", delay_read="1000ms") if i == 2
               else hz.member(2 * M, "local") for i in range(4)]
    arr = hz.array(members, level=5, chunk=chunk, control=True,
                   params=["metadata=none"])
    ctl = arr.ctl
    shadow = wl.fill(arr.h, random.Random(13))
    spare = os.path.join(hz.dir, "a.spare")
    faults.noise_file(spare, 2 * M)
    ctl.ok("scrub check")
    refused_replace(ctl, members[2], spare, "(a) during scrub check")
    ctl.wait_idle(30)
    ctl.ok("replace 2 " + spare)
    st = ctl.wait_idle(60)
    assert [m["state"] for m in st["members"]] == ["in_sync"] * 4, st
    arr.stop()
    faults.check_members(arr, [members[0].path, members[1].path, spare,
                               members[3].path], shadow,
                         "(a) after the accepted replace", program=False)

    # (b) a resync of 32 rows at 32K/s: two seconds a row.
    members = [hz.member(3 * M, "remote" if i == 2 else "local")
               for i in range(4)]
    arr = hz.array(members, level=5, chunk=chunk, data_offset=M,
                   control=True,
                   params=["create=true", "bitmap=none", "rebuild-rate=32K"])
    ctl = arr.ctl
    spare = os.path.join(hz.dir, "b.spare")
    faults.noise_file(spare, 3 * M)
    refused_replace(ctl, members[2], spare, "(b) during the first resync")
    arr.stop()
