#!/usr/bin/env bash
# A remote member that stops answering, with member-timeout=2.
#
# Stopped server (SIGSTOP: the kernel still accepts connections, nothing
# answers): a read of its chunks fails (or, with degraded reads, returns
# the right data) after 2-4 s instead of hanging, and so do the next
# ones, which must reconnect to the stopped server; reads of other
# members' chunks stay fast and right.  After SIGCONT, I/O resumes within
# the reconnect backoff and the array reads back as written.
#
# Slow server (nbdkit's delay filter, 10 s per write): a write that needs
# it fails (or, degraded, succeeds without it) after 2-4 s, writes and
# reads that avoid it stay fast.  It runs first: a server that answers the
# handshake but not the writes tests the timeout of requests alone; the
# stopped server, which answers nothing, tests reconnection too.

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires truncate
requires_python_module nbd
requires_nbdkit_filter error delay

test_seed
cleanup_fn python3 "$top_srcdir/tests/faults.py" --cleanup "$tmpdir"

cat > "$tmpdir/hang.py" <<'EOF'
import os, random, time
import faults

seed = int(os.environ["SEED"])
degraded = faults.expect_degraded()
print("degraded reads expected: %s" % degraded, flush=True)
K = 1024
TIMEOUT = 2
LO, HI = TIMEOUT - 0.5, TIMEOUT + 2.0
rng = random.Random(seed)

def chunks_on(arr, k, want):
    """Array offsets of data chunks on member k (want=True) or not."""
    return [arr.chunk_offset(s, i) for s in range(arr.rows)
            for i in range(arr.dd)
            if (arr.where(arr.chunk_offset(s, i))[2] == k) == want]

def read_hung(arr, k, off, shadow, what):
    got, err, dt = faults.timed(arr.h.pread, 4096, off)
    print("    %s: %s after %.2f s" % (what, err or "data", dt), flush=True)
    assert dt < HI, "%s: took %.1f s (member-timeout=%d)" % (what, dt, TIMEOUT)
    if degraded:
        assert err is None and got == shadow[off:off + 4096], "%s: wrong data" % what
    else:
        assert err is not None, "%s: succeeded with member %d hung" % (what, k)
    return dt

def read_ok(arr, off, shadow, what, limit=1.0):
    got, err, dt = faults.timed(arr.h.pread, 4096, off)
    assert err is None, "%s: %s" % (what, err)
    assert got == shadow[off:off + 4096], "%s: wrong data" % what
    assert dt < limit, "%s: took %.1f s" % (what, dt)

faults.watchdog(50)
with faults.Harness() as hz:
    # 1. The delay filter: every write (and zero) to member 1 takes 10 s.
    # Reads are not delayed, so the plugin opens the array normally (it
    # may read its members at start-up).  The members start zeroed, so
    # the shadow is all zeroes and every row's parity is good.
    ms = [hz.member(16 * 16 * K, "remote"),
          hz.member(16 * 16 * K, "remote", delay_write="10"),
          hz.member(16 * 16 * K, "remote")]
    arr = hz.array(ms, level=5, chunk=16 * K, params=["member-timeout=%d" % TIMEOUT])
    shadow = bytearray(arr.size)
    print("RAID-5, member 1 answers writes after 10 s (delay filter)", flush=True)
    on_k = chunks_on(arr, 1, True)
    # Rows where member 1 holds neither the chunk written nor parity.
    free = [arr.chunk_offset(s, i) for s in range(arr.rows) for i in range(arr.dd)
            if 1 not in arr.row_members(s)
            and arr.where(arr.chunk_offset(s, i))[2] != 1]
    for j in (0, 1):
        data = rng.randbytes(4096)
        _, err, dt = faults.timed(arr.h.pwrite, data, on_k[j])
        print("    write %d to the slow member: %s after %.2f s"
              % (j + 1, err or "ok", dt), flush=True)
        assert dt < HI, "a write to the slow member took %.1f s" % dt
        if degraded:
            assert err is None, "degraded write failed: %s" % err
            shadow[on_k[j]:on_k[j] + 4096] = data
            read_ok(arr, on_k[j], shadow, "read back of a degraded write")
        else:
            assert err is not None, "a write to the slow member succeeded"
            assert dt > LO, "the write failed after only %.2f s" % dt
        data = rng.randbytes(4096)
        _, err, dt = faults.timed(arr.h.pwrite, data, free[j] + 4096)
        assert err is None and dt < 1.0, \
            "a write avoiding the slow member: %s after %.2f s" % (err, dt)
        shadow[free[j] + 4096:free[j] + 8192] = data
        read_ok(arr, free[j] + 4096, shadow, "read of another member")
    arr.stop()
    # 2. SIGSTOP.
    arr = hz.array(["remote", "remote", "local", "remote"], member_size=16 * 16 * K,
                   level=5, chunk=16 * K, params=["member-timeout=%d" % TIMEOUT])
    k = 1
    shadow = faults.fill(arr, rng)
    on_k, off_k = chunks_on(arr, k, True), chunks_on(arr, k, False)
    print("RAID-5, member %d stopped (SIGSTOP)" % k, flush=True)
    arr.members[k].stop()
    first = read_hung(arr, k, on_k[0], shadow, "first read of the stopped member")
    if not degraded:
        assert first > LO, "the first read failed after only %.2f s" % first
    read_ok(arr, off_k[0], shadow, "read of another member")
    # The next reads need a new connection to the stopped server.
    for j in (1, 2, 3):
        read_hung(arr, k, on_k[j], shadow, "read %d of the stopped member" % (j + 1))
        read_ok(arr, off_k[j], shadow, "read of another member")
    arr.members[k].cont()
    _, tries, secs = faults.retry(lambda: arr.h.pread(4096, on_k[0]), 8.0)
    print("  SIGCONT: first good read after %d tries, %.2f s" % (tries, secs), flush=True)
    got, _, _ = faults.retry(lambda: arr.h.pread(arr.size, 0), 8.0)
    assert got == shadow, "array differs after SIGCONT"
    arr.stop()

print("passed")
EOF

FAULTS_DIR=$tmpdir SEED=$seed \
PYTHONPATH=$top_srcdir/tests${PYTHONPATH:+:$PYTHONPATH} \
    timeout -k 5 80 python3 "$tmpdir/hang.py" || { cat "$tmpdir"/array*.log; exit 1; }
