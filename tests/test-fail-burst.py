#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A member fails in the middle of a write burst, and no acknowledged
write is lost.  Eight clients, each with its own connection, write,
zero, flush and read back their own pieces of the array (dealt round
robin, so they share every stripe) as fast as they can.  The members are
real nbdkit servers (faults.py: the file plugin behind the error
filter).  Midway a member starts failing every request with EIO (or
only reads); for RAID-6 a second member fails later, or its server is
killed outright.  The shadow is updated only when a request succeeds;
since the array stays within its tolerance, no request may fail at all,
every acknowledged write must read back, during the burst and after it,
and the failed members must be named in the log.  The failed members
are then replaced and rebuilt, and raidcheck.py checks every member
file against the shadow.

RAID_TEST_SEED=N replays the choice of writes (not their interleaving).
"""

import os
import random
import time

import faults
import workload as wl

K = 1024
nclients = 8
phase_s = 1.5
phase_max_s = 60


def phase(load):
    """One phase of the burst: phase_s seconds, and longer (up to
    phase_max_s) until a request has completed in it, so that a slow
    machine (memcheck, a loaded CI) still tests every phase under load.
    Returns how many requests completed in it."""
    before = load.total()
    t0 = time.monotonic()
    time.sleep(phase_s)
    while load.total() == before and time.monotonic() - t0 < phase_max_s:
        time.sleep(0.05)
    return load.total() - before


# level, members, layout, chunk, faults: (how, member) applied one per
# phase after a first phase with every member healthy.
configs = [
    (5, 4, "left-symmetric",  16 * K, [("eio", 2)]),
    (6, 6, "right-asymmetric", 8 * K, [("eio", 1), ("kill", 4)]),
    (6, 5, "parity-first",     4 * K, [("eio-read", 2), ("eio", 0)]),
]

with faults.Test(filters=["error"]) as hz:
    t0 = time.monotonic()
    seed = hz.seed
    for ci, (level, n, layout, chunk, flist) in enumerate(configs):
        rng = random.Random(seed * 100 + ci)
        what = "RAID-%d %s, %d members, chunk %d" % (level, layout, n, chunk)
        arr = hz.array(["remote"] * n, member_size=512 * K, level=level,
                       chunk=chunk, layout=layout, control=True,
                       params=["member-timeout=5"])
        shadow = wl.fill(arr.h, rng)

        phases = []
        with wl.Load(arr, shadow, nclients, seed * 100 + ci, what) as load:
            phases.append(("healthy", phase(load)))
            for how, m in flist:
                member = arr.members[m]
                if how == "eio":
                    member.fail_writes(True)
                    member.fail_reads(True)
                elif how == "eio-read":
                    member.fail_reads(True)
                else:
                    member.kill()
                phases.append(("%s on member %d" % (how, m), phase(load)))
        for name, ops in phases:
            assert ops > 0, "%s: no request completed in phase '%s'" % (
                what, name)
        counts = load.counts()

        # Every acknowledged write, through a fresh connection.
        h = arr.connect()
        wl.compare_all(arr, shadow, what + ": after the burst", h=h)
        failed = [m for how, m in flist]
        missed = [m for m in failed if "member %s failed" % arr.members[m].disk
                  not in arr.log()]
        if missed:
            # A slow machine may not have met every fault during the
            # burst: rewriting the whole array touches every member.
            faults.log("  (members %s not yet failed after the burst: "
                       "rewriting the array)" % missed)
            for off in range(0, len(shadow), 1 << 20):
                h.pwrite(shadow[off:off + (1 << 20)], off)
            wl.compare_all(arr, shadow, what + ": after a rewrite", h=h)
        h.shutdown()
        for m in failed:
            arr.expect_log("member %s failed" % arr.members[m].disk, what)

        st = arr.ctl.status()
        states = [x["state"] for x in st["members"]]
        assert states == ["failed" if i in failed else "in_sync"
                          for i in range(n)], \
            "%s: member states %s" % (what, states)
        paths = [x.path for x in arr.members]
        for m in failed:
            paths[m] = os.path.join(hz.dir, "new%d-%d" % (ci, m))
            faults.noise_file(paths[m], 512 * K)
            arr.ctl.ok("replace %d %s" % (m, paths[m]))
            arr.ctl.wait_idle(30)
        wl.compare_all(arr, shadow, what + ": rebuilt")
        arr.stop()
        faults.check_members(arr, paths, shadow, what + ": rebuilt")
        faults.log("  %s: %s; ops per phase %s; all acknowledged writes "
                   "read back" % (what, counts, phases))
    faults.log("  %.1f s" % (time.monotonic() - t0))
