#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""`replace` while a scrub or resync runs is refused before it changes
anything.  The old code installed the new member, wrote its superblock,
then found the scrub running: it answered an error and left the member
"rebuilding" with no job to rebuild it.

(a) A raw array scrubs (member 0's reads take 200 ms each); once one of
    the scrub's reads is on member 0's server (its log filter says so),
    the server is stopped (SIGSTOP), so that the scrub's row waits on it and
    the scrub cannot notice the failure that follows however slowly this
    test runs; member 2 fails; `replace 2 SPARE` is refused: the member
    table (status) is as before and nothing was written to SPARE (md5).
    Once member 0 goes on and the scrub has stopped (it cannot go on
    degraded), the same replace is accepted and the rebuild brings back
    the data (raidcheck.py on the member files).
(b) The same during the first resync of a create=true md array.  No
    member can be stopped here (failing member 2 rewrites the others'
    superblocks); instead rebuild-rate=4K makes the resync sleep 16 s
    after its first 64 KiB row before it reads the next one and finds a
    member failed, and the refusal comes well inside that.

The window used to be the rest of one row (a 1 s read, or 2 s of
rebuild-rate): on a loaded machine the replace came after the scrub had
stopped, and was rightly accepted.  Stopping the member being failed
does not hold the scrub either: failing it ends its reads in flight.
"""

import hashlib
import os
import random
import time

import faults
import workload as wl

K, M = 1024, 1024 * 1024
chunk = 64 * K


def md5(path):
    with open(path, "rb") as f:
        return hashlib.md5(f.read()).hexdigest()


def read_in_flight(member):
    """Whether member's server (behind the log filter) has a read it
    received and has not answered."""
    with open(member.readlog) as f:
        text = f.read()
    return text.count(" Read id=") > text.count(" ...Read id=")


def refused_replace(ctl, spare, what, hold=None):
    """hold: a member server to stop while the replace is refused, once a
    read of the scrub's is on it (its log says so): the scrub is then
    inside a row, and cannot notice the failure that follows before the
    server goes on.  Stopped earlier, a scrub thread that had not yet sent
    its first read (a loaded machine) found member 2 failed before row 0,
    stopped, and the replace was rightly accepted."""
    if hold:
        end = time.monotonic() + 30
        while not read_in_flight(hold):
            assert time.monotonic() < end, "%s: the scrub sent no read" % what
            time.sleep(0.005)
        hold.stop()
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
    if hold:
        hold.cont()


with faults.Test() as hz:
    # (a)
    readlog = os.path.join(hz.dir, "m0-requests.log")
    members = [hz.member(2 * M, "remote", delay_read="200ms",
                         filters=["log"], extra=["logfile=" + readlog])] + \
        [hz.member(2 * M, "local") for _ in range(3)]
    members[0].readlog = readlog
    arr = hz.array(members, level=5, chunk=chunk, control=True,
                   params=["metadata=none"])
    ctl = arr.ctl
    shadow = wl.fill(arr.h, random.Random(13))
    spare = os.path.join(hz.dir, "a.spare")
    faults.noise_file(spare, 2 * M)
    ctl.ok("scrub check")
    refused_replace(ctl, spare, "(a) during scrub check", hold=members[0])
    ctl.wait_idle(30)
    ctl.ok("replace 2 " + spare)
    st = ctl.wait_idle(60)
    assert [m["state"] for m in st["members"]] == ["in_sync"] * 4, st
    arr.stop()
    faults.check_members(arr, [members[0].path, members[1].path, spare,
                               members[3].path], shadow,
                         "(a) after the accepted replace", program=False)

    # (b) a resync at 4K/s: 16 s after the first row.
    members = [hz.member(3 * M, "local") for _ in range(4)]
    arr = hz.array(members, level=5, chunk=chunk, data_offset=M,
                   control=True,
                   params=["create=true", "bitmap=none", "rebuild-rate=4K"])
    ctl = arr.ctl
    spare = os.path.join(hz.dir, "b.spare")
    faults.noise_file(spare, 3 * M)
    refused_replace(ctl, spare, "(b) during the first resync")
    arr.stop()
