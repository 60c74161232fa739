# SPDX-License-Identifier: BSD-3-Clause
"""fail_degraded.run(configs): degraded arrays serve every byte (run by
test-fail-degraded-r5.py and -r6.py).

For each configuration (level, members, layout, chunk, data offset) an
array is filled with random data; then every single member, and for
RAID-6 every pair (under the sanitizers a third of them, drawn by the
seed), is left out (disk=missing at the next start).  The
degraded array must read back byte-exact against the shadow, reading
must change no surviving member, and the control socket's status must
say degraded with exactly those members failed.  Then it takes random
writes, zeroes and trims, and must still read back exact.  Each missing
member is replaced by a fresh file full of noise (a little bigger than
needed: the rebuild must not touch the bytes before data-offset or after
the last row) and rebuilt, every other pair both at once (the second
waits its turn); the array must be in sync again, and the independent
checker (raidcheck.py: as a program for the first failure set of each
configuration, its row checker in process for the others) must find
every row's parity right on all member files and rebuild the shadow
from them.
"""

import itertools
import os
import random
import time

import faults
import workload as wl

K = 1024
msize = 256 * K
nops = 30


def one_set(hz, arr, fs, what, shadow, rng, paths, pristine, program):
    """One failure set fs (the members missing) on a started degraded
    array: paths and pristine are the member files and their contents
    before it started."""
    n, chunk, doff = arr.n, arr.chunk, arr.data_offset
    wl.compare_all(arr, shadow, what + ": first degraded read")
    for i in range(n):
        if i not in fs and faults.file_bytes(paths[i]) != pristine[i]:
            raise AssertionError("%s: reading changed member %d"
                                 % (what, i))
    wl.random_ops(arr, rng, shadow, nops, what + ": degraded writes")
    wl.compare_all(arr, shadow, what + ": after degraded writes")
    ctl = arr.ctl
    st = ctl.status()
    assert st["degraded"] is True and st["failed"] == len(fs), \
        "%s: status %s" % (what, st)
    assert [m["state"] for m in st["members"]] == \
        ["failed" if i in fs else "in_sync" for i in range(n)], \
        "%s: member states %s" % (what, st["members"])
    # Replacements a little bigger than needed, full of noise: the rebuild
    # must not touch the bytes before data-offset or after the last row.
    now = list(paths)
    end = doff + msize
    noise = {}
    for i in fs:
        now[i] = os.path.join(hz.dir, "new%d" % i)
        faults.noise_file(now[i], end + chunk + 1000)
        b = faults.file_bytes(now[i])
        noise[i] = (b[:doff], b[end:])
        ctl.ok("replace %d %s" % (i, now[i]))
        # Every other pair: both replaced at once, the second while the
        # first rebuilds (it waits its turn).
        if len(fs) == 1 or sum(fs) % 2:
            ctl.wait_idle(30)
    ctl.wait_idle(30)
    st = ctl.status()
    assert not st["degraded"] and st["failed"] == 0 and \
        all(m["state"] == "in_sync" for m in st["members"]), \
        "%s: after replacing: %s" % (what, st)
    wl.compare_all(arr, shadow, what + ": after the rebuild")
    arr.stop()
    faults.check_members(arr, now, shadow, what + ": rebuilt",
                         program=program)
    for i in fs:
        b = faults.file_bytes(now[i])
        assert (b[:doff], b[end:]) == noise[i], \
            "%s: the rebuild wrote outside the array on member %d" \
            % (what, i)
    for i in fs:
        os.unlink(now[i])


def failure_pairs(seed, ci, level, n):
    """Every pair of members for RAID-6 (none for RAID-5).  Under the
    sanitizers (RAID_SANITIZE, set by tests/sanitize/run-test) a third of
    them, at least N, chosen by the test's seed: the code a pair drives is
    the same for every pair of a kind, and each run of check-asan draws
    other pairs (make check runs them all).  Under ASan the whole set took
    174 s of the RAID-6 test's time."""
    if level != 6:
        return []
    pairs = list(itertools.combinations(range(n), 2))
    if not os.environ.get("RAID_SANITIZE"):
        return pairs
    rng = random.Random("%d-%d-pairs" % (seed, ci))
    return sorted(rng.sample(pairs, min(len(pairs), max(n, len(pairs) // 3))))


def run(configs):
    with faults.Test() as hz:
        t0 = time.monotonic()
        total = 0
        for ci, (level, n, layout, chunk, doff) in configs:
            rng = random.Random(hz.seed * 100 + ci)
            geo = dict(level=level, chunk=chunk, layout=layout,
                       data_offset=doff)
            members = [hz.member(doff + msize, "local") for _ in range(n)]
            paths = [m.path for m in members]
            arr = hz.array(members, **geo)
            shadow0 = wl.fill(arr.h, rng)
            arr.stop()
            pristine = [faults.file_bytes(p) for p in paths]

            fsets = [(i,) for i in range(n)] + failure_pairs(hz.seed, ci,
                                                             level, n)
            tc = time.monotonic()
            for fs in fsets:
                what = "RAID-%d %s, %d members, chunk %d, data offset %d, " \
                    "members %s missing" % (level, layout, n, chunk, doff,
                                            "+".join(map(str, fs)))
                for p, b in zip(paths, pristine):
                    with open(p, "wb") as f:
                        f.write(b)
                shadow = bytearray(shadow0)
                ms = [faults.MissingMember() if i in fs else members[i]
                      for i in range(n)]
                arr = hz.array(ms, control=True, **geo)
                try:
                    one_set(hz, arr, fs, what, shadow, rng, paths, pristine,
                            program=fs == fsets[0])
                except BaseException:
                    faults.log("  the plugin's log (%s):\n%s"
                               % (arr.logfile, arr.log()[-3000:]))
                    raise
                total += 1
            faults.log("  RAID-%d %-16s %d members, chunk %2dK, data offset "
                       "%2dK: %3d failure sets passed (%.1f s)"
                       % (level, layout, n, chunk // K, doff // K,
                          len(fsets), time.monotonic() - tc))
        faults.log("  %d failure sets in %.1f s"
                   % (total, time.monotonic() - t0))
