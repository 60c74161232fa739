#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Random writes, zeroes and trims of every size and alignment against a
# shadow image, for RAID-5 and RAID-6 over every md layout, several member
# counts, chunk sizes, a non-zero data offset, a tiny stripe cache and
# O_DIRECT members.  Every configuration ends with a full read compare,
# then the independent checker (raidcheck.py) verifies every row's parity
# on the member files and rebuilds the array image from them, which must
# equal the shadow byte for byte.
#
# RAID_TEST_SEED=N replays a run; RAID_TEST_OPS=N changes the operations
# per configuration (default 320).

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires nbdsh truncate cmp numfmt
requires_python_module nbd

test_seed
ops=${RAID_TEST_OPS:-320}

raidcheck --self-test

# Can this file system open files with O_DIRECT?  (tmpfs cannot.)
direct_ok=false
if dd if=/dev/zero of="$tmpdir/direct-probe" bs=4096 count=1 oflag=direct \
      status=none 2>/dev/null; then
    direct_ok=true
fi
rm -f "$tmpdir/direct-probe"

cat > "$tmpdir/driver.py" <<'EOF'
import os, random, errno
import nbd

h.set_strict_mode(0)            # sub-sector requests are part of the test
rng = random.Random(int(os.environ["SEED"]))
nops = int(os.environ["OPS"])
chunk = int(os.environ["CHUNK"])
row = int(os.environ["ROW"])
size = h.get_size()
want_size = int(os.environ["WANT_SIZE"])
assert size == want_size, "array size %d, expected %d" % (size, want_size)
# Advertised block sizes (design: minimum 512, preferred one full data
# row when NBD's power-of-two rule allows, else one chunk; maximum 64M).
bmin, bpref, bmax = (h.get_block_size(k) for k in
                     (nbd.SIZE_MINIMUM, nbd.SIZE_PREFERRED, nbd.SIZE_MAXIMUM))
assert bmin == 512, "minimum block size %d" % bmin
assert bpref & (bpref - 1) == 0, "preferred block size %d" % bpref
assert bpref == (row if row & (row - 1) == 0 else chunk), \
    "preferred block size %d (row %d, chunk %d)" % (bpref, row, chunk)
assert bmax == 64 << 20, "maximum block size %d" % bmax
shadow = bytearray(size)
counts = {"write": 0, "fua": 0, "zero": 0, "trim": 0, "read": 0, "flush": 0}

def pick_len():
    k = rng.random()
    if k < 0.20: return rng.randint(1, 511)                 # sub-sector
    if k < 0.35: return 512 * rng.randint(1, 16)            # sectors
    if k < 0.55: return rng.randint(1, 2 * chunk)           # around a chunk
    if k < 0.70: return chunk * rng.randint(1, 3)           # whole chunks
    if k < 0.85: return row * rng.randint(1, 3)             # whole rows
    return rng.randint(1, 4 * row)                          # up to 4 rows

def pick_range():
    n = pick_len()
    k = rng.random()
    if k < 0.30:   off = rng.randrange(size)
    elif k < 0.45: off = rng.randrange(0, size, 512)
    elif k < 0.60: off = rng.randrange(0, size, chunk)
    elif k < 0.75: off = rng.randrange(0, size, row)
    elif k < 0.95: off = rng.randrange(0, size, chunk) + rng.randint(-700, 700)
    else:          off = size - n                           # the last bytes
    off = max(0, min(off, size - 1))
    return off, min(n, size - off)

def check(off, n, what):
    got = h.pread(n, off)
    if got != shadow[off:off + n]:
        bad = next(i for i in range(n) if got[i] != shadow[off + i])
        raise AssertionError("%s: array byte %d is 0x%02x, shadow says 0x%02x"
                             " (read of %d bytes at %d)"
                             % (what, off + bad, got[bad], shadow[off + bad],
                                n, off))

