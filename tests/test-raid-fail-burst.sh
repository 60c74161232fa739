#!/usr/bin/env bash
# A member fails in the middle of a write burst, and no acknowledged
# write is lost.  Eight clients, each with its own connection, write,
# zero, flush and read back their own pieces of the array (dealt round
# robin, so they share every stripe) as fast as they can.  The members are
# real nbdkit servers (faults.py: the file plugin behind the error
# filter).  Midway a member starts failing every request with EIO (or
# only reads); for RAID-6 a second member fails later, or its server is
# killed outright.  The shadow
# is updated only when a request succeeds; since the array stays within
# its tolerance, no request may fail at all, every acknowledged write
# must read back, during the burst and after it, and the failed members
# must be named in the log.  With the control socket the failed members
# are then replaced and rebuilt, and raidcheck.py checks every member
# file against the shadow; without it the array is restarted degraded
# and read again.
#
# RAID_TEST_SEED=N replays the choice of writes (not their interleaving).

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires_python_module nbd
requires_nbdkit_filter error

test_seed

cat > "$tmpdir/burst.py" <<'EOF'
import os, random, time
import faults
import raidfail_lib as rf

seed = int(os.environ["SEED"])
work = os.environ["FAULTS_DIR"]
K = 1024
nclients = 8
phase_s = 1.5
have_ctl = rf.plugin_feature("control")

# level, members, layout, chunk, faults: (how, member) applied one per
# phase after a first phase with every member healthy.
configs = [
    (5, 4, "left-symmetric",  16 * K, [("eio", 2)]),
    (6, 6, "right-asymmetric", 8 * K, [("eio", 1), ("kill", 4)]),
    (6, 5, "parity-first",     4 * K, [("eio-read", 2), ("eio", 0)]),
]


t0 = time.monotonic()
with faults.Harness(work) as hz:
    for ci, (level, n, layout, chunk, flist) in enumerate(configs):
        rng = random.Random(seed * 100 + ci)
        what = "RAID-%d %s, %d members, chunk %d" % (level, layout, n, chunk)
        ctlpath = os.path.join(work, "ctl%d.sock" % ci)
        params = ["member-timeout=5"]
        if have_ctl:
            params.append("control=" + ctlpath)
        arr = hz.array(["remote"] * n, member_size=512 * K, level=level,
                       chunk=chunk, layout=layout, params=params)
        shadow = rf.fill(arr.h, rng)

        phases = []
        with rf.Load(arr, shadow, nclients, seed * 100 + ci, what) as load:
            time.sleep(phase_s)
            phases.append(("healthy", load.total()))
            for how, m in flist:
                member = arr.members[m]
                if how == "eio":
                    member.fail_writes(True)
                    member.fail_reads(True)
                elif how == "eio-read":
                    member.fail_reads(True)
                else:
                    member.kill()
                before = load.total()
                time.sleep(phase_s)
                phases.append(("%s on member %d" % (how, m),
                               load.total() - before))
        for name, ops in phases:
            assert ops > 0, "%s: no request completed in phase '%s'" % (
                what, name)
        counts = load.counts()

        # Every acknowledged write, through a fresh connection.
        h = arr.connect()
        rf.compare_all(arr, shadow, what + ": after the burst", h=h)
        failed = [m for how, m in flist]
        missed = [m for m in failed if "member %s failed" % arr.members[m].disk
                  not in arr.log()]
        if missed:
            # A slow machine may not have met every fault during the
            # burst: rewriting the whole array touches every member.
            rf.log("  (members %s not yet failed after the burst: rewriting "
                   "the array)" % missed)
            for off in range(0, len(shadow), 1 << 20):
                h.pwrite(shadow[off:off + (1 << 20)], off)
            rf.compare_all(arr, shadow, what + ": after a rewrite", h=h)
        h.shutdown()
        for m in failed:
            rf.expect_log(arr, "member %s failed" % arr.members[m].disk, what)

        if have_ctl:
            ctl = rf.Control(ctlpath)
            st = ctl.status()
            states = [x["state"] for x in st["members"]]
            assert states == ["failed" if i in failed else "in_sync"
                              for i in range(n)], \
                "%s: member states %s" % (what, states)
            paths = [x.path for x in arr.members]
            for m in failed:
                paths[m] = os.path.join(work, "new%d-%d" % (ci, m))
                rf.noise_file(paths[m], 512 * K)
                ctl.ok("replace %d %s" % (m, paths[m]))
                ctl.wait_idle(30)
            rf.compare_all(arr, shadow, what + ": rebuilt")
            arr.stop()
            rf.check_members(arr, paths, shadow, what + ": rebuilt", work,
                             inprocess=False)
        else:
            arr.stop()
            for m in failed:
                arr.members[m] = rf.MissingMember()
            arr.params = [p for p in arr.params if not p.startswith("control=")]
            arr.start()
            rf.compare_all(arr, shadow, what + ": restarted degraded")
            arr.stop()
        rf.log("  %s: %s; ops per phase %s; all acknowledged writes read back"
               % (what, counts, phases))
rf.log("  %.1f s" % (time.monotonic() - t0))
EOF

SEED=$seed FAULTS_DIR=$tmpdir PYTHONPATH=$top_srcdir/tests \
    python3 "$tmpdir/burst.py"
