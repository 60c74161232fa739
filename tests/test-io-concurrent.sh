#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Concurrent writers sharing stripes.  The array is cut into small pieces
# (1 byte to a few rows, most far smaller than a chunk) dealt round-robin
# to several writer processes, each with two connections and many aio
# requests in flight; so every stripe, and usually every chunk, is being
# read-modify-written by several requests at once, never on the same
# bytes.  Writes (some FUA), zeroes and trims are mixed, with flushes.
# After each round a writer reads its own pieces back while the others go
# on writing around them.  At the end the array must equal the expected
# image, and the independent checker must find every row's parity good
# and rebuild the same image from the members.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires nbdsh truncate cmp numfmt
requires_python_module nbd

test_seed
writers=4

cat > "$tmpdir/writer.py" <<'EOF'
import os, sys, random, time
import nbd

uri, w, nwriters = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
seed, size = int(os.environ["SEED"]), int(os.environ["SIZE"])
row = int(os.environ["ROW"])
rounds, depth = 3, 48

# Every writer derives the same pieces from the seed.
prng = random.Random(seed)
pieces, off = [], 0
while off < size:
    k = prng.random()
    n = (prng.randint(1, 600) if k < 0.45 else
         prng.randint(512, 9000) if k < 0.95 else
         prng.randint(row, 3 * row))
    n = min(n, size - off)
    pieces.append((off, n))
    off += n
mine = pieces[w::nwriters]
rng = random.Random(seed * 1000 + w)

handles = []
for _ in range(2):
    h = nbd.NBD()
    h.set_strict_mode(0)
    h.connect_uri(uri)
    handles.append(h)
assert handles[0].can_multi_conn()

while not os.path.exists(os.environ["GO"]):   # start together
    time.sleep(0.01)

expect = {}
stats = {"write": 0, "fua": 0, "zero": 0, "trim": 0, "flush": 0, "reads": 0}

def drain(h, pending, limit):
    """Retire completed commands until at most `limit` are in flight."""
    while len(pending) > limit:
        h.poll(-1)
        for c in [c for c in pending if h.aio_command_completed(c)]:
            del pending[c]          # aio_command_completed raised on error

for r in range(rounds):
    order = list(mine)
    rng.shuffle(order)
    pending = [dict(), dict()]
    for i, (off, n) in enumerate(order):
        j = i % 2
        h = handles[j]
        k = rng.random()
        if k < 0.70:
            data = rng.randbytes(n)
            fua = rng.random() < 0.2
            buf = nbd.Buffer.from_bytearray(bytearray(data))
            c = h.aio_pwrite(buf, off, flags=nbd.CMD_FLAG_FUA if fua else 0)
            pending[j][c] = buf
            expect[off] = data
            stats["write"] += 1
            stats["fua"] += fua
        elif k < 0.85:
            c = h.aio_zero(n, off, flags=nbd.CMD_FLAG_NO_HOLE if rng.random() < 0.5 else 0)
            pending[j][c] = None
            expect[off] = bytes(n)
            stats["zero"] += 1
        else:
            c = h.aio_trim(n, off)
            pending[j][c] = None
            expect[off] = bytes(n)
            stats["trim"] += 1
        if rng.random() < 0.02:
            c = h.aio_flush()
            pending[j][c] = None
            stats["flush"] += 1
        drain(h, pending[j], depth)
    for j in range(2):
        drain(handles[j], pending[j], 0)
    # Our bytes are ours alone: read a sample back while the others write.
    for off, n in rng.sample(mine, min(len(mine), 200)):
        got = handles[r % 2].pread(n, off)
        if got != expect[off]:
            sys.exit("writer %d round %d: bytes %d..%d read back wrong"
                     % (w, r, off, off + n - 1))
        stats["reads"] += 1

handles[0].flush()
fd = os.open(os.environ["EXPECT"], os.O_WRONLY)
for off, data in expect.items():
    os.pwrite(fd, data, off)
os.close(fd)
for h in handles:
    h.shutdown()
print("  writer %d: %d pieces, %s" % (w, len(mine), stats))
EOF

# level members layout chunk cache
configs=(
    "6 6 left-asymmetric 16K 64M"
    "5 4 right-symmetric 4K  64K"
    "6 5 parity-first    4K  32K"
)
n=0
for c in "${configs[@]}"; do
    read -r level nmem layout chunk cache <<< "$c"
    n=$((n + 1))
    chunk_b=$(numfmt --from=iec "$chunk")
    npar=$(( level == 6 ? 2 : 1 ))
    make_members "$nmem" 1M
    size=$(( (nmem - npar) * (1048576 / chunk_b) * chunk_b ))
    rm -f "$tmpdir/expect" "$tmpdir/go"
    truncate -s "$size" "$tmpdir/expect"
    echo "config $n: RAID-$level, $nmem members, $layout, chunk $chunk," \
         "cache $cache, $writers writers x 2 connections"

    SEED=$((seed + n)) SIZE=$size ROW=$(( (nmem - npar) * chunk_b )) \
    EXPECT="$tmpdir/expect" GO="$tmpdir/go" WRITER="$tmpdir/writer.py" \
    NWRITERS=$writers \
    raid_nbdkit metadata=none level=$level layout=$layout chunk=$chunk cache=$cache \
        "${members[@]}" --run '
            set -e
            pids=
            w=0
            while [ $w -lt $NWRITERS ]; do
                python3 "$WRITER" "$uri" $w $NWRITERS & pids="$pids $!"
                w=$((w + 1))
            done
            touch "$GO"
            for p in $pids; do wait $p; done
            # A fresh connection sees everything.
            EXPECT=$EXPECT nbdsh -u "$uri" -c "
assert h.get_size() == $SIZE
want = open(\"$EXPECT\", \"rb\").read()
for off in range(0, $SIZE, 1 << 20):
    got = h.pread(min(1 << 20, $SIZE - off), off)
    if got != want[off:off + len(got)]:
        bad = next(i for i in range(len(got)) if got[i] != want[off + i])
        raise SystemExit(\"array byte %d differs from the expected image\" % (off + bad))
"'

    raidcheck --level "$level" --layout "$layout" --chunk "$chunk_b" \
        --image "$tmpdir/image" "${members[@]}"
    cmp "$tmpdir/image" "$tmpdir/expect"
done
echo "$0: $n configurations passed"
