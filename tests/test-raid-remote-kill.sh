#!/usr/bin/env bash
# A remote member's server is killed (SIGKILL) under a live array with
# member-timeout=2, then restarted on the same socket over the same file.
#
# While it is dead: reads of its chunks fail with an error (or, with
# degraded reads, return the right data), reads of other chunks return
# the right data, and no request takes longer than member-timeout + 2 s;
# writes finish in that time too, and the rows they did not touch keep
# their data and parity on the member files.  After the restart, I/O to
# the member resumes within the reconnect backoff (at most 5 s, allowed
# 8 s), every byte written before the kill reads back (except where a
# write failed, which NBD leaves undefined), and rewriting the
# rows whose writes failed makes every row's parity good again.

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires truncate
requires_python_module nbd
requires_nbdkit_filter error

test_seed
cleanup_fn python3 "$top_srcdir/tests/faults.py" --cleanup "$tmpdir"

cat > "$tmpdir/kill.py" <<'EOF'
import os, random, time
import faults

seed = int(os.environ["SEED"])
degraded = faults.expect_degraded()
print("degraded reads expected: %s" % degraded, flush=True)
K = 1024
TIMEOUT = 2
LIMIT = TIMEOUT + 2.0

def run(arr, k, rng):
    shadow = faults.fill(arr, rng)
    assert arr.bad_rows() == [], "parity bad after the fill"
    others = [j for j in range(arr.n) if j != k]
    snap = {j: arr.members[j].read() for j in others}
    m = arr.members[k]

    m.kill()
    counts = {"ok": 0, "eio": 0, "reconstructed": 0}
    worst = 0.0
    for s in range(arr.rows):
        for i in range(arr.dd):
            off = arr.chunk_offset(s, i) + rng.randrange(0, arr.chunk - 4096, 512)
            got, err, dt = faults.timed(arr.h.pread, 4096, off)
            worst = max(worst, dt)
            assert dt < LIMIT, "a read took %.1f s with member %d dead" % (dt, k)
            if arr.where(off)[2] == k and not degraded:
                assert err is not None, "a read of the dead member succeeded"
                counts["eio"] += 1
                continue
            assert err is None, "row %d chunk %d: %s" % (s, i, err)
            assert got == shadow[off:off + 4096], "row %d chunk %d: wrong data" % (s, i)
            counts["reconstructed" if arr.where(off)[2] == k else "ok"] += 1
    print("  reads with member %d dead: %s, slowest %.2f s" % (k, counts, worst),
          flush=True)

    # Writes into every third row; they may fail (not degraded), but fast.
    written, unknown = {}, []
    for s in range(0, arr.rows, 3):
        off = arr.chunk_offset(s, rng.randrange(arr.dd)) + 8 * K
        data = rng.randbytes(4096)
        _, err, dt = faults.timed(arr.h.pwrite, data, off)
        assert dt < LIMIT, "a write took %.1f s with member %d dead" % (dt, k)
        needs_k = arr.where(off)[2] == k or k in arr.row_members(s)
        if degraded or (err is None and not needs_k):
            assert err is None, "row %d: write failed: %s" % (s, err)
            shadow[off:off + 4096] = data
        else:
            assert err is not None or not needs_k, \
                "row %d: a write needing member %d succeeded" % (s, k)
            unknown.append((off, 4096))   # failed: NBD leaves it undefined
        written[s] = err
    print("  writes with member %d dead: %d ok, %d failed"
          % (k, sum(e is None for e in written.values()),
             sum(e is not None for e in written.values())), flush=True)
    # Rows no write touched are as they were on every live member.
    for j in others:
        now = arr.members[j].read()
        for s in range(arr.rows):
            if s not in written:
                a = arr.data_offset + s * arr.chunk
                assert now[a:a + arr.chunk] == snap[j][a:a + arr.chunk], \
                    "member %d row %d changed" % (j, s)
    if not degraded:
        quiet = [s for s in range(arr.rows) if s not in written]
        assert arr.bad_rows(quiet) == [], "parity bad on rows not written"

    # Restart: the member must come back within the backoff.
    t0 = time.monotonic()
    m.restart()
    k_off = next(arr.chunk_offset(s, i) for s in range(arr.rows)
                 for i in range(arr.dd) if arr.where(arr.chunk_offset(s, i))[2] == k)
    got, tries, secs = faults.retry(lambda: arr.h.pread(4096, k_off), 8.0)
    assert got == shadow[k_off:k_off + 4096]
    # Stale connections of other nbdkit threads may each fail one request.
    later_fail = 0
    for s in range(arr.rows):
        for i in range(arr.dd):
            off = arr.chunk_offset(s, i)
            for attempt in range(20):
                got, err, dt = faults.timed(arr.h.pread, arr.chunk, off)
                if err is None:
                    break
                later_fail += 1
                assert time.monotonic() - t0 < 12, "member %d did not come back" % k
                time.sleep(0.1)
            assert err is None, "row %d chunk %d after the restart" % (s, i)
            want = bytearray(shadow[off:off + arr.chunk])
            for uoff, un in unknown:
                if off <= uoff < off + arr.chunk:
                    a = uoff - off
                    want[a:a + un] = got[a:a + un]
            assert got == want, "row %d chunk %d: wrong data after the restart" % (s, i)
    print("  restarted member %d: first good read after %d tries, %.2f s; "
          "%d failed reads after that" % (k, tries, secs, later_fail), flush=True)

    # Repair the rows whose writes failed: rewrite them whole.
    for s, err in written.items():
        if err is not None:
            arr.h.pwrite(shadow[s * arr.row:(s + 1) * arr.row], s * arr.row)
    arr.h.flush()
    assert arr.h.pread(arr.size, 0) == shadow, "array differs at the end"
    if not degraded:
        assert arr.bad_rows() == [], "parity bad at the end"

faults.watchdog(100)
with faults.Harness() as hz:
    for n, (level, kinds, layout, k) in enumerate(
            [(6, "rrlrr", "left-symmetric", 3),
             (5, "rlrr", "right-asymmetric", 0)]):
        rng = random.Random(seed + n)
        arr = hz.array(["remote" if c == "r" else "local" for c in kinds],
                       member_size=24 * 16 * K, level=level, chunk=16 * K,
                       layout=layout, params=["member-timeout=%d" % TIMEOUT])
        print("RAID-%d %s (r=remote, l=local), %s, member %d killed"
              % (level, kinds, layout, k), flush=True)
        run(arr, k, rng)
        arr.stop()
print("passed")
EOF

FAULTS_DIR=$tmpdir SEED=$seed \
PYTHONPATH=$top_srcdir/tests${PYTHONPATH:+:$PYTHONPATH} \
    timeout -k 5 150 python3 "$tmpdir/kill.py" || { tail -n 20 "$tmpdir"/array*.log; exit 1; }
