#!/usr/bin/env bash
# Degraded arrays serve every byte.  For RAID-5 every single member, and
# for RAID-6 every single member and every pair, is left out of an array
# that was filled with random data (disk=missing at the next start).  The
# degraded array must read back byte-exact against the shadow; then it
# takes random writes, zeroes and trims, and must still read back exact.
# With the control socket (control=PATH), each missing member is then
# replaced by a fresh file full of noise and rebuilt; the array must be
# in sync again, and the independent checker (raidcheck.py) must find
# every row's parity right on all member files and rebuild the shadow
# from them.  Without it, the degraded array is restarted and read again:
# what was written degraded must have reached the surviving members.
#
# Every md layout is run, RAID-6 over 4..8 members and RAID-5 over 3..6.
# RAID_TEST_SEED=N replays a run.

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires_python_module nbd

test_seed

cat > "$tmpdir/degraded.py" <<'EOF'
import itertools, os, random, sys, time
import faults
import raidfail_lib as rf

seed = int(os.environ["SEED"])
work = os.environ["FAULTS_DIR"]
K = 1024
msize = 256 * K
nops = 30
have_ctl = rf.plugin_feature("control")
if not have_ctl:
    rf.log("  (no control socket in this plugin: no replace/rebuild; the "
           "degraded arrays are checked by restarting them instead)")

# level, members, layout, chunk, data offset.  RAID-6 covers every layout
# with every pair; RAID-5 every layout with every single failure.
configs = [
    (5, 3, "left-asymmetric",  4 * K,  0),
    (5, 4, "right-asymmetric", 16 * K, 8 * K),
    (5, 5, "left-symmetric",   8 * K,  0),
    (5, 6, "right-symmetric",  4 * K,  0),
    (5, 4, "parity-first",     8 * K,  0),
    (5, 5, "parity-last",      16 * K, 0),
    (6, 4, "left-asymmetric",  8 * K,  0),
    (6, 5, "right-asymmetric", 4 * K,  4 * K),
    (6, 6, "left-symmetric",   16 * K, 0),
    (6, 7, "right-symmetric",  8 * K,  0),
    (6, 8, "parity-first",     4 * K,  0),
    (6, 5, "parity-last",      8 * K,  12 * K),
]

def one_set(arr, fs, what, shadow, rng, paths, pristine, ctlpath, external):
    """One failure set fs (the members missing) on a started degraded
    array: paths and pristine are the member files and their contents
    before it started; external: check the members with raidcheck.py as
    a program (else its code, in process)."""
    n, chunk, doff = arr.n, arr.chunk, arr.data_offset
    rf.compare_all(arr, shadow, what + ": first degraded read")
    for i in range(n):
        if i not in fs and rf.file_bytes(paths[i]) != pristine[i]:
            raise AssertionError("%s: reading changed member %d"
                                 % (what, i))
    rf.random_ops(arr, rng, shadow, nops, what + ": degraded writes")
    rf.compare_all(arr, shadow, what + ": after degraded writes")
    if have_ctl:
        ctl = rf.Control(ctlpath)
        st = ctl.status()
        assert st["degraded"] is True and st["failed"] == len(fs), \
            "%s: status %s" % (what, st)
        assert [m["state"] for m in st["members"]] == \
            ["failed" if i in fs else "in_sync" for i in range(n)], \
            "%s: member states %s" % (what, st["members"])
        # Replacements a little bigger than needed, full of noise:
        # the rebuild must not touch the bytes before data-offset
        # or after the last row.
        now = list(paths)
        end = doff + msize
        noise = {}
        for i in fs:
            now[i] = os.path.join(work, "new%d" % i)
            rf.noise_file(now[i], end + chunk + 1000)
            b = rf.file_bytes(now[i])
            noise[i] = (b[:doff], b[end:])
            ctl.ok("replace %d %s" % (i, now[i]))
            # Every other pair: both replaced at once, the second
            # while the first rebuilds (it waits its turn).
            if len(fs) == 1 or sum(fs) % 2:
                ctl.wait_idle(30)
        ctl.wait_idle(30)
        st = ctl.status()
        assert not st["degraded"] and st["failed"] == 0 and \
            all(m["state"] == "in_sync" for m in st["members"]), \
            "%s: after replacing: %s" % (what, st)
        rf.compare_all(arr, shadow, what + ": after the rebuild")
        arr.stop()
        rf.check_members(arr, now, shadow, what + ": rebuilt", work,
                         inprocess=not external)
        for i in fs:
            b = rf.file_bytes(now[i])
            assert (b[:doff], b[end:]) == noise[i], \
                "%s: the rebuild wrote outside the array on member %d" \
                % (what, i)
        for i in fs:
            os.unlink(now[i])
    else:
        arr.stop()
        arr.start()
        rf.compare_all(arr, shadow, what + ": restarted degraded")
        arr.stop()


t0 = time.monotonic()
total = 0
with faults.Harness(work) as hz:
    for ci, (level, n, layout, chunk, doff) in enumerate(configs):
        rng = random.Random(seed * 100 + ci)
        geo = dict(level=level, chunk=chunk, layout=layout, data_offset=doff)
        members = [hz.member(doff + msize, "local") for _ in range(n)]
        paths = [m.path for m in members]
        arr = rf.array(hz, members, **geo)
        shadow0 = rf.fill(arr.h, rng)
        arr.stop()
        pristine = [open(p, "rb").read() for p in paths]

        fsets = [(i,) for i in range(n)]
        if level == 6:
            fsets += list(itertools.combinations(range(n), 2))
        tc = time.monotonic()
        for fs in fsets:
            what = "RAID-%d %s, %d members, chunk %d, data offset %d, " \
                "members %s missing" % (level, layout, n, chunk, doff,
                                        "+".join(map(str, fs)))
            for p, b in zip(paths, pristine):
                with open(p, "wb") as f:
                    f.write(b)
            shadow = bytearray(shadow0)
            ms = [rf.MissingMember() if i in fs else members[i]
                  for i in range(n)]
            ctlpath = os.path.join(work, "ctl.sock")
            params = ["control=" + ctlpath] if have_ctl else []
            arr = rf.array(hz, ms, params=params, **geo)
            try:
                one_set(arr, fs, what, shadow, rng, paths, pristine, ctlpath,
                        external=fs == fsets[0])
            except BaseException:
                rf.log("  the plugin's log (%s):\n%s" % (arr.logfile,
                                                         arr.log()[-3000:]))
                raise
            total += 1
        rf.log("  RAID-%d %-16s %d members, chunk %2dK, data offset %2dK: "
               "%3d failure sets passed (%.1f s)"
               % (level, layout, n, chunk // K, doff // K, len(fsets),
                  time.monotonic() - tc))
rf.log("  %d failure sets in %.1f s" % (total, time.monotonic() - t0))
EOF

SEED=$seed FAULTS_DIR=$tmpdir PYTHONPATH=$top_srcdir/tests \
    python3 "$tmpdir/degraded.py"
