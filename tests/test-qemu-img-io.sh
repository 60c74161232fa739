#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Users' tools against a running array: qemu-img convert an image onto the
# array and back (first random data, then an image with holes over it, so
# qemu's zero detection sends write-zeroes), and qemu-io pattern writes,
# zeroes, discards and unaligned writes, verified with qemu-io reads.  The
# independent checker then verifies every row's parity and that the
# members hold what qemu wrote.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires qemu-img qemu-io truncate cmp
# qemu must have its nbd block driver.
if ! qemu-img --help 2>/dev/null | grep -qw nbd; then
    echo "$0: SKIP: this qemu-img lacks the nbd block driver"
    exit 77
fi

level=6 layout=left-symmetric chunk=64K chunk_b=65536 nmem=5
make_members $nmem 4M
size=$(( (nmem - 2) * 4 * 1048576 ))
sock="$tmpdir/sock"
start_nbdkit "$sock" metadata=none level=$level layout=$layout chunk=$chunk "${members[@]}"
url="nbd+unix:///?socket=$sock"

got=$(qemu-img info --output=json "$url" | sed -n 's/.*"virtual-size": \([0-9]*\).*/\1/p')
[ "$got" = "$size" ] || { echo "$0: qemu sees $got bytes, expected $size" >&2; exit 1; }

# 1. Random data onto the array and back.
head -c $size /dev/urandom > "$tmpdir/random.img"
qemu-img convert -n -f raw -O raw "$tmpdir/random.img" "$url"
qemu-img convert -f raw -O raw "$url" "$tmpdir/back.img"
cmp "$tmpdir/random.img" "$tmpdir/back.img"
echo "qemu-img convert: random image round trip ok"

# 2. An image with holes and zero runs over the random data: qemu sends
#    write-zeroes for them, the array must read back zeroes there.
truncate -s $size "$tmpdir/holes.img"
for off in 0 3 17 40 41 42 100 150 191; do      # in 64 KiB units
    head -c 65536 /dev/urandom | dd of="$tmpdir/holes.img" bs=64K seek=$off \
        conv=notrunc status=none
done
printf 'odd' | dd of="$tmpdir/holes.img" bs=1 seek=$(( 5 * 65536 + 1234 )) \
    conv=notrunc status=none
qemu-img convert -n -f raw -O raw "$tmpdir/holes.img" "$url"
rm -f "$tmpdir/back.img"
qemu-img convert -f raw -O raw "$url" "$tmpdir/back.img"
cmp "$tmpdir/holes.img" "$tmpdir/back.img"
echo "qemu-img convert: sparse image over random data ok"
qemu-img compare -f raw -F raw "$tmpdir/holes.img" "$url"

# 3. qemu-io: patterns, zeroes, discards, unaligned (qemu does the
#    read-modify-write of the 512-byte sectors), across chunk and row ends.
row=$(( (nmem - 2) * chunk_b ))
qemu-io -f raw "$url" \
    -c 'write -P 0xab 4096 8192' \
    -c "write -P 0xcd $(( chunk_b - 4096 )) 8192" \
    -c "write -P 0x11 $(( row - 512 )) $(( row + 1024 ))" \
    -c "write -z $(( 2 * row + 4096 )) $(( row ))" \
    -c "write -P 0x22 $(( 5 * row )) $(( 2 * row ))" \
    -c "discard $(( 5 * row + chunk_b )) $(( chunk_b ))" \
    -c "write -P 0x33 $(( 8 * row + 100 )) 1000" \
    -c "aio_write -P 0x44 $(( 9 * row )) 4096" \
    -c "aio_write -P 0x55 $(( 9 * row + 4096 )) 4096" \
    -c 'aio_flush' \
    -c 'flush' > "$tmpdir/qemu-io.out" || { cat "$tmpdir/qemu-io.out"; exit 1; }
qemu-io -f raw -r "$url" \
    -c 'read -P 0xab 4096 8192' \
    -c "read -P 0xcd $(( chunk_b - 4096 )) 8192" \
    -c "read -P 0x11 $(( row - 512 )) $(( row + 1024 ))" \
    -c "read -P 0 $(( 2 * row + 4096 )) $(( row ))" \
    -c "read -P 0x22 $(( 5 * row )) $(( chunk_b ))" \
    -c "read -P 0 $(( 5 * row + chunk_b )) $(( chunk_b ))" \
    -c "read -P 0x22 $(( 5 * row + 2 * chunk_b )) $(( 2 * row - 2 * chunk_b ))" \
    -c "read -P 0x33 $(( 8 * row + 100 )) 1000" \
    -c "read -P 0x44 $(( 9 * row )) 4096" \
    -c "read -P 0x55 $(( 9 * row + 4096 )) 4096" > "$tmpdir/verify.out" || :
cat "$tmpdir/verify.out"
if grep -qi 'pattern verification failed\|error\|failed' "$tmpdir/verify.out" ||
   [ $(grep -c '^read ' "$tmpdir/verify.out") != 10 ]; then
    echo "$0: qemu-io read back the wrong data" >&2
    exit 1
fi
# The unaligned write left its neighbours alone.
qemu-io -f raw -r "$url" \
    -c "read -v $(( 8 * row + 96 )) 4" \
    -c "read -v $(( 8 * row + 1100 )) 4" > "$tmpdir/edges.out"
python3 - "$tmpdir/holes.img" $(( 8 * row )) "$tmpdir/edges.out" <<'EOF'
import sys, re
img, base, out = open(sys.argv[1], "rb").read(), int(sys.argv[2]), open(sys.argv[3]).read()
dumps = re.findall(r"^[0-9a-f]{8}:\s+((?:[0-9a-f]{2} ?)+)", out, re.M)
want = [img[base + 96:base + 100], img[base + 1100:base + 1104]]
got = [bytes.fromhex(d.replace(" ", "")) for d in dumps]
assert got == want, "bytes around an unaligned write: %r, expected %r" % (got, want)
EOF

# 4. The members: parity good, and they hold what a reader of the array
#    now sees.
qemu-img convert -f raw -O raw "$url" "$tmpdir/final.img"
raidcheck --level $level --layout $layout --chunk $chunk_b \
    --image "$tmpdir/image" "${members[@]}"
cmp "$tmpdir/image" "$tmpdir/final.img"
echo "$0: ok"