for i in range(nops):
    off, n = pick_range()
    k = rng.random()
    if k < 0.60:
        if rng.random() < 0.1:
            data = bytes(n)                                 # zeroes by write
        else:
            data = rng.randbytes(n)
        flags = 0
        if rng.random() < 0.15:
            flags = nbd.CMD_FLAG_FUA
            counts["fua"] += 1
        h.pwrite(data, off, flags)
        shadow[off:off + n] = data
        counts["write"] += 1
    elif k < 0.75:
        flags = 0
        if rng.random() < 0.5: flags |= nbd.CMD_FLAG_NO_HOLE   # else may trim
        if rng.random() < 0.2: flags |= nbd.CMD_FLAG_FUA
        if rng.random() < 0.2: flags |= nbd.CMD_FLAG_FAST_ZERO
        try:
            h.zero(n, off, flags)
            shadow[off:off + n] = bytes(n)
        except nbd.Error as e:
            # A fast zero may refuse (ENOTSUP).  nbdkit asks plugins to
            # refuse before touching anything; the NBD protocol only
            # lets each byte be old or zero.  Hold it to the protocol.
            if not (flags & nbd.CMD_FLAG_FAST_ZERO
                    and e.errno in ("ENOTSUP", "EOPNOTSUPP", errno.ENOTSUP)):
                raise
            counts["fast-zero refused"] = counts.get("fast-zero refused", 0) + 1
            got = h.pread(n, off)
            if got != shadow[off:off + n]:
                for j in range(n):
                    assert got[j] in (0, shadow[off + j]), \
                        "refused fast zero wrote byte %d" % (off + j)
                shadow[off:off + n] = got
                counts["refused but zeroed"] = counts.get("refused but zeroed", 0) + 1
        counts["zero"] += 1
    elif k < 0.85:
        h.trim(n, off, nbd.CMD_FLAG_FUA if rng.random() < 0.2 else 0)
        shadow[off:off + n] = bytes(n)                      # the plugin zeroes
        counts["trim"] += 1
    elif k < 0.97:
        roff, rn = pick_range()
        check(roff, rn, "op %d: random read" % i)
        counts["read"] += 1
    else:
        h.flush()
        counts["flush"] += 1
    if rng.random() < 0.15:
        # Read back what was just touched, with some bytes either side.
        lo = max(0, off - rng.randint(0, 700))
        hi = min(size, off + n + rng.randint(0, 700))
        check(lo, hi - lo, "op %d: read-back" % i)
        counts["read"] += 1

step = 4 << 20
for off in range(0, size, step):
    check(off, min(step, size - off), "final compare")
with open(os.environ["EXPECT"], "wb") as f:
    f.write(shadow)
print("  %d ops on %d bytes: %s" % (nops, size, counts))
EOF

# outside_md5 [fill]: md5 of each member's bytes before data-offset and
# after the last whole row (at $end_b); with "fill", first fill them with
# noise.  One Python process, not a pipeline per member: forks are dear.
outside_md5 ()
{
    python3 - "${1:-sum}" "$doff_b" "$end_b" "${members[@]}" <<'EOF'
import hashlib, os, sys
mode, doff, end = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for m in sys.argv[4:]:
    with open(m, "r+b") as f:
        size = os.fstat(f.fileno()).st_size
        if mode == "fill":
            os.pwrite(f.fileno(), os.urandom(doff), 0)
            os.pwrite(f.fileno(), os.urandom(size - end), end)
        head = os.pread(f.fileno(), doff, 0)
        tail = os.pread(f.fileno(), size - end, end)
        print(m, hashlib.md5(head).hexdigest(), hashlib.md5(tail).hexdigest())
EOF
}

# level members layout chunk data-offset extra-parameters
configs=(
    "5 3 left-asymmetric  4K  0   -"
    "5 4 right-asymmetric 16K 0   -"
    "5 5 left-symmetric   64K 0   -"
    "5 3 right-symmetric  16K 1M  -"
    "5 4 parity-first     4K  0   cache=64K"
    "5 5 parity-last      16K 0   -"
    "6 4 left-asymmetric  4K  0   -"
    "6 5 right-asymmetric 16K 0   -"
    "6 6 left-symmetric   64K 0   -"
    "6 8 right-symmetric  4K  12K -"
    "6 5 parity-first     16K 0   -"
    "6 6 parity-last      4K  0   cache=32K"
    "6 8 left-asymmetric  16K 0   -"
    "6 8 right-asymmetric 16K 0   direct=true"
)

