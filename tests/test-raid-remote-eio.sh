#!/usr/bin/env bash
# A remote member whose reads, then writes, return EIO (nbdkit's error
# filter, switched on and off by a trigger file).
#
# Reads phase: every 4K read of every data chunk.  Reads of chunks on
# other members return the right data.  Reads of the failing member's
# chunks fail with an error, or, if the plugin serves a failed member
# from parity (RAID_EXPECT_DEGRADED=1, or --dump-plugin says
# raid_degraded=yes), return the right data.  No member file changes.
#
# Writes phase (on a fresh array process, so that a member failed in the
# reads phase starts in sync again): 4K writes, zeroes and trims into every
# row (on even rows, only those that avoid the failing member).  Those
# that need no write to the failing member succeed; the others
# fail (or, degraded, succeed).  Afterwards every row not touched by a
# failed request still has good parity on the member files, the failing
# member's file never changed, and every byte outside failed requests'
# rows reads back as the shadow says.  Once the fault is off, rewriting
# the failed rows whole makes the array and every row's parity good again.

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires truncate
requires_python_module nbd
requires_nbdkit_filter error

test_seed
cleanup_fn python3 "$top_srcdir/tests/faults.py" --cleanup "$tmpdir"

cat > "$tmpdir/eio.py" <<'EOF'
import os, random, time
import nbd
import faults

seed = int(os.environ["SEED"])
degraded = faults.expect_degraded()
print("degraded reads expected: %s" % degraded, flush=True)
K = 1024
SLOW = 5.0                      # no request may take longer than this

def timed(fn, *args):
    t0 = time.monotonic()
    r, err = faults.try_io(fn, *args)
    dt = time.monotonic() - t0
    assert dt < SLOW, "a request took %.1f s" % dt
    return r, err

def fill(arr, rng):
    shadow = bytearray(rng.randbytes(arr.size))
    for off in range(0, arr.size, 4 * arr.row):
        arr.h.pwrite(shadow[off:off + 4 * arr.row], off)
    arr.h.flush()
    assert arr.bad_rows() == [], "parity bad right after the fill"
    return shadow

def reads_phase(arr, k, rng, shadow):
    m = arr.members[k]
    snap = [x.read() for x in arr.members]
    m.fail_reads(True)
    counts = {"ok": 0, "eio": 0, "reconstructed": 0}
    for s in range(arr.rows):
        for i in range(arr.dd):
            off = arr.chunk_offset(s, i) + rng.randrange(0, arr.chunk - 4096, 512)
            got, err = timed(arr.h.pread, 4096, off)
            on_k = arr.where(off)[2] == k
            if on_k and not degraded:
                assert err is not None, \
                    "row %d chunk %d: a read of the failing member succeeded" % (s, i)
                counts["eio"] += 1
                continue
            assert err is None, \
                "row %d chunk %d (member %d): read failed: %s" % (s, i, arr.where(off)[2], err)
            assert got == shadow[off:off + 4096], \
                "row %d chunk %d (member %d): wrong data" % (s, i, arr.where(off)[2])
            counts["reconstructed" if on_k else "ok"] += 1
    # One read over the whole array touches the failing member.
    got, err = timed(arr.h.pread, arr.size, 0)
    if degraded:
        assert err is None and got == shadow, "whole-array read (degraded)"
    else:
        assert err is not None, "a whole-array read succeeded without member %d" % k
    m.fail_reads(False)
    print("  reads with member %d failing: %s" % (k, counts), flush=True)
    assert [x.read() for x in arr.members] == snap, "reads changed a member file"
    assert arr.h.pread(arr.size, 0) == shadow, "array differs after the fault"

def writes_phase(arr, k, rng, shadow):
    m = arr.members[k]
    snap_k = m.read()
    m.fail_writes(True)
    poisoned = set()
    counts = {"ok": 0, "eio": 0, "degraded": 0}
    for s in range(arr.rows):
        for i in range(arr.dd):
            off = arr.chunk_offset(s, i) + rng.randrange(0, arr.chunk - 4096, 512)
            j = arr.where(off)[2]
            touches_k = k == j or k in arr.row_members(s)
            if touches_k and s % 2 == 0:
                continue        # even rows: only requests that avoid k
            op = rng.choice(("write", "write", "zero", "trim"))
            data = rng.randbytes(4096) if op == "write" else bytes(4096)
            if op == "write":
                _, err = timed(arr.h.pwrite, data, off,
                               nbd.CMD_FLAG_FUA if rng.random() < 0.2 else 0)
            elif op == "zero":
                _, err = timed(arr.h.zero, 4096, off)
            else:
                _, err = timed(arr.h.trim, 4096, off)
            if touches_k and not degraded:
                assert err is not None, \
                    "row %d: a %s needing member %d succeeded" % (s, op, k)
                poisoned.add(s)
                counts["eio"] += 1
                continue
            assert err is None, \
                "row %d chunk %d: a %s not needing member %d failed: %s" \
                % (s, i, op, k, err)
            shadow[off:off + 4096] = data
            counts["degraded" if touches_k else "ok"] += 1
    arr.h.flush()
    print("  writes with member %d failing: %s, %d of %d rows hit"
          % (k, counts, len(poisoned), arr.rows), flush=True)
    assert degraded or 0 < len(poisoned) < arr.rows
    if not degraded:
        assert m.read() == snap_k, "the failing member's file changed"
        good = [s for s in range(arr.rows) if s not in poisoned]
        assert arr.bad_rows(good) == [], "parity bad on rows no failure touched"
    # Every byte outside the hit rows reads back as written.
    for s in range(arr.rows):
        if s not in poisoned:
            got = arr.h.pread(arr.row, s * arr.row)
            assert got == shadow[s * arr.row:(s + 1) * arr.row], \
                "row %d differs from the shadow" % s
    m.fail_writes(False)
    # Rewriting the hit rows whole repairs them.
    for s in sorted(poisoned):
        arr.h.pwrite(shadow[s * arr.row:(s + 1) * arr.row], s * arr.row)
    arr.h.flush()
    assert arr.h.pread(arr.size, 0) == shadow, "array differs at the end"
    if not degraded:
        assert arr.bad_rows() == [], "parity bad after the hit rows were rewritten"
    return len(poisoned)

faults.watchdog(100)
with faults.Harness() as hz:
    # level, member kinds, layout, failing member
    for n, (level, kinds, layout, k) in enumerate(
            [(5, "rrrl", "left-symmetric", 1),
             (6, "rlrrr", "left-asymmetric", 2)]):
        rng = random.Random(seed + n)
        arr = hz.array(["remote" if c == "r" else "local" for c in kinds],
                       member_size=32 * 16 * K, level=level, chunk=16 * K,
                       layout=layout, params=["member-timeout=2"])
        print("RAID-%d %s (r=remote, l=local), %s, member %d fails"
              % (level, kinds, layout, k), flush=True)
        shadow = fill(arr, rng)
        reads_phase(arr, k, rng, shadow)
        arr.stop()
        arr.start()
        assert arr.h.pread(arr.size, 0) == shadow
        writes_phase(arr, k, rng, shadow)
        arr.stop()
print("passed")
EOF

FAULTS_DIR=$tmpdir SEED=$seed \
PYTHONPATH=$top_srcdir/tests${PYTHONPATH:+:$PYTHONPATH} \
    timeout -k 5 150 python3 "$tmpdir/eio.py" || { tail -n 20 "$tmpdir"/array*.log; exit 1; }
