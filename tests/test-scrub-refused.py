#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A refused `scrub check|repair` leaves the job that runs alone.  The old
scrub_start wrote the new parameters (repair, resync, counters) into the
one job struct before job_start found a job running, and the running
thread read them.

(a) A parity page of the last row is corrupted on a member file, and a
    `scrub check` starts (slow: the members' reads are delayed).  A
    `scrub repair` sent meanwhile must be refused, and the check must stay
    a check: the corruption is still on the member file afterwards, byte
    for byte, and the check reports it (mismatch_cnt 1, repair false).
(b) A new md array (create=true) over members full of noise resyncs its
    parity, capped by rebuild-rate.  `scrub check` and `scrub repair` sent
    meanwhile must be refused and must not turn the resync off: at the
    end raidcheck.py finds every row's parity right on the member files.
"""

import os
import random
import time

import faults
import workload as wl

K, M = 1024, 1024 * 1024
chunk = 64 * K


problems = []


def refused_during(ctl, line, what):
    """line must be refused, and the running scrub's status not change
    (but for progress); a change is recorded in problems, so that the
    test goes on to what the scrub then does to the members."""
    st = ctl.status()
    assert st["scrub"]["running"], "%s: the scrub is not running: %s" % (
        what, st["scrub"])
    reply = ctl.error(line)
    assert "running" in reply, "%s: %r refused with %r" % (what, line, reply)
    after = ctl.status()["scrub"]
    if not (after["repair"] == st["scrub"]["repair"] and
            after["resync"] == st["scrub"]["resync"] and
            after["total"] == st["scrub"]["total"] and
            after["done"] >= st["scrub"]["done"]):
        problems.append("%s: the refused %r changed the running scrub: "
                        "%s -> %s" % (what, line, st["scrub"], after))
    faults.log("  %s: %r -> %s" % (what, line, reply))


def check(ok, msg):
    if not ok:
        problems.append(msg)
    if problems:
        raise AssertionError("\n".join(problems))


def check_running_check(hz):
    """(a): 128 rows, each read taking 10 ms; while the refusals are
    sent member 0's server is stopped (SIGSTOP), so that the check cannot
    end first on a loaded machine."""
    members = [hz.member(8 * M, "remote", delay_read="10ms") for _ in range(4)]
    arr = hz.array(members, level=5, chunk=chunk, control=True,
                   params=["metadata=none"])
    ctl = arr.ctl
    wl.fill(arr.h, random.Random(11))
    last = arr.rows - 1
    p = arr.layout_of(last)[0]
    where = last * chunk + chunk - 4096   # P's last page in the last row
    members[p].corrupt(where, 4096)
    planted = members[p].read(where, 4096)

    ctl.ok("scrub check")
    time.sleep(0.2)
    members[0].stop()
    refused_during(ctl, "scrub check", "(a) during scrub check")
    refused_during(ctl, "scrub repair", "(a) during scrub check")
    members[0].cont()
    st = ctl.wait_idle(60)["scrub"]
    check(members[p].read(where, 4096) == planted,
          "(a) the parity corruption planted on member %d at %d is gone: the "
          "refused 'scrub repair' turned the running check into a repair" % (
              p, where))
    check(st["finished"] and not st["repair"] and st["mismatch_cnt"] == 1,
          "(a) the check should report the one bad page: %s" % st)
    faults.log("  (a) the planted corruption is still there, reported: %s" % st)
    arr.stop()


def check_first_resync(hz):
    """(b): 48 rows at 512K/s, a resync of about six seconds."""
    members = [hz.member(4 * M, "local") for _ in range(4)]
    for m in members:
        faults.noise_file(m.path, 4 * M)
    arr = hz.array(members, level=5, chunk=chunk, data_offset=M,
                   control=True,
                   params=["create=true", "force=true", "bitmap=none",
                           "rebuild-rate=512K"])
    ctl = arr.ctl
    time.sleep(0.3)
    st = ctl.status()["scrub"]
    assert st["running"] and st["resync"] and st["repair"], \
        "(b) the new array is not resyncing: %s" % st
    refused_during(ctl, "scrub repair", "(b) during the first resync")
    refused_during(ctl, "scrub check", "(b) during the first resync")
    st = ctl.wait_idle(60)["scrub"]
    arr.stop()
    rc, out = faults.run_raidcheck(arr, [m.path for m in members])
    check(rc == 0, "(b) after the first resync the parity is wrong:\n" +
          out[-2000:])
    check(st["finished"] and st["resync"] and st["repair"],
          "(b) the resync did not finish as a resync: %s" % st)
    faults.log("  (b) the resync went on to the end: " + out.strip()[-120:])


# PARTS=b runs only (b).
with faults.Test() as hz:
    if "a" in os.environ.get("PARTS", "ab"):
        check_running_check(hz)
    if "b" in os.environ.get("PARTS", "ab"):
        check_first_resync(hz)
