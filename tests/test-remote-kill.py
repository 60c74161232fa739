#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A remote member's server is killed (SIGKILL) under a live array with
member-timeout=2, then restarted on the same socket over the same file.

While it is dead: every read returns the right data (its chunks from
parity), and no request takes longer than member-timeout + 2 s; writes
into every third row succeed in that time too, and the rows they did
not touch keep their bytes on every live member file.  After the
restart, reads of its chunks resume within the reconnect backoff (at
most 5 s, allowed 8 s; stale connections of other nbdkit threads may
each fail one request, but no chunk for longer than 12 s), and every
byte written reads back.
"""

import random
import time

import faults
import workload as wl

K = 1024
TIMEOUT = 2
LIMIT = TIMEOUT + 2.0


def run(arr, k, rng):
    shadow = wl.fill(arr.h, rng, step=4 * arr.row)
    assert arr.bad_rows() == [], "parity bad after the fill"
    others = [j for j in range(arr.n) if j != k]
    snap = {j: arr.members[j].read() for j in others}
    m = arr.members[k]

    m.kill()
    counts = {"ok": 0, "reconstructed": 0}
    worst = 0.0
    for s in range(arr.rows):
        for i in range(arr.dd):
            off = arr.chunk_offset(s, i) + rng.randrange(0, arr.chunk - 4096, 512)
            got, err, dt = wl.timed(arr.h.pread, 4096, off)
            worst = max(worst, dt)
            assert dt < LIMIT, "a read took %.1f s with member %d dead" % (dt, k)
            assert err is None, "row %d chunk %d: %s" % (s, i, err)
            assert got == shadow[off:off + 4096], "row %d chunk %d: wrong data" % (s, i)
            counts["reconstructed" if arr.where(off)[2] == k else "ok"] += 1
    faults.log("  reads with member %d dead: %s, slowest %.2f s"
               % (k, counts, worst))

    # Writes into every third row: degraded where they need member k.
    written = set()
    for s in range(0, arr.rows, 3):
        off = arr.chunk_offset(s, rng.randrange(arr.dd)) + 8 * K
        data = rng.randbytes(4096)
        _, err, dt = wl.timed(arr.h.pwrite, data, off)
        assert dt < LIMIT, "a write took %.1f s with member %d dead" % (dt, k)
        assert err is None, "row %d: write failed: %s" % (s, err)
        shadow[off:off + 4096] = data
        written.add(s)
    faults.log("  writes with member %d dead: %d ok" % (k, len(written)))
    # Rows no write touched are as they were on every live member.
    for j in others:
        now = arr.members[j].read()
        for s in range(arr.rows):
            if s not in written:
                a = arr.data_offset + s * arr.chunk
                assert now[a:a + arr.chunk] == snap[j][a:a + arr.chunk], \
                    "member %d row %d changed" % (j, s)

    # Restart: the member must come back within the backoff.
    t0 = time.monotonic()
    m.restart()
    k_off = next(arr.chunk_offset(s, i) for s in range(arr.rows)
                 for i in range(arr.dd) if arr.where(arr.chunk_offset(s, i))[2] == k)
    got, tries, secs = wl.retry(lambda: arr.h.pread(4096, k_off), 8.0)
    assert got == shadow[k_off:k_off + 4096]
    # Stale connections of other nbdkit threads may each fail one request.
    later_fail = 0
    for s in range(arr.rows):
        for i in range(arr.dd):
            off = arr.chunk_offset(s, i)
            for attempt in range(20):
                got, err, dt = wl.timed(arr.h.pread, arr.chunk, off)
                if err is None:
                    break
                later_fail += 1
                assert time.monotonic() - t0 < 12, "member %d did not come back" % k
                time.sleep(0.1)
            assert err is None, "row %d chunk %d after the restart" % (s, i)
            assert got == shadow[off:off + arr.chunk], \
                "row %d chunk %d: wrong data after the restart" % (s, i)
    faults.log("  restarted member %d: first good read after %d tries, "
               "%.2f s; %d failed reads after that"
               % (k, tries, secs, later_fail))
    arr.h.flush()
    assert arr.h.pread(arr.size, 0) == shadow, "array differs at the end"


with faults.Test(filters=["error"], timeout=100) as hz:
    for n, (level, kinds, layout, k) in enumerate(
            [(6, "rrlrr", "left-symmetric", 3),
             (5, "rlrr", "right-asymmetric", 0)]):
        rng = random.Random(hz.seed + n)
        arr = hz.array(["remote" if c == "r" else "local" for c in kinds],
                       member_size=24 * 16 * K, level=level, chunk=16 * K,
                       layout=layout, params=["member-timeout=%d" % TIMEOUT])
        faults.log("RAID-%d %s (r=remote, l=local), %s, member %d killed"
                   % (level, kinds, layout, k))
        run(arr, k, rng)
        arr.stop()
