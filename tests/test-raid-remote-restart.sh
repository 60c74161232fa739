#!/usr/bin/env bash
# A remote member's server is restarted while the array is idle (a
# planned restart of a storage server: kill, start again on the same
# socket over the same file, no client I/O in between).  The member is
# healthy by the time the next request comes, so no request may fail and
# the member must stay in the array: every read succeeds at the first
# try, and writes made afterwards reach it (every row's parity is good on
# the member files at the end).  The plugin's connections to the old
# server, one per nbdkit thread, are stale by then; each must be noticed
# and replaced without failing a request.

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires truncate
requires_python_module nbd
requires_nbdkit_filter error

test_seed
cleanup_fn python3 "$top_srcdir/tests/faults.py" --cleanup "$tmpdir"

cat > "$tmpdir/restart.py" <<'EOF'
import os, random
import nbd
import faults

seed = int(os.environ["SEED"])
rng = random.Random(seed)
K = 1024

def busy_reads(arr, depth=16):
    """Many reads in flight, so that many nbdkit threads open their own
    connection to every member."""
    h = arr.h
    pending = []
    for off in range(0, arr.size, 4096):
        while len(pending) >= depth:
            h.poll(-1)
            pending = [c for c in pending if not h.aio_command_completed(c)]
        pending.append(h.aio_pread(nbd.Buffer(4096), off))
    for _ in range(100000):
        pending = [c for c in pending if not h.aio_command_completed(c)]
        if not pending:
            break
        h.poll(-1)

faults.watchdog(50)
with faults.Harness() as hz:
    arr = hz.array(["remote", "remote", "local", "remote", "remote"],
                   member_size=16 * 16 * K, level=6, chunk=16 * K,
                   params=["member-timeout=2"])
    k = 1
    shadow = faults.fill(arr, rng)
    for _ in range(3):
        busy_reads(arr)
    arr.members[k].restart()
    print("member %d restarted while idle" % k, flush=True)
    failed = []
    for s in range(arr.rows):
        for i in range(arr.dd):
            off = arr.chunk_offset(s, i)
            got, err, dt = faults.timed(arr.h.pread, arr.chunk, off)
            if err is not None:
                failed.append((s, i, arr.where(off)[2], err))
                continue
            assert got == shadow[off:off + arr.chunk], "row %d chunk %d" % (s, i)
    print("  %d of %d chunk reads failed after the restart%s"
          % (len(failed), arr.rows * arr.dd,
             ": " + ", ".join("row %d chunk %d (member %d) %s" % f
                              for f in failed[:6]) if failed else ""), flush=True)
    wfailed = 0
    for _ in range(40):
        off = rng.randrange(0, arr.size - 4096)
        data = rng.randbytes(4096)
        for attempt in range(20):       # a failed write is retried
            _, err, dt = faults.timed(arr.h.pwrite, data, off)
            if err is None:
                break
            wfailed += 1
        assert err is None, "a write kept failing after the restart"
        shadow[off:off + 4096] = data
    print("  %d of 40 writes failed at the first try" % wfailed, flush=True)
    arr.h.flush()
    assert arr.h.pread(arr.size, 0) == shadow, "array differs from the shadow"
    bad = arr.bad_rows()
    print("  rows with bad parity on the member files: %s" % (bad or "none"),
          flush=True)
    assert not failed and not wfailed, "requests failed although the member was back"
    assert not bad, "writes after the restart did not reach member %d" % k
print("passed")
EOF

FAULTS_DIR=$tmpdir SEED=$seed \
PYTHONPATH=$top_srcdir/tests${PYTHONPATH:+:$PYTHONPATH} \
    timeout -k 5 80 python3 "$tmpdir/restart.py" || { tail -n 20 "$tmpdir"/array*.log; exit 1; }