n=0
for c in "${configs[@]}"; do
    read -r level nmem layout chunk doff extra <<< "$c"
    n=$((n + 1))
    chunk_b=$(numfmt --from=iec "$chunk")
    doff_b=$(numfmt --from=iec "$doff")
    [ "$extra" = - ] && extra=
    if [ "$extra" = direct=true ] && ! $direct_ok; then
        echo "  (O_DIRECT not supported under $tmpdir: direct=false)"
        extra=
    fi
    # 32 rows per member, plus some slack that is not a whole chunk; the
    # last member is bigger still: the smallest member sets the size.
    msize=$(( doff_b + 32 * chunk_b + 3000 ))
    make_members "$nmem" "$msize"
    truncate -s $(( msize + chunk_b + 100 )) "${members[-1]}"
    npar=$(( level == 6 ? 2 : 1 ))
    rows=$(( (msize - doff_b) / chunk_b ))
    want_size=$(( (nmem - npar) * rows * chunk_b ))
    cseed=$(( seed + n ))

    # The bytes outside the array (before data-offset, after the last
    # whole row) hold noise that must survive untouched.
    end_b=$(( doff_b + rows * chunk_b ))
    outside_md5 fill > "$tmpdir/outside.before"

    echo "config $n: RAID-$level, $nmem members, $layout, chunk $chunk," \
         "data-offset $doff${extra:+, $extra} (seed $cseed)"
    SEED=$cseed OPS=$ops CHUNK=$chunk_b ROW=$(( (nmem - npar) * chunk_b )) \
    WANT_SIZE=$want_size EXPECT="$tmpdir/expect" DRIVER="$tmpdir/driver.py" \
    raid_nbdkit metadata=none level="$level" layout="$layout" chunk="$chunk" \
        data-offset="$doff" $extra "${members[@]}" \
        --run 'nbdsh -u "$uri" -c "exec(open(\"$DRIVER\").read())"'

    raidcheck --level "$level" --layout "$layout" --chunk "$chunk_b" \
        --data-offset "$doff_b" --image "$tmpdir/image" "${members[@]}"
    outside_md5 > "$tmpdir/outside.after"
    if ! cmp -s "$tmpdir/outside.before" "$tmpdir/outside.after"; then
        echo "$0: config $n: bytes outside the array changed on a member:" >&2
        diff "$tmpdir/outside.before" "$tmpdir/outside.after" >&2 || :
        exit 1
    fi
    # The checker rebuilds the array from the smallest member's rows.
    if ! cmp "$tmpdir/image" "$tmpdir/expect"; then
        echo "$0: config $n: the image rebuilt from the members is not the shadow" >&2
        exit 1
    fi

    # Once: the checker must notice one flipped byte on a member (a checker
    # that passes everything proves nothing).
    if [ $n = 1 ]; then
        cp "${members[1]}" "$tmpdir/saved"
        printf '\x5a' | dd of="${members[1]}" bs=1 seek=$(( doff_b + 5 * chunk_b + 77 )) \
            conv=notrunc status=none
        if cmp -s "${members[1]}" "$tmpdir/saved"; then
            printf '\xa5' | dd of="${members[1]}" bs=1 seek=$(( doff_b + 5 * chunk_b + 77 )) \
                conv=notrunc status=none
        fi
        if raidcheck --level "$level" --layout "$layout" --chunk "$chunk_b" \
               --data-offset "$doff_b" "${members[@]}" 2>"$tmpdir/err"; then
            echo "$0: raidcheck did not notice a corrupted member" >&2
            exit 1
        fi
        grep -q "row 5 " "$tmpdir/err" || { cat "$tmpdir/err"; exit 1; }
        echo "  raidcheck caught a flipped byte: $(cat "$tmpdir/err")"
    fi
done
echo "$0: $n configurations passed"
