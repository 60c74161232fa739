#!/usr/bin/env bash
# Remote members behave exactly like local ones.  Arrays that mix local
# member files and members served over NBD (nbdkit's file plugin behind
# the error filter, on Unix sockets; one server without multi-conn, so
# the shared-connection path runs too) take random writes, zeroes and
# trims of every size and alignment against a shadow image, then a burst
# of concurrent aio writes on two connections.  The array must equal the
# shadow, and the independent checker (raidcheck.py) must find every
# row's parity good on the member files and rebuild the shadow from them.
#
# RAID_TEST_SEED=N replays a run; RAID_TEST_OPS=N changes the operations
# per configuration (default 300).

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires truncate cmp
requires_python_module nbd
requires_nbdkit_filter error

test_seed
# If the harness is killed or hangs, its servers must still go.
cleanup_fn python3 "$top_srcdir/tests/faults.py" --cleanup "$tmpdir"

cat > "$tmpdir/shadow.py" <<'EOF'
import os, random, subprocess, sys
import nbd
import faults

seed = int(os.environ["SEED"])
nops = int(os.environ.get("RAID_TEST_OPS", "300"))
tests = os.environ["TESTS_DIR"]
K = 1024

# level, members (r: remote, l: local, s: remote without multi-conn),
# layout, chunk, data offset
configs = [
    (5, "rlrl",   "left-symmetric",   16 * K, 0),
    (6, "rrlrlr", "left-asymmetric",  4 * K,  12 * K),
    (6, "rrrrr",  "right-symmetric",  64 * K, 0),
    (5, "srrl",   "parity-first",     4 * K,  0),
]

def ops(arr, rng, shadow, nops):
    h, size, chunk, row = arr.h, arr.size, arr.chunk, arr.row
    def pick():
        k = rng.random()
        n = (rng.randint(1, 511) if k < 0.2 else
             512 * rng.randint(1, 16) if k < 0.4 else
             rng.randint(1, 2 * chunk) if k < 0.6 else
             chunk * rng.randint(1, 3) if k < 0.75 else
             row * rng.randint(1, 2) if k < 0.9 else
             rng.randint(1, 3 * row))
        k = rng.random()
        off = (rng.randrange(size) if k < 0.4 else
               rng.randrange(0, size, chunk) if k < 0.7 else
               rng.randrange(0, size, row) if k < 0.85 else
               rng.randrange(0, size, chunk) + rng.randint(-700, 700))
        off = max(0, min(off, size - 1))
        return off, min(n, size - off)
    for i in range(nops):
        off, n = pick()
        k = rng.random()
        if k < 0.6:
            data = rng.randbytes(n)
            h.pwrite(data, off, nbd.CMD_FLAG_FUA if rng.random() < 0.15 else 0)
            shadow[off:off + n] = data
        elif k < 0.72:
            h.zero(n, off, nbd.CMD_FLAG_NO_HOLE if rng.random() < 0.5 else 0)
            shadow[off:off + n] = bytes(n)
        elif k < 0.82:
            h.trim(n, off)
            shadow[off:off + n] = bytes(n)
        elif k < 0.97:
            roff, rn = pick()
            assert h.pread(rn, roff) == shadow[roff:roff + rn], \
                "op %d: read of %d at %d differs from the shadow" % (i, rn, roff)
        else:
            h.flush()

def burst(arr, rng, shadow, depth=32):
    """Disjoint random pieces, written with many requests in flight on
    two connections, so several nbdkit threads hit the members at once."""
    hs = [arr.h, arr.connect()]
    pieces, off = [], 0
    while off < arr.size:
        n = min(arr.size - off, rng.choice((rng.randint(1, 9000),
                                            rng.randint(1, 2 * arr.chunk))))
        pieces.append((off, n))
        off += n
    rng.shuffle(pieces)
    pending = [[], []]
    for j, (off, n) in enumerate(pieces):
        h, pend = hs[j % 2], pending[j % 2]
        while len(pend) >= depth:
            h.poll(-1)
            pend[:] = [c for c in pend if not h.aio_command_completed(c)]
        data = rng.randbytes(n)
        pend.append(h.aio_pwrite(nbd.Buffer.from_bytearray(bytearray(data)), off))
        shadow[off:off + n] = data
    for h, pend in zip(hs, pending):
        for _ in range(100000):
            pend[:] = [c for c in pend if not h.aio_command_completed(c)]
            if not pend:
                break
            h.poll(-1)
        assert not pend
    hs[1].shutdown()
    return len(pieces)

faults.watchdog(float(os.environ.get("WATCHDOG", "60")))
with faults.Harness() as hz:
    for n, (level, kinds, layout, chunk, doff) in enumerate(configs):
        rng = random.Random(seed + n)
        msize = doff + 32 * chunk + 3000
        members = []
        for j, k in enumerate(kinds):
            kind = "local" if k == "l" else "remote"
            # The last member is bigger: the smallest sets the size,
            # whether it is local or remote.
            size = msize + (chunk + 100 if j == len(kinds) - 1 else 0)
            members.append(hz.member(size, kind, multi_conn=(k != "s")))
        arr = hz.array(members, level=level, chunk=chunk, layout=layout,
                       data_offset=doff)
        npar = 2 if level == 6 else 1
        want = (len(kinds) - npar) * ((msize - doff) // chunk) * chunk
        assert arr.size == want, "size %d, expected %d" % (arr.size, want)
        print("config %d: RAID-%d %s (%s), %s, chunk %d, data-offset %d"
              % (n, level, kinds, "r=remote l=local s=remote single-conn",
                 layout, chunk, doff), flush=True)
        shadow = bytearray(arr.size)
        ops(arr, rng, shadow, nops)
        npieces = burst(arr, rng, shadow)
        ops(arr, rng, shadow, nops // 3)
        step = 1 << 20
        for off in range(0, arr.size, step):
            m = min(step, arr.size - off)
            assert arr.h.pread(m, off) == shadow[off:off + m], \
                "final compare: array differs from the shadow near %d" % off
        arr.h.flush()
        arr.stop()
        image = os.path.join(hz.dir, "image")
        r = subprocess.run([sys.executable, os.path.join(tests, "raidcheck.py"),
                            "--level", str(level), "--layout", layout,
                            "--chunk", str(chunk), "--data-offset", str(doff),
                            "--image", image] + [m.path for m in members])
        assert r.returncode == 0, "raidcheck failed on config %d" % n
        with open(image, "rb") as f:
            assert f.read() == shadow, \
                "config %d: the image rebuilt from the members is not the shadow" % n
        print("  %d ops, %d concurrent pieces: array, parity and rebuilt image good"
              % (nops + nops // 3, npieces), flush=True)
        for m in members:
            if m.proc:
                m.kill()
print("all configurations passed")
EOF

FAULTS_DIR=$tmpdir TESTS_DIR=$top_srcdir/tests SEED=$seed \
PYTHONPATH=$top_srcdir/tests${PYTHONPATH:+:$PYTHONPATH} \
    timeout -k 5 90 python3 "$tmpdir/shadow.py" || { tail -n 20 "$tmpdir"/array*.log; exit 1; }
